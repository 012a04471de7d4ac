package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/testcluster"
)

// Rotating the cluster secret under a steady write load, as the
// operator's guide says: every node restarted with --cluster-secret-next
// NEW, then with --cluster-secret NEW --cluster-secret-next OLD, then with
// NEW alone. Each restart is graceful (SIGTERM: leave, hand leadership
// over); the writes never stop for longer than an election, every write
// is acknowledged and readable, and at the end the old secret opens
// nothing. A node given a wrong next secret is refused and stops, its log
// naming the fix.
func TestSecretRotation(t *testing.T) {
	const (
		oldSecret = "old-secret-0123456789abcdef"
		newSecret = "new-secret-0123456789abcdef"
	)
	bin := testcluster.Binary(t)
	c := testcluster.NewProcs(t, bin)
	c.Secret = oldSecret
	for _, id := range []string{"n1", "n2", "n3"} {
		c.Grow(c.Add(id))
	}
	c.Healthy(3)
	load := testcluster.StartWriteLoad("ROTATE", c.Running)
	defer load.Stop()
	progress := func(more int) {
		t.Helper()
		want := len(load.Acked(time.Time{})) + more
		testcluster.WaitFor(t, testcluster.ProcTimeout, "writes going on", func() error {
			n := len(load.Acked(time.Time{}))
			return testcluster.Check(n >= want, "%d acknowledged, want %d", n, want)
		})
	}
	roll := func(secret, next string) {
		t.Helper()
		for _, n := range c.Nodes {
			c.Stop(n)
			n.Secret = secret
			n.Args = nil
			if next != "" {
				n.Args = []string{"--cluster-secret-next", next}
			}
			c.Restart(n)
			c.Healthy(3)
			progress(20)
			// A linearizable read on a follower asks the leader for a read
			// index with a member token, then is served by the follower
			// itself. A refused token makes it forward its reads to the
			// leader for a minute; a follower lagging under load, only that
			// read: members on both sides of the roll accept each other's.
			acked := load.Acked(time.Time{})
			path := acked[len(acked)-1].Path
			for _, m := range c.Nodes {
				testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("after restarting %s with secret %s, next %q: a read through %s served by it",
					n.ID, secret, next, m.ID), func() error {
					r := testcluster.Do(t, "http://"+m.HTTPAddr, "GET", path, nil, "Authorization", "Bearer "+m.Secret)
					return testcluster.Check(r.Status == 204 && r.Header.Get(front.ServedByHeader) == m.ID,
						"GET %s: %d served by %q", path, r.Status, r.Header.Get(front.ServedByHeader))
				})
			}
		}
	}
	progress(20)
	roll(oldSecret, newSecret)

	// A node given another next secret is refused and stops.
	n3 := c.Nodes[2]
	c.Stop(n3)
	n3.Args = []string{"--cluster-secret-next", "wrong-secret-0123456789abcdef"}
	c.Restart(n3)
	testcluster.WaitFor(t, testcluster.ProcTimeout, "n3 with a wrong next secret stops", func() error {
		return testcluster.Check(!n3.Running(), "still running")
	})
	if log := n3.LogTail(4000); n3.LastExit() == nil || !strings.Contains(log, "give n3 the same --cluster-secret-next as the other members") {
		t.Fatalf("n3 with a wrong next secret: exit %v, log:\n%s", n3.LastExit(), log)
	}
	n3.Args = []string{"--cluster-secret-next", newSecret}
	c.Restart(n3)
	c.Healthy(3)

	roll(newSecret, oldSecret)
	roll(newSecret, "")
	progress(20)
	load.Stop()

	acked := load.Acked(time.Time{})
	var gap time.Duration
	for i := 1; i < len(acked); i++ {
		gap = max(gap, acked[i].At.Sub(acked[i-1].At))
	}
	t.Logf("%d writes acknowledged over 9 restarts, %d attempts failed and were retried, longest wait between acknowledgements %s",
		len(acked), load.Failed(), gap.Round(time.Millisecond))
	// An election's worth: a leader handing over, or one failing to,
	// costs at most an election timeout and a retry or two.
	if gap > 5*time.Second {
		t.Errorf("writes stopped for %s during the rotation", gap)
	}
	c.Converged()
	for _, n := range c.Nodes {
		if err := testcluster.Readable(n, acked); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		old := *n.Client()
		old.Secret = oldSecret
		_, err := old.Self(ctx)
		cancel()
		if err == nil || !strings.Contains(err.Error(), "401") {
			t.Errorf("%s with the old secret after the rotation: %v", n.ID, err)
		}
	}
}
