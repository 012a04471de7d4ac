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
// Readers and the single writer are serialised by the caller (fsm.FSM holds
// a RWMutex); Store methods themselves do no locking.
//
// Some stored values are shared and so never changed in place: a write
// replaces them. Consumers and their allocation slices are shared with
// snapshot images (written while later commands apply), and providers with
// the same traits share one trait map. Strings that recur across millions
// of records (trait and aggregate names, projects, users, the provider
// uuids and classes in allocations) are kept once. At 100,000 providers and
// a million consumers this is what keeps the state near 0.7 GB.
package state
