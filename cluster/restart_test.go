package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

func openDisk(t *testing.T, dir string) *Node {
	t.Helper()
	return openDiskWith(t, dir, nil)
}

func openDiskWith(t *testing.T, dir string, tune func(*raft.Config)) *Node {
	t.Helper()
	n, err := Open(Config{NodeID: "n1", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true, Tune: tune}, fsm.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	return n
}

// A single node on real BoltDB files comes back after a restart with every
// acknowledged write, from the log alone and from a snapshot plus log.
func TestRestartKeepsAcknowledgedWrites(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n := openDisk(t, dir)
	for _, name := range []string{"CUSTOM_A", "CUSTOM_B"} {
		if _, err := n.Apply(ctx, &state.CreateResourceClass{Name: name}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := n.fsm.Digest()
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}

	n = openDisk(t, dir)
	if err := n.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := n.fsm.Digest(); got != want {
		t.Fatal("state after restart from the log differs")
	}
	if err := n.raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, &state.CreateTrait{Name: "CUSTOM_AFTER_SNAPSHOT"}); err != nil {
		t.Fatal(err)
	}
	want, _ = n.fsm.Digest()
	n.Shutdown()

	n = openDisk(t, dir)
	defer n.Shutdown()
	if err := n.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	var found bool
	n.fsm.Read(func(s *state.Store) {
		found = s.Traits.Get("CUSTOM_AFTER_SNAPSHOT") != nil && s.Classes.Get("CUSTOM_B") != nil
	})
	if got, _ := n.fsm.Digest(); got != want || !found {
		t.Fatal("state after restart from snapshot and log differs")
	}
}

// A rejected command reaches the caller as the state's typed error and
// changes nothing.
func TestApplyRejectionIsTypedAndChangesNothing(t *testing.T) {
	n := openDisk(t, t.TempDir())
	defer n.Shutdown()
	ctx := context.Background()
	if _, err := n.Apply(ctx, &state.CreateResourceClass{Name: "CUSTOM_A"}); err != nil {
		t.Fatal(err)
	}
	_, err := n.Apply(ctx, &state.CreateResourceClass{Name: "CUSTOM_A"})
	se, ok := err.(*state.Error)
	if !ok || se.Kind != state.Conflict {
		t.Fatalf("duplicate class: %v", err)
	}
	var count int
	n.fsm.Read(func(s *state.Store) {
		for rc := range s.Classes.Values() {
			if !rc.Standard() {
				count++
			}
		}
	})
	if count != 1 {
		t.Fatalf("%d custom classes after a rejected duplicate", count)
	}
}

// A restart replaying the log reads no further ahead of the state machine
// than replayAheadBytes (plus the entry that crosses it), and the state it
// replays is the one written.
func TestRestartReplayReadsBoundedAhead(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	n := openDisk(t, dir)
	const entries = 40
	for i := 0; i < entries; i++ {
		if _, err := n.Apply(ctx, &state.CreateTrait{Name: fmt.Sprintf("CUSTOM_REPLAYED_%03d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	want, _ := n.fsm.Digest()
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}

	defer func(old int64) { replayAheadBytes = old }(replayAheadBytes)
	replayAheadBytes = 1 << 10 // a few entries of these
	n = openDiskWith(t, dir, func(rc *raft.Config) { rc.MaxAppendEntries = 4 })
	defer n.Shutdown()
	if err := n.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := n.fsm.Digest(); got != want {
		t.Fatal("state after the bounded replay differs")
	}
	r := n.logs.(*logCache).replay
	// Raft has handed everything over: the next read finds the bound off.
	if r.mustWait(r.lastAtOpen) {
		t.Error("a read of the last entry found at start waits after the replay")
	}
	r.mu.Lock()
	peak, done := r.peak, r.done
	r.mu.Unlock()
	// Past the limit, a read waits once a batch (4) is ahead: the limit
	// plus 4 entries at most.
	const entryBytes = 1 << 10 // far above one CreateTrait entry
	if peak == 0 || peak >= replayAheadBytes+4*entryBytes {
		t.Errorf("replay read up to %d bytes ahead of the state machine, want some and under %d", peak, replayAheadBytes+4*entryBytes)
	}
	if !done {
		t.Error("the replay bound is still on after the log found at start was applied")
	}
}
