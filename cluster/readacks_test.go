package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/testcluster"
)

// holdTransport is an in-memory transport whose heartbeats to chosen peers
// this test controls: to a held peer, a heartbeat is delivered and answered
// as usual, but the answer reaches raft only when the test releases it (a
// reply that waited in the socket of a frozen leader); to a cut peer it
// fails at once, and the test sees each attempt.
type holdTransport struct {
	*raft.InmemTransport

	mu       sync.Mutex
	hold     map[raft.ServerID]bool
	held     chan raft.ServerID // a heartbeat's answer is being held
	release  chan struct{}
	cut      map[raft.ServerID]bool
	attempts chan raft.ServerID // a heartbeat to a cut peer was attempted
}

func newHoldTransport(t *raft.InmemTransport) *holdTransport {
	return &holdTransport{
		InmemTransport: t,
		hold:           map[raft.ServerID]bool{}, cut: map[raft.ServerID]bool{},
		held: make(chan raft.ServerID, 16), release: make(chan struct{}),
		attempts: make(chan raft.ServerID, 64),
	}
}

func (h *holdTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	// Only heartbeats carry no log position (replication's appends do).
	heartbeat := len(args.Entries) == 0 && args.PrevLogEntry == 0 && args.LeaderCommitIndex == 0
	h.mu.Lock()
	hold, cut := heartbeat && h.hold[id], h.cut[id]
	if hold {
		h.hold[id] = false // only the next heartbeat
	}
	h.mu.Unlock()
	if cut {
		if heartbeat {
			select {
			case h.attempts <- id:
			default:
			}
		}
		return errors.New("cut off by the test")
	}
	err := h.InmemTransport.AppendEntries(id, target, args, resp)
	if hold {
		h.held <- id
		<-h.release
	}
	return err
}

func (h *holdTransport) set(id raft.ServerID, hold, cut bool) {
	h.mu.Lock()
	h.hold[id], h.cut[id] = hold, cut
	h.mu.Unlock()
}

