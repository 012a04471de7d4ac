// Package testcluster is the test harness every test of placementd starts
// its nodes with, so that cluster setup, waiting and comparing live in one
// place instead of being copied into each test file:
//
//   - WaitFor and Poll: wait for a condition with a deadline (never a fixed
//     sleep), failing with what was awaited and the condition's last error.
//   - OpenNode: a single bootstrapped node (real Raft, in-memory or on a
//     BoltDB data dir) that is leader when it returns; Serve puts a handler
//     on loopback HTTP.
//   - Cluster: N in-process nodes (real Raft over the in-memory transport,
//     the real API behind the real cluster front on loopback HTTP): start,
//     join, find the leader, stop and restart, cut and heal links, wait
//     until every node applied the same state (digest compare).
//   - Do: a Placement request as admin, with the answer read.
//
// The multi-process half (placementd processes over TCP: build, start,
// kill, restart, pause, Leader, WaitHealthy, Converged) is cluster/proctest,
// which waits with Poll from here.
//
// It is imported by tests only (external _test packages of cluster, and
// tests of httpapi, snapshot, bench and cmd), never by production code. It
// may import cluster and fsm, and must not import httpapi (httpapi's own
// tests use it: the caller hands Cluster its API); tests inside package
// cluster (internal tests) cannot use it (import cycle).
package testcluster
