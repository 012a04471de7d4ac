// Package upstream reads the whole state of a running Placement service
// (OpenStack's, or placementd) through its public API into an export
// document, and compares two Placement services GET by GET. `placementd
// import --from` uses both: the first to load placementd, the second to
// verify it against the source (docs/migration.md).
//
// It imports snapshot/export and fsm/state and must not import fsm,
// fsm/image, cluster, httpapi or hashicorp/raft: it reads any Placement
// service through its public API only, as a client would.
package upstream
