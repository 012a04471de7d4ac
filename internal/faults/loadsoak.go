package faults

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/internal/testcluster"
)

// The load soak (make soak): a bounded mixed load against a 3-node
// cluster of real processes, as a deployment sees it rather than as the
// linearizability checker wants it. Scheduler-like claims (GET
// /allocation_candidates, then PUT /allocations of one of the candidates),
// releases, candidate and provider searches, provider, inventory and trait
// writes, and hostile requests (malformed and huge bodies, slow and
// stalled connections, missing and unprivileged tokens, forged internal
// headers) run for the whole duration, while the leader is killed
// (SIGKILL) and restarted every KillEvery. Afterwards: every acknowledged
// allocation is present with its amounts and every acknowledged release
// absent, no provider holds more than (total-reserved)*allocation_ratio of
// a class, every node has the same state digest, and each node's RSS, open
// file descriptors and goroutines are back near what they were before the
// load.

// LoadSoakConfig describes a load soak.
type LoadSoakConfig struct {
	Bin      string // placementd binary
	Dir      string // data dirs and logs
	Duration time.Duration
	// KillEvery is the time between leader kills (default 3 min).
	KillEvery time.Duration
	// Providers is the number of compute node providers claims go to
	// (default 12); Scratch the providers that only see inventory,
	// trait and name writes (default 4).
	Providers, Scratch int
	// Claimers is the number of scheduler-like clients (default 4).
	Claimers       int
	RequestTimeout time.Duration // default 15 s
	Seed           int64
	Logf           func(format string, args ...any)
}

// NodeResources are one node's process figures before and after the load.
type NodeResources struct {
	ID                         string
	RSSStartKB, RSSEndKB       int64
	FDsStart, FDsEnd           int
	GoroutinesStart, GoroutEnd int
}

// LoadSoakReport is the outcome of a load soak.
type LoadSoakReport struct {
	Duration time.Duration
	// Requests counts requests by kind and outcome ("claim 204",
	// "search error", ...).
	Requests    map[string]int
	LeaderKills int
	// Claims acknowledged (and still held at the end), releases
	// acknowledged, writes whose outcome is unknown.
	Held, Released, Unknown int
	LostWrites              int
	OverAllocations         int
	Digests                 map[string][]string // digest@index -> nodes
	Resources               []NodeResources
	Violations              []string
}

// Failed reports whether the soak found a problem.
func (r *LoadSoakReport) Failed() bool { return len(r.Violations) > 0 }

// Summary is the report as a few lines of text.
func (r *LoadSoakReport) Summary() string {
	var b strings.Builder
	total := 0
	var kinds []string
	for k, n := range r.Requests {
		kinds = append(kinds, k)
		total += n
	}
	sort.Strings(kinds)
	fmt.Fprintf(&b, "load soak: %s, %d requests, %d leader kills\n", r.Duration.Round(time.Second), total, r.LeaderKills)
	for _, k := range kinds {
		fmt.Fprintf(&b, "  %-28s %8d\n", k, r.Requests[k])
	}
	fmt.Fprintf(&b, "allocations held %d, releases acknowledged %d, unknown outcomes %d\n", r.Held, r.Released, r.Unknown)
	fmt.Fprintf(&b, "lost writes %d, over-allocations %d, digests %v\n", r.LostWrites, r.OverAllocations, r.Digests)
	fmt.Fprintf(&b, "%-4s %14s %10s %12s\n", "node", "RSS MiB", "fds", "goroutines")
	for _, n := range r.Resources {
		fmt.Fprintf(&b, "%-4s %6.1f->%-6.1f %4d->%-4d %5d->%-5d\n", n.ID,
			float64(n.RSSStartKB)/1024, float64(n.RSSEndKB)/1024, n.FDsStart, n.FDsEnd, n.GoroutinesStart, n.GoroutEnd)
	}
	fmt.Fprintf(&b, "violations: %d\n", len(r.Violations))
	for i, v := range r.Violations {
		if i == 30 {
			fmt.Fprintf(&b, "  ... %d more\n", len(r.Violations)-i)
			break
		}
		fmt.Fprintf(&b, "  %s\n", v)
	}
	return b.String()
}

