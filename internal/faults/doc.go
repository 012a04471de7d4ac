// Package faults is a Jepsen-style fault-injection harness for placementd:
// it runs 3- or 5-node clusters as separate processes on loopback
// addresses (127.0.0.x), drives a Placement workload through every node
// while nemeses kill, pause, partition, wipe and restart nodes and move
// leadership, records every operation's invocation and completion (ok,
// refused, or unknown), and checks the history: linearizability with
// porcupine over the model in internal/faults/model, and invariants once
// the faults are healed (acknowledged writes present, capacity never
// exceeded, identical state on every node, unknown writes applied whole
// or not at all, no node exiting by itself).
//
// The tests in this package run a short version (go test, skipped with
// -short), prove the harness catches a broken build, and run the soak
// (make fault-soak); loadsoak.go is the load soak (make soak).
//
// It drives real processes (internal/testcluster's Proc) over HTTP, and
// imports cluster/front only for the read-level header names it sends; it must
// not import fsm or httpapi itself (it depends on fsm only through
// internal/testcluster, whose in-process half it does not use), and
// nothing but tests and benchmarks may import it.
package faults
