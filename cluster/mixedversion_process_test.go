package cluster_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/internal/testcluster"
)

// A rolling upgrade from the previous release (built from its commit in
// git history, CHANGELOG.md) under a steady write load: three nodes of it,
// one upgraded to this build and handed leadership while the other two
// still run the old build and replicate from it, then the others upgraded
// one by one. No node stops, every acknowledged write reads back on every
// node, the digests agree. The gate: while an old member remains, the new
// leader keeps the cluster version at the previous release's formats, so
// it writes neither the v4 entry that raises it nor a v3 snapshot section
// (the old members would stop at either: they refuse a format newer than
// theirs); once the last one is upgraded, the version is raised, and a
// node reporting the previous release's build can no longer join.
func TestRollingUpgradeFromPreviousRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the previous release and runs processes")
	}
	oldBin, oldVersion := testcluster.BuildPreviousRelease(t)
	newBin := testcluster.Binary(t)
	// Small snapshots, so that followers restarted on the new build, and
	// old ones behind the new leader, may be sent snapshots.
	c := testcluster.StartProcs(t, oldBin, 3, "--snapshot-threshold", "64", "--snapshot-interval", "500ms", "--trailing-logs", "32")
	t.Logf("3 nodes of %s (%s) healthy", oldVersion, oldBin)
	load := testcluster.StartWriteLoad("MIXED", c.Running)
	defer load.Stop()
	acks := func() int { return len(load.Acked(time.Time{})) }
	progress := func(what string, more int) {
		t.Helper()
		want := acks() + more
		testcluster.WaitFor(t, testcluster.ProcTimeout, what, func() error {
			return testcluster.Check(acks() >= want, "%d writes acknowledged, want %d", acks(), want)
		})
	}
	noCrash := func() {
		t.Helper()
		for _, n := range c.Nodes {
			if crashes := n.Crashes(); len(crashes) > 0 {
				t.Fatalf("a node stopped: %v\n%s", crashes, n.LogTail(4000))
			}
		}
	}
	upgrade := func(n *testcluster.Proc) {
		t.Helper()
		c.Stop(n) // SIGTERM: leaves the cluster (hands leadership over first)
		n.Bin = newBin
		c.Restart(n) // joins again through the peers it remembers
		c.Healthy(3)
		progress(n.ID+" upgraded: writes go on", 20)
	}
	selfOf := func(n *testcluster.Proc) cluster.NodeStatus {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := n.Client().Self(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	progress("writes under the old build", 30)

	first := c.Followers()[0]
	upgrade(first)
	testcluster.WaitFor(t, testcluster.ProcTimeout, first.ID+" leads", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.Leader().Client().TransferLeadership(ctx, first.ID)
		if err == nil && res.To != first.ID {
			err = errors.New("leadership went to " + res.To)
		}
		if c.Leader() != first {
			return testcluster.Check(false, "leader %s: %v", c.Leader().ID, err)
		}
		return nil
	})
	progress("the old followers replicate from the new leader", 100)
	noCrash()
	// The members' reports are in, yet the version stays: two members
	// read only the previous release's formats.
	testcluster.WaitFor(t, testcluster.ProcTimeout, "the new leader's table holds every member's report", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := first.Client().Status(ctx)
		if err != nil {
			return err
		}
		for _, m := range st.Members {
			want := fsm.PreviousReleaseFormats
			if m.ID == first.ID {
				want = fsm.BuildFormats
			}
			if m.Reads != want {
				return testcluster.Check(false, "%s reads %v", m.ID, m.Reads)
			}
		}
		return nil
	})
	if st := selfOf(first); st.ClusterVersion == nil || st.ClusterVersion.Formats != fsm.PreviousReleaseFormats {
		t.Fatalf("the new leader's cluster version with old members: %+v", st.ClusterVersion)
	}
	progress("more writes from the new leader", 100) // spans several of its raise checks (every second)
	noCrash()

	for _, n := range c.Nodes {
		if n.Bin == oldBin {
			if st := selfOf(first); st.ClusterVersion.Formats != fsm.PreviousReleaseFormats {
				t.Fatalf("cluster version raised while %s runs the old build: %+v", n.ID, st.ClusterVersion)
			}
			upgrade(n)
		}
	}
	testcluster.WaitFor(t, testcluster.ProcTimeout, "the cluster version raised on every node", func() error {
		for _, n := range c.Nodes {
			if st := selfOf(n); st.ClusterVersion == nil || st.ClusterVersion.Formats != fsm.BuildFormats {
				return testcluster.Check(false, "%s at %+v", n.ID, st.ClusterVersion)
			}
		}
		return nil
	})
	progress("writes after the raise", 30)
	load.Stop()
	noCrash()
	c.Converged()
	acked := load.Acked(time.Time{})
	for _, n := range c.Nodes {
		if err := testcluster.Readable(n, acked); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d writes acknowledged, %d attempts failed and were retried; all readable on every node", len(acked), load.Failed())

	// A node of the previous release (which reports nothing) is refused.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Leader().Client().Join(ctx, cluster.JoinRequest{ID: "n9", RaftAddr: "127.0.0.1:1", HTTPAddr: "127.0.0.1:2"})
	var se *front.StatusError
	if !errors.As(err, &se) || se.Code != 409 || !strings.Contains(se.Detail, "upgrade n9 to placementd") {
		t.Fatalf("join of a previous-release node after the raise: %v", err)
	}
	if st := c.Status(); len(st.Members) != 3 {
		t.Fatalf("members after the refused join: %d", len(st.Members))
	}
}
