package cluster_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// The election order (electorder.go) shows in each node's raft timeouts:
// the leader and the starter (the first voter after the leader in the
// configuration, among those that answer) keep the configured heartbeat
// timeout, the other followers wait twice as long on their own. When the
// leader dies, the survivors elect a new one and the order is computed
// for it: the dead voter, whose probes fail, is not the starter.
func TestElectionOrderTimers(t *testing.T) {
	c, nodes := threeNodes(t, nil)
	const hb = 200 * time.Millisecond // testcluster.FastRaft
	heartbeats := func(want map[*testNode]time.Duration) func() error {
		return func() error {
			for n, d := range want {
				if got := n.Node.Raft().ReloadableConfig().HeartbeatTimeout; got != d {
					return fmt.Errorf("%s's heartbeat timeout is %v, want %v", n.ID, got, d)
				}
			}
			return nil
		}
	}
	c.LeaderIs(nodes[0])
	// Configuration order n1, n2, n3; n1 leads: n2 starts, n3 waits.
	testcluster.WaitFor(t, 15*time.Second, "the timers of the order", heartbeats(map[*testNode]time.Duration{
		nodes[0]: hb, nodes[1]: hb, nodes[2]: 2 * hb}))

	c.Stop(nodes[0])
	leader := c.Leader()
	var follower *testNode
	for _, n := range nodes[1:] {
		if n != leader {
			follower = n
		}
	}
	testcluster.WaitFor(t, 15*time.Second, "the timers of the new order", heartbeats(map[*testNode]time.Duration{
		leader: hb, follower: hb}))
	if got := follower.Node.Raft().ReloadableConfig().ElectionTimeout; got != hb {
		t.Errorf("the starter's election timeout is %v, want %v", got, hb)
	}
}
