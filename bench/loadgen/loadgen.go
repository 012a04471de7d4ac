package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Phase names, in the order they run.
const (
	PhaseScheduler = "scheduler"
	PhasePut       = "put"
	PhasePutPaced  = "put-paced"
	PhasePost      = "post"
	PhaseUsages    = "usages"
	PhaseDelete    = "delete"
	PhaseGate      = "gate"
	// PhaseGateNewConn is the gate with a new connection per request, as
	// ab runs it without -k (upstream's gate job does): the cost of the
	// TCP handshake and of a new connection on the server counts too.
	PhaseGateNewConn = "gate-new-conn"
)

// AllPhases is the default workload.
// The gate comes first: upstream's gate job measures a fleet just set up
// (and its GateClaims allocations), not one that other phases have filled.
var AllPhases = []string{PhaseGate, PhaseGateNewConn, PhaseScheduler, PhasePut, PhasePutPaced, PhasePost, PhaseUsages, PhaseDelete}

// The gate phase's shape: upstream's AB_CONCURRENT and AB_COUNT. The gate
// runs GateRounds times and reports the round of median rate: 500
// requests take a third of a second on placementd, whose rate then swung
// by a quarter from one run to the next (a collection, a scheduling
// hiccup), more than any difference it was meant to show.
const (
	GateClients  = 10
	GateRequests = 500
	GateRounds   = 3
	// GateClaims is how many allocations the gate writes before its
	// first round, as upstream's load_candidates does: each the first
	// allocation request of the gate query with limit=5, for a new
	// consumer.
	GateClaims = 99
)

// Request kinds whose latencies are reported.
const (
	KindCandidates = "GET /allocation_candidates"
	KindClaimPut   = "PUT /allocations (claim)"
	KindClaim      = "claim (queries+PUTs)"
	KindPut        = "PUT /allocations"
	KindPutPaced   = "PUT /allocations (paced, late ones from due time)"
	KindPost       = "POST /allocations"
	KindRPUsages   = "GET /resource_providers/{u}/usages"
	KindUsages     = "GET /usages"
	KindDelete     = "DELETE /allocations"
	KindGate       = "GET /allocation_candidates (gate)"
)

// The trait a fifth of the compute nodes have, which some candidate
// queries require.
const benchTrait = "HW_CPU_X86_AVX2"

// Config describes the workload and where it is sent.
type Config struct {
	// Label names the target in reports ("upstream", "placementd-1", ...).
	Label string
	// Endpoints are base URLs (http://host:port); client i talks to
	// Endpoints[i % len].
	Endpoints []string
	// Token is the noauth2 X-Auth-Token (default "admin").
	Token string
	// Microversion of every request (default 1.36).
	Microversion string
	// Nodes is the number of compute nodes; NUMA gives each two NUMA
	// children holding its VCPU and MEMORY_MB.
	Nodes int
	NUMA  bool
	// Aggregates is how many aggregates the nodes are spread over, each
	// with one sharing DISK_GB provider (default 10).
	Aggregates int
	// Clients is the number of concurrent clients (default 16).
	Clients int
	// Duration bounds each measured phase (default 20 s); MaxOps, when
	// set, also bounds each phase's operations (for tests).
	Duration time.Duration
	MaxOps   int
	// PacedRate is the put-paced phase's offered load, PUTs per second
	// across all clients (default 500).
	PacedRate float64
	// Limit is the allocation candidates limit (default 50).
	Limit int
	// Flavor is what one consumer claims (default VCPU 2, MEMORY_MB 2048,
	// DISK_GB 20).
	Flavor Flavor
	// Phases to run, in order (default AllPhases).
	Phases []string
	// Seed makes the clients' choices repeatable.
	Seed uint64
	// ServerPIDs, when set, are the server's processes (with their
	// descendants): each phase then reports the CPU time they used.
	ServerPIDs []int
	// Timeout bounds each request (default 60 s).
	Timeout time.Duration
	// Log receives progress lines (nil: none).
	Log io.Writer
}

// Flavor is the resources one consumer claims.
type Flavor struct {
	VCPU     int64 `json:"VCPU"`
	MemoryMB int64 `json:"MEMORY_MB"`
	DiskGB   int64 `json:"DISK_GB"`
}

