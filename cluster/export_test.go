package cluster

import (
	"bytes"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// Raft and FSM give the tests of this directory (package cluster_test
// too) the node's Raft and state machine, which no other package reaches.
func (n *Node) Raft() *raft.Raft { return n.raft }

func (n *Node) FSM() *fsm.FSM { return n.fsm }

// RaiseClusterVersionNow runs the leader's raise of the cluster version
// at once (maintain does every second), so a test can tell that it chose
// not to raise.
func (n *Node) RaiseClusterVersionNow() error { return n.raiseClusterVersion() }

// SnapshotSectionVersion is the cluster section version a Raft snapshot
// of this node's state would be written in now.
func (n *Node) SnapshotSectionVersion() (int, error) {
	snap, err := n.meta.Snapshot()
	if err != nil {
		return 0, err
	}
	defer snap.Release()
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		return 0, err
	}
	version, _, _, err := fsm.ReadClusterSection(&buf)
	return version, err
}