func (cfg *LoadSoakConfig) setDefaults() {
	if cfg.KillEvery == 0 {
		cfg.KillEvery = 3 * time.Minute
	}
	if cfg.Providers == 0 {
		cfg.Providers = 12
	}
	if cfg.Scratch == 0 {
		cfg.Scratch = 4
	}
	if cfg.Claimers == 0 {
		cfg.Claimers = 4
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 15 * time.Second
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
}

// The claim providers' inventories: reserved amounts and allocation
// ratios other than 1 so the capacity check is the real formula.
var soakInventory = map[string]map[string]any{
	"VCPU":      {"total": 8, "reserved": 1, "allocation_ratio": 2.0, "max_unit": 8},
	"MEMORY_MB": {"total": 8192, "reserved": 512, "allocation_ratio": 1.5, "max_unit": 8192},
	"DISK_GB":   {"total": 200, "reserved": 0, "allocation_ratio": 1.0, "max_unit": 200},
}

const (
	soakVersion = "placement 1.28" // consumer generations, candidates limit
	soakProject = "soak-project"
	soakAgg     = "5a0a0000-0000-4000-8000-000000000001"
)

// claim is an acknowledged or attempted allocation of one consumer.
type claim struct {
	consumer string
	allocs   map[string]map[string]int64 // provider -> class -> amount
}

type loadSoak struct {
	cfg       LoadSoakConfig
	c         *testCluster
	http      *http.Client
	providers []string
	scratch   []string
	start     time.Time

	mu       sync.Mutex
	counts   map[string]int
	held     map[string]claim // acknowledged, not released
	released map[string]bool  // release acknowledged
	unknown  map[string]claim // outcome unknown (claim or release)
	problems []string
}

func (s *loadSoak) count(kind string, code int, err error) {
	key := kind + " " + strconv.Itoa(code)
	if err != nil {
		key = kind + " error"
	}
	s.mu.Lock()
	s.counts[key]++
	s.mu.Unlock()
}

func (s *loadSoak) problem(format string, args ...any) {
	msg := fmt.Sprintf("%s: ", time.Since(s.start).Round(time.Millisecond)) + fmt.Sprintf(format, args...)
	s.mu.Lock()
	if len(s.problems) < 200 {
		s.problems = append(s.problems, msg)
	}
	s.mu.Unlock()
	s.cfg.Logf("problem: %s", msg)
}

// do sends one request to node n; hdr are extra headers (name, value,
// ...), which replace the defaults (admin token, soakVersion).
func (s *loadSoak) do(ctx context.Context, n *testcluster.Proc, method, path string, body []byte, hdr ...string) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout)
	defer cancel()
	var b any
	if body != nil {
		b = bytes.NewReader(body)
	}
	hdr = append([]string{"OpenStack-API-Version", soakVersion, "Accept", "application/json"}, hdr...)
	r, err := testcluster.SendContext(ctx, s.http, "http://"+n.HTTPAddr, method, path, b, hdr...)
	return r.Status, r.Body, err
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// RunLoadSoak runs the load soak. An error means the harness itself could
// not run; findings are in the report's Violations.
func RunLoadSoak(ctx context.Context, cfg LoadSoakConfig) (*LoadSoakReport, error) {
	cfg.setDefaults()
	if err := ensureDir(cfg.Dir); err != nil {
		return nil, err
	}
	cfg.Logf("load soak: 3 nodes, %s, leader kill every %s, seed %d, in %s", cfg.Duration, cfg.KillEvery, cfg.Seed, cfg.Dir)
	c, err := startCluster(ctx, Config{Nodes: 3, Bin: cfg.Bin, Dir: cfg.Dir, Seed: cfg.Seed, Logf: cfg.Logf,
		RecoveryTimeout: 90 * time.Second})
	if err != nil {
		return nil, err
	}
	defer c.stop()
	s := &loadSoak{cfg: cfg, c: c, counts: map[string]int{}, held: map[string]claim{}, released: map[string]bool{},
		unknown: map[string]claim{}, start: time.Now(),
		http: &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 16,
		}}}
	if err := s.setup(ctx); err != nil {
		return nil, fmt.Errorf("setting up: %w\n%s", err, c.logTails(2000))
	}
	rep := &LoadSoakReport{Duration: cfg.Duration}
	base, err := s.resources(ctx)
	if err != nil {
		return nil, err
	}

	s.start = time.Now()
	runCtx, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var wg sync.WaitGroup
	worker := func(i int, f func(context.Context, *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(cfg.Seed + int64(i)))
			for runCtx.Err() == nil {
				f(runCtx, rng)
			}
		}()
	}
	for i := 0; i < cfg.Claimers; i++ {
		worker(i, s.claimOrRelease)
	}
	worker(100, s.search)
	worker(101, s.write)
	worker(102, s.hostile)
	for runCtx.Err() == nil {
		select {
		case <-runCtx.Done():
			continue
		case <-time.After(cfg.KillEvery):
		}
		if runCtx.Err() != nil {
			break
		}
		if err := s.killLeader(ctx); err != nil {
			s.problem("leader kill: %v", err)
		}
		rep.LeaderKills++
	}
	wg.Wait()
	cfg.Logf("load stopped after %s", time.Since(s.start).Round(time.Second))

	if err := c.heal(); err != nil {
		return nil, err
	}
	if err := c.recovered(ctx); err != nil {
		s.problem("after the load the cluster did not recover: %v", err)
	}
	s.check(ctx, rep)
	s.http.CloseIdleConnections()
	end := s.settled(ctx, base)
	for _, n := range c.nodes {
		b, e := base[n.ID], end[n.ID]
		rep.Resources = append(rep.Resources, NodeResources{ID: n.ID, RSSStartKB: b.rssKB, RSSEndKB: e.rssKB,
			FDsStart: b.fds, FDsEnd: e.fds, GoroutinesStart: b.goroutines, GoroutEnd: e.goroutines})
		if !nearBaseline(b, e) {
			s.problem("%s did not return near its baseline: RSS %d->%d KiB, fds %d->%d, goroutines %d->%d",
				n.ID, b.rssKB, e.rssKB, b.fds, e.fds, b.goroutines, e.goroutines)
		}
	}
	s.mu.Lock()
	rep.Requests = s.counts
	rep.Violations = append(rep.Violations, s.problems...)
	rep.Held, rep.Released, rep.Unknown = len(s.held), len(s.released), len(s.unknown)
	s.mu.Unlock()
	rep.Violations = append(rep.Violations, c.crashes()...)
	if rep.Failed() {
		cfg.Logf("node logs:\n%s", c.logTails(4000))
	}
	os.WriteFile(filepath.Join(cfg.Dir, "summary.txt"), []byte(rep.Summary()), 0o644)
	return rep, nil
}

