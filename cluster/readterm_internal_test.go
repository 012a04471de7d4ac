package cluster

import (
	"context"
	"errors"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

// memVoters is a cluster of in-memory nodes whose transports the test cuts
// and heals.
type memVoters struct {
	t     *testing.T
	nodes map[string]*Node
	trans map[string]*raft.InmemTransport
	mu    sync.Mutex
	wraps map[string]*cuttable
}

// startMemVoters opens ids[0] as a new cluster and adds the others as
// voters, in that order (the configuration order). tune gives each node's
// raft configuration, machine its state machine (nil: a new one).
func startMemVoters(t *testing.T, ids []string, plain bool, tune func(id string) func(*raft.Config), machine func(id string) *fsm.FSM) *memVoters {
	t.Helper()
	c := &memVoters{t: t, nodes: map[string]*Node{}, trans: map[string]*raft.InmemTransport{}, wraps: map[string]*cuttable{}}
	for _, id := range ids {
		_, tr := raft.NewInmemTransport(raft.ServerAddress(id))
		c.trans[id] = tr
		c.wraps[id] = &cuttable{InmemTransport: tr, cut: map[raft.ServerID]bool{}}
	}
	for _, a := range ids {
		for _, b := range ids {
			if a != b {
				c.trans[a].Connect(raft.ServerAddress(b), c.trans[b])
			}
		}
	}
	for _, id := range ids {
		f := fsm.New()
		if machine != nil {
			if m := machine(id); m != nil {
				f = m
			}
		}
		n, err := Open(Config{NodeID: id, Transport: c.wraps[id], InMemory: true, Bootstrap: id == ids[0],
			Tune: tune(id), ApplyTimeout: 10 * time.Second, Logger: hclog.NewNullLogger(), PlainElections: plain,
			HTTPAddr: "127.0.0.1:1"}, f)
		if err != nil {
			t.Fatal(err)
		}
		c.nodes[id] = n
		t.Cleanup(func() { n.Shutdown() })
	}
	first := c.nodes[ids[0]]
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := first.WaitLeader(ctx); err != nil || !first.IsLeader() {
		t.Fatalf("%s does not lead: %v", ids[0], err)
	}
	for _, id := range ids[1:] {
		if err := first.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(id), 0, 0).Error(); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range ids[1:] {
		waitUntil(t, func() bool { return c.nodes[id].raft.AppliedIndex() >= first.raft.AppliedIndex() })
	}
	return c
}

// isolate cuts id off from every other node, both ways.
func (c *memVoters) isolate(id string) { c.setCut(id, true) }

// heal connects id to every other node again.
func (c *memVoters) heal(id string) { c.setCut(id, false) }

func (c *memVoters) setCut(id string, cut bool) {
	for other, w := range c.wraps {
		if other == id {
			for peer := range c.wraps {
				if peer != id {
					w.set(raft.ServerID(peer), cut)
				}
			}
		} else {
			w.set(raft.ServerID(id), cut)
		}
	}
}

// leader is the node that leads in the highest term, or nil.
func (c *memVoters) leader() *Node {
	var lead *Node
	for _, n := range c.nodes {
		if n.IsLeader() && (lead == nil || n.raft.CurrentTerm() > lead.raft.CurrentTerm()) {
			lead = n
		}
	}
	return lead
}

// cuttable is an in-memory transport whose requests to cut peers fail at
// once; reply, when set, may rewrite an AppendEntries reply.
type cuttable struct {
	*raft.InmemTransport
	mu    sync.Mutex
	cut   map[raft.ServerID]bool
	reply func(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse)
	// hang, when open, makes a request to a cut peer wait until it closes
	// (a host that lost power: no answer, not a refusal) before failing.
	hang chan struct{}
}

var errCut = errors.New("cut off by the test")

// refuse fails a request to a cut peer, after hanging if the test asks.
func (w *cuttable) refuse() error {
	w.mu.Lock()
	hang := w.hang
	w.mu.Unlock()
	if hang != nil {
		<-hang
	}
	return errCut
}

func (w *cuttable) set(id raft.ServerID, cut bool) {
	w.mu.Lock()
	w.cut[id] = cut
	w.mu.Unlock()
}

func (w *cuttable) isCut(id raft.ServerID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cut[id]
}

func (w *cuttable) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	if w.isCut(id) {
		return w.refuse()
	}
	err := w.InmemTransport.AppendEntries(id, target, args, resp)
	w.mu.Lock()
	rewrite := w.reply
	w.mu.Unlock()
	if err == nil && rewrite != nil {
		rewrite(id, args, resp)
	}
	return err
}

