// Package testcluster is the one test harness every test of placementd
// starts its nodes with, in-process or as processes, so that cluster
// setup, waiting and comparing live in one place instead of being copied
// into each test file:
//
//   - WaitFor and Poll: wait for a condition with a deadline (never a fixed
//     sleep), failing with what was awaited and the condition's last error;
//     Retry for operations that may meet an election.
//   - OpenNode: a single bootstrapped node (real Raft, in-memory or on a
//     BoltDB data dir) that is leader when it returns; Serve puts a handler
//     on loopback HTTP.
//   - Cluster: N in-process nodes (real Raft over the in-memory transport,
//     which WrapTransport may wrap, the real API behind the real cluster
//     front on loopback HTTP): Start, Join, Leader, Followers, Stop and
//     Restart, Cut and Heal links, Converged (every node applied the same
//     state: digest compare).
//   - ProcCluster: N placementd processes (the real binary, over TCP) with
//     the same verbs: StartProcs, Leader, Followers, Healthy, Converged,
//     Kill, Stop, Restart; Proc is one process (start, kill, stop, pause,
//     resume, wipe, its log), Procs the same waits with a context for code
//     that cannot fail a test (internal/faults, benchmark commands), Binary
//     and Build build cmd/placementd, LabNode runs a node in a WAN lab host.
//   - Do: a Placement request as admin, with the answer read.
//   - Keystone: a stand-in for Keystone's token API (tokens it knows,
//     validations it can hold unanswered, the connections it counts);
//     WritePEM: a CA and a certificate it signed, as PEM files.
//
// It is imported by tests, the fault-injection harness and benchmark
// commands, never by the server's packages (internal/layering checks
// both). It may import cluster, cluster/front, fsm and internal/wanlab,
// and must not
// depend on httpapi, directly or not (httpapi's own tests use it: the
// caller hands Cluster its API); tests inside package cluster (internal
// tests) cannot use it (import cycle).
package testcluster