func (c *Config) defaults() error {
	if len(c.Endpoints) == 0 {
		return fmt.Errorf("loadgen: no endpoints")
	}
	c.Endpoints = append([]string(nil), c.Endpoints...)
	for i, e := range c.Endpoints {
		c.Endpoints[i] = strings.TrimRight(e, "/")
	}
	if c.Token == "" {
		c.Token = "admin"
	}
	if c.Microversion == "" {
		c.Microversion = "1.36"
	}
	if c.Nodes <= 0 {
		c.Nodes = 100
	}
	if c.Aggregates <= 0 {
		c.Aggregates = 10
	}
	if c.Clients <= 0 {
		c.Clients = 16
	}
	if c.Duration <= 0 {
		c.Duration = 20 * time.Second
	}
	if c.Limit <= 0 {
		c.Limit = 50
	}
	if c.PacedRate <= 0 {
		c.PacedRate = 500
	}
	if c.Flavor == (Flavor{}) {
		c.Flavor = Flavor{VCPU: 2, MemoryMB: 2048, DiskGB: 20}
	}
	if len(c.Phases) == 0 {
		c.Phases = AllPhases
	}
	for _, p := range c.Phases {
		switch p {
		case PhaseScheduler, PhasePut, PhasePutPaced, PhasePost, PhaseUsages, PhaseDelete, PhaseGate, PhaseGateNewConn:
		default:
			return fmt.Errorf("loadgen: unknown phase %q", p)
		}
	}
	if c.Timeout <= 0 {
		c.Timeout = 60 * time.Second
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return nil
}

// Report is the outcome of a run.
type Report struct {
	Label        string    `json:"label"`
	Endpoints    []string  `json:"endpoints"`
	Started      time.Time `json:"started"`
	Nodes        int       `json:"nodes"`
	NUMA         bool      `json:"numa"`
	Clients      int       `json:"clients"`
	Limit        int       `json:"limit"`
	Microversion string    `json:"microversion"`
	Providers    int       `json:"providers"`
	Setup        Phase     `json:"setup"`
	Phases       []Phase   `json:"phases"`
	Verify       Verify    `json:"verify"`
}

// Phase returns the named phase's outcome, or nil.
func (r *Report) Phase(name string) *Phase {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// node is one compute node: its root provider and NUMA children.
type node struct {
	uuid     string
	children []string
}

// alloc is what one consumer holds: amounts by class by provider.
type alloc map[string]map[string]int64

// consumer is one consumer the run created.
type consumer struct {
	uuid    string
	alloc   alloc
	deleted bool
}

// run is the state of one Run.
type run struct {
	cfg       Config
	http      *http.Client
	runID     string
	aggs      []string
	sharing   []string
	nodes     []node
	providers []string // every provider: sharing, roots, children
	projects  []string
	workers   []*worker
	// gateClaimed is set once the gate's claims are written (gateRounds).
	gateClaimed bool
}

// worker is one concurrent client with its own connection pool share,
// random source and bookkeeping.
type worker struct {
	r   *run
	id  int
	c   *client
	rnd *rand.Rand
	// consumers this worker created; uncertain ones got no answer (or a
	// 5xx) and may or may not exist.
	consumers []*consumer
	uncertain map[string]bool
}

// Run sets the fleet up on the endpoints, runs the phases and verifies
// the result. An error means the run could not proceed (e.g. set-up
// failed); problems found by the verification are in the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	r, err := newRun(cfg)
	if err != nil {
		return nil, err
	}
	defer r.http.CloseIdleConnections()
	cfg = r.cfg
	rep := &Report{
		Label: cfg.Label, Endpoints: cfg.Endpoints, Started: time.Now().UTC(), Nodes: cfg.Nodes, NUMA: cfg.NUMA,
		Clients: cfg.Clients, Limit: cfg.Limit, Microversion: cfg.Microversion,
	}
	fmt.Fprintf(cfg.Log, "%s: setting up %d compute nodes (numa=%v) on %s\n", cfg.Label, cfg.Nodes, cfg.NUMA,
		strings.Join(cfg.Endpoints, ","))
	setup, err := r.setup(ctx)
	if err != nil {
		return nil, err
	}
	rep.Setup = setup
	rep.Providers = len(r.providers)
	fmt.Fprintf(cfg.Log, "%s: %s\n", cfg.Label, phaseLine(setup))
	for _, name := range cfg.Phases {
		var p Phase
		if name == PhaseGate || name == PhaseGateNewConn {
			p = r.gateRounds(ctx, name)
		} else {
			p = r.phase(ctx, name)
		}
		rep.Phases = append(rep.Phases, p)
		fmt.Fprintf(cfg.Log, "%s: %s\n", cfg.Label, phaseLine(p))
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
	}
	rep.Verify = r.verify(ctx)
	fmt.Fprintf(cfg.Log, "%s: verify: %s\n", cfg.Label, rep.Verify.Summary())
	return rep, nil
}

func newRun(cfg Config) (*run, error) {
	if err := cfg.defaults(); err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, runID: uuid.NewString()[:8]}
	r.http = &http.Client{
		Timeout: cfg.Timeout,
		Transport: &http.Transport{
			Proxy:        nil,
			MaxIdleConns: 0,
			// The gate's clients too, or its kept-alive connections
			// would be closed and opened again.
			MaxIdleConnsPerHost: max(cfg.Clients, GateClients) + 8,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		},
	}
	for i := 0; i < 10; i++ {
		r.projects = append(r.projects, uuid.NewString())
	}
	for i := 0; i < cfg.Clients; i++ {
		r.workers = append(r.workers, &worker{
			r: r, id: i,
			c: &client{http: r.http, base: cfg.Endpoints[i%len(cfg.Endpoints)], token: cfg.Token,
				version: cfg.Microversion},
			rnd:       rand.New(rand.NewPCG(cfg.Seed, uint64(i))),
			uncertain: map[string]bool{},
		})
	}
	return r, nil
}

