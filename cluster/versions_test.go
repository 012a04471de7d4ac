package cluster_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/statecheck"
)

// A read holds a version of the state, not a lock: while a read on the
// leader waits in its callback, writes through the same node (its API and
// Node.Apply, and a follower's forwarded ones) complete, and other reads
// see them; released, the waiting read still sees the version it started
// with.
func TestWaitingReadBlocksNoWrite(t *testing.T) {
	c, nodes := threeNodes(t, nil)
	leader := c.Leader()
	follower := nodes[0]
	if follower == leader {
		follower = nodes[1]
	}
	if r := do(t, leader, "PUT", "/resource_classes/CUSTOM_BEFORE", nil); r.status != http.StatusCreated {
		t.Fatalf("create class: %d %s", r.status, r.body)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	readErr := make(chan error, 1)
	go func() {
		s, err := leader.Node.Read(context.Background(), backend.ReadOptions{})
		if err != nil {
			close(entered)
			readErr <- err
			return
		}
		var problem error
		digest, classes := statecheck.Digest(s), s.Classes.Len()
		if !s.Classes.Has("CUSTOM_BEFORE") {
			problem = fmt.Errorf("the read does not see the write before it")
		}
		close(entered)
		<-release
		if statecheck.Digest(s) != digest || s.Classes.Len() != classes || s.Classes.Has("CUSTOM_AFTER_API") {
			problem = fmt.Errorf("the waiting read's version changed under it")
		}
		readErr <- problem
	}()
	<-entered

	// Each write has a generous deadline so that a blocked one fails the
	// test with a message instead of hanging it; none may need it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := range 20 {
		if _, err := leader.Node.Apply(ctx, &state.CreateTrait{Name: fmt.Sprintf("CUSTOM_T%d", i)}); err != nil {
			t.Fatalf("write %d while a read waits: %v", i, err)
		}
	}
	if r := do(t, leader, "PUT", "/resource_classes/CUSTOM_AFTER_API", nil); r.status != http.StatusCreated {
		t.Fatalf("write through the API while a read waits: %d %s", r.status, r.body)
	}
	if r := do(t, follower, "PUT", "/traits/CUSTOM_VIA_FOLLOWER", nil); r.status != http.StatusCreated {
		t.Fatalf("forwarded write while a read waits: %d %s", r.status, r.body)
	}
	if r := do(t, leader, "GET", "/traits?name=in:CUSTOM_T19,CUSTOM_VIA_FOLLOWER", nil); r.status != http.StatusOK ||
		len(r.json(t)["traits"].([]any)) != 2 {
		t.Fatalf("a read beside the waiting one: %d %s", r.status, r.body)
	}
	select {
	case err := <-readErr:
		t.Fatalf("the waiting read returned before it was released: %v", err)
	default:
	}
	close(release)
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
}
