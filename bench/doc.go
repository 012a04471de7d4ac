// Package bench holds placementd's benchmarks (go test -bench . ./bench/):
// the read barrier, follower reads, the FSM's Apply, allocation
// candidates and bounded searches, over real in-process nodes; and, in
// its subdirectories, the load tools and their figures (README.md,
// claims, cmd/*, loadgen, compare.sh for `make bench-compare`).
//
// Only this package's tests are code; they may import any package.
// Nothing outside bench/ may import bench or its subpackages: they
// measure placementd from outside and are not part of the server.
package bench
