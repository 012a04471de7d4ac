package cluster

import (
	"context"
	"errors"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Fresh acknowledgements: what confirms leadership for a read.
//
// hashicorp/raft's VerifyLeader counts the next successful reply each
// follower's replication goroutine processes, whenever its request was sent.
// A leader frozen for seconds (SIGSTOP, a VM pause, a long GC) wakes with
// replies to heartbeats it sent before the freeze waiting in its sockets; if
// a read's verify registers before those are processed, they confirm a
// leadership that a newer term has already ended, and the read misses
// writes the new leader acknowledged meanwhile (etcd-io/etcd#20418 is the
// same class of bug).
//
// ackTracker closes that gap without changing raft. It sits between raft
// and the transport and numbers every synchronous AppendEntries (heartbeats
// and non-pipelined appends) as it is sent. A reply counts for a peer only
// if it accepted the request's term, and it is tied to its request because
// the transport call returns the reply to the request it sent (one request
// per pooled connection, or one response channel per in-memory RPC). A read
// round notes the sequence number, then asks raft for a verify, which makes
// every follower's heartbeat goroutine send a heartbeat after it: the round
// is confirmed when a quorum of voters (counting this node) accepted our
// term in replies to requests numbered after the mark, and refused as soon
// as any reply carries a newer term.
//
// Why that is safe: suppose a write was acknowledged, before the read
// started, by a leader of a newer term T'. A quorum Q1 had then moved to a
// term >= T'. Our confirming quorum Q2 accepted our term T < T' in requests
// sent after the read started, so when each member of Q2 answered, its term
// was still <= T; terms never decrease, so no member of Q2 had reached T'
// before the read started, and Q1 and Q2 would not intersect: impossible
// for two majorities. Writes acknowledged in our own term are at or below
// the commit index the read notes first; earlier terms' writes are covered
// by the barrier each leader runs once per term (termBarrier). No clock is
// involved, so a pause cannot stretch anything.

// ackTracker records, per peer, the newest request whose reply accepted the
// term it was sent in.
type ackTracker struct {
	seq atomic.Uint64 // last sequence number given to an AppendEntries
	// exposed is the highest index this node has told another server is
	// committed (an AppendEntries' commit index, an installed snapshot's
	// index), noted before the request leaves: no other server's state
	// machine can have applied an entry of this node's terms above it
	// (see Node.readIndex).
	exposed atomic.Uint64

	mu   sync.Mutex
	acks map[raft.ServerID]peerAck
	// newer is, per peer, the newest request whose reply reported a term
	// above the request's (term: the reply's). Only a round that began
	// before that request was sent fails for it: a reply to an older
	// request says nothing about now, and a peer may hold a term the
	// voters never adopted (its pre-vote passed, its vote was refused;
	// raft does not adopt that term when it steps down), so one global
	// mark would fail every read until the leader's own term passed it.
	newer map[raft.ServerID]peerAck
	wake  chan struct{} // closed (and replaced) when anything above changes
}

// peerAck is the newest accepted request to one peer.
type peerAck struct {
	seq  uint64
	term uint64
}

func newAckTracker() *ackTracker {
	return &ackTracker{acks: map[raft.ServerID]peerAck{}, newer: map[raft.ServerID]peerAck{}, wake: make(chan struct{})}
}

// mark returns a sequence number below every request sent from now on.
func (a *ackTracker) mark() uint64 { return a.seq.Load() }

// record notes the reply to the request numbered seq.
func (a *ackTracker) record(id raft.ServerID, seq uint64, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case resp.Term > req.Term:
		if cur := a.newer[id]; seq > cur.seq {
			a.newer[id] = peerAck{seq: seq, term: resp.Term}
		}
	case resp.Term == req.Term && resp.Success:
		if cur := a.acks[id]; seq > cur.seq {
			a.acks[id] = peerAck{seq: seq, term: req.Term}
		}
	default:
		return
	}
	a.signal()
}

// signal wakes every waiter; a.mu must be held.
func (a *ackTracker) signal() {
	close(a.wake)
	a.wake = make(chan struct{})
}

// poke wakes the waiters so they re-check raft's state.
func (a *ackTracker) poke() {
	a.mu.Lock()
	a.signal()
	a.mu.Unlock()
}

var errNewerTerm = errors.New("a peer answered with a newer term")

// quorum reports whether the voters other than self that accepted term in
// replies to requests numbered above from, plus self if it votes, are a
// majority of voters. It also returns the channel that is closed at the
// next change, and errNewerTerm once a reply to a request numbered above
// from showed a term above term.
func (a *ackTracker) quorum(self raft.ServerID, voters []raft.ServerID, term, from uint64) (bool, <-chan struct{}, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	votes := 0
	for _, id := range voters {
		if id == self {
			votes++
			continue
		}
		if nw := a.newer[id]; nw.seq > from && nw.term > term {
			return false, nil, errNewerTerm
		}
		if ack := a.acks[id]; ack.term == term && ack.seq > from {
			votes++
		}
	}
	return votes > len(voters)/2, a.wake, nil
}

// expose notes that another server is about to learn that index is
// committed.
func (a *ackTracker) expose(index uint64) {
	for {
		cur := a.exposed.Load()
		if index <= cur || a.exposed.CompareAndSwap(cur, index) {
			return
		}
	}
}

