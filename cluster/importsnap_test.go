package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

// After an import (a few large chunks, far fewer than raft's entry
// threshold and below SnapshotBytes) every node takes a snapshot once the
// chunks stop coming, so that a restart restores it instead of replaying
// the chunks from the log.
func TestSnapshotAfterImport(t *testing.T) {
	const chunks, perChunk = 6, 40
	c := newTestCluster(t)
	ids := []string{"n1", "n2", "n3"}
	replayed := map[string]*atomic.Int64{} // import chunks each node's FSM applied
	for _, id := range ids {
		replayed[id] = &atomic.Int64{}
	}
	c.NewFSM = func(id string) *fsm.FSM {
		f := fsm.New()
		f.OnApply = func(kind string, err error) {
			if kind == (&state.ImportChunk{}).Kind() {
				replayed[id].Add(1)
			}
		}
		return f
	}
	// On disk (BoltDB), as a restart needs. A chunk is over 8 KiB: should a
	// slow machine pause mid-import long enough for a snapshot, the chunks
	// after it still make another.
	cfg := func(bootstrap bool) cluster.Config {
		return cluster.Config{Bootstrap: bootstrap, Tune: fastRaft(nil), SnapshotBurstBytes: 8 << 10}
	}
	n1 := c.StartWith("n1", cfg(true))
	c.Leader()
	n2, n3 := c.StartWith("n2", cfg(false)), c.StartWith("n3", cfg(false))
	c.Join(n2, n1, false)
	c.Join(n3, n1, false)

	ctx := context.Background()
	leader := c.Leader()
	for i := range chunks {
		chunk := &state.ImportChunk{First: i == 0}
		for j := range perChunk {
			chunk.Providers = append(chunk.Providers, state.ProviderImage{
				UUID: fmt.Sprintf("00000000-0000-0000-%04d-%012d", i, j),
				Name: fmt.Sprintf("%s-%d-%03d", strings.Repeat("x", 190), i, j)})
		}
		if _, err := leader.Client().Import(ctx, chunk); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	last := leader.Node.FSM().Version().LastIndex
	for _, n := range []*testNode{n1, n2, n3} {
		waitFor(t, n.ID+" snapshots the import", func() bool { return n.Node.Status(false).LastSnapshotIndex >= last })
		if got := replayed[n.ID].Load(); got != chunks {
			t.Fatalf("%s applied %d chunks, want %d", n.ID, got, chunks)
		}
	}

	for _, n := range c.All() {
		c.Stop(n)
	}
	for _, id := range ids {
		replayed[id].Store(0)
		c.Restart(c.Node(id))
	}
	c.Leader()
	for _, id := range ids {
		n := c.Node(id)
		waitFor(t, id+" back at the import's index", func() bool { return n.Node.FSM().Version().LastIndex >= last })
		if st := n.Node.Status(false); st.LastSnapshotIndex < last {
			t.Errorf("%s restarted with snapshot %d, before the import's last chunk %d", id, st.LastSnapshotIndex, last)
		}
		if got := replayed[id].Load(); got != 0 {
			t.Errorf("%s replayed %d import chunks at restart, want none (restored from the snapshot)", id, got)
		}
		var providers int
		n.Node.FSM().Read(func(s *state.Store) { providers = s.Contents().Providers })
		if providers != chunks*perChunk {
			t.Errorf("%s holds %d providers after restart, want %d", id, providers, chunks*perChunk)
		}
	}
	c.Converged()
}
