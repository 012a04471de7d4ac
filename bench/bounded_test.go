package bench

// Benchmarks of the bounds on a single request (the bounded search, the
// request deadline, linear query parsing), through the whole HTTP stack
// of a single-node cluster (in-memory Raft):
//
//	go test ./bench/ -run '^$' -bench 'PCI|UnderWrites|MemberOf' -benchtime 2000x
//	go test ./bench/ -run '^$' -bench 'WritesBeside' -benchtime 300x
//
//   - BenchmarkPCI8x8: upstream's bugs 2070257/2126751, one host with 8
//     PCI devices of one unit and 8 isolated granular groups (8! = 40,320
//     candidates among 8^8 combinations), limit=1000 and limit=10000.
//   - BenchmarkCandidatesUnderWrites{1k,10k}: 8 clients asking for
//     candidates while a writer claims and releases allocations; p50, p99
//     and the slowest request.
//   - BenchmarkWritesBeside{Idle,Search}: write latency alone, and beside
//     a client that keeps a worst-case search running (one no bound
//     prunes, stopped by the request deadline): the ratio is what a long
//     read costs writes.
//   - BenchmarkMemberOf{1k,10k}: a query with that many member_of values
//     (parsing dominates: the aggregates match nothing).

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime/metrics"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// benchNode is the single node of the benchmarks: Raft's default timeouts
// (what operators run), so that figures stay comparable across changes.
func benchNode() cluster.Config {
	return cluster.Config{NodeID: "bench", Tune: func(*raft.Config) {}, Logger: hclog.NewNullLogger()}
}

// serve runs a single-node cluster over f with the API on a loopback
// HTTP server, until the benchmark ends.
func serve(b *testing.B, f *fsm.FSM, cfg httpapi.Config) string {
	b.Helper()
	node := testcluster.OpenNode(b, benchNode(), f)
	cfg.Logger = testcluster.Quiet
	return testcluster.Serve(b, httpapi.New(node, cfg)).URL
}

// call sends one request as admin and returns its status.
func call(c *http.Client, method, url, version string, body []byte) (int, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement "+version)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// report sets the percentiles of latencies (and the slowest) as metrics.
func report(b *testing.B, prefix string, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	pct := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(pct(0.50), prefix+"p50-µs")
	b.ReportMetric(pct(0.99), prefix+"p99-µs")
	b.ReportMetric(float64(lat[len(lat)-1].Microseconds()), prefix+"max-µs")
}

// pciHost is one root with n children of one CUSTOM_PCI each.
func pciHost(b *testing.B, n int) *fsm.FSM {
	f := fsm.New()
	apply := func(cmd state.Command) {
		if _, err := f.ApplyCommand(cmd, state.Meta{Time: time.Unix(0, 0)}); err != nil {
			b.Fatalf("%s: %v", cmd.Kind(), err)
		}
	}
	apply(&state.CreateResourceClass{Name: "CUSTOM_PCI"})
	apply(&state.CreateProvider{UUID: nodeUUID(0), Name: "host"})
	for i := 0; i < n; i++ {
		u := numaUUID(0, i)
		apply(&state.CreateProvider{UUID: u, Name: fmt.Sprint("pci", i), ParentUUID: nodeUUID(0)})
		apply(&state.SetInventories{Provider: u, Inventories: []state.InventoryValues{
			{Class: "CUSTOM_PCI", Total: 1, MinUnit: 1, MaxUnit: 1, StepSize: 1, AllocationRatio: 1}}})
	}
	return f
}

func pciQuery(groups int) string {
	var q strings.Builder
	q.WriteString("group_policy=isolate")
	for i := 1; i <= groups; i++ {
		fmt.Fprintf(&q, "&resources%d=CUSTOM_PCI:1", i)
	}
	return q.String()
}

func BenchmarkPCI8x8(b *testing.B) {
	url := serve(b, pciHost(b, 8), httpapi.Config{})
	for _, limit := range []int{1000, 10000} {
		b.Run(fmt.Sprint("limit", limit), func(b *testing.B) {
			u := fmt.Sprintf("%s/allocation_candidates?limit=%d&%s", url, limit, pciQuery(8))
			get := func() {
				if st, err := call(http.DefaultClient, "GET", u, "1.39", nil); err != nil || st != 200 {
					b.Fatalf("status %d, %v", st, err)
				}
			}
			get()
			measure(b, get)
		})
	}
}

// claimBody is a Nova claim of one VCPU on compute node i (1.28: a new
// consumer).
func claimBody(i int) []byte {
	return fmt.Appendf(nil, `{"allocations": {"%s": {"resources": {"VCPU": 1, "MEMORY_MB": 256}}}, "project_id": "p", "user_id": "u", "consumer_generation": null}`, nodeUUID(i))
}

// writer claims and releases allocations until stop closes, one write at
// a time; it leaves the state as it found it (but for generations).
func writer(b *testing.B, url string, nodes int, stop <-chan struct{}, wg *sync.WaitGroup, id int) {
	defer wg.Done()
	c := &http.Client{}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		consumer := fmt.Sprintf("%s/allocations/5c%06d-0000-4000-8000-%012d", url, id, i)
		st, err := call(c, "PUT", consumer, "1.28", claimBody((i*7+id)%nodes))
		if err != nil || st != 204 {
			b.Errorf("claim: %d %v", st, err)
			return
		}
		st, err = call(c, "DELETE", consumer, "1.28", nil)
		if err != nil || st != 204 {
			b.Errorf("release: %d %v", st, err)
			return
		}
	}
}