func (w *cuttable) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	if w.isCut(id) {
		return nil, w.refuse()
	}
	p, err := w.InmemTransport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	return cutPipeline{AppendPipeline: p, w: w, id: id}, nil
}

// cutPipeline fails its appends once its peer is cut (raft's pipeline also
// sends an append every commit timeout, which would keep the peer in
// contact).
type cutPipeline struct {
	raft.AppendPipeline
	w  *cuttable
	id raft.ServerID
}

func (p cutPipeline) AppendEntries(args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	if p.w.isCut(p.id) {
		return nil, errCut
	}
	return p.AppendPipeline.AppendEntries(args, resp)
}

func (w *cuttable) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	if w.isCut(id) {
		return w.refuse()
	}
	return w.InmemTransport.RequestVote(id, target, args, resp)
}

func (w *cuttable) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	if w.isCut(id) {
		return w.refuse()
	}
	return w.InmemTransport.RequestPreVote(id, target, args, resp)
}

func (w *cuttable) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	if w.isCut(id) {
		return w.refuse()
	}
	return w.InmemTransport.TimeoutNow(id, target, args, resp)
}

// patient leaves elections to the test: no node notices a silent leader
// for a minute, and leader's lease outlasts the test, so that it keeps
// believing it leads while cut off (as a leader frozen or starved does).
func patient(leader string) func(id string) func(*raft.Config) {
	return func(id string) func(*raft.Config) {
		return func(rc *raft.Config) {
			rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = time.Minute, time.Minute, 100*time.Millisecond
			if id == leader {
				rc.LeaderLeaseTimeout = 50 * time.Second
			}
			rc.CommitTimeout = 5 * time.Millisecond
		}
	}
}

// quicken lets n campaign after 200 ms of silence.
func quicken(t *testing.T, n *Node) {
	t.Helper()
	rc := n.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
	if err := n.raft.ReloadConfig(rc); err != nil {
		t.Fatal(err)
	}
}

