package main

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/cluster/metrics"
	"github.com/placementd/placementd/cluster/raftlog"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
)

// newMetrics builds the node's metrics and hooks them to its state
// machine; call it before the node opens, so that restoring the state at
// start is measured too.
func newMetrics(machine *fsm.FSM, log *slog.Logger) *metrics.Metrics {
	m := metrics.New()
	var routes []metrics.Route
	for _, r := range httpapi.Routes() {
		routes = append(routes, metrics.Route{Path: r.Path, Methods: r.Methods})
	}
	m.Preset(routes, fsm.CommandKinds())
	machine.OnApply = m.Applied
	m.WatchState(machine)
	if err := m.RaftBridge(); err != nil {
		log.Warn("Raft timings will not be exported", "error", err)
	}
	return m
}

// raftLogger sends Raft's log through log; its level (--log-level)
// decides what is written.
func raftLogger(log *slog.Logger) hclog.Logger {
	return raftlog.New(log, "raft", hclog.Trace)
}

// withProbes serves /healthz and /readyz (unauthenticated) and /metrics
// (to whom metricsAccess lets in) on the API port, answered by this node,
// never forwarded to the leader; every other path goes to the cluster
// front. Paths are matched exactly: the Placement API sees every other
// path as it came. --metrics-addr serves /metrics on a listener of its
// own (metricsHandler).
func withProbes(front *front.Handler, m *metrics.Metrics, access metricsAccess) http.Handler {
	promHandler := access.guard(m.Handler(), true)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/healthz":
			front.Healthz(w, r)
		case "/readyz":
			front.Readyz(w, r)
		case "/metrics":
			promHandler.ServeHTTP(w, r)
		case "/_cluster/snapshot":
			// A backup streams the whole state, which may take longer
			// than --http-write-timeout on a slow link (the front still
			// refuses a caller without the secret at once).
			http.NewResponseController(w).SetWriteDeadline(time.Time{})
			front.ServeHTTP(w, r)
		default:
			front.ServeHTTP(w, r)
		}
	})
}

// metricsHandler serves /metrics alone, for --metrics-addr: a listener an
// operator keeps on a loopback or private address for Prometheus (with
// the metrics token when one is set).
func metricsHandler(m *metrics.Metrics, access metricsAccess) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", access.guard(m.Handler(), false))
	return mux
}
