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

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
)

func front(n *testNode) *cluster.Handler { return n.srv.Config.Handler.(*cluster.Handler) }

// probe calls /readyz (or /healthz) on n's cluster front.
func probe(t *testing.T, n *testNode, path string) (int, cluster.Probe) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", "Bearer "+secret) // to see the leader's id
	var p cluster.Probe
	if path == "/healthz" {
		front(n).Healthz(rec, req)
	} else {
		front(n).Readyz(rec, req)
		if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
			t.Fatalf("%s body %q", path, rec.Body.String())
		}
	}
	return rec.Code, p
}

// waitReady polls /readyz on n until it answers want (200 or 503).
func waitReady(t *testing.T, n *testNode, want int, within time.Duration) cluster.Probe {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		code, p := probe(t, n, "/readyz")
		if code == want {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: /readyz still %d after %v, want %d: %+v", n.id, code, within, want, p)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isolate cuts n off from every other node (both directions); heal
// connects it again.
func (c *testCluster) isolate(n *testNode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.trans.DisconnectAll()
	for _, o := range c.nodes {
		if o != n && !o.down {
			o.trans.Disconnect(raft.ServerAddress(n.id))
		}
	}
}

func (c *testCluster) heal(n *testNode) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.nodes {
		if o != n && !o.down {
			o.trans.Connect(raft.ServerAddress(n.id), n.trans)
			n.trans.Connect(raft.ServerAddress(o.id), o.trans)
		}
	}
}

// /readyz is false on a node cut off from its leader and true again once
// it has rejoined and caught up; /healthz stays true throughout, and the
// rest of the cluster stays ready.
func TestReadyzFollowsPartition(t *testing.T) {
	c, _ := threeNodes(t, nil)
	leader := c.leader()
	c.converged()
	f := c.followers()[0]
	if code, p := probe(t, f, "/readyz"); code != 200 || !p.Ready || p.Leader != leader.id || p.AppliedIndex < p.CommitIndex {
		t.Fatalf("connected follower not ready: %d %+v", code, p)
	}

	c.isolate(f)
	p := waitReady(t, f, 503, 10*time.Second)
	if p.Reason == "" || p.Leader != "" {
		t.Fatalf("isolated node's verdict: %+v", p)
	}
	if code, _ := probe(t, f, "/healthz"); code != 200 {
		t.Fatalf("/healthz on the isolated node: %d", code)
	}
	// The others keep a leader and stay ready; writes go on without f.
	for _, o := range c.followers() {
		if o != f {
			waitReady(t, o, 200, 10*time.Second)
		}
	}
	l := c.leader()
	waitReady(t, l, 200, 10*time.Second)
	if r := do(t, l, "PUT", "/traits/CUSTOM_WRITTEN_WHILE_CUT_OFF", nil); r.status != 201 {
		t.Fatalf("write during the partition: %d %s", r.status, r.body)
	}
	if code, _ := probe(t, f, "/readyz"); code != 503 {
		t.Fatalf("isolated node became ready: %d", code)
	}

	c.heal(f)
	p = waitReady(t, f, 200, 15*time.Second)
	if p.Leader == "" || p.AppliedIndex < p.CommitIndex {
		t.Fatalf("rejoined node's verdict: %+v", p)
	}
	// Ready again and caught up: it ends with the leader's state.
	c.converged()
}

// /readyz?leader=true answers 200 on the leader alone (a load balancer
// checking it sends everything to the leader) and follows a change of
// leader.
func TestReadyzLeaderOnly(t *testing.T) {
	c, _ := threeNodes(t, nil)
	c.converged()
	check := func() *testNode {
		t.Helper()
		leader := c.leader()
		for _, n := range c.nodes {
			// After a transfer a follower names the old leader until
			// the new one's first heartbeat reaches it.
			deadline := time.Now().Add(5 * time.Second)
			for {
				p := waitReady(t, n, 200, 10*time.Second)
				if p.Leader == leader.id {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s follows %q, not %s", n.id, p.Leader, leader.id)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		for _, n := range c.nodes {
			want := 503
			if n == leader {
				want = 200
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				code, p := probe(t, n, "/readyz?leader=true")
				if code == want && (want == 200) == p.Ready {
					if want == 503 && p.Reason != "not the leader" {
						t.Errorf("%s: reason %q", n.id, p.Reason)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s (leader %s): /readyz?leader=true %d %+v, want %d", n.id, leader.id, code, p, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
		return leader
	}
	old := check()
	if err := old.node.TransferLeadership(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.leader() == old {
		if time.Now().After(deadline) {
			t.Fatal("leadership did not move")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if check() == old {
		t.Fatal("the old leader still passes the leader check")
	}
}

// A node that is shutting down (draining) is not ready, though it still
// has a leader and serves what reaches it.
func TestReadyzFalseWhileDraining(t *testing.T) {
	c := newTestCluster(t)
	n := c.start("n1", true, nil)
	c.leader()
	waitReady(t, n, 200, 5*time.Second)
	front(n).SetDraining(true)
	code, p := probe(t, n, "/readyz")
	if code != 503 || p.Reason != "shutting down" {
		t.Fatalf("draining node: %d %+v", code, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if p := front(n).Readiness(ctx); p.Ready {
		t.Fatal("Readiness says ready while draining")
	}
}

// RequireSecret (/metrics on the API port) lets through only requests
// with the cluster secret, and nothing when no secret is configured.
func TestRequireSecret(t *testing.T) {
	c := newTestCluster(t)
	n := c.start("n1", true, nil)
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
	guarded := front(n).RequireSecret(ok)
	for _, tc := range []struct {
		auth string
		want int
	}{{"", 401}, {"Bearer wrong", 401}, {secret, 401}, {"Bearer " + secret, 200}} {
		if got := call(guarded, tc.auth); got != tc.want {
			t.Errorf("Authorization %q: %d, want %d", tc.auth, got, tc.want)
		}
	}
	noSecret := n.node.Handler(http.NotFoundHandler(), cluster.HandlerOptions{}).RequireSecret(ok)
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
	c.newFSM = func(id string) *fsm.FSM {
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
	req, _ := http.NewRequest("PUT", "http://"+n.addr+path, nil)
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
	n := c.start("n1", true, nil)
	c.leader()
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
	c.maxApplyLag = 5
	gate := &applyGate{}
	gatedFSMs(t, c, gate, "n3")
	n1 := c.start("n1", true, nil)
	c.leader()
	n2, n3 := c.start("n2", false, nil), c.start("n3", false, nil)
	c.join(n2, n1, false)
	c.join(n3, n1, false)
	c.converged()
	waitReady(t, n3, 200, 10*time.Second)

	gate.close()
	leader := c.leader()
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
	c.converged()
}