// ackTransport is a raft.Transport that reports AppendEntries replies to an
// ackTracker. Pipelined appends are not tracked (their replies are not tied
// to a round here); a round always gets fresh heartbeats. Every request
// that tells a peer what is committed (appends, pipelined or not, and
// snapshots) is noted as exposed first.
type ackTransport struct {
	raft.Transport
	acks *ackTracker
}

func (t *ackTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	t.acks.expose(args.LeaderCommitIndex)
	seq := t.acks.seq.Add(1)
	err := t.Transport.AppendEntries(id, target, args, resp)
	if err == nil {
		t.acks.record(id, seq, args, resp)
	}
	return err
}

func (t *ackTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return exposingPipeline{p, t.acks}, nil
}

func (t *ackTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	t.acks.expose(args.LastLogIndex)
	return t.Transport.InstallSnapshot(id, target, args, resp, data)
}

// exposingPipeline notes the commit index of each pipelined append.
type exposingPipeline struct {
	raft.AppendPipeline
	acks *ackTracker
}

func (p exposingPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	p.acks.expose(args.LeaderCommitIndex)
	return p.AppendPipeline.AppendEntries(args, resp)
}

// Close closes the wrapped transport if it can be closed (raft.WithClose).
func (t *ackTransport) Close() error {
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

// ackTransportPreVote keeps pre-vote support visible to raft, which looks
// for raft.WithPreVote on the transport it is given.
type ackTransportPreVote struct{ *ackTransport }

func (t ackTransportPreVote) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}

// trackAcks wraps trans so that its AppendEntries replies reach acks.
func trackAcks(trans raft.Transport, acks *ackTracker) raft.Transport {
	t := &ackTransport{Transport: trans, acks: acks}
	if _, ok := trans.(raft.WithPreVote); ok {
		return ackTransportPreVote{t}
	}
	return t
}

// confirmLeadership runs one confirmation round (see above): it succeeds,
// returning the term it confirmed, once a quorum of voters accepted this
// node's current term in replies to requests sent after the round began.
// The term is the one current when the round starts, which may be newer
// than the term a read noted its index in: the caller compares them
// (readIndex). The round sends those requests
// itself: a heartbeat (an AppendEntries with no entries and no log
// position, exactly what raft's own heartbeat goroutine sends) to every
// other voter, again after a short pause while one fails. Raft's own
// heartbeats may be in flight or paced; not waiting for them makes a round
// cost one round trip. It fails with ErrNotLeader when this node stops
// leading or changes term, when a reply shows a newer term, or when no
// quorum answers within the apply timeout. A leader cut off from a quorum
// steps down by itself after the leader lease timeout, so a round fails
// that soon in a partition; the bound only caps the unforeseen.
func (n *Node) confirmLeadership(ctx context.Context) (uint64, error) {
	if hook := n.roundStarts.Load(); hook != nil {
		(*hook)()
	}
	if n.raft.State() != raft.Leader {
		return 0, ErrNotLeader
	}
	term := n.raft.CurrentTerm()
	cfut := n.raft.GetConfiguration()
	if err := cfut.Error(); err != nil {
		return 0, ErrNotLeader
	}
	self := raft.ServerID(n.cfg.NodeID)
	var voters []raft.ServerID
	var peers []raft.Server
	for _, s := range cfut.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			voters = append(voters, s.ID)
			if s.ID != self {
				peers = append(peers, s)
			}
		}
	}
	from := n.acks.mark()
	rctx, cancel := context.WithTimeout(ctx, n.cfg.ApplyTimeout)
	defer cancel()
	for _, p := range peers {
		go n.heartbeatUntil(rctx, p, term)
	}
	for {
		if n.raft.State() != raft.Leader || n.raft.CurrentTerm() != term {
			return 0, ErrNotLeader
		}
		ok, wake, err := n.acks.quorum(self, voters, term, from)
		if err != nil {
			return 0, ErrNotLeader
		}
		if ok {
			return term, nil
		}
		select {
		case <-wake:
		case <-rctx.Done():
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, ErrNotLeader
		case <-n.stop:
			return 0, ErrNotLeader
		}
	}
}

// heartbeatUntil sends heartbeats of term to p until one is answered or
// ctx ends; the ack transport records the answer.
func (n *Node) heartbeatUntil(ctx context.Context, p raft.Server, term uint64) {
	local := n.transport.EncodePeer(raft.ServerID(n.cfg.NodeID), n.transport.LocalAddr())
	req := raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: n.protocolVersion, ID: []byte(n.cfg.NodeID), Addr: local},
		Term:      term,
		Leader:    local,
	}
	pause := 10 * time.Millisecond
	for ctx.Err() == nil {
		var resp raft.AppendEntriesResponse
		if n.transport.AppendEntries(p.ID, p.Address, &req, &resp) == nil {
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// watchState wakes confirmation rounds whenever raft's state changes, so a
// round notices at once that this node stepped down.
func (n *Node) watchState() {
	defer n.done.Done()
	obs, deregister := n.observe(4, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.RaftState, raft.LeaderObservation:
			return true
		}
		return false
	})
	defer deregister()
	for {
		select {
		case <-n.stop:
			return
		case <-obs:
			n.acks.poke()
		}
	}
}
