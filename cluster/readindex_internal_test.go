package cluster

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

// Concurrent callers share rounds, and every caller is answered by a round
// that started after it called: what a round establishes (a read index,
// a confirmed leadership) then holds for every read in it.
func TestSharedRoundsStartAfterTheCall(t *testing.T) {
	var mu sync.Mutex
	var starts []time.Time
	var runs atomic.Int64
	s := newSharedRounds(func() (uint64, error) {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		runs.Add(1)
		time.Sleep(2 * time.Millisecond) // about time: a round takes a while, so callers pile up behind it
		return 0, nil
	})
	const callers = 200
	var wg sync.WaitGroup
	late := make(chan string, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called := time.Now()
			if _, err := s.join(context.Background()); err != nil {
				late <- err.Error()
				return
			}
			// Some round began after the call and ended before the answer.
			mu.Lock()
			defer mu.Unlock()
			for _, st := range starts {
				if st.After(called) {
					return
				}
			}
			late <- "answered without a round begun after the call"
		}()
	}
	wg.Wait()
	close(late)
	for msg := range late {
		t.Fatal(msg)
	}
	if n := runs.Load(); n > callers/4 {
		t.Fatalf("%d callers needed %d rounds: rounds are not shared", callers, n)
	}
}

// The only voter of its configuration confirms its reads without a
// round (its quorum is itself), and they still see every write
// acknowledged before them.
func TestSoleVoterReadsNeedNoRound(t *testing.T) {
	n := openDisk(t, t.TempDir())
	defer n.Shutdown()
	ctx := context.Background()
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("CUSTOM_R%d", i)
		if _, err := n.Apply(ctx, &state.CreateResourceClass{Name: name}); err != nil {
			t.Fatal(err)
		}
		st, err := n.Read(ctx, backend.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Classes.Get(name) == nil {
			t.Fatalf("read after the write of %s misses it", name)
		}
	}
	if r := n.verify.started.Load(); r != 0 {
		t.Fatalf("%d leadership rounds for the reads of a single voter", r)
	}
}

