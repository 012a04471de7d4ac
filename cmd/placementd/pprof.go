package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/placementd/placementd/httpapi/httpguard"
)

// servePprof serves Go's runtime profiles (net/http/pprof) on addr, for
// --pprof-addr: off unless given, and only on a loopback address, since
// profiles tell much about the process and nothing here authenticates
// them. /debug/pprof/cmdline is left out: the command line may hold the
// cluster secret. The listener closes with the returned function.
func servePprof(addr string, log *slog.Logger) (stop func(), err error) {
	if !loopbackOnly(addr) {
		return nil, fmt.Errorf("--pprof-addr %s: profiles are served on a loopback address only (127.0.0.1:PORT)", addr)
	}
	tcp, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	ln := httpguard.Listen(tcp, httpguard.Limits{}.Side(), nil, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	// No write timeout: a CPU profile or trace answers after its
	// ?seconds= have passed.
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	log.Warn("serving Go runtime profiles on --pprof-addr (loopback only; for profiling, not for production)", "pprof", ln.Addr().String())
	return func() { srv.Close() }, nil
}
