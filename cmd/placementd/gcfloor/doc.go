// Package gcfloor tunes Go's garbage collector for a placementd process:
// while the live heap (mostly the placement state) is small, collections
// would otherwise come every few megabytes of request garbage, each
// re-marking the whole state, and make the slowest requests; Run raises
// GOGC so the heap may grow by a floor between collections, and lowers it
// for large states; a soft memory limit set with it makes that growth a
// bound even when the tuning runs late. `placementd serve` runs it (--gc-heap-floor-mb,
// DefaultFloorMB); the benchmarks in bench/ run it too, so that they
// measure the process as it is served.
//
// It imports only the standard library, nothing of placementd (a rule of
// internal/layering), so that bench/ can run it as serve does.
package gcfloor
