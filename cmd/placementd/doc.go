// Command placementd serves the OpenStack Placement API from a Raft
// replicated state machine. See README.md and docs/.
//
// It is the one place where the packages are wired together: flags and
// PLACEMENTD_* variables, the cluster node, the FSM, the HTTP API with
// its policy and metrics, and the snapshot, export and import commands.
// Nothing may import it, and it must not import test-only packages
// (internal/..., bench/...): they are not shipped.
package main
