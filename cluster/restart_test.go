package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

func openDisk(t *testing.T, dir string) *Node {
	t.Helper()
	n, err := Open(Config{NodeID: "n1", RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true}, fsm.New())
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
	want, _ := n.FSM.Digest()
	if err := n.Shutdown(); err != nil {
		t.Fatal(err)
	}

	n = openDisk(t, dir)
	if err := n.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := n.FSM.Digest(); got != want {
		t.Fatal("state after restart from the log differs")
	}
	if err := n.Raft.Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := n.Apply(ctx, &state.CreateTrait{Name: "CUSTOM_AFTER_SNAPSHOT"}); err != nil {
		t.Fatal(err)
	}
	want, _ = n.FSM.Digest()
	n.Shutdown()

	n = openDisk(t, dir)
	defer n.Shutdown()
	if err := n.ReadBarrier(ctx); err != nil {
		t.Fatal(err)
	}
	var found bool
	n.FSM.Read(func(s *state.Store) {
		found = s.Traits.Get("CUSTOM_AFTER_SNAPSHOT") != nil && s.Classes.Get("CUSTOM_B") != nil
	})
	if got, _ := n.FSM.Digest(); got != want || !found {
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
	n.FSM.Read(func(s *state.Store) {
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