func phaseLine(p Phase) string {
	s := fmt.Sprintf("%-9s %7d ops in %6.1fs = %9.1f/s  conflicts %d retries %d failures %d errors %d",
		p.Name, p.Ops, p.Seconds, p.PerSec, p.Conflicts, p.Retries, p.Failures, p.Errors)
	for _, k := range sortedKeys(p.Latency) {
		l := p.Latency[k]
		s += fmt.Sprintf("\n    %-40s n=%-7d p50 %8.2fms p90 %8.2fms p99 %8.2fms max %8.2fms", k, l.Count, l.P50, l.P90, l.P99, l.Max)
	}
	if p.FirstError != "" {
		s += "\n    first error: " + p.FirstError
	}
	return s
}

// parallel runs fn on every worker at once and waits.
func (r *run) parallel(fn func(w *worker)) {
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w)
		}()
	}
	wg.Wait()
}

// phase runs one timed phase on every worker and merges their results.
func (r *run) phase(ctx context.Context, name string) Phase {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Duration+r.cfg.Timeout)
	defer cancel()
	deadline := time.Now().Add(r.cfg.Duration)
	var (
		mu    sync.Mutex
		total counts
		rec   = newRecorder()
		ops   int
	)
	// more reports whether the worker should start another operation;
	// it reserves that operation against MaxOps.
	more := func() bool {
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return false
		}
		if r.cfg.MaxOps == 0 {
			return true
		}
		mu.Lock()
		defer mu.Unlock()
		if ops >= r.cfg.MaxOps {
			return false
		}
		ops++
		return true
	}
	cpu0, cpuOK := treeCPU(r.cfg.ServerPIDs)
	start := time.Now()
	r.parallel(func(w *worker) {
		var c counts
		w.c.recorder = newRecorder()
		switch name {
		case PhaseScheduler:
			w.scheduler(ctx, more, &c)
		case PhasePut:
			w.put(ctx, more, &c)
		case PhasePutPaced:
			w.putPaced(ctx, more, &c)
		case PhasePost:
			w.post(ctx, more, &c)
		case PhaseUsages:
			w.usages(ctx, more, &c)
		case PhaseDelete:
			w.delete(ctx, more, &c)
		}
		mu.Lock()
		total.add(c)
		rec.merge(w.c.recorder)
		mu.Unlock()
		w.c.recorder = nil
	})
	p := makePhase(name, time.Since(start), total, rec)
	if cpu1, ok := treeCPU(r.cfg.ServerPIDs); ok && cpuOK {
		p.ServerCPU = (cpu1 - cpu0).Seconds()
	}
	return p
}

