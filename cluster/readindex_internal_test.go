package cluster

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"

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
	s := newSharedRounds(func() error {
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		runs.Add(1)
		time.Sleep(2 * time.Millisecond) // about time: a round takes a while, so callers pile up behind it
		return nil
	})
	const callers = 200
	var wg sync.WaitGroup
	late := make(chan string, callers)
	for i := 0; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			called := time.Now()
			if err := s.join(context.Background()); err != nil {
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
		seen := false
		if err := n.Read(ctx, func(st *state.Store) { seen = st.Classes.Get(name) != nil }); err != nil {
			t.Fatal(err)
		}
		if !seen {
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
	if err := n.Raft.Barrier(time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if err := n.Raft.Snapshot().Error(); err != nil {
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
	// state machine: the state index still covers it.
	if got, commit := n.stateIndex(), n.Raft.CommitIndex(); got < commit {
		t.Fatalf("state index %d below the commit index %d after the read barrier", got, commit)
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
