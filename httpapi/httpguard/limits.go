package httpguard

import (
	"net/http"
	"time"
)

// Defaults sized for Placement's traffic: requests of a few kilobytes
// (bodies of at most a few megabytes), answered within the request
// timeout (httpapi.DefaultRequestTimeout, 30 s), from clients (nova,
// keystoneauth) that keep connections alive between bursts and open a new
// one when the server has closed an idle one.
const (
	// DefaultReadHeaderTimeout bounds the wait for a request's headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request, body included:
	// a client that announces a Content-Length and stops sending is cut.
	DefaultReadTimeout = 30 * time.Second
	// DefaultIdleTimeout closes a keep-alive connection this long without
	// a request.
	DefaultIdleTimeout = 60 * time.Second
	// WriteTimeoutMargin is added to the request timeout to make the
	// default write timeout, which must outlast every answer.
	WriteTimeoutMargin = 30 * time.Second
	// DefaultMaxConns and DefaultMaxConnsPerIP cap open connections; a
	// cloud of a few thousand nova services keeps one or two each, and an
	// idle connection costs the node about 20 KiB.
	DefaultMaxConns      = 32768
	DefaultMaxConnsPerIP = 2048
	// FDReserve is kept free of client connections under the process's
	// file descriptor limit, for Raft, the data files and forwarding, and
	// the side listeners' connections (SideMaxConns).
	FDReserve = 1024
	// SideMaxConns caps the connections open at once to each side
	// listener (--metrics-addr, --pprof-addr): a Prometheus or a profiler
	// needs a handful, and without a cap of their own they would share
	// the file descriptors the API's cap leaves under the limit.
	SideMaxConns = 64
)

// Side is l with the connection caps of a side listener (SideMaxConns).
func (l Limits) Side() Limits {
	l.MaxConns, l.MaxConnsPerIP = SideMaxConns, SideMaxConns
	return l
}

// Limits are one HTTP server's timeouts and connection caps.
type Limits struct {
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	// WriteTimeout runs from the end of the request's headers to the end
	// of the answer (Go's http.Server), so it must exceed the request
	// timeout.
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	// MaxConns and MaxConnsPerIP cap open connections (0: no cap).
	MaxConns, MaxConnsPerIP int
}

// Server is an http.Server serving h with l's timeouts.
func (l Limits) Server(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
	}
}

// FitFDLimit lowers MaxConns so that client connections leave FDReserve
// file descriptors under the process's limit (Go raises the soft limit to
// the hard one at start): past it, accept would fail with "too many open
// files" for everyone, Raft included. It returns the limits to use.
func (l Limits) FitFDLimit() Limits {
	if n := fdLimit(); n > 0 {
		room := max(n-FDReserve, n/2)
		if l.MaxConns <= 0 || l.MaxConns > room {
			l.MaxConns = room
		}
	}
	return l
}