// setup creates the claim providers (half with a trait, all in one
// aggregate) and the scratch providers.
func (s *loadSoak) setup(ctx context.Context) error {
	n := s.c.nodes[0]
	if code, body, err := s.do(ctx, n, "PUT", "/traits/CUSTOM_SOAK_FAST", nil); err != nil || code/100 != 2 {
		return fmt.Errorf("trait: %d %s %v", code, body, err)
	}
	create := func(name string, inv map[string]map[string]any, traits []string) (string, error) {
		id := uuid.NewString()
		if code, body, err := s.do(ctx, n, "POST", "/resource_providers", mustJSON(map[string]any{"name": name, "uuid": id})); err != nil || code != 200 {
			return "", fmt.Errorf("provider %s: %d %s %v", name, code, body, err)
		}
		gen := 0
		if inv != nil {
			if code, body, err := s.do(ctx, n, "PUT", "/resource_providers/"+id+"/inventories",
				mustJSON(map[string]any{"resource_provider_generation": gen, "inventories": inv})); err != nil || code != 200 {
				return "", fmt.Errorf("inventory of %s: %d %s %v", name, code, body, err)
			}
			gen++
		}
		if len(traits) > 0 {
			if code, body, err := s.do(ctx, n, "PUT", "/resource_providers/"+id+"/traits",
				mustJSON(map[string]any{"resource_provider_generation": gen, "traits": traits})); err != nil || code != 200 {
				return "", fmt.Errorf("traits of %s: %d %s %v", name, code, body, err)
			}
			gen++
		}
		if code, body, err := s.do(ctx, n, "PUT", "/resource_providers/"+id+"/aggregates",
			mustJSON(map[string]any{"resource_provider_generation": gen, "aggregates": []string{soakAgg}})); err != nil || code != 200 {
			return "", fmt.Errorf("aggregates of %s: %d %s %v", name, code, body, err)
		}
		return id, nil
	}
	for i := 0; i < s.cfg.Providers; i++ {
		var traits []string
		if i%2 == 0 {
			traits = []string{"CUSTOM_SOAK_FAST"}
		}
		id, err := create(fmt.Sprintf("soak-cn%d", i), soakInventory, traits)
		if err != nil {
			return err
		}
		s.providers = append(s.providers, id)
	}
	for i := 0; i < s.cfg.Scratch; i++ {
		id, err := create(fmt.Sprintf("soak-scratch%d", i), nil, nil)
		if err != nil {
			return err
		}
		s.scratch = append(s.scratch, id)
	}
	return nil
}