// A read index noted in one term must not be confirmed by a round of a
// later term (issue 32). The interleaving, 3 voters:
//
//  1. n1 leads term T, its term barrier done; it is cut off.
//  2. n2 and n3 elect a leader in T+1, which acknowledges W1 and W2.
//  3. A read on n1, which still believes it leads T, notes its commit
//     index (W1 and W2 not in it) and joins a round that has not started
//     (held at its start by the test).
//  4. The cut heals: n1 learns T+1 and receives W1 and W2; its state
//     machine is slow and holds after W1.
//  5. n1 is elected again (leadership transfer) in T+2.
//  6. The round starts and confirms T+2.
//
// The read must not answer from the state without W2: a read that answers
// before its deadline must see W2 (and while the state machine holds, it
// cannot), else it fails.
func TestReadIndexNotedInAnEarlierTerm(t *testing.T) {
	var holdArmed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unhold := func() { releaseOnce.Do(func() { close(release) }) }
	machine := func(id string) *fsm.FSM {
		if id != "n1" {
			return nil
		}
		f := fsm.New()
		f.OnApply = func(string, error) {
			if holdArmed.CompareAndSwap(true, false) {
				close(held)
				<-release
			}
		}
		return f
	}
	c := startMemVoters(t, []string{"n1", "n2", "n3"}, true, patient("n1"), machine)
	t.Cleanup(unhold) // before the nodes stop: raft waits for its state machine
	n1, n2, n3 := c.nodes["n1"], c.nodes["n2"], c.nodes["n3"]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	create := &state.CreateResourceClass{Name: "CUSTOM_W0"}
	if _, err := n1.Apply(ctx, create); err != nil {
		t.Fatal(err)
	}
	if err := n1.ReadBarrier(ctx); err != nil { // step 1: T's barrier is done
		t.Fatal(err)
	}
	termT := n1.raft.CurrentTerm()

	// Step 1-2: n1 cut off; n2 and n3 elect and acknowledge W1, W2.
	c.isolate("n1")
	quicken(t, n2)
	quicken(t, n3)
	var newLeader *Node
	waitUntil(t, func() bool {
		newLeader = c.leader()
		return newLeader != nil && newLeader != n1
	})
	for _, name := range []string{"CUSTOM_W1", "CUSTOM_W2"} {
		if _, err := newLeader.Apply(ctx, &state.CreateResourceClass{Name: name}); err != nil {
			t.Fatalf("write %s through the new leader: %v", name, err)
		}
	}
	if !n1.IsLeader() || n1.raft.CurrentTerm() != termT {
		t.Fatalf("n1 no longer believes it leads term %d; the scenario did not happen", termT)
	}

	// Step 3: the read on n1 notes its index and waits for a round that
	// the test holds at its start.
	entered, startRound := make(chan struct{}), make(chan struct{})
	var hookOnce sync.Once
	hook := func() {
		hookOnce.Do(func() {
			close(entered)
			<-startRound
		})
	}
	n1.roundStarts.Store(&hook)
	var startOnce sync.Once
	start := func() { startOnce.Do(func() { close(startRound) }) }
	t.Cleanup(start)
	// The deadline bounds the fixed read's wait: with the state machine
	// held, the new term's barrier cannot complete.
	rctx, rcancel := context.WithTimeout(ctx, 3*time.Second)
	defer rcancel()
	result := make(chan error, 1)
	go func() { result <- n1.ReadBarrier(rctx) }()
	select {
	case <-entered:
	case err := <-result:
		t.Fatalf("the read ended before its round started: %v", err)
	}

	// Step 4: the cut heals; n1 receives W1 and W2 and holds after W1.
	holdArmed.Store(true)
	c.heal("n1")
	w2 := newLeader.raft.LastIndex()
	waitUntil(t, func() bool { return n1.raft.CurrentTerm() > termT && n1.raft.LastIndex() >= w2 })
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("n1's state machine did not apply W1")
	}

	// Step 5: n1 is elected again.
	if err := newLeader.raft.LeadershipTransferToServer("n1", "n1").Error(); err != nil {
		t.Fatalf("leadership transfer to n1: %v", err)
	}
	waitUntil(t, func() bool { return n1.IsLeader() && n1.raft.CurrentTerm() >= termT+2 })

	// Step 6: the round starts, in n1's new term.
	start()
	err := <-result
	seen := false
	n1.fsm.Read(func(s *state.Store) { seen = s.Classes.Get("CUSTOM_W2") != nil })
	if err == nil && !seen {
		t.Fatal("a linearizable read on n1 answered from a state without W2, acknowledged before the read began: " +
			"the round of the new term confirmed an index noted in the old one")
	}
	t.Logf("the read: %v (W2 in the state: %v)", err, seen)

	// Once the state machine goes on, reads on n1 see W2.
	unhold()
	if err := n1.ReadBarrier(ctx); err != nil {
		t.Fatalf("a read after the state machine caught up: %v", err)
	}
	n1.fsm.Read(func(s *state.Store) { seen = s.Classes.Get("CUSTOM_W2") != nil })
	if !seen {
		t.Fatal("a read after the state machine caught up misses W2")
	}
}

