package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/internal/testcluster"
)

// abortCounter is an Observer counting RequestAborted by reason.
type abortCounter struct {
	mu      sync.Mutex
	reasons map[string]int
}

func (c *abortCounter) RequestStarted()                                {}
func (c *abortCounter) RequestDone(string, string, int, time.Duration) {}
func (c *abortCounter) CandidatesSearched(time.Duration, int, int64)   {}
func (c *abortCounter) RequestAborted(route, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reasons[reason]++
}

func (c *abortCounter) count(reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reasons[reason]
}

// TestAdmissionBusy holds every admission slot with requests stopped in
// a hook once admitted: the next request of the kind is answered 503
// placement.server.busy with Retry-After, and counted; once the held ones
// go on, requests are admitted again.
func TestAdmissionBusy(t *testing.T) {
	obs := &abortCounter{reasons: map[string]int{}}
	entered := make(chan string, 4)
	hold := make(chan struct{})
	api := newTestAPIWith(t, Config{
		// One search at a time, and one small body's worth of decoding.
		MaxCandidateSearches: 1, MaxBodyDecodeBytes: MinBodyWeight,
		AdmissionWait: time.Millisecond, Observer: obs,
	}, func(s *Server) {
		s.onAdmitted = func(kind string) {
			if kind == AdmitAnswer {
				return // the search's answer, once the search is through
			}
			entered <- kind
			<-hold
		}
	})
	send := func(method, path string, body []byte) (*http.Response, []byte) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		req, _ := http.NewRequest(method, api.URL+path, rd)
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		return resp, raw
	}
	checkBusy := func(what string, resp *http.Response, raw []byte) {
		t.Helper()
		if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" {
			t.Fatalf("%s while the slots are held: %d, Retry-After %q, %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), raw)
		}
		var e errorBody
		if err := json.Unmarshal(raw, &e); err != nil || len(e.Errors) != 1 || e.Errors[0].Code != CodeServerBusy ||
			e.Errors[0].RequestID == "" || !strings.Contains(e.Errors[0].Detail, "busy") {
			t.Fatalf("%s: not a placement.server.busy error: %s", what, raw)
		}
	}
	cases := []struct {
		kind, method, path string
		body               []byte
		ok                 int
	}{
		{AdmitSearch, http.MethodGet, "/allocation_candidates?resources=VCPU:1", nil, http.StatusOK},
		{AdmitBody, http.MethodPost, "/resource_classes", []byte(`{"name": "CUSTOM_HELD"}`), http.StatusCreated},
	}
	for _, c := range cases {
		hold = make(chan struct{})
		held := make(chan int)
		go func() {
			resp, _ := send(c.method, c.path, c.body)
			if resp == nil {
				held <- 0
				return
			}
			held <- resp.StatusCode
		}()
		if kind := <-entered; kind != c.kind {
			t.Fatalf("admitted a %s, want a %s", kind, c.kind)
		}
		before := obs.count(AbortBusy)
		resp, raw := send(c.method, c.path, bytes.ReplaceAll(c.body, []byte("HELD"), []byte("OTHER")))
		checkBusy(c.kind, resp, raw)
		if n := obs.count(AbortBusy); n != before+1 {
			t.Errorf("%s: busy refusals counted %d, want %d", c.kind, n, before+1)
		}
		close(hold)
		if status := <-held; status != c.ok {
			t.Fatalf("the held %s request: %d, want %d", c.kind, status, c.ok)
		}
		// The slot was given back: the next one is admitted.
		go func() { <-entered }()
		if resp, raw := send(c.method, c.path, bytes.ReplaceAll(c.body, []byte("HELD"), []byte("AFTER"))); resp.StatusCode != c.ok {
			t.Fatalf("%s after the slot was given back: %d %s", c.kind, resp.StatusCode, raw)
		}
	}
}

