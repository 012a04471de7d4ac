package cluster_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/testcluster"
)

func headerIndex(t *testing.T, r response) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(r.header.Get(front.AppliedIndexHeader), 10, 64)
	if err != nil {
		t.Fatalf("%s: %q", front.AppliedIndexHeader, r.header.Get(front.AppliedIndexHeader))
	}
	return v
}

// Every answer says which node served it, from which state, whether a
// leader is known, and for reads which level it met and how old it may be.
func TestReadLevelsAndTheirHeaders(t *testing.T) {
	c, _ := threeNodes(t, nil)
	leader := c.Leader()
	f := c.Followers()

	w := do(t, f[0], "PUT", "/resource_classes/CUSTOM_SEEN", nil)
	if w.status != 201 || w.header.Get(front.ServedByHeader) != leader.ID || w.header.Get(front.KnownLeaderHeader) != "true" {
		t.Fatalf("write via a follower: %d %v", w.status, w.header)
	}
	written := headerIndex(t, w)
	if written == 0 || w.header.Get(front.ReadLevelHeader) != "" {
		t.Fatalf("a write's answer: applied index %d, read level %q", written, w.header.Get(front.ReadLevelHeader))
	}

	check := func(what string, r response, servedBy, level string) {
		t.Helper()
		if r.status != 200 || r.header.Get(front.ServedByHeader) != servedBy || r.header.Get(front.ReadLevelHeader) != level ||
			r.header.Get(front.KnownLeaderHeader) != "true" {
			t.Fatalf("%s: %d served by %q at level %q (want %s, %s): %v", what, r.status,
				r.header.Get(front.ServedByHeader), r.header.Get(front.ReadLevelHeader), servedBy, level, r.header)
		}
		if got := headerIndex(t, r); got < written {
			t.Fatalf("%s: applied index %d, below the write acknowledged before it (%d)", what, got, written)
		}
		if level == "linearizable" && r.header.Get(front.LastContactHeader) != "0" {
			t.Fatalf("%s: a linearizable answer's last contact is %q", what, r.header.Get(front.LastContactHeader))
		}
	}
	path := "/resource_classes/CUSTOM_SEEN"
	check("read on the leader", do(t, leader, "GET", path, nil), leader.ID, "linearizable")
	// The follower's linearizable read is answered from its own state
	// (its read index covers the write) ...
	check("read on the other follower", do(t, f[1], "GET", path, nil), f[1].ID, "linearizable")
	// ... which counts as a confirmation: a bounded read right after is
	// answered locally, and says how old its state may be.
	r := do(t, f[1], "GET", path, nil, front.MaxStalenessHeader, "1m")
	check("bounded read", r, f[1].ID, "bounded")
	if ms, err := strconv.Atoi(r.header.Get(front.LastContactHeader)); err != nil || ms < 0 || ms > 60000 {
		t.Fatalf("bounded read: last contact %q", r.header.Get(front.LastContactHeader))
	}
	check("stale read", do(t, f[1], "GET", path, nil, front.StaleReadHeader, "true"), f[1].ID, "stale")
	// A bound no confirmation can meet: the read is served linearizably,
	// or refused when the client asked for strict freshness.
	check("bounded read past its bound", do(t, f[1], "GET", path, nil, front.MaxStalenessHeader, "1ns"), f[1].ID, "linearizable")
	r = do(t, f[1], "GET", path, nil, front.MaxStalenessHeader, "1ns", front.MaxStalenessStrictHeader, "true")
	if r.status != 503 || r.header.Get("Retry-After") == "" || r.header.Get(front.ServedByHeader) != f[1].ID {
		t.Fatalf("strict bounded read past its bound: %d %v %s", r.status, r.header, r.body)
	}
	if msg := errorDetail(t, r); msg == "" {
		t.Fatal("the refusal says nothing")
	}
	for _, bad := range [][]string{
		{front.MaxStalenessHeader, "soon"},
		{front.MaxStalenessHeader, "-1s"},
		{front.MaxStalenessHeader, "0s"},
		{front.MaxStalenessHeader, "1s", front.MaxStalenessStrictHeader, "maybe"},
	} {
		if r := do(t, f[0], "GET", path, nil, bad...); r.status != 400 || errorDetail(t, r) == "" {
			t.Fatalf("%v: %d %s", bad, r.status, r.body)
		}
	}
}

func errorDetail(t *testing.T, r response) string {
	t.Helper()
	errs, _ := r.json(t)["errors"].([]any)
	if len(errs) != 1 {
		return ""
	}
	d, _ := errs[0].(map[string]any)["detail"].(string)
	return d
}

// indexHistory samples the state index of the leader's state machine,
// with the time each sample was taken after: "by then, the leader had
// applied (so committed) at least this".
type indexHistory struct {
	mu      sync.Mutex
	at      []time.Time
	indexes []uint64
}

func (h *indexHistory) record(n *cluster.Node, stop <-chan struct{}) {
	for {
		var idx uint64
		n.FSM().Read(func(s *state.Store) { idx = s.LastIndex })
		now := time.Now()
		h.mu.Lock()
		h.at, h.indexes = append(h.at, now), append(h.indexes, idx)
		h.mu.Unlock()
		select {
		case <-stop:
			return
		case <-time.After(time.Millisecond):
		}
	}
}

// atLeast is the highest index the leader had applied by t (0 if no
// sample is that old).
func (h *indexHistory) atLeast(t time.Time) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var best uint64
	for i, at := range h.at {
		if at.After(t) {
			break
		}
		best = max(best, h.indexes[i])
	}
	return best
}

