package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm/state"
)

const namespace = "placementd"

// latencyBuckets cover a cached read (100 µs) to a slow write through a
// loaded cluster (10 s).
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// Metrics holds one node's metrics and the registry that exposes them.
type Metrics struct {
	Registry *prometheus.Registry

	httpRequests *prometheus.CounterVec
	httpDuration *prometheus.HistogramVec
	httpInFlight prometheus.Gauge
	httpAborted  *prometheus.CounterVec
	connRefused  *prometheus.CounterVec

	fsmApplied *prometheus.CounterVec

	proposals        *prometheus.CounterVec
	proposalDuration *prometheus.HistogramVec

	candDuration prometheus.Histogram
	candReturned prometheus.Histogram
	candSteps    prometheus.Histogram
}

// New builds the metrics of one node in a registry of their own, with the
// Go runtime and process collectors.
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.httpRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_total",
		Help: "Placement API requests answered by this node's API, by route template, method and status code.",
	}, []string{"route", "method", "status"})
	m.httpDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "http", Name: "request_duration_seconds",
		Help:    "Time to answer a Placement API request, by route template and method.",
		Buckets: latencyBuckets,
	}, []string{"route", "method"})
	m.httpInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_in_flight",
		Help: "Placement API requests being answered by this node's API now.",
	})
	m.httpAborted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "requests_aborted_total",
		Help: "Placement API requests stopped before they completed, by route template and reason: timeout " +
			"(the request timeout passed; answered 503 placement.request.timeout), client_gone (the client closed " +
			"the connection), too_large (an allocation-candidates answer over its memory bound; 503 placement.query.too_large) " +
			"or busy (no admission slot came free for its body or search in time; 503 placement.server.busy).",
	}, []string{"route", "reason"})
	m.connRefused = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "http", Name: "connections_refused_total",
		Help: "Connections to the Placement API closed as soon as accepted (answered 503 placement.server.busy when not TLS), " +
			"by reason: node_limit (--http-max-connections open) or ip_limit (--http-max-connections-per-ip open from that address).",
	}, []string{"reason"})
	for _, reason := range connRefusalReasons {
		m.connRefused.WithLabelValues(reason)
	}
	m.fsmApplied = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "fsm", Name: "commands_applied_total",
		Help: "Placement commands applied by this node's state machine, by kind and result (ok, bad_request, not_found, conflict) " +
			"with the Placement error code of a rejection (generation conflicts: placement.concurrent_update; " +
			"capacity: placement.undefined_code on allocations.set).",
	}, []string{"kind", "result", "code"})
	m.proposals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Subsystem: "raft", Name: "proposals_total",
		Help: "Commands this node proposed to Raft, by kind and outcome (applied, rejected, not_leader, unknown_outcome, error).",
	}, []string{"kind", "outcome"})
	m.proposalDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "raft", Name: "apply_duration_seconds",
		Help:    "Time from proposing a command to having its result (commit and apply), by kind.",
		Buckets: latencyBuckets,
	}, []string{"kind"})
	m.candDuration = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "allocation_candidates", Name: "query_duration_seconds",
		Help:    "Time to read and search the state for GET /allocation_candidates (without rendering the answer).",
		Buckets: latencyBuckets,
	})
	m.candReturned = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "allocation_candidates", Name: "returned",
		Help:    "Allocation requests returned by a GET /allocation_candidates.",
		Buckets: []float64{0, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 50000},
	})
	m.candSteps = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Subsystem: "allocation_candidates", Name: "search_steps",
		Help: "Work done by a GET /allocation_candidates search that completed: anchors, options and combinations looked at " +
			"(a few per provider of the trees searched and per candidate; a search that prunes well stays low even when nothing fits).",
		Buckets: prometheus.ExponentialBuckets(10, 10, 8),
	})
	m.Registry.MustRegister(
		m.httpRequests, m.httpDuration, m.httpInFlight, m.httpAborted, m.connRefused, m.fsmApplied,
		m.proposals, m.proposalDuration, m.candDuration, m.candReturned, m.candSteps,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// Route is an API route's path template and methods, as RequestDone
// labels them (httpapi.Routes lists them).
type Route struct {
	Path    string
	Methods []string
}

// abortReasons are the reasons RequestAborted is given.
var abortReasons = []string{"timeout", "client_gone", "too_large", "busy"}

// connRefusalReasons are the reasons ConnRefused is given
// (httpguard.RefusedNodeLimit, RefusedIPLimit).
var connRefusalReasons = []string{"node_limit", "ip_limit"}

// proposalOutcomes are the outcomes Proposed counts.
var proposalOutcomes = []string{"applied", "rejected", "not_leader", "unknown_outcome", "error"}

// Preset creates at zero the labelled series that alerts and dashboards
// watch, for every route and command kind, so that they exist from start
// (an absent series makes rate() and increase() empty, and misses the
// first event): requests per route and method answered 500 and 503 (the
// other statuses appear as they are answered: their set is open),
// durations and aborted requests per route, and per command kind the
// applies that succeeded, the proposals by outcome and their durations.
func (m *Metrics) Preset(routes []Route, kinds []string) {
	if m == nil {
		return
	}
	for _, r := range append(routes, Route{Path: "unmatched"}) {
		for _, method := range r.Methods {
			for _, status := range []string{"500", "503"} {
				m.httpRequests.WithLabelValues(r.Path, method, status)
			}
			m.httpDuration.WithLabelValues(r.Path, method)
		}
		for _, reason := range abortReasons {
			m.httpAborted.WithLabelValues(r.Path, reason)
		}
	}
	for _, kind := range kinds {
		m.fsmApplied.WithLabelValues(kind, "ok", "")
		for _, outcome := range proposalOutcomes {
			m.proposals.WithLabelValues(kind, outcome)
		}
		m.proposalDuration.WithLabelValues(kind)
	}
}

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// RequestStarted and RequestDone bracket a request answered by the API
// (httpapi.Observer). route is the mux path template, "" when no route
// matched.
func (m *Metrics) RequestStarted() {
	if m != nil {
		m.httpInFlight.Inc()
	}
}

func (m *Metrics) RequestDone(route, method string, status int, d time.Duration) {
	if m == nil {
		return
	}
	if route == "" {
		// Unknown paths share one series: clients must not be able to
		// create series at will.
		route = "unmatched"
	}
	m.httpInFlight.Dec()
	m.httpRequests.WithLabelValues(route, method, strconv.Itoa(status)).Inc()
	m.httpDuration.WithLabelValues(route, method).Observe(d.Seconds())
}

// RequestAborted counts a request stopped by its deadline, its client
// going away or a search bound (httpapi.Observer).
func (m *Metrics) RequestAborted(route, reason string) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	m.httpAborted.WithLabelValues(route, reason).Inc()
}