func (s *loadSoak) node(rng *rand.Rand) *testcluster.Proc { return s.c.nodes[rng.Intn(len(s.c.nodes))] }

// claimOrRelease is one scheduler step: a claim through the candidates,
// or (when it holds enough, or at random) the release of one of its
// claims.
func (s *loadSoak) claimOrRelease(ctx context.Context, rng *rand.Rand) {
	s.mu.Lock()
	var mine string
	for c := range s.held {
		mine = c // map order: an arbitrary held claim
		break
	}
	heldCount := len(s.held)
	s.mu.Unlock()
	if mine != "" && (heldCount > 6*s.cfg.Providers || rng.Intn(3) == 0) {
		s.release(ctx, rng, mine)
		return
	}
	q := fmt.Sprintf("resources=VCPU:%d,MEMORY_MB:%d,DISK_GB:%d&limit=5", 1+rng.Intn(2), 256*(1+rng.Intn(4)), 1+rng.Intn(10))
	if rng.Intn(3) == 0 {
		q += "&required=CUSTOM_SOAK_FAST"
	}
	code, raw, err := s.do(ctx, s.node(rng), "GET", "/allocation_candidates?"+q, nil)
	s.count("candidates-for-claim", code, err)
	if err != nil || code != 200 {
		if code/100 == 4 || code == 500 {
			s.problem("GET /allocation_candidates?%s: %d %s", q, code, raw)
		}
		return
	}
	var cands struct {
		AllocationRequests []struct {
			Allocations map[string]struct {
				Resources map[string]int64 `json:"resources"`
			} `json:"allocations"`
		} `json:"allocation_requests"`
	}
	if err := json.Unmarshal(raw, &cands); err != nil {
		s.problem("candidates answer: %v: %s", err, raw)
		return
	}
	if len(cands.AllocationRequests) == 0 {
		s.count("claim no-candidates", 0, nil)
		return
	}
	ar := cands.AllocationRequests[rng.Intn(len(cands.AllocationRequests))]
	cl := claim{consumer: uuid.NewString(), allocs: map[string]map[string]int64{}}
	body := map[string]any{}
	for rp, a := range ar.Allocations {
		cl.allocs[rp] = a.Resources
		body[rp] = map[string]any{"resources": a.Resources}
	}
	put := mustJSON(map[string]any{"allocations": body, "project_id": soakProject, "user_id": "soak-user", "consumer_generation": nil})
	code, raw, err = s.do(ctx, s.node(rng), "PUT", "/allocations/"+cl.consumer, put)
	s.count("claim", code, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case code == 204:
		s.held[cl.consumer] = cl
	case code == 409:
		// Another claim took the room, or a generation moved.
	case err != nil || code/100 == 5:
		s.unknown[cl.consumer] = cl
	default:
		s.problems = append(s.problems, fmt.Sprintf("claim %s: %d %s", cl.consumer, code, raw))
	}
}

func (s *loadSoak) release(ctx context.Context, rng *rand.Rand, consumer string) {
	s.mu.Lock()
	cl, ok := s.held[consumer]
	delete(s.held, consumer) // in flight: no other worker releases it too
	s.mu.Unlock()
	if !ok {
		return
	}
	code, raw, err := s.do(ctx, s.node(rng), "DELETE", "/allocations/"+consumer, nil)
	s.count("release", code, err)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case code == 204:
		s.released[consumer] = true
	case err != nil || code/100 == 5:
		cl.allocs = nil // present whole or gone: either is fine
		s.unknown[consumer] = cl
	default:
		s.held[consumer] = cl
		s.problems = append(s.problems, fmt.Sprintf("release %s: %d %s", consumer, code, raw))
	}
}

