// Package bench holds benchmarks of placementd's hot paths over realistic
// fleets. Run them one core at a time, as the targets are stated:
//
//	go test ./bench/ -run '^$' -bench Candidates -cpu 1 -benchtime 2000x
//
// Each benchmark reports its mean (ns/op) and the 50th and 99th
// percentile of single requests (p50-µs, p99-µs).
package bench

import (
	"context"
	"fmt"
	"github.com/placementd/placementd/internal/testcluster"
	"io"
	"net/http"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi"
)

// fleetSpec describes a cloud: n compute nodes with VCPU, MEMORY_MB and
// DISK_GB (on two NUMA children when numa is set), a fifth of them with a
// CPU trait, every node in one of ten aggregates each served by a sharing
// disk provider, and a third of the nodes partly used.
type fleetSpec struct {
	nodes int
	numa  bool
}

const (
	benchTrait = "HW_CPU_X86_AVX2"
	aggCount   = 10
)

func aggUUID(i int) string  { return fmt.Sprintf("a99a0000-0000-4000-8000-%012d", i) }
func nodeUUID(i int) string { return fmt.Sprintf("c0000000-0000-4000-8000-%012d", i) }
func numaUUID(i, k int) string {
	return fmt.Sprintf("c%07d-0000-4000-8000-%012d", k+1, i)
}
func shareUUID(i int) string { return fmt.Sprintf("5a000000-0000-4000-8000-%012d", i) }

var fleets = map[fleetSpec]*fsm.FSM{}

// fleet builds the state with the real commands, applied directly to an
// FSM (no Raft), and caches it across benchmarks.
func fleet(tb testing.TB, spec fleetSpec) *fsm.FSM {
	if f := fleets[spec]; f != nil {
		return f
	}
	f := buildFleet(tb, spec)
	fleets[spec] = f
	return f
}

// buildFleet builds the state of spec afresh.
func buildFleet(tb testing.TB, spec fleetSpec) *fsm.FSM {
	f := fsm.New()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	apply := func(cmd state.Command) {
		if _, err := f.ApplyCommand(cmd, state.Meta{Time: t0}); err != nil {
			tb.Fatalf("%s: %v", cmd.Kind(), err)
		}
	}
	inv := func(uuid string, gen int64, values ...state.InventoryValues) {
		for i := range values {
			v := &values[i]
			v.MinUnit, v.StepSize = 1, 1
			if v.MaxUnit == 0 {
				v.MaxUnit = v.Total
			}
			if v.AllocationRatio == 0 {
				v.AllocationRatio = 1
			}
		}
		apply(&state.SetInventories{Provider: uuid, Generation: gen, Inventories: values})
	}
	for i := 0; i < aggCount; i++ {
		u := shareUUID(i)
		apply(&state.CreateProvider{UUID: u, Name: fmt.Sprintf("share-%d", i)})
		inv(u, 0, state.InventoryValues{Class: "DISK_GB", Total: 100000, MaxUnit: 2000})
		apply(&state.SetProviderTraits{Provider: u, Generation: 1, Traits: []string{state.SharingTrait}})
		apply(&state.SetAggregates{UUID: u, Aggregates: []string{aggUUID(i)}})
	}
	for i := 0; i < spec.nodes; i++ {
		u := nodeUUID(i)
		apply(&state.CreateProvider{UUID: u, Name: fmt.Sprintf("cn-%d", i)})
		gen := int64(0)
		if spec.numa {
			inv(u, gen, state.InventoryValues{Class: "DISK_GB", Total: 2000})
			for k := 0; k < 2; k++ {
				nu := numaUUID(i, k)
				apply(&state.CreateProvider{UUID: nu, Name: fmt.Sprintf("cn-%d-numa%d", i, k), ParentUUID: u})
				inv(nu, 0,
					state.InventoryValues{Class: "VCPU", Total: 32, AllocationRatio: 4},
					state.InventoryValues{Class: "MEMORY_MB", Total: 131072, AllocationRatio: 1.5})
				apply(&state.SetProviderTraits{Provider: nu, Generation: 1, Traits: []string{"HW_NUMA_ROOT"}})
			}
		} else {
			inv(u, gen,
				state.InventoryValues{Class: "VCPU", Total: 64, AllocationRatio: 4},
				state.InventoryValues{Class: "MEMORY_MB", Total: 262144, AllocationRatio: 1.5},
				state.InventoryValues{Class: "DISK_GB", Total: 2000})
		}
		gen++
		if i%5 == 0 {
			apply(&state.SetProviderTraits{Provider: u, Generation: gen, Traits: []string{benchTrait}})
		}
		apply(&state.SetAggregates{UUID: u, Aggregates: []string{aggUUID(i % aggCount)}})
		if i%3 == 0 {
			cpuProvider := u
			if spec.numa {
				cpuProvider = numaUUID(i, 0)
			}
			apply(&state.SetAllocations{Consumers: []state.ConsumerAllocations{{
				Consumer:  fmt.Sprintf("0c000000-0000-4000-8000-%012d", i),
				ProjectID: "p", UserID: "u",
				Allocations: []state.AllocationRequest{
					{Provider: cpuProvider, Class: "VCPU", Used: 8},
					{Provider: cpuProvider, Class: "MEMORY_MB", Used: 16384},
					{Provider: u, Class: "DISK_GB", Used: 100},
				},
			}}})
		}
	}
	return f
}