// A peer that once answered with a term the voters never adopted (its
// pre-vote passed, its vote was refused) and then became unreachable must
// not fail every later read of the leader that saw that answer (issue 32):
// only a reply to a request sent after a round began fails that round.
func TestInflatedTermOfAnUnreachablePeer(t *testing.T) {
	tune := func(id string) func(*raft.Config) {
		return func(rc *raft.Config) {
			rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = time.Minute, time.Minute, 100*time.Millisecond
			if id == "n1" { // n1 campaigns again if it steps down; n2 and n3 never
				rc.HeartbeatTimeout, rc.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
			}
			rc.CommitTimeout = 5 * time.Millisecond
		}
	}
	c := startMemVoters(t, []string{"n1", "n2", "n3"}, true, tune, nil)
	n1 := c.nodes["n1"]
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n1.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	// n3's next answer to n1 carries a term 5 above n1's; then n3 is gone.
	w := c.wraps["n1"]
	var inflated atomic.Bool
	w.mu.Lock()
	w.reply = func(id raft.ServerID, req *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) {
		if id == "n3" && inflated.CompareAndSwap(false, true) {
			resp.Term, resp.Success = req.Term+5, false
			c.isolate("n3")
		}
	}
	w.mu.Unlock()
	waitUntil(t, inflated.Load)
	var lead *Node
	waitUntil(t, func() bool { lead = c.leader(); return lead != nil })
	if lead != n1 {
		t.Fatalf("%s leads; the scenario needs n1, which saw the inflated term", lead.cfg.NodeID)
	}
	if got := n1.raft.CurrentTerm(); got >= 5 {
		t.Fatalf("n1's term is %d: it passed the inflated term, the scenario proves nothing", got)
	}
	for i := 0; i < 20; i++ {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		err := n1.ReadBarrier(rctx)
		rcancel()
		if err != nil {
			t.Fatalf("read %d on the leader (term %d), n2 reachable, n3 gone after answering term+5: %v", i, n1.raft.CurrentTerm(), err)
		}
	}
}

// The ack tracker fails a round for a newer term only when the reply
// answers a request sent after the round's mark.
func TestNewerTermFailsOnlyLaterRounds(t *testing.T) {
	a := newAckTracker()
	voters := []raft.ServerID{"a", "b", "c"}
	send := func(id raft.ServerID, reqTerm, respTerm uint64, ok bool) {
		seq := a.seq.Add(1)
		a.record(id, seq, &raft.AppendEntriesRequest{Term: reqTerm}, &raft.AppendEntriesResponse{Term: respTerm, Success: ok})
	}
	before := a.mark()
	send("c", 3, 9, false) // c answers with an inflated term
	if _, _, err := a.quorum("a", voters, 3, before); !errors.Is(err, errNewerTerm) {
		t.Fatalf("a round begun before the reply: %v, want errNewerTerm", err)
	}
	after := a.mark()
	send("b", 3, 3, true)
	ok, _, err := a.quorum("a", voters, 3, after)
	if err != nil || !ok {
		t.Fatalf("a round begun after the reply, b accepting: ok %v err %v, want a quorum", ok, err)
	}
	send("c", 3, 9, false)
	if _, _, err := a.quorum("a", voters, 3, after); !errors.Is(err, errNewerTerm) {
		t.Fatalf("a newer term in reply to a request of the round: %v, want errNewerTerm", err)
	}
	if _, _, err := a.quorum("a", voters, 10, after); err != nil {
		t.Fatalf("a round of a term above the reply's: %v", err)
	}
}