// search is a read a scheduler or an operator makes.
func (s *loadSoak) search(ctx context.Context, rng *rand.Rand) {
	queries := []string{
		"/allocation_candidates?resources=VCPU:1&limit=10",
		"/allocation_candidates?resources=VCPU:2,MEMORY_MB:1024&required=!CUSTOM_SOAK_FAST",
		"/allocation_candidates?resources=DISK_GB:5&member_of=" + soakAgg,
		"/allocation_candidates?resources1=VCPU:1&resources2=MEMORY_MB:512&group_policy=none",
		"/resource_providers?resources=VCPU:1,DISK_GB:1",
		"/resource_providers?member_of=in:" + soakAgg + "&required=CUSTOM_SOAK_FAST",
		"/usages?project_id=" + soakProject,
		"/resource_providers/" + s.providers[rng.Intn(len(s.providers))] + "/usages",
	}
	q := queries[rng.Intn(len(queries))]
	code, raw, err := s.do(ctx, s.node(rng), "GET", q, nil)
	s.count("search", code, err)
	if err == nil && (code/100 == 4 || code == 500) {
		s.problem("GET %s: %d %s", q, code, raw)
	}
}

// write changes a scratch provider: inventory, traits or name, with the
// generation read just before (a 409 from a concurrent write is fine).
func (s *loadSoak) write(ctx context.Context, rng *rand.Rand) {
	n := s.node(rng)
	rp := s.scratch[rng.Intn(len(s.scratch))]
	code, raw, err := s.do(ctx, n, "GET", "/resource_providers/"+rp, nil)
	if err != nil || code != 200 {
		s.count("write-read", code, err)
		return
	}
	var p struct {
		Name       string `json:"name"`
		Generation int    `json:"generation"`
	}
	json.Unmarshal(raw, &p)
	var method, path string
	var body []byte
	switch rng.Intn(4) {
	case 0:
		method, path = "PUT", "/resource_providers/"+rp+"/inventories"
		body = mustJSON(map[string]any{"resource_provider_generation": p.Generation, "inventories": map[string]any{
			"VCPU": map[string]any{"total": 1 + rng.Intn(64)}, "DISK_GB": map[string]any{"total": 1 + rng.Intn(1000), "reserved": rng.Intn(1)}}})
	case 1:
		method, path = "PUT", "/resource_providers/"+rp+"/traits"
		traits := []string{}
		if rng.Intn(2) == 0 {
			traits = append(traits, "CUSTOM_SOAK_FAST")
		}
		body = mustJSON(map[string]any{"resource_provider_generation": p.Generation, "traits": traits})
	case 2:
		method, path = "PUT", "/resource_providers/"+rp
		body = mustJSON(map[string]any{"name": fmt.Sprintf("soak-scratch-%d", rng.Int63())})
	default:
		method, path = "DELETE", "/resource_providers/"+rp+"/inventories"
		code, raw, err = s.do(ctx, n, method, path, nil, "OpenStack-API-Version", "placement 1.5")
		s.count("write", code, err)
		if err == nil && code != 204 && code != 409 && code/100 != 5 {
			s.problem("%s %s: %d %s", method, path, code, raw)
		}
		return
	}
	code, raw, err = s.do(ctx, n, method, path, body)
	s.count("write", code, err)
	if err == nil && code != 200 && code != 409 && code/100 != 5 {
		s.problem("%s %s: %d %s", method, path, code, raw)
	}
}

