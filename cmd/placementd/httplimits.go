package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/httpapi/httpguard"
)

// httpLimitFlags are the serve flags bounding what clients may hold of a
// node: the HTTP servers' timeouts, open connections, and the admission
// of expensive requests (docs/security.md, "HTTP limits").
type httpLimitFlags struct {
	readHeaderTimeout, readTimeout time.Duration
	writeTimeout, idleTimeout      time.Duration
	maxConns, maxConnsPerIP        int
	maxRequestBodyMB               int64
	maxBodyDecodeMB                int64
	maxAnswerMB                    int64
	maxCandidateSearches           int
	admissionWait                  time.Duration
}

func (f *httpLimitFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.readHeaderTimeout, "http-read-header-timeout", httpguard.DefaultReadHeaderTimeout, "bound on receiving a request's headers (API and --metrics-addr servers)")
	fs.DurationVar(&f.readTimeout, "http-read-timeout", httpguard.DefaultReadTimeout, "bound on receiving a whole request, body included: a client that stops sending its body is answered 408 and disconnected")
	fs.DurationVar(&f.writeTimeout, "http-write-timeout", 0, "bound from the end of a request's headers to the end of its answer; must exceed --request-timeout (0: --request-timeout + 30s)")
	fs.DurationVar(&f.idleTimeout, "http-idle-timeout", httpguard.DefaultIdleTimeout, "a keep-alive connection without a request this long is closed")
	fs.IntVar(&f.maxConns, "http-max-connections", httpguard.DefaultMaxConns, "cap on connections open to the API at once; past it a new connection is answered 503 and closed (lowered to the open-files limit less 1024, for Raft and the data files; 0: that limit alone)")
	fs.IntVar(&f.maxConnsPerIP, "http-max-connections-per-ip", httpguard.DefaultMaxConnsPerIP, "cap on connections open to the API from one client address; behind a proxy, at least the proxy's own connection limit (0: no cap)")
	fs.Int64Var(&f.maxRequestBodyMB, "max-request-body-mb", httpapi.DefaultMaxBodyBytes>>20, fmt.Sprintf("bound, in MiB, on one request body of the API (1 to %d); a longer body is answered 413 and changes nothing", maxRequestBodyMB))
	fs.Int64Var(&f.maxBodyDecodeMB, "max-body-decode-mb", httpapi.DefaultMaxBodyDecodeBytes>>20, "MiB of request bodies decoded at once (each body counts at least 64 KiB); past it a request waits up to --admission-wait, then is answered 503 placement.server.busy with Retry-After (-1: no bound)")
	fs.Int64Var(&f.maxAnswerMB, "max-answer-mb", httpapi.DefaultMaxAnswerBytes>>20, "MiB of memory the allocation-candidates searches running at once, and their answers until they are sent, share (estimated as --allocation-candidates-memory-mb's; a client that does not read holds its answer until --http-write-timeout); a search waits up to --admission-wait for its first share, and one that finds no more as it grows stops: 503 placement.server.busy (-1: no bound)")
	fs.IntVar(&f.maxCandidateSearches, "max-candidate-searches", httpapi.DefaultMaxCandidateSearches, "allocation-candidates searches run at once; past it as --max-body-decode-mb (-1: no bound)")
	fs.DurationVar(&f.admissionWait, "admission-wait", httpapi.DefaultAdmissionWait, "how long a request waits for a free body or search slot before it is answered 503 placement.server.busy")
}

// limits checks the flags and returns the servers' limits, the write
// timeout made from requestTimeout when not given.
func (f *httpLimitFlags) limits(requestTimeout time.Duration) (httpguard.Limits, error) {
	l := httpguard.Limits{
		ReadHeaderTimeout: f.readHeaderTimeout, ReadTimeout: f.readTimeout,
		WriteTimeout: f.writeTimeout, IdleTimeout: f.idleTimeout,
		MaxConns: f.maxConns, MaxConnsPerIP: f.maxConnsPerIP,
	}
	if l.WriteTimeout == 0 {
		l.WriteTimeout = requestTimeout + httpguard.WriteTimeoutMargin
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"--http-read-header-timeout", l.ReadHeaderTimeout}, {"--http-read-timeout", l.ReadTimeout},
		{"--http-write-timeout", l.WriteTimeout}, {"--http-idle-timeout", l.IdleTimeout}, {"--admission-wait", f.admissionWait}} {
		if d.v <= 0 {
			return l, fmt.Errorf("%s %s: want a positive duration", d.name, d.v)
		}
	}
	if l.WriteTimeout <= requestTimeout {
		return l, fmt.Errorf("--http-write-timeout %s: must exceed --request-timeout %s, or answers cut off at the deadline never arrive", l.WriteTimeout, requestTimeout)
	}
	if l.MaxConns < 0 || l.MaxConnsPerIP < 0 {
		return l, fmt.Errorf("--http-max-connections and --http-max-connections-per-ip: want 0 or more")
	}
	for _, n := range []struct {
		name string
		v    int64
	}{{"--max-body-decode-mb", f.maxBodyDecodeMB}, {"--max-answer-mb", f.maxAnswerMB}, {"--max-candidate-searches", int64(f.maxCandidateSearches)}} {
		if n.v == 0 || n.v < -1 {
			return l, fmt.Errorf("%s %d: want -1 (no bound) or a positive number", n.name, n.v)
		}
	}
	if f.maxRequestBodyMB < 1 || f.maxRequestBodyMB > maxRequestBodyMB {
		return l, fmt.Errorf("--max-request-body-mb %d: want 1 to %d", f.maxRequestBodyMB, maxRequestBodyMB)
	}
	return l.FitFDLimit(), nil
}

// maxRequestBodyMB is the most --max-request-body-mb may say: no
// Placement request comes near it, and each body may cost about ten
// times its size to validate.
const maxRequestBodyMB = 1024

// apiLimits sets the API's body and admission limits from the flags
// (checked by limits).
func (f *httpLimitFlags) apiLimits(cfg *httpapi.Config) {
	cfg.MaxBodyBytes = f.maxRequestBodyMB << 20
	cfg.MaxBodyDecodeBytes = mbOrUnbounded(f.maxBodyDecodeMB)
	cfg.MaxCandidateSearches = f.maxCandidateSearches
	cfg.MaxAnswerBytes = mbOrUnbounded(f.maxAnswerMB)
	cfg.AdmissionWait = f.admissionWait
}

// mbOrUnbounded turns a MiB flag whose -1 means no bound into bytes.
func mbOrUnbounded(mb int64) int64 {
	if mb < 0 {
		return -1
	}
	return mb << 20
}
