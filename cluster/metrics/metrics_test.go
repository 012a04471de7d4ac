package metrics_test

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/cluster/metrics"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// node is one placementd node wired as `placementd serve` wires it: a
// real single-node cluster on disk, the API with the metrics observer and
// the timed backend, the FSM hook, and /metrics served by the registry.
type node struct {
	api, prom *httptest.Server
	node      *cluster.Node
}

func startNode(t *testing.T) *node {
	t.Helper()
	dir := t.TempDir()
	m := metrics.New()
	var routes []metrics.Route
	for _, r := range httpapi.Routes() {
		routes = append(routes, metrics.Route{Path: r.Path, Methods: r.Methods})
	}
	m.Preset(routes, fsm.CommandKinds())
	machine := fsm.New()
	machine.OnApply = m.Applied
	m.WatchState(machine)
	if err := m.RaftBridge(); err != nil {
		t.Fatal(err)
	}
	// Real TCP and BoltDB files, with Raft's default timeouts.
	n := testcluster.OpenNode(t, cluster.Config{RaftAddr: "127.0.0.1:0", DataDir: dir, Tune: func(*raft.Config) {},
		Logger: hclog.NewNullLogger()}, machine)
	stop := m.WatchNode(n, dir)
	t.Cleanup(stop)
	api := httpapi.New(m.Backend(n), httpapi.Config{Logger: testcluster.Quiet, Observer: m})
	return &node{node: n,
		api:  testcluster.Front(t, n, api, front.Options{}),
		prom: testcluster.Serve(t, m.Handler()),
	}
}

// call sends a Placement request as admin at microversion 1.39 and
// returns the status and decoded body.
func (n *node) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	r := testcluster.Do(t, n.api.URL, method, path, body)
	var out map[string]any
	json.Unmarshal(r.Body, &out)
	return r.Status, out
}

// scrape reads /metrics in the text format: series (name and labels, as
// exposed) to value.
func (n *node) scrape(t *testing.T) map[string]float64 {
	t.Helper()
	resp, err := http.Get(n.prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("/metrics Content-Type %q", ct)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("bad exposition line %q", line)
		}
		out[line[:i]] = v
	}
	return out
}

