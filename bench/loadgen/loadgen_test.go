package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// startPlacementd runs a single-node placementd in process: real Raft
// (in-memory log and transport), real FSM, the HTTP API behind the
// cluster front, as `placementd serve` stacks them.
func startPlacementd(t *testing.T) string {
	t.Helper()
	node := testcluster.OpenNode(t, cluster.Config{Tune: testcluster.SingleNodeRaft(func(c *raft.Config) { c.BatchApplyCh = true })}, nil)
	api := httpapi.New(node, httpapi.Config{Logger: testcluster.Quiet})
	return testcluster.Front(t, node, api, front.Options{}).URL
}

// TestRunScarceCapacity runs the whole workload on a fleet so small that
// the clients fight over the last resources: there must be conflicts and
// exhausted queries, yet no overcommit and no lost or phantom claim.
func TestRunScarceCapacity(t *testing.T) {
	for _, numa := range []bool{false, true} {
		t.Run(map[bool]string{false: "flat", true: "numa"}[numa], func(t *testing.T) {
			url := startPlacementd(t)
			var log bytes.Buffer
			rep, err := Run(context.Background(), Config{
				Label: "test", Endpoints: []string{url}, Nodes: 4, NUMA: numa, Aggregates: 2, Clients: 6,
				// 4 nodes x 1024 VCPU (256 at ratio 4) at 128 per
				// claim: 32 claims fit.
				Flavor: Flavor{VCPU: 128, MemoryMB: 1024, DiskGB: 10}, Limit: 10,
				Duration: 20 * time.Second, MaxOps: 30, Log: &log,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Log("\n" + log.String())
			wantProviders := 2 + 4
			if numa {
				wantProviders += 8
			}
			if rep.Providers != wantProviders || rep.Verify.Providers != wantProviders {
				t.Errorf("providers: %d (verified %d), want %d", rep.Providers, rep.Verify.Providers, wantProviders)
			}
			if len(rep.Phases) != len(AllPhases) {
				t.Fatalf("phases: %+v", rep.Phases)
			}
			for _, p := range rep.Phases {
				if p.Errors != 0 {
					t.Errorf("%s: %d errors, first %s", p.Name, p.Errors, p.FirstError)
				}
			}
			sched := rep.Phase(PhaseScheduler)
			if sched.Ops == 0 || sched.Ops > 30 {
				t.Errorf("scheduler claims: %d", sched.Ops)
			}
			if sched.Latency[KindCandidates].Count == 0 || sched.Latency[KindClaimPut].Count < sched.Ops {
				t.Errorf("scheduler latencies: %+v", sched.Latency)
			}
			put := rep.Phase(PhasePut)
			// Scheduler and raw claims together ask for more than fits:
			// some must be refused.
			if put.Conflicts+sched.Failures+sched.Conflicts == 0 {
				t.Errorf("no claim was refused: scheduler %+v put %+v", sched, put)
			}
			paced := rep.Phase(PhasePutPaced)
			if n := paced.Latency[KindPutPaced].Count; n != 30 {
				t.Errorf("paced PUTs timed: %d, want every one of the 30 sent", n)
			}
			gate := rep.Phase(PhaseGate)
			// The gate claims first, one at a time, each the first
			// candidate of its query (1 VCPU): all of them fit, and
			// leave room for fewer than 32 of the flavor.
			if gate.Claims != GateClaims {
				t.Errorf("gate claims: %d, want %d", gate.Claims, GateClaims)
			}
			if sched.Ops+put.Ops+paced.Ops+2*rep.Phase(PhasePost).Ops > 32 {
				t.Errorf("more claims succeeded than fit: %d + %d + %d + 2x%d", sched.Ops, put.Ops, paced.Ops, rep.Phase(PhasePost).Ops)
			}
			if rep.Phase(PhaseUsages).Ops != 30 {
				t.Errorf("usages: %+v", rep.Phase(PhaseUsages))
			}
			del := rep.Phase(PhaseDelete)
			made := gate.Claims + sched.Ops + put.Ops + paced.Ops + 2*rep.Phase(PhasePost).Ops
			if del.Ops == 0 || del.Ops > made/2 {
				t.Errorf("deleted %d of %d", del.Ops, made)
			}
			// The gate's 500 queries, whatever Clients and MaxOps say,
			// over kept-alive connections and over new ones.
			for _, g := range []*Phase{gate, rep.Phase(PhaseGateNewConn)} {
				if g.Ops != GateRequests || g.Latency[KindGate].Count != GateRequests {
					t.Errorf("%s: %+v", g.Name, g)
				}
			}
			v := rep.Verify
			if !v.OK || v.Claims != made-del.Ops || v.Deleted != del.Ops {
				t.Errorf("verify: %s (made %d, deleted %d)", v.Summary(), made, del.Ops)
			}
		})
	}
}

// TestVerifyFindsTampering changes allocations behind the generator's
// back; the verification must notice each change.
func TestVerifyFindsTampering(t *testing.T) {
	url := startPlacementd(t)
	r, err := newRun(Config{Endpoints: []string{url}, Nodes: 3, Aggregates: 1, Clients: 2, Duration: 10 * time.Second, MaxOps: 6})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.setup(ctx); err != nil {
		t.Fatal(err)
	}
	if p := r.phase(ctx, PhasePut); p.Ops != 6 {
		t.Fatalf("put: %+v", p)
	}
	if v := r.verify(ctx); !v.OK || v.Claims != 6 {
		t.Fatalf("before tampering: %s", v.Summary())
	}
	var all []*consumer
	for _, w := range r.workers {
		all = append(all, w.consumers...)
	}
	w := r.workers[0]
	// Remove one claim, change another's amounts, add a stranger.
	if err := w.c.do(ctx, "", "DELETE", "/allocations/"+all[0].uuid, nil).expect(204, nil); err != nil {
		t.Fatal(err)
	}
	changed := alloc{}
	for rp, res := range all[1].alloc {
		changed[rp] = map[string]int64{}
		for class, n := range res {
			changed[rp][class] = n + 1
		}
	}
	body := map[string]any{"allocations": allocBody(changed), "project_id": "p", "user_id": "u", "consumer_generation": 1}
	if err := w.c.do(ctx, "", "PUT", "/allocations/"+all[1].uuid, body).expect(204, nil); err != nil {
		t.Fatal(err)
	}
	if w.claim(ctx, "", w.nodeAlloc(r.nodes[0]), &counts{}) != claimOK {
		t.Fatal("extra claim failed")
	}
	w.consumers = w.consumers[:len(w.consumers)-1] // forget it: a phantom
	v := r.verify(ctx)
	if v.OK || v.Missing != 1 || v.Wrong != 1 || v.Unexpected != 1 || v.OverCapacity != 0 || v.UsageMismatch != 0 {
		t.Errorf("after tampering: %s", v.Summary())
	}
}

func TestTableRatios(t *testing.T) {
	up := &Report{Label: "upstream", Setup: Phase{Ops: 10, PerSec: 50}, Phases: []Phase{
		{Name: PhaseScheduler, PerSec: 7, Conflicts: 3, Latency: map[string]Latency{KindCandidates: {Count: 5, P50: 300, P99: 600}}},
	}, Verify: Verify{OK: true, Claims: 70}}
	pd := &Report{Label: "placementd-1", Setup: Phase{Ops: 10, PerSec: 5000}, Phases: []Phase{
		{Name: PhaseScheduler, PerSec: 1400, Conflicts: 9, Latency: map[string]Latency{KindCandidates: {Count: 5, P50: 3, P99: 6}}},
	}, Verify: Verify{OK: false, Claims: 14000}}
	var b bytes.Buffer
	Table(&b, []*Report{up, pd})
	out := b.String()
	t.Log("\n" + out)
	for _, want := range []string{
		"setup requests/s", "100.0×", // 5000 / 50
		"scheduler claims/s", "200.0×", // 1400 / 7: throughput ratio
		"candidates GET p50 ms", // 300 ms / 3 ms: latency ratio
		"OK (70 claims)", "FAILED (14000 claims)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q", want)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "  candidates GET p50") && !strings.HasSuffix(l, "100.0×") {
			t.Errorf("latency ratio: %q", l)
		}
		if strings.HasPrefix(l, "  conflicts") && strings.Contains(l, "×") {
			t.Errorf("counts get no ratio: %q", l)
		}
		if strings.HasPrefix(l, "raw PUT") && !strings.Contains(l, "-") {
			t.Errorf("missing phase shown as -: %q", l)
		}
	}
}

