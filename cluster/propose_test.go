package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm/state"
)

// Concurrent writes to the leader go out in fewer Raft entries than
// commands (group commit), each command still gets its own answer, a
// rejected one does not take its group down with it, and every replica
// ends with the same state.
func TestGroupCommitAnswersEachCommand(t *testing.T) {
	// Raft's default timeouts: the test needs a leader that keeps its
	// leadership through a burst of writes on a loaded machine, not fast
	// elections (fastRaft's 200 ms lost it now and then under -race).
	c, _ := threeNodes(t, func(rc *raft.Config) {
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
	})
	leader := c.Leader()
	c.Converged()
	entries0, commands0 := leader.Node.GroupCommit()

	const writers = 48
	var wg sync.WaitGroup
	statuses := make([][2]int, writers)
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every writer adds a class of its own and races the others
			// for one provider name: one create wins, the rest are 409.
			statuses[i][0] = do(t, leader, "PUT", fmt.Sprintf("/resource_classes/CUSTOM_G%d", i), nil).status
			statuses[i][1] = do(t, leader, "POST", "/resource_providers", map[string]any{
				"name": "contested", "uuid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i)}).status
		}()
	}
	wg.Wait()
	won := 0
	for i, s := range statuses {
		if s[0] != 201 {
			t.Errorf("writer %d: class create %d", i, s[0])
		}
		switch s[1] {
		case 200:
			won++
		case 409:
		default:
			t.Errorf("writer %d: provider create %d", i, s[1])
		}
	}
	if won != 1 {
		t.Fatalf("%d creates of the provider name won, want 1", won)
	}
	entries, commands := leader.Node.GroupCommit()
	entries, commands = entries-entries0, commands-commands0
	if commands != 2*writers {
		t.Fatalf("the leader proposed %d commands, want %d", commands, 2*writers)
	}
	if entries >= commands {
		t.Fatalf("%d commands went out in %d entries: no group commit", commands, entries)
	}
	t.Logf("%d commands in %d entries", commands, entries)
	c.Converged()
	for _, n := range []*testNode{leader, c.Followers()[0]} {
		r := do(t, n, "GET", "/resource_providers?name=contested", nil)
		if got := len(r.json(t)["resource_providers"].([]any)); got != 1 {
			t.Fatalf("%s lists %d providers named contested", n.ID, got)
		}
	}
}

// When the entry holding a group fails (here: the leader is cut off and
// steps down), every command in the group gets the failure, none hangs,
// and none is reported applied.
func TestGroupCommitFailureReachesEveryCommand(t *testing.T) {
	c, _ := threeNodes(t, nil)
	old := c.Leader()
	c.Converged()
	c.Isolate(old)
	const writers = 16
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = old.Node.Apply(context.Background(), &state.CreateTrait{Name: fmt.Sprintf("CUSTOM_LIMBO%d", i)})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, cluster.ErrUnknownOutcome) && !errors.Is(err, cluster.ErrNotLeader) {
			t.Errorf("writer %d on a cut-off leader: %v", i, err)
		}
	}
	c.Reconnect(old)
	c.Converged()
}
