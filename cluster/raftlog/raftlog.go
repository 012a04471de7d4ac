package raftlog

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
)

// LevelTrace is where hclog's Trace lands: below slog's Debug.
const LevelTrace = slog.LevelDebug - 4

// New returns an hclog.Logger named name writing to l. Messages below
// level are dropped before they reach l (whose handler filters too).
func New(l *slog.Logger, name string, level hclog.Level) hclog.Logger {
	a := &adapter{root: l, level: new(atomic.Int32)}
	a.level.Store(int32(level))
	return a.ResetNamed(name)
}

type adapter struct {
	log   *slog.Logger // root with the name and implied args
	root  *slog.Logger // as given to New
	name  string
	args  []any
	level *atomic.Int32 // shared by the loggers derived from one another, as hclog's
}

func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return LevelTrace
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.Warn:
		return slog.LevelWarn
	case hclog.Error:
		return slog.LevelError
	}
	return slog.LevelInfo
}

func (a *adapter) enabled(l hclog.Level) bool {
	min := hclog.Level(a.level.Load())
	if l == hclog.NoLevel || l == hclog.Off || min == hclog.Off || l < min {
		return false
	}
	return a.log.Enabled(context.Background(), slogLevel(l))
}

func (a *adapter) Log(l hclog.Level, msg string, args ...any) {
	if l == hclog.NoLevel {
		l = hclog.Info
	}
	if a.enabled(l) {
		a.log.Log(context.Background(), slogLevel(l), msg, values(args)...)
	}
}

// values renders hclog's formatting wrappers (hclog.Fmt and the like),
// fmt.Stringers and errors as hclog would; slog would print the wrappers
// as raw slices or numbers, and a struct without exported fields (raft
// logs its *Raft, a Stringer) as {} in JSON.
func values(args []any) []any {
	out := args
	for i, v := range args {
		var s string
		switch v := v.(type) {
		case hclog.Format:
			if len(v) == 0 {
				continue
			}
			format, _ := v[0].(string)
			s = fmt.Sprintf(format, v[1:]...)
		case hclog.Hex:
			s = fmt.Sprintf("0x%x", int(v))
		case hclog.Octal:
			s = fmt.Sprintf("0%o", int(v))
		case hclog.Binary:
			s = fmt.Sprintf("0b%b", int(v))
		case error:
			s = v.Error()
		case fmt.Stringer:
			s = v.String()
		default:
			continue
		}
		if &out[0] == &args[0] {
			out = append([]any{}, args...)
		}
		out[i] = s
	}
	return out
}

func (a *adapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *adapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *adapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *adapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *adapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *adapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *adapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *adapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *adapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *adapter) IsError() bool { return a.enabled(hclog.Error) }

func (a *adapter) ImpliedArgs() []any { return a.args }

func (a *adapter) With(args ...any) hclog.Logger {
	c := *a
	c.args = append(append([]any{}, a.args...), args...)
	c.log = a.log.With(values(args)...)
	return &c
}

func (a *adapter) Name() string { return a.name }

// Named appends to the name, as hclog does ("raft.net").
func (a *adapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

func (a *adapter) ResetNamed(name string) hclog.Logger {
	c := *a
	c.name = name
	c.log = a.root
	if name != "" {
		c.log = c.log.With("logger", name)
	}
	c.log = c.log.With(values(a.args)...)
	return &c
}

func (a *adapter) SetLevel(l hclog.Level) { a.level.Store(int32(l)) }
func (a *adapter) GetLevel() hclog.Level  { return hclog.Level(a.level.Load()) }

func (a *adapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter turns lines written by a standard library logger into
// records at Info, or at the level their "[LEVEL]" prefix names when opts
// asks to infer it.
func (a *adapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	infer := opts != nil && opts.InferLevels
	return writerFunc(func(p []byte) (int, error) {
		line := strings.TrimSpace(string(p))
		level := hclog.Info
		if infer {
			for prefix, l := range map[string]hclog.Level{"[TRACE]": hclog.Trace, "[DEBUG]": hclog.Debug, "[INFO]": hclog.Info, "[WARN]": hclog.Warn, "[ERR]": hclog.Error, "[ERROR]": hclog.Error} {
				if strings.HasPrefix(line, prefix) {
					level, line = l, strings.TrimSpace(strings.TrimPrefix(line, prefix))
					break
				}
			}
		}
		a.Log(level, line)
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