// staleRepliesAfterNewLeader drives a 3-node in-memory cluster into the
// state a leader wakes up in after a freeze, and returns what read (a
// leadership check on the old leader) answers:
//
//  1. n1 leads n2 and n3. n1's next heartbeat to n2 is answered (n2
//     accepts term T) but the answer is held; n3 is cut off from n1.
//  2. n2 and n3 elect a new leader (term T+1) and acknowledge a write.
//  3. read starts on n1, which still believes it leads. Its leadership
//     check makes n1 send heartbeats; the attempt to reach n3 shows the
//     check has registered. Then n2 is reachable again and the answer
//     held since step 1 is delivered.
//
// A check that counts any reply confirms n1 with n2's held answer; a check
// that counts only replies to requests sent after it began must refuse.
func staleRepliesAfterNewLeader(t *testing.T, read func(ctx context.Context, n *cluster.Node) error) error {
	t.Helper()
	// n1's timeouts are long, so that nothing but a reply can end its
	// leadership during the test (a frozen leader runs no timers either);
	// n2 and n3 also start patient, so n1 stays leader until step 2.
	// (The lease must stay below the heartbeat timeout for raft to accept
	// a reload: n1's lowers it by 1 ms to start its election at once, n2's
	// and n3's to 200 ms in step 2.)
	slow := func(lease time.Duration) func(rc *raft.Config) {
		return func(rc *raft.Config) {
			rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = time.Minute, time.Minute, lease
		}
	}
	// The harness links the nodes' in-memory transports both ways; n1's
	// outgoing RPCs go through its holdTransport.
	c := newTestCluster(t)
	trans := map[string]*holdTransport{}
	c.WrapTransport = func(id string, inmem *raft.InmemTransport) raft.Transport {
		trans[id] = newHoldTransport(inmem)
		return trans[id]
	}
	nodes := map[string]*cluster.Node{}
	for _, id := range []string{"n1", "n2", "n3"} {
		lease := 100 * time.Millisecond
		if id == "n1" {
			lease = 50 * time.Second
		}
		nodes[id] = c.StartWith(id, cluster.Config{InMemory: true, Bootstrap: id == "n1", Tune: slow(lease),
			ApplyTimeout: 10 * time.Second}).Node
	}
	// Unblock a held reply if the test ends early.
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(func() { close(trans["n1"].release) }) }
	t.Cleanup(release)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n1 := nodes["n1"]
	if err := n1.WaitLeader(ctx); err != nil || !n1.IsLeader() {
		t.Fatalf("n1 does not lead: %v", err)
	}
	for _, id := range []string{"n2", "n3"} {
		if err := n1.Raft().AddVoter(raft.ServerID(id), raft.ServerAddress(id), 0, 0).Error(); err != nil {
			t.Fatal(err)
		}
	}
	create := &state.CreateProvider{UUID: "7e57ab1e-0000-4000-8000-000000000001", Name: "p1"}
	if _, err := n1.Apply(ctx, create); err != nil {
		t.Fatal(err)
	}
	if err := n1.ReadBarrier(ctx); err != nil { // the term's barrier is done
		t.Fatal(err)
	}
	// Both followers hold the whole log, configuration included.
	for _, id := range []string{"n2", "n3"} {
		testcluster.WaitFor(t, time.Minute, id+" catches up", func() error {
			return check(nodes[id].Raft().AppliedIndex() >= n1.Raft().AppliedIndex(), "applied %d of %d",
				nodes[id].Raft().AppliedIndex(), n1.Raft().AppliedIndex())
		})
	}

	// Step 1: hold n1's next heartbeat answer from n2, cut n3 off, and
	// make n1 send heartbeats now.
	h := trans["n1"]
	h.set("n2", true, false)
	h.set("n3", false, true)
	h.Disconnect("n3") // also ends the replication pipeline
	go n1.Raft().VerifyLeader().Error()
	select {
	case <-h.held:
	case <-ctx.Done():
		t.Fatal("n1 sent no heartbeat to n2")
	}

	// Step 2: n1 is cut off from both; n2 and n3 elect and write.
	h.Disconnect("n2")
	for _, id := range []string{"n2", "n3"} {
		trans[id].Disconnect("n1")
		rc := nodes[id].Raft().ReloadableConfig()
		rc.HeartbeatTimeout, rc.ElectionTimeout = 200*time.Millisecond, 200*time.Millisecond
		if err := nodes[id].Raft().ReloadConfig(rc); err != nil {
			t.Fatal(err)
		}
	}
	var newLeader *cluster.Node
	testcluster.WaitFor(t, time.Minute, "n2 and n3 elect a leader", func() error {
		for _, id := range []string{"n2", "n3"} {
			if nodes[id].IsLeader() {
				newLeader = nodes[id]
			}
		}
		return check(newLeader != nil, "neither leads")
	})
	rename := &state.UpdateProvider{UUID: create.UUID, Name: "p1-renamed"}
	if _, err := newLeader.Apply(ctx, rename); err != nil {
		t.Fatalf("write through the new leader: %v", err)
	}
	if !n1.IsLeader() || n1.Raft().CurrentTerm() >= newLeader.Raft().CurrentTerm() {
		t.Fatalf("n1 no longer believes it leads the old term (state %v); the scenario did not happen", n1.Raft().State())
	}

	// Step 3: the read registers on n1 (seen as a heartbeat attempt to
	// n3), then n2 is reachable again and the old answer is delivered.
	for drained := false; !drained; {
		select {
		case <-h.attempts:
		default:
			drained = true
		}
	}
	result := make(chan error, 1)
	go func() { result <- read(ctx, n1) }()
	for registered := false; !registered; {
		select {
		case id := <-h.attempts:
			registered = id == "n3"
		case err := <-result:
			t.Fatalf("read ended before the stale answer was delivered: %v", err)
		case <-ctx.Done():
			t.Fatal("the read's leadership check sent no heartbeat")
		}
	}
	h.Connect("n2", c.Node("n2").Trans) // n1 reaches n2 again (n2 does not reach n1)
	release()
	select {
	case err := <-result:
		return err
	case <-ctx.Done():
		t.Fatal("the read did not finish")
		return nil
	}
}

// TestStaleRepliesConfirmRaftVerifyLeader shows the bug the read barrier
// must not have: raft's VerifyLeader confirms a deposed leader with a
// reply to a heartbeat sent before the check.
func TestStaleRepliesConfirmRaftVerifyLeader(t *testing.T) {
	err := staleRepliesAfterNewLeader(t, func(ctx context.Context, n *cluster.Node) error {
		return n.Raft().VerifyLeader().Error()
	})
	if err != nil {
		t.Fatalf("raft's VerifyLeader refused (%v): the scenario no longer reproduces the stale confirmation, so the barrier test below proves nothing", err)
	}
}

// TestReadBarrierRefusesStaleReplies: the same scenario through the read
// barrier refuses the read.
func TestReadBarrierRefusesStaleReplies(t *testing.T) {
	err := staleRepliesAfterNewLeader(t, func(ctx context.Context, n *cluster.Node) error {
		return n.ReadBarrier(ctx)
	})
	if !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("read barrier on a deposed leader answered %v, want ErrNotLeader", err)
	}
}
