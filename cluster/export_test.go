package cluster

import (
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// Raft and FSM give the tests of this directory (package cluster_test
// too) the node's Raft and state machine, which no other package reaches.
func (n *Node) Raft() *raft.Raft { return n.raft }

func (n *Node) FSM() *fsm.FSM { return n.fsm }