// hostile sends one request a careless or hostile client would; the
// cluster must answer 4xx (never 500) and keep serving everyone else.
func (s *loadSoak) hostile(ctx context.Context, rng *rand.Rand) {
	n := s.node(rng)
	expect := func(kind string, code int, raw []byte, err error, ok ...int) {
		s.count("hostile-"+kind, code, err)
		// No answer, or 503: the node could not serve it now (a write is
		// forwarded to the leader before its policy check there, and the
		// soak kills leaders), which is no wrong answer.
		if err != nil || code == http.StatusServiceUnavailable {
			return
		}
		for _, c := range ok {
			if code == c {
				return
			}
		}
		s.problem("hostile %s: answered %d %.200s", kind, code, raw)
	}
	switch rng.Intn(10) {
	case 0:
		code, raw, err := s.do(ctx, n, "PUT", "/allocations/"+uuid.NewString(), []byte(`{"allocations": {`))
		expect("malformed", code, raw, err, 400)
	case 1:
		// A few MiB of deep nesting and of junk.
		body := bytes.Repeat([]byte("["), 2<<20)
		if rng.Intn(2) == 0 {
			body = append([]byte(`{"name": "`), bytes.Repeat([]byte("x"), 3<<20)...)
		}
		code, raw, err := s.do(ctx, n, "POST", "/resource_providers", body)
		expect("huge", code, raw, err, 400, 413)
	case 2:
		code, raw, err := s.do(ctx, n, "GET", "/resource_providers", nil, "X-Auth-Token", "")
		expect("no-token", code, raw, err, 401)
	case 3:
		code, raw, err := s.do(ctx, n, "PUT", "/traits/CUSTOM_SOAK_EVIL", nil, "X-Auth-Token", "mallory:evil", "X-Roles", "reader")
		expect("unprivileged", code, raw, err, 403)
	case 4:
		// Internal headers from a client: they must change nothing.
		hops := []string{"-1", "99", "abc", "-9223372036854775808"}[rng.Intn(4)]
		code, raw, err := s.do(ctx, n, "GET", "/resource_providers?name=soak-cn0", nil,
			"X-Placementd-Forwarded-Hops", hops, "X-Placementd-Forwarded-By", "n9")
		expect("forged-headers", code, raw, err, 200, 400)
	case 5:
		s.slowClient(ctx, n, rng)
	case 7:
		// Integers past Python's 4300 digits, refused before any
		// conversion (quadratic in the digits).
		digits := strings.Repeat("9", 4301+rng.Intn(1<<20))
		if rng.Intn(2) == 0 {
			code, raw, err := s.do(ctx, n, "POST", "/resource_providers", []byte(`{"name": `+digits+`}`))
			expect("huge-integer", code, raw, err, 400)
		} else {
			code, raw, err := s.do(ctx, n, "GET", "/allocation_candidates?resources=VCPU:"+digits[:4301+rng.Intn(20000)], nil)
			expect("huge-integer", code, raw, err, 400)
		}
	case 8:
		s.unreadAnswer(ctx, n, rng)
	case 9:
		s.raftFlood(ctx, n, rng)
	default:
		code, raw, err := s.do(ctx, n, "POST", "/resource_providers", []byte(`{"name": "x"}`), "Content-Type", "text/plain")
		expect("content-type", code, raw, err, 415, 400)
	}
}

// slowClient holds a connection the way a slow or stalled client does:
// half a request line, headers that never end, or a body shorter than
// its Content-Length, for a few seconds, then goes away.
func (s *loadSoak) slowClient(ctx context.Context, n *testcluster.Proc, rng *rand.Rand) {
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", n.HTTPAddr)
	if err != nil {
		s.count("hostile-slow", 0, err)
		return
	}
	defer conn.Close()
	parts := [][]string{
		{"GET /resource_providers HT", "TP/1.1\r\nHost: x\r\n"},
		{"GET /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n", "X-Slow: 1\r\n"},
		{"POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n", `{"name": `},
	}[rng.Intn(3)]
	for _, p := range parts {
		conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.WriteString(conn, p); err != nil {
			break
		}
		select {
		case <-ctx.Done():
			s.count("hostile-slow", 0, nil)
			return
		case <-time.After(time.Duration(500+rng.Intn(2500)) * time.Millisecond):
		}
	}
	s.count("hostile-slow", 0, nil)
}

// unreadAnswer asks for allocation candidates on a connection that never
// reads the answer (a small receive buffer), for a few seconds, then goes
// away: the node holds such answers within --max-answer-mb.
func (s *loadSoak) unreadAnswer(ctx context.Context, n *testcluster.Proc, rng *rand.Rand) {
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "tcp", n.HTTPAddr)
	if err != nil {
		s.count("hostile-unread", 0, err)
		return
	}
	defer conn.Close()
	conn.(*net.TCPConn).SetReadBuffer(4 << 10)
	fmt.Fprintf(conn, "GET /allocation_candidates?resources1=VCPU:1&resources2=MEMORY_MB:512&group_policy=none HTTP/1.1\r\n"+
		"Host: x\r\nX-Auth-Token: admin\r\nOpenStack-API-Version: %s\r\n\r\n", soakVersion)
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(1000+rng.Intn(4000)) * time.Millisecond):
	}
	s.count("hostile-unread", 0, nil)
}