// candidatesQuery is the i-th query of a worker: the flavor, sometimes
// with a required trait or an aggregate, as schedulers ask.
func (w *worker) candidatesQuery(i int) string {
	f := w.r.cfg.Flavor
	q := fmt.Sprintf("resources=VCPU:%d,MEMORY_MB:%d,DISK_GB:%d&limit=%d", f.VCPU, f.MemoryMB, f.DiskGB, w.r.cfg.Limit)
	switch i % 4 {
	case 1:
		q += "&required=" + benchTrait
	case 2:
		q += "&member_of=" + w.r.aggs[w.rnd.IntN(len(w.r.aggs))]
	}
	return q
}

// candidates is the part of GET /allocation_candidates a scheduler uses:
// the allocation requests, each decoded only when chosen.
type candidates struct {
	AllocationRequests []json.RawMessage
	size               int // bytes of the answer they were delimited in
}

// allocationRequest is one of candidates.AllocationRequests (1.12+).
type allocationRequest struct {
	Allocations map[string]struct {
		Resources map[string]int64 `json:"resources"`
	} `json:"allocations"`
}

// getCandidates sends GET path (an /allocation_candidates query) and
// delimits the allocation requests of its answer.
func (c *client) getCandidates(ctx context.Context, kind, path string) (candidates, error) {
	var ac candidates
	res := c.do(ctx, kind, "GET", path, nil)
	err := res.expect(200, nil)
	if err == nil {
		err = ac.decode(res.body)
	}
	return ac, err
}

// claimOf is what claiming the allocation request raw would hold.
func claimOf(raw json.RawMessage) (alloc, error) {
	var req allocationRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, err
	}
	a := alloc{}
	for rp, v := range req.Allocations {
		a[rp] = v.Resources
	}
	return a, nil
}

// decode finds the elements of allocation_requests in a GET
// /allocation_candidates body. The load generator shares the machine with
// the server it measures, so it only delimits them (a byte scan, not
// encoding/json's scanner) and leaves provider_summaries, about as large
// and unused, unread; the one chosen is decoded by json.Unmarshal, which
// validates it.
func (c *candidates) decode(body []byte) error {
	c.size = len(body)
	var (
		depth    int  // nesting depth at i
		inString bool // i is inside a string
		escaped  bool // the previous byte was a backslash in a string
		keyStart = -1 // start of the last string at depth 1
		lastKey  string
		inList   bool // inside allocation_requests
		elem     = -1 // start of the current element of it
	)
	for i := 0; i < len(body); i++ {
		b := body[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
				if depth == 1 && keyStart >= 0 {
					lastKey = string(body[keyStart:i])
				}
			}
			continue
		}
		switch b {
		case '"':
			inString = true
			if depth == 1 {
				keyStart = i + 1
			} else if inList && depth == 2 && elem < 0 {
				elem = i
			}
		case '{', '[':
			depth++
			if depth == 2 && b == '[' && lastKey == "allocation_requests" {
				inList = true
			} else if inList && depth == 3 && elem < 0 {
				elem = i
			}
		case '}', ']':
			if inList && depth == 3 {
				c.AllocationRequests = append(c.AllocationRequests, json.RawMessage(body[elem:i+1]))
				elem = -1
			}
			depth--
			if inList && depth == 1 {
				return nil
			}
		}
		if depth == 1 && b != '"' {
			keyStart = -1
		}
	}
	return fmt.Errorf("no allocation_requests in %.200s", body)
}

// scheduler claims like nova's scheduler: query candidates, pick one,
// claim it for a new consumer; on 409 try another candidate (up to three),
// then query again (up to three queries).
func (w *worker) scheduler(ctx context.Context, more func() bool, c *counts) {
	for i := 0; more(); i++ {
		t0 := time.Now()
		query := w.candidatesQuery(i)
		claimed, gaveUp := false, false
		for attempt := 0; attempt < 3 && !claimed && !gaveUp; attempt++ {
			if attempt > 0 {
				c.retries++
			}
			ac, err := w.c.getCandidates(ctx, KindCandidates, "/allocation_candidates?"+query)
			if err != nil {
				c.fail("GET /allocation_candidates: " + err.Error())
				gaveUp = true
				break
			}
			n := len(ac.AllocationRequests)
			if n == 0 {
				// Nothing fits any more: a scheduler would answer
				// NoValidHost.
				break
			}
			first := w.rnd.IntN(n)
			for k := 0; k < min(3, n); k++ {
				if k > 0 {
					c.retries++
				}
				a, err := claimOf(ac.AllocationRequests[(first+k)%n])
				if err != nil {
					c.fail("GET /allocation_candidates: " + err.Error())
					gaveUp = true
					break
				}
				switch w.claim(ctx, KindClaimPut, a, c) {
				case claimOK:
					claimed = true
				case claimConflict:
					continue
				default:
					gaveUp = true
				}
				break
			}
		}
		if claimed {
			c.ops++
			w.c.recorder.add(KindClaim, time.Since(t0))
		} else if !gaveUp {
			c.failures++
		}
	}
}