// ConnRefused counts a connection refused past a connection cap (the
// onRefuse of httpguard.Listen).
func (m *Metrics) ConnRefused(reason string) {
	if m != nil {
		m.connRefused.WithLabelValues(reason).Inc()
	}
}

// WatchConnections exports the connections open through the API's
// listener (open reads it at scrape time).
func (m *Metrics) WatchConnections(open func() int) {
	if m == nil {
		return
	}
	m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: namespace, Subsystem: "http", Name: "connections_open",
		Help: "Connections open to the Placement API (--http-addr) now.",
	}, func() float64 { return float64(open()) }))
}

// CandidatesSearched records one allocation-candidates query
// (httpapi.Observer).
func (m *Metrics) CandidatesSearched(d time.Duration, returned int, steps int64) {
	if m == nil {
		return
	}
	m.candDuration.Observe(d.Seconds())
	m.candReturned.Observe(float64(returned))
	m.candSteps.Observe(float64(steps))
}

// Applied is the FSM's OnApply hook: it counts a command applied by this
// node, with the Placement error code when it was rejected.
func (m *Metrics) Applied(kind string, err error) {
	if m == nil {
		return
	}
	result, code := outcome(err)
	m.fsmApplied.WithLabelValues(kind, result, code).Inc()
}

func outcome(err error) (result, code string) {
	if err == nil {
		return "ok", ""
	}
	var se *state.Error
	if !errors.As(err, &se) {
		return "error", ""
	}
	switch se.Kind {
	case state.NotFound:
		result = "not_found"
	case state.Conflict:
		result = "conflict"
	default:
		result = "bad_request"
	}
	return result, se.Code
}

// Backend is what the API proposes commands to and reads from (the
// cluster node); the same as httpapi.Backend.
type Backend interface {
	Apply(ctx context.Context, cmd state.Command) (any, error)
	Read(ctx context.Context, opts backend.ReadOptions) (*state.Store, error)
}

// Backend wraps b so that every proposal is timed and its outcome counted.
func (m *Metrics) Backend(b Backend) Backend {
	if m == nil {
		return b
	}
	return &timedBackend{Backend: b, m: m}
}

type timedBackend struct {
	Backend
	m *Metrics
}

func (t *timedBackend) Apply(ctx context.Context, cmd state.Command) (any, error) {
	start := time.Now()
	v, err := t.Backend.Apply(ctx, cmd)
	kind := cmd.Kind()
	var se *state.Error
	outcome := "applied"
	switch {
	case err == nil:
	case errors.As(err, &se):
		outcome = "rejected"
	case errors.Is(err, backend.ErrNotLeader):
		outcome = "not_leader"
	case errors.Is(err, backend.ErrUnknownOutcome):
		outcome = "unknown_outcome"
	default:
		outcome = "error"
	}
	t.m.proposals.WithLabelValues(kind, outcome).Inc()
	if outcome == "applied" || outcome == "rejected" {
		t.m.proposalDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	}
	return v, err
}
