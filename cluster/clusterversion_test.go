package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
)

// The cluster version gates what the leader writes: with a member that
// reads only the previous release's formats, a leader of this build
// raises nothing and writes its snapshots' cluster section in v2; once
// that member runs this build, the leader raises the version (a v4 entry)
// and writes v3 sections; then a node standing for the previous release
// cannot join, and the refusal names the build it needs.
func TestClusterVersionGate(t *testing.T) {
	prev := fsm.PreviousReleaseFormats
	c := newTestCluster(t)
	n1 := c.StartWith("n1", cluster.Config{Bootstrap: true, InMemory: true, Tune: fastRaft(nil), Reads: prev})
	c.Leader()
	n2 := c.StartWith("n2", cluster.Config{InMemory: true, Tune: fastRaft(nil)})
	n3 := c.StartWith("n3", cluster.Config{InMemory: true, Tune: fastRaft(nil)})
	c.Join(n2, n1, false)
	c.Join(n3, n1, true) // a non-voter counts too
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n1.Node.TransferLeadershipTo(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	c.LeaderIs(n2)
	reports := func(n *testNode, want map[string]fsm.Formats) func() bool {
		return func() bool {
			members, err := n.Node.Members()
			if err != nil || len(members) != len(want) {
				return false
			}
			for _, m := range members {
				if m.Reads != want[m.ID] {
					return false
				}
			}
			return true
		}
	}
	build := fsm.BuildFormats
	waitFor(t, "every member's report in the new leader's table", reports(n2, map[string]fsm.Formats{"n1": prev, "n2": build, "n3": build}))
	for i := range 20 {
		if r := putRetrying(t, n2, fmt.Sprintf("/traits/CUSTOM_GATE_%d", i)); r.status != 201 {
			t.Fatalf("PUT: %d %s", r.status, r.body)
		}
	}
	if err := n2.Node.RaiseClusterVersionNow(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Running() {
		if got := n.Node.ClusterVersion().Formats; got != prev {
			t.Fatalf("%s: cluster version %v with a member of the previous release", n.ID, got)
		}
	}
	if v, err := n2.Node.SnapshotSectionVersion(); err != nil || v != 2 {
		t.Fatalf("with a member of the previous release the leader writes cluster section v%d (%v), want v2", v, err)
	}
	if st := n2.Node.Status(false); st.ClusterVersion == nil || st.ClusterVersion.Formats != prev || st.Reads == nil || *st.Reads != build {
		t.Fatalf("status: cluster version %+v, reads %+v", st.ClusterVersion, st.Reads)
	}

	// The last old member is upgraded: the leader raises the version.
	// (Not as a bootstrapping node: its log is in memory, and a fresh
	// bootstrap would start a cluster of its own.)
	n1 = c.RestartWith(n1, func(cfg *cluster.Config) { cfg.Reads, cfg.Bootstrap = fsm.Formats{}, false })
	waitFor(t, "the cluster version raised on every node", func() bool {
		for _, n := range c.Running() {
			if n.Node.ClusterVersion().Formats != build {
				return false
			}
		}
		return true
	})
	if v, err := n2.Node.SnapshotSectionVersion(); err != nil || v != fsm.ClusterSectionVersion {
		t.Fatalf("after the raise the leader writes cluster section v%d (%v)", v, err)
	}

	// A node of the previous release is refused, and nothing is written.
	n4 := c.StartWith("n4", cluster.Config{InMemory: true, Tune: fastRaft(nil), Reads: prev})
	jctx, jcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer jcancel()
	err := front.JoinCluster(jctx, n4.Node, []string{n2.Addr}, secret, false)
	if err == nil || !strings.Contains(err.Error(), cluster.ErrBuildTooOld.Error()) || !strings.Contains(err.Error(), "upgrade n4 to a build that reads them") {
		t.Fatalf("join of a previous-release node: %v", err)
	}
	if errors.Is(jctx.Err(), context.DeadlineExceeded) {
		t.Fatal("the refused join was retried until the deadline")
	}
	if members, _ := n2.Node.Members(); len(members) != 3 {
		t.Fatalf("members after the refused join: %+v", members)
	}
}
