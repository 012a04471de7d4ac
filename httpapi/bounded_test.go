package httpapi

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/fsm/state"
)

// recorder of what the API reports to its Observer.
type watch struct {
	mu      sync.Mutex
	aborted []string // route:reason
	steps   []int64  // of each completed search
	done    chan int // statuses of answered requests
}

func newWatch() *watch { return &watch{done: make(chan int, 64)} }

func (w *watch) RequestStarted() {}
func (w *watch) RequestDone(route, method string, status int, d time.Duration) {
	select {
	case w.done <- status:
	default:
	}
}
func (w *watch) CandidatesSearched(d time.Duration, returned int, steps int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps = append(w.steps, steps)
}
func (w *watch) RequestAborted(route, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.aborted = append(w.aborted, route+":"+reason)
}

func (w *watch) lastSteps() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.steps[len(w.steps)-1]
}

func (w *watch) abortedList() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.aborted...)
}

// enteredBackend tells when a read has its state (the search starts
// next).
type enteredBackend struct {
	Backend
	entered chan struct{}
}

func (b *enteredBackend) Read(ctx context.Context, opts backend.ReadOptions) (*state.Store, error) {
	st, err := b.Backend.Read(ctx, opts)
	select {
	case b.entered <- struct{}{}:
	default:
	}
	return st, err
}

const hostUUID = "a1000000-0000-4000-8000-000000000000"

func deviceUUID(i int) string { return fmt.Sprintf("a1000000-0000-4000-8000-%012d", i+1) }

// deviceHostAPI starts a node with the tree of the reported requests: a
// root and n children with inventory of class (total each), and returns
// the API with its watch and backend.
func deviceHostAPI(t *testing.T, cfg Config, n int, class string, total int) (*testAPI, *watch, *enteredBackend) {
	t.Helper()
	a := newTestAPI(t, Config{})
	w := newWatch()
	cfg.Observer = w
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	be := &enteredBackend{Backend: a.Node, entered: make(chan struct{}, 1)}
	srv := httptest.NewServer(New(be, cfg))
	t.Cleanup(srv.Close)
	a.URL = srv.URL
	must := func(st int, what string) {
		t.Helper()
		if st != 200 {
			t.Fatalf("%s: status %d", what, st)
		}
	}
	if strings.HasPrefix(class, "CUSTOM_") {
		if st, _, _ := a.do("PUT", "/resource_classes/"+class, "1.7", nil); st != 201 {
			t.Fatalf("class %s: %d", class, st)
		}
	}
	st, _, _ := a.do("POST", "/resource_providers", "1.20", map[string]any{"name": "host", "uuid": hostUUID})
	must(st, "host")
	for i := 0; i < n; i++ {
		st, _, _ := a.do("POST", "/resource_providers", "1.20", map[string]any{"name": fmt.Sprint("dev", i), "uuid": deviceUUID(i), "parent_provider_uuid": hostUUID})
		must(st, "device")
		st, _, _ = a.do("PUT", "/resource_providers/"+deviceUUID(i)+"/inventories", "1.26", map[string]any{
			"resource_provider_generation": 0,
			"inventories":                  map[string]any{class: map[string]any{"total": total}},
		})
		must(st, "inventory")
	}
	for len(w.done) > 0 {
		<-w.done
	}
	for len(be.entered) > 0 {
		<-be.entered
	}
	return a, w, be
}

// groupsQuery asks for n granular groups of amount of class.
func groupsQuery(n int, class string, amount func(i int) int) string {
	var q strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&q, "resources%d=%s:%d&", i, class, amount(i))
	}
	return q.String()
}

func one(int) int { return 1 }

func candidateCount(t *testing.T, body any) int {
	t.Helper()
	m, ok := body.(map[string]any)
	if !ok {
		t.Fatalf("body %v", body)
	}
	return len(m["allocation_requests"].([]any))
}