// TestTreeCPU: the CPU this test burns shows up in its own process tree
// as getrusage counts it.
func TestTreeCPU(t *testing.T) {
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before, ok := treeCPU([]int{os.Getpid()})
	if !ok {
		t.Skip("no /proc")
	}
	ru0 := rusage()
	// Spin until 200 ms of CPU are used, however busy the machine is.
	for rusage()-ru0 < 200*time.Millisecond {
	}
	after, _ := treeCPU([]int{os.Getpid()})
	spent := rusage() - ru0
	if d := after - before; d < spent-50*time.Millisecond || d > spent+50*time.Millisecond {
		t.Errorf("%v of CPU counted as %v", spent, d)
	}
	if _, ok := treeCPU([]int{1 << 30}); ok {
		t.Error("a process that does not exist was found")
	}
}

// The scheduler reads allocation requests by delimiting them in the body;
// whatever the key order and whatever the strings hold, it must find the
// same elements encoding/json finds.
func TestCandidatesDecode(t *testing.T) {
	bodies := []string{
		`{"allocation_requests": [{"allocations": {"a": {"resources": {"VCPU": 1}}}}, {"allocations": {"b": {"resources": {"DISK_GB": 2}}}, "mappings": {"": ["b"]}}], "provider_summaries": {"a": {"traits": ["X]}\"{"]}}}`,
		`{"provider_summaries": {"a": {"traits": ["[\\", "}"], "resources": {}}}, "allocation_requests": [{"allocations": {"x\"]": {"resources": {"VCPU": 1}}}}]}`,
		`{"allocation_requests": [], "provider_summaries": {}}`,
	}
	for _, body := range bodies {
		var got candidates
		if err := got.decode([]byte(body)); err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		var want struct {
			AllocationRequests []json.RawMessage `json:"allocation_requests"`
		}
		if err := json.Unmarshal([]byte(body), &want); err != nil {
			t.Fatal(err)
		}
		if len(got.AllocationRequests) != len(want.AllocationRequests) {
			t.Fatalf("%s: %d requests, want %d", body, len(got.AllocationRequests), len(want.AllocationRequests))
		}
		for i := range want.AllocationRequests {
			if string(got.AllocationRequests[i]) != string(want.AllocationRequests[i]) {
				t.Errorf("%s: request %d is %s, want %s", body, i, got.AllocationRequests[i], want.AllocationRequests[i])
			}
		}
	}
	var c candidates
	if err := c.decode([]byte(`{"provider_summaries": {}}`)); err == nil {
		t.Error("a body without allocation_requests was accepted")
	}
}

