// Package proctest runs placementd nodes as separate processes for tests:
// building the binary, starting a node with its flags, killing, stopping,
// pausing and resuming it, wiping its data dir, and waiting for a cluster
// of them to be healthy and converged. It is a plain package (not a
// _test.go file) so that tests of several packages can share it: the
// cluster's integration tests and the fault-injection harness
// (cluster/faults). It is the multi-process half of the test harness
// (internal/testcluster is the in-process half; its Poll is how the waits
// here poll).
//
// It imports cluster (its operator API client), internal/wanlab (hosts in
// the WAN lab) and internal/testcluster (Poll), and must not import fsm or httpapi: its nodes are the
// real binary, seen only through its flags, HTTP and signals. Only tests
// and benchmarks may import it.
package proctest