type claimOutcome int

const (
	claimOK claimOutcome = iota
	claimConflict
	claimError
)

// claim PUTs a for a new consumer (consumer_generation null) and records
// the consumer when it is created, or as uncertain when the answer was
// lost.
func (w *worker) claim(ctx context.Context, kind string, a alloc, c *counts) claimOutcome {
	id := uuid.NewString()
	body := map[string]any{
		"allocations":         allocBody(a),
		"project_id":          w.r.projects[w.rnd.IntN(len(w.r.projects))],
		"user_id":             "bench-user",
		"consumer_generation": nil,
	}
	res := w.c.do(ctx, kind, "PUT", "/allocations/"+id, body)
	switch {
	case res.err == nil && res.status == 204:
		w.consumers = append(w.consumers, &consumer{uuid: id, alloc: a})
		return claimOK
	case res.err == nil && res.status == 409:
		c.conflicts++
		return claimConflict
	}
	if res.err != nil || res.status >= 500 {
		w.uncertain[id] = true
	}
	c.fail(fmt.Sprintf("PUT /allocations: %v %d %.300s", res.err, res.status, res.body))
	return claimError
}

func allocBody(a alloc) map[string]any {
	out := map[string]any{}
	for rp, res := range a {
		out[rp] = map[string]any{"resources": res}
	}
	return out
}

// nodeAlloc is the flavor placed on a node directly: VCPU and MEMORY_MB
// on its first NUMA child when it has children, DISK_GB on the root.
func (w *worker) nodeAlloc(n node) alloc {
	f := w.r.cfg.Flavor
	if len(n.children) == 0 {
		return alloc{n.uuid: {"VCPU": f.VCPU, "MEMORY_MB": f.MemoryMB, "DISK_GB": f.DiskGB}}
	}
	child := n.children[w.rnd.IntN(len(n.children))]
	return alloc{child: {"VCPU": f.VCPU, "MEMORY_MB": f.MemoryMB}, n.uuid: {"DISK_GB": f.DiskGB}}
}

// put claims straight onto random nodes, as a raw PUT /allocations.
func (w *worker) put(ctx context.Context, more func() bool, c *counts) {
	for more() {
		n := w.r.nodes[w.rnd.IntN(len(w.r.nodes))]
		if w.claim(ctx, KindPut, w.nodeAlloc(n), c) == claimOK {
			c.ops++
		}
	}
}

// putPaced makes the put phase's claims at this worker's share of
// Config.PacedRate, each due at a fixed interval after the last. A worker
// held up by a slow answer sends late, and that wait is the server's: the
// latency then counts from when the request was due (without it, a stall
// would hide the requests it delayed). A worker that is early sleeps, and
// the latency counts from when it wakes: Go's timers wake up to a
// millisecond late on Linux (the poller waits in whole milliseconds), more
// on a busy VM, and that lateness is the load generator's, not the
// server's.
func (w *worker) putPaced(ctx context.Context, more func() bool, c *counts) {
	interval := time.Duration(float64(time.Second) * float64(len(w.r.workers)) / w.r.cfg.PacedRate)
	// Workers start spread over one interval, not all at once.
	due := time.Now().Add(time.Duration(w.rnd.Int64N(int64(interval) + 1)))
	for more() {
		start := due
		if wait := time.Until(due); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return
			}
			start = time.Now()
		}
		n := w.r.nodes[w.rnd.IntN(len(w.r.nodes))]
		outcome := w.claim(ctx, "", w.nodeAlloc(n), c) // "": timed here, not from the send
		w.c.recorder.add(KindPutPaced, time.Since(start))
		if outcome == claimOK {
			c.ops++
		}
		due = due.Add(interval)
	}
}

