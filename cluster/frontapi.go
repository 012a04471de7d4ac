package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"time"

	"github.com/hashicorp/raft"
)

// What the HTTP front (cluster/front) uses of the node besides the API's
// Apply and Read, membership (membership.go) and status (status.go): the
// front never reaches into the node's fields, and the node never imports
// the front. A follower's linearizable reads ask the leader's front for a
// read index (which the leader's node gives with ReadIndex) and wait for
// it with Confirm; bounded reads look at SinceConfirmed; forwarding waits
// on LeaderChanges; the probes look at Progress.

// LeaderChanges returns a channel closed when this node next sees the
// leader change (to another node, or to none). Take it before looking at
// Leader, so that no change is missed.
func (n *Node) LeaderChanges() <-chan struct{} { return n.leaderChanges() }

// ReadIndex is the leader's side of a follower's read index: the commit
// index, noted once leadership is confirmed for reads begun before the
// call (readindex.go). asker is the follower's id and askerTerm the term
// it says it was in when it asked ("" and 0: unknown). ErrNotLeader when
// this node does not lead or cannot confirm that it does.
func (n *Node) ReadIndex(ctx context.Context, asker string, askerTerm uint64) (uint64, error) {
	return n.readIndex(ctx, raft.ServerID(asker), askerTerm)
}

// Confirm confirms this node's state with a read index that fetch gets
// from the leader: it notes the time, waits up to wait for the state to
// include the index fetch returns, and then counts it as the node's newest
// confirmation (readindex.go), which bounded reads and SinceConfirmed go
// by.
func (n *Node) Confirm(fetch func() (uint64, error), wait time.Duration) error {
	asked := sinceBoot()
	index, err := fetch()
	if err != nil {
		return err
	}
	ctx, stop := context.WithTimeout(context.Background(), wait)
	defer stop()
	if err := n.waitState(ctx, index); err != nil {
		return err
	}
	n.noteConfirmed(asked)
	return nil
}

// SinceConfirmed is the age of this node's newest confirmation (a read
// barrier, or a read index its state has reached); false when it has had
// none since it started.
func (n *Node) SinceConfirmed() (time.Duration, bool) { return n.sinceConfirmed() }

// Term is this node's current Raft term.
func (n *Node) Term() uint64 { return n.raft.CurrentTerm() }

// LastContact is when this node last heard from a leader (zero: never).
func (n *Node) LastContact() time.Time { return n.raft.LastContact() }

// Progress is how far a node has got with the log.
type Progress struct {
	State  string // Raft's state: Follower, Candidate, Leader, Shutdown
	Commit uint64 // the commit index this node knows
	// Handed is Raft's applied index: entries handed to the state machine,
	// which may still be working on them.
	Handed uint64
	// Applied is the last entry the state machine finished, Applying the
	// one it is working on (0: none).
	Applied, Applying uint64
}

// Progress reports how far this node has got with the log.
func (n *Node) Progress() Progress {
	return Progress{State: n.raft.State().String(), Commit: n.raft.CommitIndex(), Handed: n.raft.AppliedIndex(),
		Applied: n.meta.applied.Load(), Applying: n.meta.applying.Load()}
}

// ApplyTimeout bounds how long a command waits to be enqueued and for a
// leader (Config.ApplyTimeout); the front bounds its own waits on the
// leader with it.
func (n *Node) ApplyTimeout() time.Duration { return n.cfg.ApplyTimeout }

// APITLS is Config.APITLS: nil when the members' APIs speak plain HTTP.
func (n *Node) APITLS() *tls.Config { return n.cfg.APITLS }

// PeerURL is the URL of path on the API of the member at addr (host:port):
// members all serve HTTPS, or all plain HTTP (Config.APITLS).
func (n *Node) PeerURL(addr, path string) string {
	scheme := "http"
	if n.cfg.APITLS != nil {
		scheme = "https"
	}
	return scheme + "://" + addr + path
}

// Region is this node's region label (Config.Region).
func (n *Node) Region() string { return n.cfg.Region }

// JoinRequest is the request that adds this node to a cluster, as a
// voter or not: its addresses, labels, build and secret ids.
func (n *Node) JoinRequest(nonVoter bool) JoinRequest {
	build, reads := n.BuildReport()
	return JoinRequest{ID: n.cfg.NodeID, RaftAddr: n.RaftAddr(), HTTPAddr: n.cfg.HTTPAddr, NonVoter: nonVoter,
		Region: n.cfg.Region, Zone: n.cfg.Zone, BuildVersion: build, Reads: reads, SecretIDs: n.cfg.SecretIDs}
}

// Go runs fn in a goroutine until the node stops: stop is closed when
// Shutdown begins, and Shutdown waits for fn to return before it stops
// Raft. Call it before Shutdown.
func (n *Node) Go(fn func(stop <-chan struct{})) {
	n.done.Add(1)
	go func() {
		defer n.done.Done()
		fn(n.stop)
	}()
}

// HasState reports whether this node has any Raft state: a log entry, a
// snapshot or a term (a fresh data dir has none).
func (n *Node) HasState() bool {
	return n.raft.LastIndex() > 0 || n.raft.CurrentTerm() > 0
}

// BootstrapVoters makes a node without Raft state the first member of a
// cluster of voters (serve --bootstrap-expect: every listed node writes
// the same configuration, which hashicorp/raft documents as safe). A node
// that has state already is left as it is.
func (n *Node) BootstrapVoters(voters []raft.Server) error {
	err := n.raft.BootstrapCluster(raft.Configuration{Servers: voters}).Error()
	if errors.Is(err, raft.ErrCantBootstrap) {
		return nil
	}
	if err == nil {
		n.cfg.Logger.Info("bootstrapped a new cluster", "voters", len(voters))
	}
	return err
}

// Snapshot is a snapshot of the placement state as of now
// (fsm.WriteSnapshot's format, what `placementd snapshot` saves).
func (n *Node) Snapshot() (raft.FSMSnapshot, error) { return n.fsm.Snapshot() }

// SharedRounds runs a check in rounds shared by concurrent callers, each
// caller served by a round begun after it joined (rounds.go): the node's
// reads share leadership checks so, and a follower's front its rounds of
// read index.
type SharedRounds struct{ rounds *sharedRounds }

// NewSharedRounds shares the rounds of run.
func NewSharedRounds(run func() error) *SharedRounds {
	return &SharedRounds{newSharedRounds(func() (uint64, error) { return 0, run() })}
}

// Join waits for the result of a round that starts after the call.
func (r *SharedRounds) Join(ctx context.Context) error {
	_, err := r.rounds.join(ctx)
	return err
}
