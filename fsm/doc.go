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
// The FSM holds the current version of the state (a state.Store that never
// changes once published). Apply builds the next version from it, all the
// entry's commands at once, and swaps it in with an atomic pointer store.
// Readers (Read, Version) take a version without any lock and may keep it
// as long as they need: a long read holds up no write, and sees one
// consistent state throughout. Snapshot only takes the current version;
// Persist serialises it while later entries are applied.
package fsm