// post creates two consumers per POST /allocations on random nodes.
func (w *worker) post(ctx context.Context, more func() bool, c *counts) {
	for more() {
		body := map[string]any{}
		made := map[string]alloc{}
		for k := 0; k < 2; k++ {
			id := uuid.NewString()
			a := w.nodeAlloc(w.r.nodes[w.rnd.IntN(len(w.r.nodes))])
			made[id] = a
			body[id] = map[string]any{
				"allocations":         allocBody(a),
				"project_id":          w.r.projects[w.rnd.IntN(len(w.r.projects))],
				"user_id":             "bench-user",
				"consumer_generation": nil,
			}
		}
		res := w.c.do(ctx, KindPost, "POST", "/allocations", body)
		switch {
		case res.err == nil && res.status == 204:
			for id, a := range made {
				w.consumers = append(w.consumers, &consumer{uuid: id, alloc: a})
			}
			c.ops++
		case res.err == nil && res.status == 409:
			c.conflicts++
			c.failures++
		default:
			if res.err != nil || res.status >= 500 {
				for id := range made {
					w.uncertain[id] = true
				}
			}
			c.fail(fmt.Sprintf("POST /allocations: %v %d %.300s", res.err, res.status, res.body))
		}
	}
}

// usages alternates provider usages and project usages queries.
func (w *worker) usages(ctx context.Context, more func() bool, c *counts) {
	for i := 0; more(); i++ {
		var res response
		var what string
		if i%2 == 0 {
			rp := w.r.providers[w.rnd.IntN(len(w.r.providers))]
			what = "GET /resource_providers/{u}/usages"
			res = w.c.do(ctx, KindRPUsages, "GET", "/resource_providers/"+rp+"/usages", nil)
		} else {
			p := w.r.projects[w.rnd.IntN(len(w.r.projects))]
			what = "GET /usages"
			res = w.c.do(ctx, KindUsages, "GET", "/usages?project_id="+url.QueryEscape(p), nil)
		}
		if err := res.expect(200, nil); err != nil {
			c.fail(what + ": " + err.Error())
			continue
		}
		c.ops++
	}
}

// delete removes up to half of the worker's live consumers, newest first.
func (w *worker) delete(ctx context.Context, more func() bool, c *counts) {
	live := 0
	for _, x := range w.consumers {
		if !x.deleted {
			live++
		}
	}
	budget := live / 2
	for i := len(w.consumers) - 1; i >= 0 && budget > 0 && more(); i-- {
		x := w.consumers[i]
		if x.deleted {
			continue
		}
		budget--
		res := w.c.do(ctx, KindDelete, "DELETE", "/allocations/"+x.uuid, nil)
		if err := res.expect(204, nil); err != nil {
			if res.err != nil || res.status >= 500 {
				w.uncertain[x.uuid] = true
			}
			c.fail("DELETE /allocations: " + err.Error())
			continue
		}
		x.deleted = true
		c.ops++
	}
}

// gateQuery is upstream's performance gate query, over the fleet's first
// aggregate (a tenth of the nodes) and the bench trait (a fifth).
func (r *run) gateQuery() string {
	return "/allocation_candidates?resources=VCPU:1,DISK_GB:10,MEMORY_MB:256&member_of=" + r.aggs[0] +
		"&required=" + benchTrait
}

// gateRounds runs the gate (phase PhaseGate or PhaseGateNewConn)
// GateRounds times and returns the round of median rate, with every
// round's failures and errors counted in it.
func (r *run) gateRounds(ctx context.Context, phase string) Phase {
	var claims counts
	if !r.gateClaimed {
		r.gateClaimed = true
		claims = r.gateClaims(ctx)
	}
	rounds := make([]Phase, 0, GateRounds)
	for i := 0; i < GateRounds && (i == 0 || ctx.Err() == nil); i++ {
		rounds = append(rounds, r.gate(ctx, phase))
	}
	sort.SliceStable(rounds, func(i, j int) bool { return rounds[i].PerSec < rounds[j].PerSec })
	median := rounds[len(rounds)/2]
	median.Claims = claims.ops
	median.Conflicts += claims.conflicts
	median.Failures += claims.failures
	median.Errors += claims.errors
	if claims.firstError != "" {
		median.FirstError = claims.firstError
	}
	for i, o := range rounds {
		if i == len(rounds)/2 {
			continue
		}
		median.Failures += o.Failures
		median.Errors += o.Errors
		if median.FirstError == "" {
			median.FirstError = o.FirstError
		}
	}
	return median
}