// TestHugeMalformedBodyCost: a large malformed body is refused for the
// price of holding it, not of building its values first (allocations are
// counted, not timed: the test process is the server and the client).
func TestHugeMalformedBodyCost(t *testing.T) {
	api := newTestAPI(t, Config{})
	// 8 MiB of "1," never closed: Python's "Expecting ',' delimiter" at
	// the end; building the 4 million numbers cost a gigabyte before.
	body := append([]byte(`{"name": [`), bytes.Repeat([]byte("1,"), 4<<20)...)
	body = body[:len(body)-1]
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	req, _ := http.NewRequest(http.MethodPost, api.URL+"/resource_classes", bytes.NewReader(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), "Malformed JSON: Expecting ',' delimiter") {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	// Everything allocated meanwhile, the client's side included: the
	// body (client, server), the answer, and small change.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte malformed body: %d bytes allocated (%.1f×)", len(body), alloc, float64(alloc)/float64(len(body)))
	if alloc > 4*uint64(len(body)) {
		t.Errorf("a %d-byte malformed body allocated %d bytes (%.1f×)", len(body), alloc, float64(alloc)/float64(len(body)))
	}
}

// TestFollowerAdmission: a follower's cluster front reads the body of a
// request it forwards to the leader through the follower's own body
// admission, and holds its share until the leader has answered. With one
// forwarded body held on the follower (stopped in a hook once admitted), a
// second that does not fit is answered 503 placement.server.busy by the
// follower, in Placement's error format, and never reaches the leader;
// once the first goes on, the follower forwards again. A body over the
// body bound sent to the follower is answered 413 (by the leader, which
// gets it cut one byte past the bound) and changes nothing.
func TestFollowerAdmission(t *testing.T) {
	const bound = 1 << 20 // body size and decoding capacity, every node
	entered := make(chan string, 8)
	hold := make(chan struct{})
	var letGo sync.Once
	release := func() { letGo.Do(func() { close(hold) }) }
	// Registered after the cluster's: runs first, so that no request is
	// left in the hook when the nodes stop.
	defer release()
	var mu sync.Mutex
	observers := map[string]*abortCounter{}
	servers := map[string]*Server{}
	c, _ := testcluster.Three(t, func(node *cluster.Node, logger *slog.Logger) http.Handler {
		obs := &abortCounter{reasons: map[string]int{}}
		mu.Lock()
		observers[node.ID()] = obs
		mu.Unlock()
		s := New(node, Config{Logger: logger, Observer: obs, MaxBodyBytes: bound, MaxBodyDecodeBytes: bound, AdmissionWait: time.Millisecond})
		mu.Lock()
		servers[node.ID()] = s
		mu.Unlock()
		s.onAdmitted = func(kind string) {
			if kind == AdmitForward {
				select {
				case entered <- node.ID():
				default:
				}
				<-hold
			}
		}
		return s
	}, func(rc *raft.Config) {
		// Raft's own timeouts, not the harness's fast ones: the test
		// needs the leader to stay (a body forwarded back to the node
		// that forwarded it would count there twice).
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = time.Second, time.Second, 500*time.Millisecond
	})
	leader, follower := c.Leader(), c.Followers()[0]
	// A resource class's body, padded with blanks to size bytes.
	padded := func(name string, size int) string {
		b := `{"name": "` + name + `"}`
		return b[:len(b)-1] + strings.Repeat(" ", size-len(b)) + "}"
	}
	post := func(base, body string, chunked bool) (rawResp, error) {
		var rd io.Reader = strings.NewReader(body)
		if chunked {
			rd = io.MultiReader(rd) // no length known: sent chunked
		}
		r, err := testcluster.Send(http.DefaultClient, base, http.MethodPost, "/resource_classes", rd)
		return rawResp{r.Status, r.Header, string(r.Body)}, err
	}
	classStatus := func(name string) int {
		return send(t, leader.URL, "GET", "/resource_classes/"+name, map[string]string{"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}, "").status
	}

	held := make(chan rawResp, 1)
	go func() {
		r, err := post(follower.URL, padded("CUSTOM_HELD", 600<<10), false)
		if err != nil {
			t.Error(err)
		}
		held <- r
	}()
	select {
	case id := <-entered:
		if id != follower.ID {
			t.Fatalf("a forwarded body was admitted on %s, want the follower %s", id, follower.ID)
		}
	case r := <-held:
		t.Fatalf("the follower forwarded a body without taking a share of its admission: %d %s", r.status, r.body)
	}
	r, err := post(follower.URL, padded("CUSTOM_REFUSED", 600<<10), false)
	if err != nil {
		t.Fatal(err)
	}
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" {
		t.Fatalf("a second body to the follower while one is held: %d, Retry-After %q, %s", r.status, r.header.Get("Retry-After"), r.body)
	}
	if e := r.firstError(t); e["code"] != CodeServerBusy || !reqIDRE.MatchString(fmt.Sprint(e["request_id"])) ||
		e["title"] != "Service Unavailable" || !strings.Contains(fmt.Sprint(e["detail"]), "busy") {
		t.Fatalf("not a placement.server.busy error: %s", r.body)
	}
	mu.Lock()
	fobs := observers[follower.ID]
	mu.Unlock()
	if n := fobs.count(AbortBusy); n != 1 {
		t.Errorf("busy refusals counted on the follower: %d, want 1", n)
	}
	release()
	if r := <-held; r.status != http.StatusCreated {
		t.Fatalf("the held body: %d %s", r.status, r.body)
	}
	// The follower gives its share back once it has relayed the answer,
	// which the client may read first.
	mu.Lock()
	fsrv := servers[follower.ID]
	mu.Unlock()
	freed := func() {
		t.Helper()
		testcluster.WaitFor(t, 10*time.Second, "the follower's admission given back", func() error {
			return testcluster.Check(fsrv.bodySlots.InUse() == 0, "%d bytes held", fsrv.bodySlots.InUse())
		})
	}
	freed()
	if r, err := post(follower.URL, padded("CUSTOM_AFTER", 600<<10), false); err != nil || r.status != http.StatusCreated {
		t.Fatalf("a body to the follower once the share was given back: %d %s %v", r.status, r.body, err)
	}

	for _, chunked := range []bool{false, true} {
		freed()
		r, err := post(follower.URL, padded("CUSTOM_TOO_BIG", bound+1), chunked)
		if err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusRequestEntityTooLarge {
			t.Fatalf("a body one byte over the bound to the follower (chunked %v): %d %s", chunked, r.status, r.body)
		}
		if e := r.firstError(t); e["title"] != "Request Entity Too Large" || !reqIDRE.MatchString(fmt.Sprint(e["request_id"])) {
			t.Fatalf("413 not in Placement's error format: %s", r.body)
		}
	}
	for name, want := range map[string]int{"CUSTOM_HELD": 200, "CUSTOM_AFTER": 200, "CUSTOM_REFUSED": 404, "CUSTOM_TOO_BIG": 404} {
		if got := classStatus(name); got != want {
			t.Errorf("GET /resource_classes/%s on the leader: %d, want %d", name, got, want)
		}
	}
}
