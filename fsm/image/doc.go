// Package image is the body of a snapshot file (format v1): the
// gzip-compressed JSON of state.Image, written and read one provider and
// consumer at a time so that a large state is never held twice. It also
// computes the state digest (the SHA-256 of that JSON without the log
// index), which every command showing a digest uses.
//
// It belongs to package fsm, which owns every persisted format: the
// snapshot file's header and its version are fsm's (fsm.WriteSnapshot,
// fsm.ReadSnapshot), which chooses the body decoder by version and
// refuses versions it does not know; this package never sees the header.
// It is a package of its own so that the digest is usable without the
// Raft adapter (internal/statecheck, fsm's own tests, the migration
// tools' tests).
//
// It imports fsm/state only, and must not import fsm, cluster, httpapi,
// snapshot/... (the migration tools) or hashicorp/raft.
package image
