// Package metrics exposes a placementd node's Prometheus metrics: the API's
// requests, the Raft node, the commands its state machine applies, the size
// of the placement state and allocation-candidate searches, plus the Go
// runtime and process collectors. Names follow Prometheus conventions:
// placementd_ prefix, base units (seconds, bytes), _total for counters.
//
// The package only observes: the API reports requests through
// httpapi.Config.Observer, the FSM through its OnApply hook, and the Raft
// node is read at scrape time. A nil *Metrics ignores every observation.
//
// It imports cluster, cluster/backend and fsm (the node, its errors and
// the state it reads at scrape time; the node through its exported
// methods only) and must not import httpapi or cluster/front: the API reports to it through the
// httpapi.Observer interface, which cmd/placementd wires, so the API does
// not depend on Prometheus nor metrics on the API.
package metrics