// gateClaims writes the GateClaims allocations upstream's gate writes
// before it measures (load_candidates in gate/perfload-runner.sh), one at
// a time from the first worker: the first allocation request of the gate
// query with limit=5, claimed for a new consumer. A claim that finds
// nothing to claim counts as a failure, a refused one as a conflict.
func (r *run) gateClaims(ctx context.Context) counts {
	var c counts
	w := r.workers[0]
	for i := 0; i < GateClaims && ctx.Err() == nil; i++ {
		ac, err := w.c.getCandidates(ctx, KindCandidates, r.gateQuery()+"&limit=5")
		if err != nil {
			c.fail("GET /allocation_candidates (gate claims): " + err.Error())
			continue
		}
		if len(ac.AllocationRequests) == 0 {
			c.failures++
			continue
		}
		a, err := claimOf(ac.AllocationRequests[0])
		if err != nil {
			c.fail("GET /allocation_candidates (gate claims): " + err.Error())
			continue
		}
		if w.claim(ctx, KindClaimPut, a, &c) == claimOK {
			c.ops++
		}
	}
	return c
}

// gate is upstream's performance gate as ab runs it: GateRequests of one
// query, GateClients at a time (spread over the endpoints as the
// workers are), each request bounded by Timeout. Like ab, a client only
// reads each answer and checks its status and its length against the
// first answer's (ab's "length" failures): a randomized answer holds the
// same candidates and summaries in another order, so its length does not
// change while nothing writes. The first answer, fetched before the
// round and not counted, is decoded for the candidates it holds. The
// generator shares the machine with the server, and decoding 500 answers
// of 200 candidates would take cores the server's gate figure needs.
// PhaseGateNewConn opens a new connection for every request, as ab
// without -k does.
func (r *run) gate(ctx context.Context, phase string) Phase {
	var (
		mu    sync.Mutex
		total counts
		rec   = newRecorder()
		sent  int
		wg    sync.WaitGroup
	)
	first := &client{http: r.http, base: r.cfg.Endpoints[0], token: r.cfg.Token, version: "latest"}
	ac, err := first.getCandidates(ctx, "", r.gateQuery())
	if err != nil {
		total.fail("GET /allocation_candidates (gate, first answer): " + err.Error())
		return makePhase(phase, 0, total, rec)
	}
	total.answer = len(ac.AllocationRequests)
	wantLen := ac.size
	hc := r.http
	if phase == PhaseGateNewConn {
		hc = &http.Client{Timeout: r.cfg.Timeout, Transport: &http.Transport{
			Proxy: nil, DisableKeepAlives: true, DisableCompression: true}}
		defer hc.CloseIdleConnections()
	}
	cpu0, cpuOK := treeCPU(r.cfg.ServerPIDs)
	start := time.Now()
	for i := 0; i < GateClients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client{http: hc, base: r.cfg.Endpoints[i%len(r.cfg.Endpoints)], token: r.cfg.Token,
				version: "latest", recorder: newRecorder(), body: new(bytes.Buffer)}
			var n counts
			for ctx.Err() == nil {
				mu.Lock()
				more := sent < GateRequests
				sent++
				mu.Unlock()
				if !more {
					break
				}
				res := c.do(ctx, KindGate, "GET", r.gateQuery(), nil)
				if err := res.expect(200, nil); err != nil {
					n.fail("GET /allocation_candidates: " + err.Error())
					continue
				}
				if len(res.body) != wantLen {
					n.fail(fmt.Sprintf("GET /allocation_candidates: answer of %d bytes, the first had %d: %.300s", len(res.body), wantLen, res.body))
					continue
				}
				n.ops++
			}
			mu.Lock()
			total.add(n)
			rec.merge(c.recorder)
			mu.Unlock()
		}()
	}
	wg.Wait()
	p := makePhase(phase, time.Since(start), total, rec)
	if cpu1, ok := treeCPU(r.cfg.ServerPIDs); ok && cpuOK {
		p.ServerCPU = (cpu1 - cpu0).Seconds()
	}
	return p
}
