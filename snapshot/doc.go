// Package snapshot encodes and decodes the body of a snapshot file: the
// gzip-compressed JSON of state.Image, written and read one provider and
// consumer at a time so that a large state is never held twice. It also
// computes the state digest (the SHA-256 of that JSON without the log
// index), which every command showing a digest uses.
//
// The snapshot file's header and its format version are package fsm's
// (fsm.WriteSnapshot, fsm.ReadSnapshot), which chooses the body decoder
// by version and refuses versions it does not know; this package never
// sees the header. It must not import fsm, cluster or httpapi.
package snapshot