// TestGateCountsLengthChange: the gate checks answers as ab does, by
// status and by length against the first answer, which alone it
// decodes; an answer of another length is an error, not a query served.
func TestGateCountsLengthChange(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body := `{"allocation_requests": [{"allocations": {"a": {"resources": {"VCPU": 1}}}}, {"allocations": {"b": {"resources": {"VCPU": 1}}}}], "provider_summaries": {}}`
		if served.Add(1) == 7 { // the sixth of the measured queries
			body = strings.Replace(body, `"b"`, `"bb"`, 1)
		}
		io.WriteString(w, body)
	}))
	defer srv.Close()
	r, err := newRun(Config{Endpoints: []string{srv.URL}, Nodes: 1, Aggregates: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.aggs = []string{"agg"}
	p := r.gate(context.Background(), PhaseGate)
	if p.Answer != 2 || p.Ops != GateRequests-1 || p.Errors != 1 || !strings.Contains(p.FirstError, "the first had") {
		t.Errorf("gate: answer %d, ops %d, errors %d (%q)", p.Answer, p.Ops, p.Errors, p.FirstError)
	}
	if n := served.Load(); n != GateRequests+1 {
		t.Errorf("served %d queries, want %d (the first answer and the gate's)", n, GateRequests+1)
	}
}

// TestGateNewConn: gate-new-conn sends every query on a connection of its
// own, as ab without -k; the gate keeps its connections alive.
func TestGateNewConn(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		io.WriteString(w, `{"allocation_requests": [], "provider_summaries": {}}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	r, err := newRun(Config{Endpoints: []string{srv.URL}, Nodes: 1, Aggregates: 1, Clients: 1})
	if err != nil {
		t.Fatal(err)
	}
	r.aggs = []string{"agg"}
	for _, c := range []struct {
		phase    string
		min, max int64
	}{
		// Kept alive: about one per client (a loaded machine may make the
		// transport open a few more while one is being returned).
		{PhaseGate, 1, 5 * GateClients},
		{PhaseGateNewConn, GateRequests, GateRequests + 1},
	} {
		conns.Store(0)
		p := r.gate(context.Background(), c.phase)
		if p.Name != c.phase || p.Ops != GateRequests || p.Errors != 0 {
			t.Errorf("%s: %+v", c.phase, p)
		}
		if n := conns.Load(); n < c.min || n > c.max {
			t.Errorf("%s: %d connections for %d queries, want %d to %d", c.phase, n, GateRequests, c.min, c.max)
		}
	}
}