// benchQueries are the requests measured, as query strings.
var benchQueries = []struct {
	name  string
	query string
}{
	{"plain", "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=50"},
	{"required", "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&required=" + benchTrait + "&limit=50"},
	{"member_of", "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&member_of=" + aggUUID(3) + "&limit=50"},
	{"limit1000", "resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=1000"},
	{"none_fit", "resources=VCPU:1000,MEMORY_MB:512,DISK_GB:10&limit=50"},
}

var numaQuery = "resources=DISK_GB:10&resources1=VCPU:1,MEMORY_MB:512&resources2=VCPU:1,MEMORY_MB:512&group_policy=isolate&limit=50"

// parseQuery turns a query string into a search request (the subset of
// the syntax these benchmarks use; the HTTP benchmarks use the real parser).
func parseQuery(tb testing.TB, q string) *candidates.Request {
	vals, err := url.ParseQuery(q)
	if err != nil {
		tb.Fatal(err)
	}
	req := &candidates.Request{NestedAware: true}
	groups := map[string]*candidates.Group{}
	var order []string
	get := func(suffix string) *candidates.Group {
		if groups[suffix] == nil {
			groups[suffix] = &candidates.Group{Suffix: suffix}
			order = append(order, suffix)
		}
		return groups[suffix]
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := vals[k][0]
		switch {
		case k == "limit":
			fmt.Sscan(v, &req.Limit)
		case k == "group_policy":
			req.Isolate = v == "isolate"
		case len(k) >= 9 && k[:9] == "resources":
			g := get(k[9:])
			for _, part := range splitComma(v) {
				var amount int64
				class := part
				for i := range part {
					if part[i] == ':' {
						class = part[:i]
						fmt.Sscan(part[i+1:], &amount)
					}
				}
				g.Resources = append(g.Resources, state.ResourceAmount{Class: class, Amount: amount})
			}
		case len(k) >= 8 && k[:8] == "required":
			get(k[8:]).Required = append(get(k[8:]).Required, []string{v})
		case len(k) >= 9 && k[:9] == "member_of":
			get(k[9:]).MemberOf = append(get(k[9:]).MemberOf, []string{v})
		}
	}
	for _, s := range order {
		req.Groups = append(req.Groups, *groups[s])
	}
	return req
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// measure runs op b.N times, timing each call, and reports percentiles.
func measure(b *testing.B, op func()) {
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		op()
		times = append(times, time.Since(t))
	}
	b.StopTimer()
	reportPercentiles(b, times)
}

