// Package httpguard holds the limits that keep one placementd node's HTTP
// servers up under hostile or runaway clients: the servers' read, write
// and idle timeouts (Limits.Server), a cap on open connections per node
// and per client address (Listen), and admission slots for expensive
// requests (Admission).
//
// It knows nothing of Placement: the API (package httpapi) decides which
// requests take an admission slot and how a refusal reads, and
// cmd/placementd wires the servers and listeners. It imports only the
// standard library; it must not import httpapi, cluster or fsm.
package httpguard
