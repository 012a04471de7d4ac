//go:build faults_broken_reads

package front

// A deliberately broken build for the fault harness: every node, follower
// or deposed leader, answers every read from its local state without the
// read barrier, as if each client had asked for a stale read.
const brokenLocalReads = true