// When the leader and the first voter of the election order (the
// starter) fail together, the next voter takes over a turn's slot after
// the starter's time instead of waiting on its doubled timers (issue 32):
// a survivor campaigns by 1.1 heartbeat timeouts plus a slot (at most half
// of one) of silence, where before none could before its doubled
// heartbeat timeout, and a survivor leads.
func TestFailoverWhenTheStarterDiesWithTheLeader(t *testing.T) {
	const hb = time.Second
	tune := func(string) func(*raft.Config) {
		return func(rc *raft.Config) {
			rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = hb, hb, hb/2
			rc.CommitTimeout = 5 * time.Millisecond
		}
	}
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	c := startMemVoters(t, ids, false, tune, nil)
	// Requests to the cut nodes go unanswered, as to hosts that lost
	// power, so that no probe finds the starter down in time.
	hang := make(chan struct{})
	t.Cleanup(func() { close(hang) })
	for _, w := range c.wraps {
		w.mu.Lock()
		w.hang = hang
		w.mu.Unlock()
	}
	n1 := c.nodes["n1"]
	// n1 leads; in configuration order n2 starts, n3..n5 wait.
	waitUntil(t, func() bool { return c.nodes["n2"].electionPlace() == 0 && c.nodes["n3"].electionPlace() == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := n1.Apply(ctx, &state.CreateResourceClass{Name: "CUSTOM_BEFORE"}); err != nil {
		t.Fatal(err)
	}
	survivors := []*Node{c.nodes["n3"], c.nodes["n4"], c.nodes["n5"]}
	cut := time.Now()
	c.isolate("n1")
	c.isolate("n2")
	var campaigned time.Duration
	var lead *Node
	waitUntil(t, func() bool {
		for _, n := range survivors {
			if s := n.raft.State(); campaigned == 0 && (s == raft.Candidate || s == raft.Leader) {
				campaigned = time.Since(cut)
			}
			if n.IsLeader() {
				lead = n
			}
		}
		return lead != nil
	})
	t.Logf("a survivor campaigned %v and %s led %v after the leader and the starter were cut off",
		campaigned.Round(time.Millisecond), lead.cfg.NodeID, time.Since(cut).Round(time.Millisecond))
	if campaigned >= 2*hb {
		t.Fatalf("the first survivor campaigned %v after the cut: the waiters waited on their doubled timers (%v)", campaigned, 2*hb)
	}
}

// TestFailoverFigures measures failover with 5 in-memory voters (heartbeat
// 200 ms): the leader cut off with the starter, with a waiter, and with n2
// under raft's own timers (PlainElections), PLACEMENTD_FAILOVER_RUNS times
// each; it reports medians and asserts nothing (figures for notes).
func TestFailoverFigures(t *testing.T) {
	runs, _ := strconv.Atoi(os.Getenv("PLACEMENTD_FAILOVER_RUNS"))
	if runs <= 0 {
		t.Skip("set PLACEMENTD_FAILOVER_RUNS to measure")
	}
	const hb = 200 * time.Millisecond
	tune := func(string) func(*raft.Config) {
		return func(rc *raft.Config) {
			rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = hb, hb, hb/2
			rc.CommitTimeout = 5 * time.Millisecond
		}
	}
	ids := []string{"n1", "n2", "n3", "n4", "n5"}
	measure := func(plain bool, second string) time.Duration {
		c := startMemVoters(t, ids, plain, tune, nil)
		hang := make(chan struct{})
		for _, w := range c.wraps {
			w.mu.Lock()
			w.hang = hang
			w.mu.Unlock()
		}
		if !plain {
			waitUntil(t, func() bool { return c.nodes["n2"].electionPlace() == 0 })
		}
		cut := time.Now()
		c.isolate("n1")
		c.isolate(second)
		waitUntil(t, func() bool {
			for _, id := range ids[1:] {
				if id != second && c.nodes[id].IsLeader() {
					return true
				}
			}
			return false
		})
		took := time.Since(cut)
		close(hang) // before the nodes stop: their requests to the cut ones must end
		for _, n := range c.nodes {
			n.Shutdown()
		}
		return took
	}
	for _, sc := range []struct {
		name   string
		plain  bool
		second string
	}{{"leader+starter, ordered", false, "n2"}, {"leader+waiter, ordered", false, "n3"}, {"leader+n2, raft's timers", true, "n2"}} {
		var all []time.Duration
		for i := 0; i < runs; i++ {
			all = append(all, measure(sc.plain, sc.second))
		}
		slices.Sort(all)
		t.Logf("%-26s median %v of %v", sc.name, all[len(all)/2].Round(time.Millisecond), all)
	}
}
