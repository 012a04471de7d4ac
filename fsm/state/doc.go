// Package state owns placementd's placement data and its indexes: resource
// providers and their trees, inventories, resource classes, traits,
// aggregates, consumers, consumer types and allocations.
//
// It is plain Go with no knowledge of Raft or HTTP. Every change is a
// Command whose Apply method runs inside the replicated state machine:
// Apply must be deterministic (no clock, randomness, map-order dependence or
// I/O). Timestamps and generated identifiers arrive in the command (Meta)
// from the node that proposed it. Apply checks everything first and mutates
// only when the whole command is valid, so a rejected command changes
// nothing; it returns either a value or an *Error carrying Placement's error
// code, which the HTTP layer maps to a status.
//
// Commands travel in log entries and the state Image in snapshots, as
// JSON written and read by package fsm, which owns those formats and
// holds the one table of command kinds (a new command is added there).
// Every field of a command, and of the image and the records in it,
// carries a json tag with the name it is stored under, so a Go rename
// changes nothing on disk; a new field needs its tag and a golden entry
// (fsm's tests fail without them).
//
// A Store is one version of the state, and a published version never
// changes: its maps and index sets are persistent (pmap.go: Set and
// Delete return a new map sharing all but the changed path), and every
// record reachable from it (providers with their inventories, trait,
// aggregate and usage maps; consumers and their allocation slices; usage
// totals) is replaced, never changed in place, by a later write. The
// writer (fsm.FSM, one at a time) applies commands to a copy of the
// version struct (Edit, then Apply per command); Apply keeps the struct
// as it was before the command and puts it back if the command is
// rejected, so a rejection changes nothing whatever the command did
// before failing. Inside one command a record is copied once
// (editProvider, editUsage) and then changed in place: no reader has seen
// the copy yet. Readers hold a version without any lock, for as long as
// they like, from any goroutine.
//
// Some stored values are shared, and so never changed at all: providers
// with the same traits share one trait map (a cache only the writer
// reads, traitCache), and strings that recur across millions of records
// (trait and aggregate names, projects, users, the provider uuids and
// classes in allocations) are kept once. At 100,000 providers and a
// million consumers this is what keeps the state small.
//
// It must not import hashicorp/raft, net/http, gorilla/mux, cluster,
// httpapi, fsm, fsm/image or snapshot/... (nor anything that does): the
// state is the domain alone, deterministic and testable without a node;
// fsm, its codec and the migration tools depend on it, never the
// reverse. internal/layering's test enforces this.
package state
