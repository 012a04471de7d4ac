//go:build !faults_broken_reads

package front

// brokenLocalReads is false in every real build. The fault harness
// (internal/faults) builds placementd with -tags faults_broken_reads to
// prove that its checker catches a node answering reads from its own,
// possibly stale, state without the read barrier.
const brokenLocalReads = false