// A bounded-staleness answer never comes from a state older than its
// bound: its applied index is at least what the leader had applied a
// bound before the request was sent. A node cut off from the leader
// answers such reads only until its last confirmation is older than the
// bound, then refuses them (strict). The same check flags a stale read
// from the cut-off node, which shows it can fail.
func TestBoundedReadsStayWithinTheirBound(t *testing.T) {
	c, _ := threeNodes(t, nil)
	leader := c.Leader()
	f := c.Followers()
	c.Converged()

	stop := make(chan struct{})
	var bg sync.WaitGroup
	defer func() { close(stop); bg.Wait() }()
	hist := &indexHistory{}
	bg.Add(2)
	go func() { defer bg.Done(); hist.record(leader.Node, stop) }()
	go func() {
		defer bg.Done()
		// Writes through the leader all along, bounded in count.
		for i := 0; i < 5000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			leader.Node.Apply(ctx, &state.CreateTrait{Name: fmt.Sprintf("CUSTOM_T%d", i)})
			cancel()
			time.Sleep(time.Millisecond) // about time: paces the writes, so the leader's index moves all along

		}
	}()

	const bound = 300 * time.Millisecond
	boundHeader := []string{front.MaxStalenessHeader, bound.String()}
	strict := append(boundHeader, front.MaxStalenessStrictHeader, "true")
	// checkBound reports whether an answer to a read sent at sent comes
	// from a state at least as new as the leader's a bound earlier.
	checkBound := func(sent time.Time, r response) bool {
		t.Helper()
		return headerIndex(t, r) >= hist.atLeast(sent.Add(-bound))
	}

	local := 0
	for i := 0; i < 200; i++ {
		n := f[i%2]
		sent := time.Now()
		r := do(t, n, "GET", "/traits", nil, boundHeader...)
		if r.status != 200 {
			t.Fatalf("bounded read: %d %s", r.status, r.body)
		}
		if !checkBound(sent, r) {
			t.Fatalf("bounded read on %s (level %s) sent at %s: applied index %d, but the leader had applied %d by %s before",
				n.ID, r.header.Get(front.ReadLevelHeader), sent.Format(time.StampMicro), headerIndex(t, r), hist.atLeast(sent.Add(-bound)), bound)
		}
		if r.header.Get(front.ReadLevelHeader) == "bounded" && r.header.Get(front.ServedByHeader) == n.ID {
			local++
		}
		time.Sleep(2 * time.Millisecond) // about time: spreads the reads over the writes
	}
	if local < 100 {
		t.Fatalf("only %d of 200 bounded reads were answered by the follower itself", local)
	}

	// Cut f[0] off from every Raft link. Its API still reaches the
	// leader's, so it may still get read indexes: it cannot reach them.
	cut := f[0]
	c.Isolate(cut)
	cutAt := time.Now()
	testcluster.WaitFor(t, 10*time.Second, "the cut-off node refuses a strict bounded read", func() error {
		sent := time.Now()
		r := do(t, cut, "GET", "/traits", nil, strict...)
		if r.status == 503 {
			return nil
		}
		if r.status != 200 || r.header.Get(front.ServedByHeader) != cut.ID {
			t.Fatalf("strict bounded read on the cut-off node: %d served by %q", r.status, r.header.Get(front.ServedByHeader))
		}
		// A heartbeat already on its way when the links were cut can
		// still arrive and refresh the node's last contact, so the cut
		// takes effect up to one delivery later than cutAt (long on a
		// loaded machine). What must hold: the node's state is within the
		// bound (checkBound below), and it does not go on answering long
		// after the cut.
		if sent.After(cutAt.Add(bound + 2*time.Second)) {
			t.Fatalf("the cut-off node answered a read sent %s after the cut, past the bound of %s", sent.Sub(cutAt), bound)
		}
		if !checkBound(sent, r) {
			t.Fatalf("the cut-off node answered from a state older than the bound")
		}
		return fmt.Errorf("answered %d", r.status)
	})
	// Its stale answer fails the same check: the check has teeth. A write
	// after the cut, recorded in the leader's history more than a bound
	// before the read, makes sure the leader moved on (the background
	// writes may be over by now on a slow machine).
	// (Through whichever node leads now: on a loaded machine leadership
	// can move; the history keeps recording the first leader's applied
	// index, which only ever lags the leader's.)
	var written uint64
	waitFor(t, "a write after the cut", func() bool {
		l := c.Leader()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := l.Node.Apply(ctx, &state.CreateTrait{Name: "CUSTOM_AFTER_THE_CUT"}); err != nil {
			return false
		}
		l.Node.FSM().Read(func(s *state.Store) { written = s.LastIndex })
		return true
	})
	waitFor(t, "the leader's history to hold the write after the cut a bound ago", func() bool {
		return hist.atLeast(time.Now().Add(-bound)) >= written
	})
	// It keeps refusing while it is cut off: more than a bound has passed
	// since a write made after the cut.
	if r := do(t, cut, "GET", "/traits", nil, strict...); r.status != 503 {
		t.Fatalf("strict bounded read on the cut-off node past its bound: %d", r.status)
	}
	sent := time.Now()
	if r := do(t, cut, "GET", "/traits", nil, front.StaleReadHeader, "true"); r.status != 200 || checkBound(sent, r) {
		t.Fatalf("a stale read on a node cut off for %s passed the bound check (%d)", time.Since(cutAt), r.status)
	}

	c.Reconnect(cut)
	// Healed, it answers bounded reads from its own state again.
	testcluster.WaitFor(t, 10*time.Second, "the healed node answers bounded reads", func() error {
		sent := time.Now()
		r := do(t, cut, "GET", "/traits", nil, strict...)
		if r.status == 200 && !checkBound(sent, r) {
			t.Fatal("after healing, a bounded answer from a state older than the bound")
		}
		return check(r.status == 200, "%d %s", r.status, r.body)
	})
}