func errorCode(body map[string]any) string {
	errs, _ := body["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	code, _ := e["code"].(string)
	return code
}

// A scripted workload moves the counters and histograms by exactly the
// expected amounts: requests by route template and status, generation
// conflicts and capacity rejections by their Placement error code,
// proposals, candidates, state sizes, snapshots.
// The series alerts and dashboards watch exist at zero before anything
// happened: rate() and increase() over them work from the first event.
func TestLabelledSeriesExistFromStart(t *testing.T) {
	got := startNode(t).scrape(t)
	for _, series := range []string{
		`placementd_http_requests_total{method="PUT",route="/allocations/{consumer_uuid}",status="503"}`,
		`placementd_http_requests_total{method="GET",route="/allocation_candidates",status="500"}`,
		`placementd_http_request_duration_seconds_count{method="POST",route="/reshaper"}`,
		`placementd_http_requests_aborted_total{reason="timeout",route="/allocation_candidates"}`,
		`placementd_raft_proposals_total{kind="allocations.set",outcome="unknown_outcome"}`,
		`placementd_raft_apply_duration_seconds_count{kind="provider.create"}`,
		`placementd_raft_snapshot_duration_seconds_count{phase="persist"}`,
	} {
		if v, ok := got[series]; !ok || v != 0 {
			t.Errorf("%s: %v (present %v), want 0 from start", series, v, ok)
		}
	}
	for _, kind := range fsm.CommandKinds() {
		if _, ok := got[`placementd_fsm_commands_applied_total{code="",kind="`+kind+`",result="ok"}`]; !ok {
			t.Errorf("no applied series for %s from start", kind)
		}
	}
}

func TestMetricsAfterWorkload(t *testing.T) {
	n := startNode(t)
	before := n.scrape(t)

	const rp = "4e8e5957-649f-477b-9e5b-f1f75b21c03c"
	const consumer = "6c7b1c2a-7f6a-4bd5-9b1a-0b0f1a7a6a01"
	const project = "7e7a2b4c-0a4c-4a61-9e8f-6f0d3c3b1a11"
	if st, _ := n.call(t, "POST", "/resource_providers", map[string]any{"name": "cn1", "uuid": rp}); st != 200 {
		t.Fatalf("create provider: %d", st)
	}
	inv := func(gen int) map[string]any {
		return map[string]any{"resource_provider_generation": gen,
			"inventories": map[string]any{"VCPU": map[string]any{"total": 4}}}
	}
	if st, _ := n.call(t, "PUT", "/resource_providers/"+rp+"/inventories", inv(0)); st != 200 {
		t.Fatalf("set inventory: %d", st)
	}
	const staleWrites = 3
	for i := 0; i < staleWrites; i++ {
		st, body := n.call(t, "PUT", "/resource_providers/"+rp+"/inventories", inv(0))
		if st != 409 || errorCode(body) != "placement.concurrent_update" {
			t.Fatalf("stale generation: %d %v", st, body)
		}
	}
	alloc := func(vcpu int) map[string]any {
		return map[string]any{
			"allocations":         map[string]any{rp: map[string]any{"resources": map[string]any{"VCPU": vcpu}}},
			"project_id":          project,
			"user_id":             project,
			"consumer_generation": nil,
			"consumer_type":       "INSTANCE",
		}
	}
	const overCapacity = 2
	for i := 0; i < overCapacity; i++ {
		if st, body := n.call(t, "PUT", "/allocations/"+consumer, alloc(5)); st != 409 {
			t.Fatalf("over capacity: %d %v", st, body)
		}
	}
	if st, body := n.call(t, "PUT", "/allocations/"+consumer, alloc(3)); st != 204 {
		t.Fatalf("allocate: %d %v", st, body)
	}
	const searches = 2
	for i := 0; i < searches; i++ {
		st, body := n.call(t, "GET", "/allocation_candidates?resources=VCPU:1", nil)
		if reqs, _ := body["allocation_requests"].([]any); st != 200 || len(reqs) != 1 {
			t.Fatalf("candidates: %d %v", st, body)
		}
	}
	if st, _ := n.call(t, "GET", "/no/such/path", nil); st != 404 {
		t.Fatalf("unknown path: %d", st)
	}
	if err := n.node.SnapshotNow(); err != nil {
		t.Fatal(err)
	}

	after := n.scrape(t)
	delta := func(series string) float64 { return after[series] - before[series] }
	for series, want := range map[string]float64{
		`placementd_http_requests_total{method="POST",route="/resource_providers",status="200"}`:                           1,
		`placementd_http_requests_total{method="PUT",route="/resource_providers/{uuid}/inventories",status="200"}`:         1,
		`placementd_http_requests_total{method="PUT",route="/resource_providers/{uuid}/inventories",status="409"}`:         staleWrites,
		`placementd_http_requests_total{method="PUT",route="/allocations/{consumer_uuid}",status="409"}`:                   overCapacity,
		`placementd_http_requests_total{method="PUT",route="/allocations/{consumer_uuid}",status="204"}`:                   1,
		`placementd_http_requests_total{method="GET",route="/allocation_candidates",status="200"}`:                         searches,
		`placementd_http_requests_total{method="GET",route="unmatched",status="404"}`:                                      1,
		`placementd_http_request_duration_seconds_count{method="PUT",route="/resource_providers/{uuid}/inventories"}`:      1 + staleWrites,
		`placementd_fsm_commands_applied_total{code="",kind="inventory.set",result="ok"}`:                                  1,
		`placementd_fsm_commands_applied_total{code="placement.concurrent_update",kind="inventory.set",result="conflict"}`: staleWrites,
		`placementd_fsm_commands_applied_total{code="placement.undefined_code",kind="allocations.set",result="conflict"}`:  overCapacity,
		`placementd_fsm_commands_applied_total{code="",kind="allocations.set",result="ok"}`:                                1,
		`placementd_raft_proposals_total{kind="allocations.set",outcome="rejected"}`:                                       overCapacity,
		`placementd_raft_proposals_total{kind="allocations.set",outcome="applied"}`:                                        1,
		`placementd_raft_apply_duration_seconds_count{kind="inventory.set"}`:                                               1 + staleWrites,
		`placementd_allocation_candidates_query_duration_seconds_count`:                                                    searches,
		`placementd_allocation_candidates_returned_sum`:                                                                    searches,
		`placementd_allocation_candidates_returned_bucket{le="1"}`:                                                         searches,
		`placementd_allocation_candidates_returned_bucket{le="0"}`:                                                         0,
		`placementd_raft_snapshots_total`:                                                                                  1,
		`placementd_raft_snapshot_duration_seconds_count{phase="persist"}`:                                                 1,
		`placementd_resource_providers`: 1,
		`placementd_consumers`:          1,
		`placementd_allocations`:        1,
	} {
		if _, ok := after[series]; !ok {
			t.Errorf("%s: not exposed", series)
		} else if got := delta(series); got != want {
			t.Errorf("%s moved by %v, want %v", series, got, want)
		}
	}
	// Every write went through Raft, so the commit duration histogram
	// moved at least once per write.
	if got := delta(`placementd_raft_commit_duration_seconds_count`); got < 1+1+staleWrites+overCapacity+1 {
		t.Errorf("commit duration count moved by %v", got)
	}
	// One write at a time: every entry held one command.
	if e, c := delta(`placementd_raft_proposed_entries_total`), delta(`placementd_raft_proposed_commands_total`); e != c || c < 1+1+staleWrites+overCapacity+1 {
		t.Errorf("proposed entries moved by %v, commands by %v", e, c)
	}
	for series, want := range map[string]float64{
		`placementd_raft_state{state="leader"}`:   1,
		`placementd_raft_state{state="follower"}`: 0,
		`placementd_raft_has_leader`:              1,
		`placementd_raft_peers{suffrage="voter"}`: 1,
		`placementd_raft_leader_changes_total`:    1,
		`placementd_http_requests_in_flight`:      0,
	} {
		if got, ok := after[series]; !ok || got != want {
			t.Errorf("%s = %v (exposed %v), want %v", series, got, ok, want)
		}
	}
	if after[`placementd_raft_applied_index`] != after[`placementd_raft_commit_index`] || after[`placementd_raft_commit_index`] < 8 {
		t.Errorf("commit %v, applied %v", after[`placementd_raft_commit_index`], after[`placementd_raft_applied_index`])
	}
	if after[`placementd_raft_last_snapshot_index`] < 8 || after[`placementd_raft_snapshot_size_bytes`] <= 0 {
		t.Errorf("snapshot index %v, size %v", after[`placementd_raft_last_snapshot_index`], after[`placementd_raft_snapshot_size_bytes`])
	}
	for _, series := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := after[series]; !ok {
			t.Errorf("%s: runtime/process collector missing", series)
		}
	}
	if t.Failed() {
		for k, v := range after {
			if strings.HasPrefix(k, "placementd_") && !strings.Contains(k, "_bucket") {
				t.Log(k, v)
			}
		}
	}
}

// A nil *Metrics ignores every observation (a node built without metrics).
func TestNilMetricsIgnoreObservations(t *testing.T) {
	var none *metrics.Metrics
	none.Applied("x", nil)
	none.RequestStarted()
	none.RequestDone("", "GET", 200, time.Millisecond)
	none.CandidatesSearched(time.Millisecond, 1, 10)
	none.RequestAborted("", "timeout")
	if none.Backend(nil) != nil {
		t.Fatal("nil metrics wrapped the backend")
	}
}
