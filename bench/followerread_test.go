package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/faults"
	"github.com/placementd/placementd/internal/testcluster"
)

// BenchmarkFollowerRead measures reads through a follower of a 3-node
// in-process cluster (real Raft, the real API and cluster front over
// loopback HTTP) whose nodes are oneWay apart: every Raft RPC and every
// byte between two nodes' APIs is delayed that long each way (an
// in-memory transport for Raft, faults.DelayProxy in front of each API;
// the client itself sits next to the node it asks, so add its own round
// trip to the figures). Each read is GET /resource_providers/{uuid}:
//
//	leader         on the leader (read barrier: one round of heartbeats)
//	forwarded      on a follower that forwards the whole request to the
//	               leader (front.Options.ForwardReads: before read indexes)
//	read-index     on a follower, linearizable: a read index from the
//	               leader, the answer from the follower's state
//	bounded        on a follower, X-Placementd-Max-Staleness: 5s
//	stale          on a follower, X-Placementd-Stale-Read: true
//
// and, with 16 concurrent readers, GET /resource_providers (200 providers,
// about 90 KB) forwarded and by read index. Reported per case: p50 and
// p99 latency, and the bytes that crossed links between APIs per read
// (Raft traffic is not counted; nor are the confirmations every node
// sends in the background, about 300 bytes a second per node). Compare
// the cases of one run:
//
//	go test ./bench/ -run '^$' -bench FollowerRead -benchtime 50x
func BenchmarkFollowerRead(b *testing.B) {
	for _, oneWay := range []time.Duration{0, 5 * time.Millisecond, 25 * time.Millisecond, 75 * time.Millisecond} {
		c := newWANCluster(b, oneWay)
		one := "/resource_providers/" + c.provider
		cases := []struct {
			name, addr, path string
			readers          int
			headers          []string
		}{
			{"leader", c.direct[0], one, 1, nil},
			{"forwarded", c.forwarding[1], one, 1, nil},
			{"read-index", c.direct[1], one, 1, nil},
			{"bounded", c.direct[1], one, 1, []string{front.MaxStalenessHeader, "5s"}},
			{"stale", c.direct[1], one, 1, []string{front.StaleReadHeader, "true"}},
			{"list-16-readers/forwarded", c.forwarding[1], "/resource_providers", 16, nil},
			{"list-16-readers/read-index", c.direct[1], "/resource_providers", 16, nil},
		}
		for _, tc := range cases {
			b.Run(fmt.Sprintf("rtt=%s/%s", 2*oneWay, tc.name), func(b *testing.B) {
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				get := func() {
					req, _ := http.NewRequest("GET", "http://"+tc.addr+tc.path, nil)
					req.Header.Set("X-Auth-Token", "admin")
					for i := 0; i+1 < len(tc.headers); i += 2 {
						req.Header.Set(tc.headers[i], tc.headers[i+1])
					}
					resp, err := client.Do(req)
					if err != nil {
						b.Fatal(err)
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != 200 {
						b.Fatalf("%s: %d", tc.name, resp.StatusCode)
					}
				}
				get() // a warm connection, and a fresh confirmation for bounded reads
				before := c.wanBytes()
				measureParallel(b, tc.readers, get)
				b.ReportMetric(float64(c.wanBytes()-before)/float64(b.N), "wan-B/read")
			})
		}
	}
}

// wanCluster is three nodes whose links between APIs and between Raft
// peers are delayed.
type wanCluster struct {
	direct     []string // each node's API, answering reads at their level
	forwarding []string // each node's API with ForwardReads
	proxies    []*faults.DelayProxy
	provider   string
}

func (c *wanCluster) wanBytes() int64 {
	var n int64
	for _, p := range c.proxies {
		n += p.Bytes()
	}
	return n
}

// noPipeline delays appends too: raft's pipelined appends would bypass
// delayTransport's AppendEntries.
type noPipeline struct{ *delayTransport }

func (noPipeline) AppendEntriesPipeline(raft.ServerID, raft.ServerAddress) (raft.AppendPipeline, error) {
	return nil, raft.ErrPipelineReplicationNotSupported
}

func newWANCluster(b *testing.B, oneWay time.Duration) *wanCluster {
	b.Helper()
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	const secret = "bench"
	c := &wanCluster{}
	var trans []*delayTransport
	var nodes []*cluster.Node
	listen := func() net.Listener {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		return ln
	}
	for i := 0; i < 3; i++ {
		id := fmt.Sprintf("w%d", i+1)
		_, t := raft.NewInmemTransport(raft.ServerAddress(id))
		trans = append(trans, &delayTransport{InmemTransport: t, oneWay: oneWay})
		direct, forwarding := listen(), listen()
		// Other nodes reach this node's API through a delayed link.
		proxy, err := faults.NewDelayProxy("127.0.0.1:0", direct.Addr().String(), oneWay)
		if err != nil {
			b.Fatal(err)
		}
		n, err := cluster.Open(cluster.Config{NodeID: id, InMemory: true, Bootstrap: i == 0, Transport: noPipeline{trans[i]},
			HTTPAddr: proxy.Addr(), Logger: logger}, fsm.New())
		if err != nil {
			b.Fatal(err)
		}
		nodes = append(nodes, n)
		api := httpapi.New(n, httpapi.Config{Logger: quiet})
		for _, s := range []struct {
			ln      net.Listener
			forward bool
		}{{direct, false}, {forwarding, true}} {
			srv := &http.Server{Handler: front.New(n, api, front.Options{Secret: secret, ForwardReads: s.forward, Logger: quiet})}
			go srv.Serve(s.ln)
			b.Cleanup(func() { srv.Close() })
		}
		b.Cleanup(func() { proxy.Close(); n.Shutdown() })
		c.direct = append(c.direct, direct.Addr().String())
		c.forwarding = append(c.forwarding, forwarding.Addr().String())
		c.proxies = append(c.proxies, proxy)
	}
	for _, a := range trans {
		for _, o := range trans {
			if a != o {
				a.Connect(o.LocalAddr(), o.InmemTransport)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := nodes[0].WaitLeader(ctx); err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes[1:] {
		if err := front.JoinCluster(ctx, n, []string{c.direct[0]}, secret, false); err != nil {
			b.Fatal(err)
		}
	}
	for _, n := range nodes[1:] {
		testcluster.WaitFor(b, 30*time.Second, n.ID()+" follows "+nodes[0].ID(), func() error {
			id, addr := n.Leader()
			return testcluster.Check(id == nodes[0].ID() && addr != "", "leader %q at %q", id, addr)
		})
	}
	// 200 providers, created 20 at a time.
	ids := make(chan string, 200)
	for i := 0; i < 200; i++ {
		ids <- uuid.NewString()
	}
	close(ids)
	c.provider = uuid.NewString()
	create(b, c.direct[0], c.provider)
	var wg sync.WaitGroup
	for w := 0; w < 20; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				create(b, c.direct[0], id)
			}
		}()
	}
	wg.Wait()
	return c
}

func create(b *testing.B, addr, id string) {
	body := fmt.Sprintf(`{"name": "bench-rp-%s", "uuid": %q}`, id, id)
	req, _ := http.NewRequest("POST", "http://"+addr+"/resource_providers", strings.NewReader(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b.Errorf("creating provider %s: %d", id, resp.StatusCode)
	}
}
