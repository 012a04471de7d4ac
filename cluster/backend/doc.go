// Package backend is what the cluster node promises the layers that
// serve the Placement API over it (httpapi.Backend, the HTTP front in
// cluster/front, the metrics' timed backend): the two errors a write can
// end in besides a rejection by the state (ErrNotLeader,
// ErrUnknownOutcome), the options a read is served with (ReadOptions:
// its level, its bound on staleness, and where the index of the state it
// was served from is reported), and the header with which the API marks a
// write refused before it reached the log (NotAppliedHeader), which the
// front of a follower reads to send the write on to the next leader.
//
// It is a leaf so that httpapi can name these without importing the
// node: it imports nothing of placementd (and no Raft), and every other
// package of the cluster may import it.
package backend
