package cluster

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hashicorp/raft"
)

// What a node knows about the freshness of its own state.
//
// A confirmation is a pair (q, K): at q, on this node's clock, the node
// asked for a read index; the leader answered K after noting its commit
// index and confirming its leadership with fresh acknowledgements
// (readacks.go); and this node's state machine has applied every entry up
// to K. Every write acknowledged (to anyone, through any node) before q is
// at or below K, by the argument of the read barrier: the leader noted K
// after q, so writes of its own term acknowledged before q are at or below
// K, the barrier it ran once in its term covers earlier terms, and a newer
// term's writes are excluded by the quorum that accepted its term in
// replies to heartbeats sent after it noted K. So the state includes every
// write acknowledged before q, and since a state only moves forward, it
// still does later. A leader confirms itself in the same way
// (ReadBarrier), its own commit index standing for K.
//
// The newest confirmation's q is all a bounded read needs: an answer
// served at t when t - q <= bound includes every write acknowledged before
// t - bound. q is the time the question was sent, not the time the answer
// came back, so the trip's length counts against the bound; and the clock
// is CLOCK_BOOTTIME, which keeps counting while the process is stopped or
// the machine suspended, so a pause only makes a confirmation older.
// Raft's heartbeats cannot serve: hashicorp/raft's heartbeats carry no
// commit index, a follower's log may lag far behind the heartbeats it
// gets, and a deposed leader that does not know it yet still sends them.

// stateIndex is the highest index such that the state machine's state
// includes every entry up to it. The state machine records the last
// command it finished; entries that never reach it (no-ops, barriers,
// configuration changes) change nothing, so those that follow it, up to
// what raft handed over, count too. Raft's own applied index is not
// enough: it counts entries sent to the state machine, which may still be
// working on earlier ones.
func (n *Node) stateIndex() uint64 {
	done := n.meta.applied.Load()
	handed := n.raft.AppliedIndex()
	var l raft.Log
	for done < handed {
		if err := n.logs.GetLog(done+1, &l); err != nil || l.Type == raft.LogCommand {
			break
		}
		done++
	}
	return done
}

// waitState returns once the state includes every entry up to index.
// Commands wake it as they apply; entries that never reach the state
// machine are noticed by a slow tick.
func (n *Node) waitState(ctx context.Context, index uint64) error {
	var tick *time.Ticker
	for {
		n.appliedMu.Lock()
		wake := n.applied
		n.appliedMu.Unlock()
		if n.stateIndex() >= index {
			return nil
		}
		if tick == nil {
			tick = time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
		}
		select {
		case <-wake:
		case <-tick.C:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// readIndex is the leader's side of a read index: its commit index, noted
// after the barrier of its term, once a quorum of voters is known to have
// been in no newer term after the read began. Normally that is a round of
// fresh acknowledgements begun after the index was noted (verifyLeader,
// shared with the leader's own reads). A follower asking for reads that
// began before it asked is itself such a voter when it says it was in
// this term as it asked (askerTerm): with this node it makes a quorum of
// a 3-voter cluster, and the read index then costs no round of its own
// (see docs/design.md). ErrNotLeader when this node does not lead or
// cannot confirm that it does; errTermMoved (an ErrNotLeader) when its
// term changed between the barrier, the note and the confirmation.
//
// Every index returned was the commit index at a moment when this node
// led term T, after T's barrier, and a quorum acknowledged a message of
// term T sent after that moment: the barrier's term, the noted term and
// the confirmed term must all be T. A round confirms the term current
// when it starts, which is newer than the note's when this node lost and
// won leadership in between; its quorum then says nothing about the
// note's moment (writes of the term in between may be missing).
func (n *Node) readIndex(ctx context.Context, asker raft.ServerID, askerTerm uint64) (uint64, error) {
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	ready, err := n.termBarrier(ctx)
	if err != nil {
		return 0, err
	}
	term := n.raft.CurrentTerm()
	commit := n.raft.CommitIndex()
	if term != ready {
		return 0, errTermMoved
	}
	if askerTerm == term && n.quorumWith(asker) {
		// This node's own acknowledgement: leading in the same term after
		// the index was noted.
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			return 0, ErrNotLeader
		}
		return commit, nil
	}
	if n.soleVoter() {
		// The round's quorum would be this node alone (confirmLeadership
		// counts itself): what it establishes, leading in the same term
		// after the index was noted, is known here without the round's
		// two goroutine hand-offs, which under load were most of a read's
		// wait.
		exposed := n.acks.exposed.Load()
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			return 0, ErrNotLeader
		}
		if asker == "" {
			// This node's own read need not wait for the entries
			// committed but not applied yet: none of them was
			// acknowledged (this node acknowledges a write once its
			// state machine has applied it), and no other server has
			// applied one (none was told of a commit above exposed).
			// See docs/design.md "A sole voter's own reads".
			return exposed, nil
		}
		return commit, nil
	}
	confirmed, err := n.verifyLeader(ctx)
	if err != nil {
		return 0, err
	}
	if confirmed != term {
		return 0, errTermMoved
	}
	return commit, nil
}

// errTermMoved: this node's term changed while a read index was noted and
// confirmed. The node may lead again; a new read index is then good.
var errTermMoved = fmt.Errorf("%w: the term changed while the read index was confirmed", ErrNotLeader)

// soleVoter reports whether this node is the only voter of the latest
// configuration (committed or not).
func (n *Node) soleVoter() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	voters := 0
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			if s.ID != raft.ServerID(n.cfg.NodeID) {
				return false
			}
			voters++
		}
	}
	return voters == 1
}

// quorumWith reports whether this node and voter id are a majority of the
// voters.
func (n *Node) quorumWith(id raft.ServerID) bool {
	fut := n.raft.GetConfiguration()
	return fut.Error() == nil && pairIsQuorum(fut.Configuration(), raft.ServerID(n.cfg.NodeID), id)
}

// pairIsQuorum reports whether a and b are two voters of conf that make a
// majority of its voters.
func pairIsQuorum(conf raft.Configuration, a, b raft.ServerID) bool {
	if a == b {
		return false
	}
	voters, found := 0, 0
	for _, s := range conf.Servers {
		if s.Suffrage == raft.Voter {
			voters++
			if s.ID == a || s.ID == b {
				found++
			}
		}
	}
	return found == 2 && 2 > voters/2
}

// noteConfirmed records a confirmation asked for at q (sinceBoot) whose
// index the state now includes.
func (n *Node) noteConfirmed(q time.Duration) {
	for {
		cur := n.confirmed.Load()
		if int64(q) <= cur || n.confirmed.CompareAndSwap(cur, int64(q)) {
			return
		}
	}
}

// sinceConfirmed is the age of the newest confirmation; false when the
// node has had none since it started.
func (n *Node) sinceConfirmed() (time.Duration, bool) {
	q := n.confirmed.Load()
	if q == 0 {
		return 0, false
	}
	return sinceBoot() - time.Duration(q), true
}

// indexedSnapshots tells the state machine the index of every snapshot it
// restores: raft opens a snapshot here before handing it to Restore, at
// start and when installing one, and does not pass the index on.
type indexedSnapshots struct{ raft.SnapshotStore }

type indexedSnapshot struct {
	io.ReadCloser
	index uint64
}

func (s indexedSnapshots) Open(id string) (*raft.SnapshotMeta, io.ReadCloser, error) {
	meta, rc, err := s.SnapshotStore.Open(id)
	if err != nil {
		return nil, nil, err
	}
	return meta, &indexedSnapshot{ReadCloser: rc, index: meta.Index}, nil
}