// raftFlood opens silent connections to n's Raft port from up to 50
// loopback addresses other than the members' (127.0.x.y), holds them a
// few seconds and closes them: members keep their own places.
func (s *loadSoak) raftFlood(ctx context.Context, n *testcluster.Proc, rng *rand.Rand) {
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := range 100 {
		ip := net.IPv4(127, 0, byte(1+rng.Intn(200)), byte(2+(i/2)%250))
		d := &net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: ip}}
		c, err := d.DialContext(ctx, "tcp", n.RaftAddr)
		if err != nil {
			continue
		}
		conns = append(conns, c)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Duration(1000+rng.Intn(4000)) * time.Millisecond):
	}
	s.count("hostile-raft-flood", 0, nil)
}

// killLeader kills the leader with SIGKILL and restarts it once the
// others have elected a new one.
func (s *loadSoak) killLeader(ctx context.Context) error {
	leader, err := s.c.leader(ctx)
	if err != nil {
		return err
	}
	s.cfg.Logf("%s: SIGKILL leader %s", time.Since(s.start).Round(time.Second), leader.ID)
	if err := leader.Kill(); err != nil {
		return err
	}
	// Wait for the others to elect one of them (bounded; until their
	// election timeout they still name the dead leader), then restart it.
	wctx, cancel := context.WithTimeout(ctx, s.c.cfg.RecoveryTimeout)
	defer cancel()
	for {
		st, err := s.c.followers(leader).Status(wctx)
		if err == nil && st.Leader != "" && st.Leader != leader.ID {
			s.cfg.Logf("%s: new leader %s", time.Since(s.start).Round(time.Second), st.Leader)
			break
		}
		if wctx.Err() != nil {
			s.problem("no new leader within %s of killing %s: %v", s.c.cfg.RecoveryTimeout, leader.ID, err)
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := leader.Start(s.c.others(leader)); err != nil {
		return err
	}
	return s.c.recovered(ctx)
}

// check reads the final state: acknowledged writes, capacity, digests.
func (s *loadSoak) check(ctx context.Context, rep *LoadSoakReport) {
	leader, err := s.c.leader(ctx)
	if err != nil {
		s.problem("final checks: %v", err)
		return
	}
	read := func(path string, v any) error {
		code, raw, err := s.do(ctx, leader, "GET", path, nil)
		if err != nil || code != 200 {
			return fmt.Errorf("GET %s: %d %s %v", path, code, raw, err)
		}
		return json.Unmarshal(raw, v)
	}
	type allocs struct {
		Allocations map[string]struct {
			Resources map[string]int64 `json:"resources"`
		} `json:"allocations"`
	}
	toMap := func(a allocs) map[string]map[string]int64 {
		m := map[string]map[string]int64{}
		for rp, r := range a.Allocations {
			m[rp] = r.Resources
		}
		return m
	}
	s.mu.Lock()
	held := make([]claim, 0, len(s.held))
	for _, c := range s.held {
		held = append(held, c)
	}
	var released []string
	for c := range s.released {
		released = append(released, c)
	}
	var unknown []claim
	for _, c := range s.unknown {
		unknown = append(unknown, c)
	}
	s.mu.Unlock()
	for _, c := range held {
		var a allocs
		if err := read("/allocations/"+c.consumer, &a); err != nil {
			s.problem("%v", err)
			continue
		}
		if got := toMap(a); !sameAllocs(got, c.allocs) {
			rep.LostWrites++
			s.problem("acknowledged claim %s lost: holds %v, acknowledged %v", c.consumer, got, c.allocs)
		}
	}
	for _, c := range released {
		var a allocs
		if err := read("/allocations/"+c, &a); err != nil {
			s.problem("%v", err)
			continue
		}
		if len(a.Allocations) != 0 {
			rep.LostWrites++
			s.problem("acknowledged release of %s lost: holds %v", c, toMap(a))
		}
	}
	for _, c := range unknown {
		var a allocs
		if err := read("/allocations/"+c.consumer, &a); err != nil {
			s.problem("%v", err)
			continue
		}
		if got := toMap(a); len(got) != 0 && c.allocs != nil && !sameAllocs(got, c.allocs) {
			s.problem("claim %s of unknown outcome applied in part: holds %v, sent %v", c.consumer, got, c.allocs)
		}
	}
	for _, rp := range s.providers {
		var inv struct {
			Inventories map[string]struct {
				Total, Reserved int64
				Ratio           float64 `json:"allocation_ratio"`
			} `json:"inventories"`
		}
		var use struct {
			Usages map[string]int64 `json:"usages"`
		}
		if err := read("/resource_providers/"+rp+"/inventories", &inv); err != nil {
			s.problem("%v", err)
			continue
		}
		if err := read("/resource_providers/"+rp+"/usages", &use); err != nil {
			s.problem("%v", err)
			continue
		}
		for class, used := range use.Usages {
			i := inv.Inventories[class]
			if limit := float64(i.Total-i.Reserved) * i.Ratio; float64(used) > limit {
				rep.OverAllocations++
				s.problem("provider %s over-allocated: %d %s used of (%d-%d)*%g", rp, used, class, i.Total, i.Reserved, i.Ratio)
			}
		}
	}
	rep.Digests = map[string][]string{}
	for _, n := range s.c.nodes {
		st, err := n.Client().Self(ctx)
		if err != nil {
			s.problem("%s: %v", n.ID, err)
			continue
		}
		key := fmt.Sprintf("%.12s@%d", st.Digest, st.StateIndex)
		rep.Digests[key] = append(rep.Digests[key], n.ID)
	}
	if len(rep.Digests) != 1 {
		s.problem("nodes hold different states: %v", rep.Digests)
	}
}

func sameAllocs(a, b map[string]map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for rp, ra := range a {
		rb := b[rp]
		if len(ra) != len(rb) {
			return false
		}
		for class, n := range ra {
			if rb[class] != n {
				return false
			}
		}
	}
	return true
}

// procFigures are a node process's RSS, open descriptors and goroutines.
type procFigures struct {
	rssKB      int64
	fds        int
	goroutines int
}

// resources reads every node's figures: RSS and descriptors from /proc,
// goroutines from its /metrics (go_goroutines).
func (s *loadSoak) resources(ctx context.Context) (map[string]procFigures, error) {
	out := map[string]procFigures{}
	for _, n := range s.c.nodes {
		pid := n.Pid()
		if pid == 0 {
			return nil, fmt.Errorf("%s is not running", n.ID)
		}
		var f procFigures
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(bytes.NewReader(status))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				f.rssKB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
		fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			return nil, err
		}
		f.fds = len(fds)
		code, raw, err := s.do(ctx, n, "GET", "/metrics", nil, "Authorization", "Bearer "+secret)
		if err != nil || code != 200 {
			return nil, fmt.Errorf("%s /metrics: %d %v", n.ID, code, err)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if v, ok := strings.CutPrefix(line, "go_goroutines "); ok {
				g, _ := strconv.ParseFloat(strings.TrimSpace(v), 64)
				f.goroutines = int(g)
			}
		}
		out[n.ID] = f
	}
	return out, nil
}

// nearBaseline: goroutines and descriptors back within a small margin of
// their count before the load (the connections and requests of the load
// are gone), RSS within what the larger state and Go's heap growth
// explain.
func nearBaseline(b, e procFigures) bool {
	return e.goroutines <= b.goroutines*3/2+20 && e.fds <= b.fds+20 && e.rssKB <= 3*b.rssKB+128*1024
}

// settled reads the figures until every node is near its baseline or a
// minute has passed (closing connections and finishing requests takes the
// servers a moment), and returns the last reading.
func (s *loadSoak) settled(ctx context.Context, base map[string]procFigures) map[string]procFigures {
	deadline := time.Now().Add(time.Minute)
	for {
		now, err := s.resources(ctx)
		if err != nil {
			s.problem("reading the nodes' figures: %v", err)
			return map[string]procFigures{}
		}
		near := true
		for id, b := range base {
			near = near && nearBaseline(b, now[id])
		}
		if near || time.Now().After(deadline) {
			return now
		}
		s.http.CloseIdleConnections()
		time.Sleep(time.Second)
	}
}