// reportPercentiles reports the p50 and p99 of times.
func reportPercentiles(b *testing.B, times []time.Duration) {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	pct := func(p float64) float64 {
		return float64(times[int(p*float64(len(times)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

func benchSearch(b *testing.B, spec fleetSpec, query string, wantMin int) {
	f := fleet(b, spec)
	req := parseQuery(b, query)
	var n int
	check := func(st *state.Store) {
		res, err := candidates.Search(context.Background(), st, req, candidates.Options{})
		if err != nil {
			b.Fatal(err)
		}
		n = len(res.Candidates)
	}
	f.Read(check)
	if n < wantMin {
		b.Fatalf("%s: %d candidates, want at least %d", query, n, wantMin)
	}
	measure(b, func() { f.Read(check) })
}

func BenchmarkCandidates10k(b *testing.B) {
	for _, q := range benchQueries {
		want := 50
		if q.name == "limit1000" {
			want = 1000
		}
		if q.name == "none_fit" {
			want = 0
		}
		b.Run(q.name, func(b *testing.B) { benchSearch(b, fleetSpec{nodes: 10000}, q.query, want) })
	}
}

func BenchmarkCandidates100k(b *testing.B) {
	for _, q := range benchQueries {
		want := 50
		if q.name == "limit1000" {
			want = 1000
		}
		if q.name == "none_fit" {
			want = 0
		}
		b.Run(q.name, func(b *testing.B) { benchSearch(b, fleetSpec{nodes: 100000}, q.query, want) })
	}
}

func BenchmarkCandidatesNUMA10k(b *testing.B) {
	benchSearch(b, fleetSpec{nodes: 10000, numa: true}, numaQuery, 50)
}

// BenchmarkCandidatesHTTP10k measures whole requests: a single-node
// cluster (in-memory Raft), the HTTP stack with its parsing, the read
// barrier, the search and the JSON answer.
func BenchmarkCandidatesHTTP10k(b *testing.B) {
	f := fleet(b, fleetSpec{nodes: 10000})
	node := testcluster.OpenNode(b, benchNode(), f)
	srv := testcluster.Serve(b, httpapi.New(node, httpapi.Config{Logger: testcluster.Quiet}))
	for _, q := range append(benchQueries[:3:3], struct{ name, query string }{"limit1000", benchQueries[3].query}) {
		b.Run(q.name, func(b *testing.B) {
			get := func() {
				rq, _ := http.NewRequest("GET", srv.URL+"/allocation_candidates?"+q.query, nil)
				rq.Header.Set("x-auth-token", "admin")
				rq.Header.Set("openstack-api-version", "placement 1.39")
				resp, err := http.DefaultClient.Do(rq)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			get()
			measure(b, get)
		})
	}
}

// BenchmarkCandidatesRandom measures the search with and without
// randomization (upstream's randomize_allocation_candidates, what clouds
// run) at limit 10 and 50 over 1k, 10k and 100k compute nodes, flat and
// with NUMA children: with randomization the cost should follow the
// limit, not the number of candidates.
//
//	go test ./bench/ -run '^$' -bench CandidatesRandom -cpu 1 -benchtime 2000x
func BenchmarkCandidatesRandom(b *testing.B) {
	for _, nodes := range []int{1000, 10000, 100000} {
		for _, numa := range []bool{false, true} {
			spec := fleetSpec{nodes: nodes, numa: numa}
			query := benchQueries[0].query
			if numa {
				query = numaQuery
			}
			for _, limit := range []int{10, 50} {
				for _, randomize := range []bool{false, true} {
					name := fmt.Sprintf("nodes%d/numa=%v/limit%d/randomize=%v", nodes, numa, limit, randomize)
					b.Run(name, func(b *testing.B) {
						req := parseQuery(b, query)
						req.Limit = limit
						opt := candidates.Options{Randomize: randomize, MaxCandidates: 10000}
						f := fleet(b, spec)
						search := func(st *state.Store) {
							res, err := candidates.Search(context.Background(), st, req, opt)
							if err != nil || len(res.Candidates) != limit {
								b.Fatalf("%v, %d candidates", err, len(res.Candidates))
							}
						}
						measure(b, func() { f.Read(search) })
					})
				}
			}
		}
	}
}

// BenchmarkCandidatesHTTPRandom measures GET /allocation_candidates with
// randomization through HTTP on one node (in-memory Raft) over 1k, 10k
// and 100k compute nodes, at limit 10 and 50: p50 at 10k should stay
// within 2x of p50 at 1k, p99 at 100k within 20 ms.
//
//	go test ./bench/ -run '^$' -bench CandidatesHTTPRandom -benchtime 2000x
func BenchmarkCandidatesHTTPRandom(b *testing.B) {
	for _, nodes := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("nodes%d", nodes), func(b *testing.B) {
			url := serve(b, fleet(b, fleetSpec{nodes: nodes}), httpapi.Config{RandomizeAllocationCandidates: true})
			for _, limit := range []int{10, 50} {
				b.Run(fmt.Sprintf("limit%d", limit), func(b *testing.B) {
					u := fmt.Sprintf("%s/allocation_candidates?resources=VCPU:1,MEMORY_MB:512,DISK_GB:10&limit=%d", url, limit)
					get := func() {
						if st, err := call(http.DefaultClient, "GET", u, "1.39", nil); err != nil || st != 200 {
							b.Fatalf("status %d, %v", st, err)
						}
					}
					get()
					measure(b, get)
				})
			}
		})
	}
}

// BenchmarkCandidatesRandomMix measures the scheduler's queries of
// bench/loadgen (plain, a required trait, member_of, limit 50) over 1k
// compute nodes with randomization on and off, on a still state and with
// a claim applied before each search (a new state version each time, as
// on a leader taking claims): the randomized search should cost about
// what the first-50 search costs, and no more on a changing state.
//
//	go test ./bench/ -run '^$' -bench CandidatesRandomMix -benchtime 3000x -cpu 1
func BenchmarkCandidatesRandomMix(b *testing.B) {
	f := buildFleet(b, fleetSpec{nodes: 1000})
	claims := 0
	claim := func() {
		claims++
		u := nodeUUID(claims * 7 % 1000)
		if _, err := f.ApplyCommand(&state.SetAllocations{Consumers: []state.ConsumerAllocations{{
			Consumer: fmt.Sprintf("0d000000-0000-4000-8000-%012d", claims), ProjectID: "p", UserID: "u",
			Allocations: []state.AllocationRequest{{Provider: u, Class: "VCPU", Used: 1}},
		}}}, state.Meta{}); err != nil {
			b.Fatal(err)
		}
	}
	for _, writes := range []bool{false, true} {
		for _, q := range benchQueries[:3] {
			for _, randomize := range []bool{false, true} {
				b.Run(fmt.Sprintf("writes=%v/%s/randomize=%v", writes, q.name, randomize), func(b *testing.B) {
					req := parseQuery(b, q.query)
					opt := candidates.Options{Randomize: randomize, MaxCandidates: 10000}
					search := func(st *state.Store) {
						res, err := candidates.Search(context.Background(), st, req, opt)
						if err != nil || len(res.Candidates) != 50 {
							b.Fatalf("%v, %d candidates", err, len(res.Candidates))
						}
					}
					// Only the search is timed (the percentiles): the
					// claims make b's ns/op of the writes=true runs.
					times := make([]time.Duration, 0, b.N)
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						if writes {
							claim()
						}
						t := time.Now()
						f.Read(search)
						times = append(times, time.Since(t))
					}
					b.StopTimer()
					reportPercentiles(b, times)
					// The fastest tenth: what a search costs when nothing
					// else preempts it (the machine is shared).
					b.ReportMetric(float64(times[len(times)/10].Nanoseconds())/1e3, "p10-µs")
				})
			}
		}
	}
}
