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
package state
