package cluster_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/front"
)

// Three fresh nodes given the same list form one cluster of three voters
// together, as the pods of a StatefulSet do with --bootstrap-expect; a
// fresh node listed with members that have state joins them instead of
// starting a cluster of its own.
func TestBootstrapExpected(t *testing.T) {
	c := newTestCluster(t)
	nodes := []*testNode{c.Start("n1", false, nil), c.Start("n2", false, nil), c.Start("n3", false, nil)}
	addrs := []string{nodes[0].Addr, nodes[1].Addr, nodes[2].Addr}

	// Until every listed node answers, nobody bootstraps.
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	err := front.BootstrapExpected(ctx, nodes[0].Node, append(addrs, "127.0.0.1:1"), secret)
	cancel()
	if err == nil || nodes[0].Node.HasState() {
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
			if errs[i] = front.BootstrapExpected(ctx, n.Node, addrs, secret); errs[i] == nil {
				// Then announce the API address, as serve does.
				errs[i] = front.JoinCluster(ctx, n.Node, addrs, secret, false)
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", nodes[i].ID, err)
		}
	}
	c.Leader()
	c.Converged()
	members, err := nodes[2].Node.Members()
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
	n4 := c.Start("n4", false, nil)
	if err := front.BootstrapExpected(ctx, n4.Node, []string{n4.Addr, nodes[0].Addr, nodes[1].Addr}, secret); err != nil {
		t.Fatal(err)
	}
	if n4.Node.HasState() {
		t.Fatal("a fresh node bootstrapped beside an existing cluster")
	}
	c.Join(n4, nodes[0], false)
	c.Converged()

	// Its own address must be listed: a node that is not among the
	// voters to form joins, it does not bootstrap.
	n5 := c.Start("n5", false, nil)
	if err := front.BootstrapExpected(ctx, n5.Node, addrs, secret); err == nil {
		t.Fatal("bootstrapped a node that the list does not name")
	}
}

// A voter does not leave (on shutdown) while another voter is down: the
// configuration without it would need the dead one for its quorum. With
// every voter up it leaves.
func TestLeaveKeepsQuorum(t *testing.T) {
	c, nodes := threeNodes(t, nil)
	c.Converged()
	leader := c.Leader()
	c.Stop(nodes[2])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, n := range nodes[:2] {
		if err := front.Leave(ctx, n.Node, secret); !errors.Is(err, front.ErrLeaveLosesQuorum) {
			t.Fatalf("%s left with a voter down: %v", n.ID, err)
		}
	}
	if members, _ := leader.Node.Members(); len(members) != 3 {
		t.Fatalf("members changed: %+v", members)
	}
	if !leader.Node.IsLeader() {
		t.Fatal("the refused leave handed leadership over")
	}
	if r := do(t, nodes[1], "PUT", "/resource_classes/CUSTOM_STILL", nil); r.status != 201 {
		t.Fatalf("write after the refused leaves: %d %s", r.status, r.body)
	}
}