// candidatesUnderWrites runs b.N candidate queries from 8 clients while
// one writer claims and releases.
func candidatesUnderWrites(b *testing.B, nodes int) {
	f := fleet(b, fleetSpec{nodes: nodes})
	url := serve(b, f, httpapi.Config{})
	for _, q := range []struct{ name, query string }{
		{"limit50", benchQueries[0].query},
		{"limit1000", benchQueries[3].query},
	} {
		b.Run(q.name, func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go writer(b, url, nodes, stop, &wg, 0)
			const clients = 8
			var next atomic.Int64
			lats := make([][]time.Duration, clients)
			var cwg sync.WaitGroup
			b.ResetTimer()
			for c := 0; c < clients; c++ {
				cwg.Add(1)
				go func(c int) {
					defer cwg.Done()
					cl := &http.Client{}
					for next.Add(1) <= int64(b.N) {
						t0 := time.Now()
						if st, err := call(cl, "GET", url+"/allocation_candidates?"+q.query, "1.39", nil); err != nil || st != 200 {
							b.Errorf("status %d, %v", st, err)
							return
						}
						lats[c] = append(lats[c], time.Since(t0))
					}
				}(c)
			}
			cwg.Wait()
			b.StopTimer()
			close(stop)
			wg.Wait()
			var all []time.Duration
			for _, l := range lats {
				all = append(all, l...)
			}
			report(b, "", all)
		})
	}
}

func BenchmarkCandidatesUnderWrites1k(b *testing.B)  { candidatesUnderWrites(b, 1000) }
func BenchmarkCandidatesUnderWrites10k(b *testing.B) { candidatesUnderWrites(b, 10000) }

// binHost adds to f a host whose 12 children have 6 units of CUSTOM_BIN:
// packing 6 pieces of 4 and 13 of 3 on it is impossible, which no bound
// of the search sees, so that search runs until its deadline.
func binHost(b *testing.B, f *fsm.FSM) string {
	apply := func(cmd state.Command) {
		if _, err := f.ApplyCommand(cmd, state.Meta{Time: time.Unix(0, 0)}); err != nil {
			b.Fatalf("%s: %v", cmd.Kind(), err)
		}
	}
	apply(&state.CreateResourceClass{Name: "CUSTOM_BIN"})
	root := "b1000000-0000-4000-8000-000000000000"
	apply(&state.CreateProvider{UUID: root, Name: "bins"})
	for i := 0; i < 12; i++ {
		u := fmt.Sprintf("b1000000-0000-4000-8000-%012d", i+1)
		apply(&state.CreateProvider{UUID: u, Name: fmt.Sprint("bin", i), ParentUUID: root})
		apply(&state.SetInventories{Provider: u, Inventories: []state.InventoryValues{
			{Class: "CUSTOM_BIN", Total: 6, MinUnit: 1, MaxUnit: 6, StepSize: 1, AllocationRatio: 1}}})
	}
	var q strings.Builder
	q.WriteString("limit=1&group_policy=none")
	for i := 1; i <= 19; i++ {
		amount := 3
		if i <= 6 {
			amount = 4
		}
		fmt.Fprintf(&q, "&resources%d=CUSTOM_BIN:%d", i, amount)
	}
	return q.String()
}

