package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// delayTransport is an in-memory transport whose RPCs take a round trip
// of 2×oneWay (added before the request and before the reply), standing in
// for links between regions. About time: the sleeps are the simulated
// latency.
type delayTransport struct {
	*raft.InmemTransport
	oneWay time.Duration
}

func (d *delayTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	time.Sleep(d.oneWay)
	err := d.InmemTransport.AppendEntries(id, target, args, resp)
	time.Sleep(d.oneWay)
	return err
}

// BenchmarkLeaderRead measures linearizable reads on the leader of a
// 3-node in-memory cluster, with 16 concurrent readers, with and without
// delay on the Raft links: "barrier" is cluster.Node.ReadBarrier (fresh
// acknowledgements, concurrent reads sharing rounds), "verify" is raft's
// VerifyLeader per read, what the barrier relied on before (and which a
// frozen leader's stale replies can fool). Both read the state after the
// check. Compare them within one run:
//
//	go test ./bench/ -run '^$' -bench LeaderRead -benchtime 3s
func BenchmarkLeaderRead(b *testing.B) {
	for _, oneWay := range []time.Duration{0, 2500 * time.Microsecond, 12500 * time.Microsecond} {
		leader := readCluster(b, oneWay)
		ctx := context.Background()
		checks := map[string]func() error{
			"barrier": func() error { return leader.ReadBarrier(ctx) },
			"verify":  func() error { return leader.RaftVerifyLeader() },
		}
		for _, name := range []string{"verify", "barrier"} {
			check := checks[name]
			b.Run(fmt.Sprintf("%s/rtt=%s", name, 2*oneWay), func(b *testing.B) {
				measureParallel(b, benchReaders, func() {
					if err := check(); err != nil {
						b.Fatal(err)
					}
					leader.Read(ctx, backend.ReadOptions{Level: backend.Stale})
				})
			})
		}
	}
}

// readCluster starts three in-process nodes (the harness's, on Raft's
// default timings) whose Raft links delay each way by oneWay, and returns
// the leader.
func readCluster(b *testing.B, oneWay time.Duration) *cluster.Node {
	b.Helper()
	c := testcluster.New(b, func(node *cluster.Node, logger *slog.Logger) http.Handler {
		return httpapi.New(node, httpapi.Config{Logger: logger})
	})
	c.WrapTransport = func(_ string, t *raft.InmemTransport) raft.Transport {
		return &delayTransport{InmemTransport: t, oneWay: oneWay}
	}
	leader := c.StartWith("r1", cluster.Config{InMemory: true, Bootstrap: true})
	c.LeaderIs(leader)
	for _, id := range []string{"r2", "r3"} {
		c.Join(c.StartWith(id, cluster.Config{InMemory: true}), leader, false)
	}
	if err := leader.Node.ReadBarrier(context.Background()); err != nil {
		b.Fatal(err)
	}
	return leader.Node
}

// measureParallel runs op b.N times from workers goroutines and reports
// operations per second and the latency percentiles of single operations.
func measureParallel(b *testing.B, workers int, op func()) {
	var mu sync.Mutex
	times := make([]time.Duration, 0, b.N)
	var next sync.WaitGroup
	work := make(chan struct{}, b.N)
	for i := 0; i < b.N; i++ {
		work <- struct{}{}
	}
	close(work)
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		next.Add(1)
		go func() {
			defer next.Done()
			var mine []time.Duration
			for range work {
				t := time.Now()
				op()
				mine = append(mine, time.Since(t))
			}
			mu.Lock()
			times = append(times, mine...)
			mu.Unlock()
		}()
	}
	next.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	pct := func(p float64) float64 {
		return float64(times[int(p*float64(len(times)-1))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "reads/s")
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

var benchReaders = 16
