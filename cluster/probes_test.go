package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/internal/testcluster"
)

func frontOf(n *testNode) *front.Handler { return n.Srv.Config.Handler.(*front.Handler) }

// probe calls /readyz (or /healthz) on n's cluster front.
func probe(t *testing.T, n *testNode, path string) (int, front.Probe) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+secret) // to see the leader's id
	var p front.Probe
	if path == "/healthz" {
		frontOf(n).Healthz(rec, req)
	} else {
		frontOf(n).Readyz(rec, req)
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("%s body %q", path, rec.Body.String())
		}
	}
	return rec.Code, p
}

// waitReady polls /readyz on n until it answers want (200 or 503).
func waitReady(t *testing.T, n *testNode, want int, within time.Duration) front.Probe {
	t.Helper()
	var p front.Probe
	testcluster.WaitFor(t, within, fmt.Sprintf("%s: /readyz %d", n.ID, want), func() error {
		var code int
		code, p = probe(t, n, "/readyz")
		return check(code == want, "%d %+v", code, p)
	})
	return p
}

// /readyz is false on a node cut off from its leader and true again once
// it has rejoined and caught up; /healthz stays true throughout, and the
// rest of the cluster stays ready.
func TestReadyzFollowsPartition(t *testing.T) {
	c, _ := threeNodes(t, nil)
	c.Converged()
	f := c.Followers()[0]
	testcluster.WaitFor(t, 10*time.Second, f.ID+" ready, following a leader, caught up", func() error {
		code, p := probe(t, f, "/readyz")
		return check(code == 200 && p.Ready && p.Leader != "" && p.Leader != f.ID && p.AppliedIndex >= p.CommitIndex, "%d %+v", code, p)
	})

	c.Isolate(f)
	p := waitReady(t, f, 503, 10*time.Second)
	if p.Reason == "" || p.Leader != "" {
		t.Fatalf("isolated node's verdict: %+v", p)
	}
	if code, _ := probe(t, f, "/healthz"); code != 200 {
		t.Fatalf("/healthz on the isolated node: %d", code)
	}
	// The others keep a leader and stay ready; writes go on without f.
	for _, o := range c.Followers() {
		if o != f {
			waitReady(t, o, 200, 10*time.Second)
		}
	}
	l := c.Leader()
	waitReady(t, l, 200, 10*time.Second)
	if r := putRetrying(t, l, "/traits/CUSTOM_WRITTEN_WHILE_CUT_OFF"); r.status != 201 && r.status != 204 {
		t.Fatalf("write during the partition: %d %s", r.status, r.body)
	}
	if code, _ := probe(t, f, "/readyz"); code != 503 {
		t.Fatalf("isolated node became ready: %d", code)
	}

	c.Reconnect(f)
	p = waitReady(t, f, 200, 15*time.Second)
	if p.Leader == "" || p.AppliedIndex < p.CommitIndex {
		t.Fatalf("rejoined node's verdict: %+v", p)
	}
	// Ready again and caught up: it ends with the leader's state.
	c.Converged()
}

// /readyz?leader=true answers 200 on the leader alone (a load balancer
// checking it sends everything to the leader) and follows a change of
// leader.
func TestReadyzLeaderOnly(t *testing.T) {
	c, _ := threeNodes(t, nil)
	c.Converged()
	leaderOnly := func() *testNode {
		t.Helper()
		leader := c.Leader()
		for _, n := range c.All() {
			// After a transfer a follower names the old leader until
			// the new one's first heartbeat reaches it.
			testcluster.WaitFor(t, 10*time.Second, n.ID+" ready and following "+leader.ID, func() error {
				code, p := probe(t, n, "/readyz")
				return check(code == 200 && p.Leader == leader.ID, "%d %+v", code, p)
			})
		}
		for _, n := range c.All() {
			want := 503
			if n == leader {
				want = 200
			}
			var p front.Probe
			testcluster.WaitFor(t, 10*time.Second, fmt.Sprintf("%s (leader %s): /readyz?leader=true %d", n.ID, leader.ID, want), func() error {
				var code int
				code, p = probe(t, n, "/readyz?leader=true")
				return check(code == want && (want == 200) == p.Ready, "%d %+v", code, p)
			})
			if want == 503 && p.Reason != "not the leader" {
				t.Errorf("%s: reason %q", n.ID, p.Reason)
			}
		}
		return leader
	}
	old := leaderOnly()
	if err := old.Node.TransferLeadership(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "leadership moves from "+old.ID, func() bool { return c.Leader() != old })
	if leaderOnly() == old {
		t.Fatal("the old leader still passes the leader check")
	}
}