// writesBeside measures b.N claim/release writes by 4 writers, with or
// without a client looping the worst-case search.
func writesBeside(b *testing.B, search bool) {
	const nodes = 1000
	f := buildFleet(b, fleetSpec{nodes: nodes}) // the bin host stays out of the shared fleets
	query := binHost(b, f)
	url := serve(b, f, httpapi.Config{RequestTimeout: time.Second})
	stop := make(chan struct{})
	var sw sync.WaitGroup
	var searches, stopped atomic.Int64
	if search {
		sw.Add(1)
		go func() {
			defer sw.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				st, err := call(http.DefaultClient, "GET", url+"/allocation_candidates?"+query, "1.39", nil)
				if err != nil {
					b.Error(err)
					return
				}
				searches.Add(1)
				if st == 503 {
					stopped.Add(1)
				}
			}
		}()
	}
	const writers = 4
	lats := make([][]time.Duration, writers)
	var done atomic.Int64
	var ww sync.WaitGroup
	sched := schedLatencies()
	b.ResetTimer()
	for w := 0; w < writers; w++ {
		ww.Add(1)
		go func(w int) {
			defer ww.Done()
			c := &http.Client{}
			for i := 0; done.Add(1) <= int64(b.N); i++ {
				consumer := fmt.Sprintf("%s/allocations/6c%06d-0000-4000-8000-%012d", url, w, i)
				t0 := time.Now()
				if st, err := call(c, "PUT", consumer, "1.28", claimBody((i*7+w)%nodes)); err != nil || st != 204 {
					b.Errorf("claim: %d %v", st, err)
					return
				}
				lats[w] = append(lats[w], time.Since(t0))
				if st, err := call(c, "DELETE", consumer, "1.28", nil); err != nil || st != 204 {
					b.Errorf("release: %d %v", st, err)
					return
				}
			}
		}(w)
	}
	ww.Wait()
	b.StopTimer()
	schedP99 := sched()
	close(stop)
	sw.Wait()
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	report(b, "write-", all)
	b.ReportMetric(schedP99, "sched-p99-µs")
	if search {
		b.ReportMetric(float64(searches.Load()), "searches")
		b.ReportMetric(float64(stopped.Load()), "stopped-503")
	}
}

// schedLatencies starts counting how long goroutines wait for a processor
// once runnable (the runtime's /sched/latencies histogram); the function
// it returns gives the 99th percentile since, in microseconds. It shows
// what holding a processor costs the other goroutines of the process,
// apart from what other processes on the machine cost it.
func schedLatencies() func() float64 {
	read := func() *metrics.Float64Histogram {
		s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
		metrics.Read(s)
		return s[0].Value.Float64Histogram()
	}
	before := read()
	return func() float64 {
		after := read()
		var total uint64
		counts := make([]uint64, len(after.Counts))
		for i := range counts {
			counts[i] = after.Counts[i] - before.Counts[i]
			total += counts[i]
		}
		var seen uint64
		for i, c := range counts {
			seen += c
			if seen*100 >= total*99 {
				return after.Buckets[i+1] * 1e6
			}
		}
		return 0
	}
}

func BenchmarkWritesBesideIdle(b *testing.B)   { writesBeside(b, false) }
func BenchmarkWritesBesideSearch(b *testing.B) { writesBeside(b, true) }

func memberOf(b *testing.B, n int) {
	url := serve(b, fleet(b, fleetSpec{nodes: 1000}), httpapi.Config{})
	var q strings.Builder
	q.WriteString("/allocation_candidates?resources=VCPU:1")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&q, "&member_of=%08x-0000-4000-8000-000000000000", i)
	}
	u := url + q.String()
	get := func() {
		if st, err := call(http.DefaultClient, "GET", u, "1.39", nil); err != nil || st != 200 {
			b.Fatalf("status %d, %v", st, err)
		}
	}
	get()
	measure(b, get)
}

func BenchmarkMemberOf1k(b *testing.B)  { memberOf(b, 1000) }
func BenchmarkMemberOf10k(b *testing.B) { memberOf(b, 10000) }
