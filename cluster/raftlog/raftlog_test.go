package raftlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

func jsonLines(t *testing.T, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not JSON: %q", line)
		}
		out = append(out, m)
	}
	return out
}

// Raft's records come out through slog with their level, the logger's
// name, implied arguments and hclog.Fmt values rendered.
func TestRecordsReachSlog(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), "raft", hclog.Trace)
	l.Info("entering leader state", "leader", "n1")
	l.Debug("dropped: below the handler's level")
	l.Named("net").With("peer", "n2").Warn("failed to contact", "servers", hclog.Fmt("%d of %d", 1, 3))
	l.Error("odd arguments", "key")
	recs := jsonLines(t, &buf)
	if len(recs) != 3 {
		t.Fatalf("%d records: %s", len(recs), buf.String())
	}
	if r := recs[0]; r["level"] != "INFO" || r["msg"] != "entering leader state" || r["logger"] != "raft" || r["leader"] != "n1" {
		t.Errorf("info record: %v", r)
	}
	if r := recs[1]; r["level"] != "WARN" || r["logger"] != "raft.net" || r["peer"] != "n2" || r["servers"] != "1 of 3" {
		t.Errorf("warn record: %v", r)
	}
	if recs[2]["level"] != "ERROR" {
		t.Errorf("error record: %v", recs[2])
	}
	if l.IsDebug() || !l.IsInfo() {
		t.Error("Is* do not follow the handler's level")
	}
}

// SetLevel raises the floor for the logger and those derived from it.
func TestSetLevel(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: LevelTrace})), "raft", hclog.Trace)
	child := l.Named("snapshot")
	l.SetLevel(hclog.Warn)
	child.Info("hidden")
	l.Info("hidden")
	child.Warn("shown")
	l.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}).Print("[ERR] from the standard logger")
	recs := jsonLines(t, &buf)
	if len(recs) != 2 || recs[0]["msg"] != "shown" || recs[1]["msg"] != "from the standard logger" || recs[1]["level"] != "ERROR" {
		t.Fatalf("records: %s", buf.String())
	}
	if l.GetLevel() != hclog.Warn || child.GetLevel() != hclog.Warn {
		t.Fatal("level not shared")
	}
}

// nodeName stands for raft's *Raft, which raft logs as a value: a Stringer
// with no exported fields.
type nodeName struct{ name string }

func (n *nodeName) String() string { return "Node at " + n.name + " [Follower]" }

// Stringers and errors are written as their text, as hclog writes them:
// JSON would otherwise show an empty object.
func TestStringersAndErrorsAsText(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewJSONHandler(&buf, nil)), "raft", hclog.Trace)
	l.Info("entering follower state", "follower", &nodeName{"n1"}, "error", errors.New("boom"))
	recs := jsonLines(t, &buf)
	if r := recs[0]; r["follower"] != "Node at n1 [Follower]" || r["error"] != "boom" {
		t.Fatalf("record: %v", r)
	}
}
