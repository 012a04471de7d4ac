package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
)

// Three fresh nodes given the same list form one cluster of three voters
// together, as the pods of a StatefulSet do with --bootstrap-expect; a
// fresh node listed with members that have state joins them instead of
// starting a cluster of its own.
func TestBootstrapExpected(t *testing.T) {
	c := newTestCluster(t)
	nodes := []*testNode{c.start("n1", false, nil), c.start("n2", false, nil), c.start("n3", false, nil)}
	addrs := []string{nodes[0].addr, nodes[1].addr, nodes[2].addr}

	// Until every listed node answers, nobody bootstraps.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	err := nodes[0].node.BootstrapExpected(ctx, append(addrs, "127.0.0.1:1"), secret)
	cancel()
	if err == nil || nodes[0].node.HasState() {
		t.Fatalf("bootstrapped without hearing from every listed node: %v", err)
	}

	ctx, cancel = context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(nodes))
	for i, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = n.node.BootstrapExpected(ctx, addrs, secret); errs[i] == nil {
				// Then announce the API address, as serve does.
				errs[i] = n.node.JoinCluster(ctx, addrs, secret, false)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", nodes[i].id, err)
		}
	}
	c.leader()
	c.converged()
	members, err := nodes[2].node.Members()
	if err != nil || len(members) != 3 {
		t.Fatalf("members %+v, %v", members, err)
	}
	for _, m := range members {
		if !m.Voter {
			t.Errorf("%s is not a voter", m.ID)
		}
	}
	if r := do(t, nodes[1], "PUT", "/resource_classes/CUSTOM_FORMED", nil); r.status != 201 {
		t.Fatalf("write: %d %s", r.status, r.body)
	}

	// A fresh node listed with them (one that lost its data dir, or a
	// list that names it) finds a cluster and does not start another.
	n4 := c.start("n4", false, nil)
	if err := n4.node.BootstrapExpected(ctx, []string{n4.addr, nodes[0].addr, nodes[1].addr}, secret); err != nil {
		t.Fatal(err)
	}
	if n4.node.HasState() {
		t.Fatal("a fresh node bootstrapped beside an existing cluster")
	}
	c.join(n4, nodes[0], false)
	c.converged()

	// Its own address must be listed: a node that is not among the
	// voters to form joins, it does not bootstrap.
	n5 := c.start("n5", false, nil)
	if err := n5.node.BootstrapExpected(ctx, addrs, secret); err == nil {
		t.Fatal("bootstrapped a node that the list does not name")
	}
}

// A voter does not leave (on shutdown) while another voter is down: the
// configuration without it would need the dead one for its quorum. With
// every voter up it leaves.
func TestLeaveKeepsQuorum(t *testing.T) {
	c, nodes := threeNodes(t, nil)
	c.converged()
	leader := c.leader()
	c.stop(nodes[2])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes[:2] {
		if err := n.node.Leave(ctx, secret); !errors.Is(err, cluster.ErrLeaveLosesQuorum) {
			t.Fatalf("%s left with a voter down: %v", n.id, err)
		}
	}
	if members, _ := leader.node.Members(); len(members) != 3 {
		t.Fatalf("members changed: %+v", members)
	}
	if !leader.node.IsLeader() {
		t.Fatal("the refused leave handed leadership over")
	}
	if r := do(t, nodes[1], "PUT", "/resource_classes/CUSTOM_STILL", nil); r.status != 201 {
		t.Fatalf("write after the refused leaves: %d %s", r.status, r.body)
	}
}