// A node restarted from a snapshot knows that its state includes the
// snapshot's index before any new entry applies (raft does not tell the
// state machine; indexedSnapshots does), so reads waiting for an index
// the snapshot covers do not wait for the next write.
func TestStateIndexAfterRestoreFromSnapshot(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n := openDisk(t, dir)
	for _, name := range []string{"CUSTOM_A", "CUSTOM_B"} {
		if _, err := n.Apply(ctx, &state.CreateResourceClass{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	// A barrier after the last command: the snapshot's index is an entry
	// the state machine never sees.
	if err := n.raft.Barrier(time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	snapIndex := n.Status(false).LastSnapshotIndex
	if last := n.meta.applied.Load(); last >= snapIndex {
		t.Fatalf("the last command (%d) is not below the snapshot's index (%d): the test proves nothing", last, snapIndex)
	}
	if got := n.stateIndex(); got < snapIndex {
		t.Fatalf("state index %d below the snapshot's %d before the restart", got, snapIndex)
	}
	n.Shutdown()

	n, err := Open(Config{NodeID: "n1", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}, fsm.New())
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	if got := n.meta.applied.Load(); got != snapIndex {
		t.Fatalf("after restoring the snapshot of index %d the state machine says %d", snapIndex, got)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := n.ReadBarrier(wctx); err != nil {
		t.Fatal(err)
	}
	// The barrier of the new term is the last entry and never reaches the
	// state machine: the state index comes to cover it with no further
	// write. (Not at once: a sole voter's own read waits only for the
	// index it has exposed, and raft notes the barrier as applied just
	// after answering its future.)
	commit := n.raft.CommitIndex()
	if err := n.waitState(wctx, commit); err != nil {
		t.Fatalf("state index %d never reached the commit index %d: %v", n.stateIndex(), commit, err)
	}
}

// A follower that asks for a read index completes the leader's quorum by
// itself only when it is a voter and the two are a majority.
func TestPairIsQuorum(t *testing.T) {
	conf := func(voters, nonVoters int) raft.Configuration {
		var c raft.Configuration
		for i := 1; i <= voters+nonVoters; i++ {
			s := raft.Server{ID: raft.ServerID(fmt.Sprintf("n%d", i)), Suffrage: raft.Voter}
			if i > voters {
				s.Suffrage = raft.Nonvoter
			}
			c.Servers = append(c.Servers, s)
		}
		return c
	}
	for _, tc := range []struct {
		conf raft.Configuration
		a, b raft.ServerID
		want bool
	}{
		{conf(2, 0), "n1", "n2", true},
		{conf(3, 0), "n1", "n2", true},
		{conf(3, 2), "n1", "n3", true},
		{conf(3, 2), "n1", "n4", false}, // a non-voter
		{conf(3, 0), "n1", "n9", false}, // not a member
		{conf(3, 0), "n1", "n1", false}, // the leader itself
		{conf(3, 0), "n1", "", false},
		{conf(4, 0), "n1", "n2", false},
		{conf(5, 0), "n1", "n2", false},
	} {
		if got := pairIsQuorum(tc.conf, tc.a, tc.b); got != tc.want {
			t.Errorf("%d servers, %s and %s: %v, want %v", len(tc.conf.Servers), tc.a, tc.b, got, tc.want)
		}
	}
}

// A sole voter's own reads do not wait for entries committed but not yet
// applied: they read the newest published state, which holds every write
// acknowledged before (a write is acknowledged once applied), and no
// other server was told of a commit the state lacks.
func TestSoleVoterReadsDoNotWaitForUnappliedEntries(t *testing.T) {
	f := fsm.New()
	var hold atomic.Pointer[chan struct{}] // when set, the next command waits on it once applied
	held := make(chan struct{})
	f.OnApply = func(string, error) {
		if ch := hold.Swap(nil); ch != nil {
			close(held)
			<-*ch
		}
	}
	n, err := Open(Config{NodeID: "n1", RaftAddr: "127.0.0.1:0", DataDir: t.TempDir(), Bootstrap: true}, f)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, &state.CreateResourceClass{Name: "CUSTOM_ACKED"}); err != nil {
		t.Fatal(err)
	}
	// The term's barrier (which the state machine must apply) goes
	// through before the state machine is held.
	if err := n.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	// The next command is applied and published, then holds the state
	// machine: it is not acknowledged, and a barrier behind it is
	// committed but not applied.
	release := make(chan struct{})
	hold.Store(&release)
	wrote := make(chan error, 1)
	go func() {
		_, err := n.Apply(ctx, &state.CreateResourceClass{Name: "CUSTOM_HELD"})
		wrote <- err
	}()
	<-held
	barrier := n.raft.Barrier(10 * time.Second)
	waitUntil(t, func() bool { return n.raft.CommitIndex() > n.stateIndex() })

	rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
	defer rcancel()
	st, err := n.Read(rctx, backend.ReadOptions{})
	close(release)
	if err != nil {
		t.Fatalf("read while an entry waits to be applied: %v", err)
	}
	if st.Classes.Get("CUSTOM_ACKED") == nil {
		t.Fatal("the read misses an acknowledged write")
	}
	if err := <-wrote; err != nil {
		t.Fatal(err)
	}
	if err := barrier.Error(); err != nil {
		t.Fatal(err)
	}
	if r := n.verify.started.Load(); r != 0 {
		t.Fatalf("%d leadership rounds for the reads of a single voter", r)
	}
}

// Every request that tells a peer what is committed is noted as exposed
// before it leaves (a sole voter's reads wait for the state to reach it).
func TestTransportNotesExposedIndexBeforeSending(t *testing.T) {
	acks := newAckTracker()
	fake := &exposureProbe{acks: acks}
	trans := trackAcks(fake, acks)
	var resp raft.AppendEntriesResponse
	trans.AppendEntries("p", "p", &raft.AppendEntriesRequest{LeaderCommitIndex: 5}, &resp)
	pipe, err := trans.AppendEntriesPipeline("p", "p")
	if err != nil {
		t.Fatal(err)
	}
	pipe.AppendEntries(&raft.AppendEntriesRequest{LeaderCommitIndex: 9}, &resp)
	pipe.AppendEntries(&raft.AppendEntriesRequest{LeaderCommitIndex: 7}, &resp) // not below what was exposed
	trans.InstallSnapshot("p", "p", &raft.InstallSnapshotRequest{LastLogIndex: 12}, &raft.InstallSnapshotResponse{}, nil)
	trans.AppendEntries("p", "p", &raft.AppendEntriesRequest{}, &resp) // a heartbeat exposes nothing
	want := []uint64{5, 9, 9, 12, 12}
	if !slices.Equal(fake.seen, want) {
		t.Fatalf("exposed as each request left: %v, want %v", fake.seen, want)
	}
}

// exposureProbe is a transport that records the exposed index as each
// request reaches it.
type exposureProbe struct {
	raft.Transport
	acks *ackTracker
	seen []uint64
}

func (p *exposureProbe) note() { p.seen = append(p.seen, p.acks.exposed.Load()) }

func (p *exposureProbe) AppendEntries(raft.ServerID, raft.ServerAddress, *raft.AppendEntriesRequest, *raft.AppendEntriesResponse) error {
	p.note()
	return nil
}

func (p *exposureProbe) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return probePipeline{p: p}, nil
}

func (p *exposureProbe) InstallSnapshot(raft.ServerID, raft.ServerAddress, *raft.InstallSnapshotRequest, *raft.InstallSnapshotResponse, io.Reader) error {
	p.note()
	return nil
}

type probePipeline struct {
	raft.AppendPipeline
	p *exposureProbe
}

func (q probePipeline) AppendEntries(*raft.AppendEntriesRequest, *raft.AppendEntriesResponse) (raft.AppendFuture, error) {
	q.p.note()
	return nil, nil
}