// The three requests the issue reports, against one node: none can stall
// it. Their cost is asserted through the search's step count, not time.
func TestReportedRequestsAreBounded(t *testing.T) {
	a, w, _ := deviceHostAPI(t, Config{}, 12, "VCPU", 1)

	// 1. Six, then eight, isolated groups and no limit: 665,280 and
	// 19,958,400 candidates; the default cap builds 10,000.
	for _, n := range []int{6, 8} {
		st, h, body := a.do("GET", "/allocation_candidates?group_policy=isolate&"+groupsQuery(n, "VCPU", one), "1.39", nil)
		if st != 200 || candidateCount(t, body) != DefaultMaxAllocationCandidates {
			t.Fatalf("%d groups: status %d, %d candidates", n, st, candidateCount(t, body))
		}
		// The JSON body is part of what the memory bound estimates.
		size, _ := strconv.Atoi(h.Get("Content-Length"))
		if perLevel := size / (n * DefaultMaxAllocationCandidates); perLevel > 150 {
			t.Errorf("%d groups: %d bytes of JSON per candidate level, more than the memory estimate allows for", n, perLevel)
		}
		if s := w.lastSteps(); s > 30*DefaultMaxAllocationCandidates {
			t.Errorf("%d groups: %d steps for the capped answer", n, s)
		}
	}

	// 2. Thirteen isolated groups cannot land on twelve devices: an empty
	// answer, after a few steps.
	st, _, body := a.do("GET", "/allocation_candidates?limit=1&group_policy=isolate&"+groupsQuery(13, "VCPU", one), "1.39", nil)
	if st != 200 || candidateCount(t, body) != 0 {
		t.Fatalf("13 groups: status %d, body %v", st, body)
	}
	if s := w.lastSteps(); s > 1000 {
		t.Errorf("13 groups: %d steps to find nothing", s)
	}
	// Writes go on.
	if st, _, body := a.do("PUT", "/resource_providers/"+deviceUUID(0)+"/traits", "1.6", map[string]any{
		"resource_provider_generation": 1, "traits": []string{"HW_CPU_X86_AVX2"}}); st != 200 {
		t.Fatalf("write after the search: %d %v", st, body)
	}

	// 3. Ten thousand member_of values: parsed in linear time, searched
	// (no provider is in the first aggregate) in a few steps.
	var q strings.Builder
	q.WriteString("resources=VCPU:1")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&q, "&member_of=%08x-0000-4000-8000-000000000000", i)
	}
	st, _, body = a.do("GET", "/allocation_candidates?"+q.String(), "1.39", nil)
	if st != 200 || candidateCount(t, body) != 0 {
		t.Fatalf("10k member_of: status %d", st)
	}
	if s := w.lastSteps(); s > 1000 {
		t.Errorf("10k member_of: %d steps", s)
	}
	if got := w.abortedList(); len(got) != 0 {
		t.Errorf("aborted: %v", got)
	}
}

// packingQuery is a search no pruning bound sees as unsatisfiable (6
// pieces of 4 and 13 of 3 on 12 devices of 6: a 4 leaves no room for a
// 3): it would run for hours.
func packingQuery() string {
	return "limit=1&group_policy=none&" + groupsQuery(19, "VCPU", func(i int) int {
		if i <= 6 {
			return 4
		}
		return 3
	})
}

// A request past its deadline is answered 503 placement.request.timeout,
// counted, and its search stops: a write right after it completes.
func TestRequestTimeout(t *testing.T) {
	a, w, _ := deviceHostAPI(t, Config{RequestTimeout: 300 * time.Millisecond}, 12, "VCPU", 6)
	st, _, body := a.do("GET", "/allocation_candidates?"+packingQuery(), "1.39", nil)
	e := body.(map[string]any)["errors"].([]any)[0].(map[string]any)
	if st != 503 || e["code"] != CodeRequestTimeout || !strings.Contains(e["detail"].(string), "300ms") {
		t.Fatalf("status %d, body %v", st, body)
	}
	if got := w.abortedList(); len(got) != 1 || got[0] != "/allocation_candidates:timeout" {
		t.Fatalf("aborted %v", got)
	}
	if st, _, body := a.do("PUT", "/resource_providers/"+deviceUUID(0)+"/traits", "1.6", map[string]any{
		"resource_provider_generation": 1, "traits": []string{"HW_CPU_X86_AVX2"}}); st != 200 {
		t.Fatalf("write after the timeout: %d %v", st, body)
	}
}