// A node that is shutting down (draining) is not ready, though it still
// has a leader and serves what reaches it.
func TestReadyzFalseWhileDraining(t *testing.T) {
	c := newTestCluster(t)
	n := c.Start("n1", true, nil)
	c.Leader()
	waitReady(t, n, 200, 5*time.Second)
	frontOf(n).SetDraining(true)
	code, p := probe(t, n, "/readyz")
	if code != 503 || p.Reason != "shutting down" {
		t.Fatalf("draining node: %d %+v", code, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if p := frontOf(n).Readiness(ctx); p.Ready {
		t.Fatal("Readiness says ready while draining")
	}
}

// RequireSecret (/metrics on the API port) lets through only requests
// with the cluster secret, and nothing when no secret is configured.
func TestRequireSecret(t *testing.T) {
	c := newTestCluster(t)
	n := c.Start("n1", true, nil)
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("metrics")) })
	call := func(h http.Handler, auth string) int {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	guarded := frontOf(n).RequireSecret(ok)
	for _, tc := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {secret, 401}, {"Bearer " + secret, 200}} {
		if got := call(guarded, tc.auth); got != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, got, tc.want)
		}
	}
	noSecret := front.New(n.Node, http.NotFoundHandler(), front.Options{}).RequireSecret(ok)
	if got := call(noSecret, "Bearer "+secret); got != 403 {
		t.Errorf("without a configured secret: %d, want 403", got)
	}
}

// applyGate holds a state machine's applies while it is shut: its OnApply
// hook waits, so Apply does not return (a state machine stuck on an
// entry, as one waiting for a lock would be).
type applyGate struct {
	mu   sync.Mutex
	shut chan struct{}
}

func (g *applyGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut == nil {
		g.shut = make(chan struct{})
	}
}

func (g *applyGate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.shut != nil {
		close(g.shut)
		g.shut = nil
	}
}

func (g *applyGate) hook(string, error) {
	g.mu.Lock()
	ch := g.shut
	g.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

// gatedFSMs gives the nodes named in ids a state machine held by gate.
func gatedFSMs(t *testing.T, c *testCluster, gate *applyGate, ids ...string) {
	c.NewFSM = func(id string) *fsm.FSM {
		f := fsm.New()
		if slices.Contains(ids, id) {
			f.OnApply = gate.hook
		}
		return f
	}
	t.Cleanup(gate.open) // before the nodes stop
}

// put sends a write without the test's helpers (from a goroutine).
func put(n *testNode, path string) (int, error) {
	req, _ := http.NewRequest("PUT", "http://"+n.Addr+path, nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A node whose state machine is stuck on an entry is not ready, though
// Raft has handed the entry over and counts it applied; it is ready again
// once the entry is through.
func TestReadyzFalseWhileApplyStuck(t *testing.T) {
	c := newTestCluster(t)
	gate := &applyGate{}
	gatedFSMs(t, c, gate, "n1")
	n := c.Start("n1", true, nil)
	c.Leader()
	waitReady(t, n, 200, 5*time.Second)

	gate.close()
	done := make(chan int, 1)
	go func() {
		st, _ := put(n, "/traits/CUSTOM_STUCK")
		done <- st
	}()
	p := waitReady(t, n, 503, 10*time.Second)
	if !strings.Contains(p.Reason, "state machine has been applying entry") {
		t.Fatalf("stuck node's verdict: %+v", p)
	}
	gate.open()
	if st := <-done; st != 201 {
		t.Fatalf("the write held by the gate: %d", st)
	}
	p = waitReady(t, n, 200, 10*time.Second)
	if p.StateMachineIndex < p.CommitIndex-1 {
		t.Fatalf("ready node's indexes: %+v", p)
	}
}

// A follower whose state machine falls behind the commit index by more
// than the bound is not ready; the rest of the cluster goes on writing.
func TestReadyzFalseWhileStateMachineBehind(t *testing.T) {
	c := newTestCluster(t)
	c.MaxApplyLag = 5
	gate := &applyGate{}
	gatedFSMs(t, c, gate, "n3")
	n1 := c.Start("n1", true, nil)
	c.Leader()
	n2, n3 := c.Start("n2", false, nil), c.Start("n3", false, nil)
	c.Join(n2, n1, false)
	c.Join(n3, n1, false)
	c.Converged()
	waitReady(t, n3, 200, 10*time.Second)

	gate.close()
	leader := c.Leader()
	for i := 0; i < 20; i++ {
		if r := do(t, leader, "PUT", fmt.Sprintf("/traits/CUSTOM_BEHIND_%d", i), nil); r.status != 201 {
			t.Fatalf("write %d: %d %s", i, r.status, r.body)
		}
	}
	p := waitReady(t, n3, 503, 10*time.Second)
	if !strings.Contains(p.Reason, "entries behind the commit index") {
		t.Fatalf("lagging follower's verdict: %+v", p)
	}
	waitReady(t, leader, 200, 5*time.Second)
	gate.open()
	waitReady(t, n3, 200, 10*time.Second)
	c.Converged()
}
