// Package fsm is the thin adapter between Raft and the placement state in
// fsm/state: it encodes commands into log entries (a versioned envelope),
// decodes and applies them in order, and takes and restores snapshots.
//
// A log entry is JSON: {"v":1,"k":kind,"t":time,"p":payload}. The proposing
// node fills in the time; Apply never reads a clock. A batch entry
// (version 2, written by the cluster's group commit) is
// {"v":2,"k":"batch","p":[entry,entry,...]}: two or more single-command
// entries, each with its own time, applied in order as if they were
// consecutive entries, with one Result each. An entry that cannot be
// decoded stops the node (panic) rather than let replicas diverge.
//
// Readers call Read, which holds a read lock over the state for the
// duration of the callback; Apply holds the write lock while one entry's
// commands mutate the state.
package fsm