// A client that goes away stops its search: the request is counted as
// client_gone and the state is free for the next write.
func TestClientGoneStopsSearch(t *testing.T) {
	a, w, be := deviceHostAPI(t, Config{RequestTimeout: time.Hour}, 12, "VCPU", 6)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/allocation_candidates?"+packingQuery(), nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-be.entered // the search runs
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the request completed")
	}
	select { // the handler returned
	case <-w.done:
	case <-time.After(time.Minute):
		t.Fatal("the search goes on after its client left")
	}
	if got := w.abortedList(); len(got) != 1 || got[0] != "/allocation_candidates:client_gone" {
		t.Fatalf("aborted %v", got)
	}
	if st, _, body := a.do("PUT", "/resource_providers/"+deviceUUID(0)+"/traits", "1.6", map[string]any{
		"resource_provider_generation": 1, "traits": []string{"HW_CPU_X86_AVX2"}}); st != 200 {
		t.Fatalf("write after the disconnect: %d %v", st, body)
	}
}

// An answer over the memory bound is refused with 503
// placement.query.too_large.
func TestCandidatesMemoryBound(t *testing.T) {
	a, w, _ := deviceHostAPI(t, Config{CandidatesMaxBytes: 1 << 20}, 12, "VCPU", 1)
	st, _, body := a.do("GET", "/allocation_candidates?group_policy=isolate&"+groupsQuery(8, "VCPU", one), "1.39", nil)
	e := body.(map[string]any)["errors"].([]any)[0].(map[string]any)
	if st != 503 || e["code"] != CodeQueryTooLarge {
		t.Fatalf("status %d, body %v", st, body)
	}
	if got := w.abortedList(); len(got) != 1 || got[0] != "/allocation_candidates:too_large" {
		t.Fatalf("aborted %v", got)
	}
	// With a limit the same request fits.
	if st, _, body := a.do("GET", "/allocation_candidates?limit=100&group_policy=isolate&"+groupsQuery(8, "VCPU", one), "1.39", nil); st != 200 || candidateCount(t, body) != 100 {
		t.Fatalf("limited: %d", st)
	}
}

// While a search runs (one that would go on for hours), writes on the
// same node complete: reads run on an immutable version of the state and
// hold nothing that Apply needs.
func TestWritesGoOnBesideSearch(t *testing.T) { writesBesideSearch(t) }

// The same on one processor, which the search would hold but that it
// yields every few thousand steps (candidates' tick): the handler, Raft
// and Apply of each write get their turns.
func TestWritesGoOnBesideSearchOneProcessor(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	writesBesideSearch(t)
}

func writesBesideSearch(t *testing.T) {
	a, _, be := deviceHostAPI(t, Config{RequestTimeout: time.Hour}, 12, "VCPU", 6)
	for i := 0; i < 5; i++ {
		if st, _, _ := a.do("PUT", fmt.Sprintf("/traits/CUSTOM_T%d", i), "1.6", nil); st != 201 {
			t.Fatalf("trait: %d", st)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", a.URL+"/allocation_candidates?"+packingQuery(), nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	searched := make(chan struct{})
	go func() {
		defer close(searched)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	<-be.entered // the search runs
	// The client's timeout is a guard: a blocked write fails the test.
	client := &http.Client{Timeout: time.Minute}
	for i := 0; i < 5; i++ {
		body := strings.NewReader(fmt.Sprintf(`{"resource_provider_generation": %d, "traits": ["CUSTOM_T%d"]}`, 1+i, i))
		put, _ := http.NewRequest("PUT", a.URL+"/resource_providers/"+deviceUUID(0)+"/traits", body)
		put.Header.Set("X-Auth-Token", "admin")
		put.Header.Set("OpenStack-API-Version", "placement 1.6")
		put.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(put)
		if err != nil {
			t.Fatalf("write %d beside the search: %v", i, err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("write %d: %d", i, resp.StatusCode)
		}
		select {
		case <-searched:
			t.Fatal("the search ended: the writes were not beside it")
		default:
		}
	}
	cancel()
	<-searched
}
