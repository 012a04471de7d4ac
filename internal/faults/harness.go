package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/internal/testcluster"
)

// Config describes a run.
type Config struct {
	Nodes    int
	Bin      string        // placementd binary
	Dir      string        // data dirs, logs, reports
	Duration time.Duration // of the workload under faults
	Clients  int           // default 2 per node
	// Nemeses to cycle through, in order (default AllNemeses).
	Nemeses []string
	// Hold is how long a fault lasts (default 4 s); Quiet the pause
	// between one fault's recovery and the next (default 1 s).
	Hold, Quiet time.Duration
	// RecoveryTimeout bounds the wait for a healed cluster to be healthy
	// and caught up again (default 60 s).
	RecoveryTimeout time.Duration
	// RequestTimeout bounds one client request (default 15 s).
	RequestTimeout time.Duration
	// CheckTimeout bounds the linearizability check (default 5 min).
	CheckTimeout time.Duration
	Seed         int64
	Logf         func(format string, args ...any)

	// A WAN: RaftOneWay ± RaftJitter is added to every Raft link each way
	// once the workload is set up (the proxies hold what crosses them; API traffic is
	// not delayed). Regions, when set, gives node i the region Regions[i]
	// (--region), keeps the leader in Regions[0] (--leader-regions), and
	// is what the partition-region nemesis cuts along. ServeFlags go to
	// every node, e.g. the timing profile for the RTT.
	RaftOneWay, RaftJitter time.Duration
	Regions                []string
	ServeFlags             []string
}

// AllNemeses are the faults the harness injects.
var AllNemeses = []string{
	"kill-leader", "kill-follower", "pause", "partition-minority",
	"partition-bridge", "wipe-rejoin", "transfer-leadership",
}

// WANNemeses are the faults of a WAN run (make wan-check): the leader's
// region cut off, the leader killed, a minority cut off, a hand-over.
var WANNemeses = []string{"partition-region", "kill-leader", "partition-minority", "transfer-leadership"}

const secret = "faults-secret"

// testCluster is the running processes with their Raft proxies.
type testCluster struct {
	cfg   Config
	nodes testcluster.Procs
	net   *network
	rng   *rand.Rand
	logf  func(string, ...any)

	mu     sync.Mutex
	events []Event
}

// Event is one nemesis action.
type Event struct {
	At     time.Duration
	Kind   string
	Detail string
}

func (c *testCluster) event(start time.Time, kind, format string, args ...any) {
	e := Event{At: time.Since(start).Round(time.Millisecond), Kind: kind, Detail: fmt.Sprintf(format, args...)}
	c.mu.Lock()
	c.events = append(c.events, e)
	c.mu.Unlock()
	c.logf("nemesis %8s %-20s %s", e.At, e.Kind, e.Detail)
}

// startCluster starts cfg.Nodes nodes: n1 founds the cluster, the others
// join it. Node i listens on 127.0.0.(10+i); its Raft port sits behind a
// proxy on the same address.
func startCluster(ctx context.Context, cfg Config) (*testCluster, error) {
	c := &testCluster{cfg: cfg, net: newNetwork(), rng: rand.New(rand.NewSource(cfg.Seed)), logf: cfg.Logf}
	for i := 1; i <= cfg.Nodes; i++ {
		ip := fmt.Sprintf("127.0.0.%d", 10+i)
		httpAddr, err1 := testcluster.FreeAddr(ip)
		raftAddr, err2 := testcluster.FreeAddr(ip)
		proxyAddr, err3 := testcluster.FreeAddr(ip)
		for _, err := range []error{err1, err2, err3} {
			if err != nil {
				c.stop()
				return nil, err
			}
		}
		id := fmt.Sprintf("n%d", i)
		n := &testcluster.Proc{
			ID: id, Bin: cfg.Bin, HTTPAddr: httpAddr, RaftAddr: raftAddr, RaftAdvertise: proxyAddr,
			DataDir: filepath.Join(cfg.Dir, id), Secret: secret, LogPath: filepath.Join(cfg.Dir, id+".log"),
			Args: []string{
				// The membership stays as it is across restarts; SIGTERM
				// only hands leadership over.
				"--leave-on-shutdown=false",
				// The proxies learn who dials from the first RPC on each
				// connection (proxy.go), which TLS would hide: these
				// loopback-only test clusters run Raft in plain TCP.
				"--raft-insecure-plaintext",
				// Snapshots and log compaction happen during the run, so
				// restarts load snapshots and a wiped node catches up by
				// snapshot install.
				"--snapshot-threshold", "512", "--snapshot-interval", "2s", "--trailing-logs", "256",
			},
		}
		if cfg.Regions != nil {
			n.Args = append(n.Args, "--region", cfg.Regions[i-1], "--leader-regions", cfg.Regions[0])
		}
		n.Args = append(n.Args, cfg.ServeFlags...)
		if _, err := c.net.listen(proxyAddr, id, raftAddr); err != nil {
			c.stop()
			return nil, err
		}
		c.nodes = append(c.nodes, n)
	}
	if err := c.nodes[0].Start(nil); err != nil {
		c.stop()
		return nil, err
	}
	for _, n := range c.nodes[1:] {
		if err := n.Start([]string{c.nodes[0].HTTPAddr}); err != nil {
			c.stop()
			return nil, err
		}
	}
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if _, err := c.nodes.WaitHealthy(wctx, cfg.Nodes); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *testCluster) stop() {
	for _, n := range c.nodes {
		if n.Running() {
			n.Kill()
		}
	}
	c.net.close()
}

// others are the API addresses of every node but n, to join through.
func (c *testCluster) others(n *testcluster.Proc) []string {
	var out []string
	for _, o := range c.nodes {
		if o != n {
			out = append(out, o.HTTPAddr)
		}
	}
	return out
}

func (c *testCluster) node(id string) *testcluster.Proc { return c.nodes.Named(id) }

func (c *testCluster) ids() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.ID)
	}
	return out
}

// leader returns the current leader, waiting for one.
func (c *testCluster) leader(ctx context.Context) (*testcluster.Proc, error) {
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.nodes.Leader(wctx)
}

func (c *testCluster) followers(leader *testcluster.Proc) testcluster.Procs {
	return c.nodes.Except(leader)
}

// heal undoes every fault: links restored, paused nodes resumed, stopped
// nodes restarted.
func (c *testCluster) heal() error {
	c.net.heal()
	for _, n := range c.nodes {
		if n.Paused() {
			n.Resume()
		}
		if !n.Running() {
			if err := n.Start(c.others(n)); err != nil {
				return err
			}
		}
	}
	return nil
}

// recovered waits until every node is healthy and has applied what the
// leader had committed when the wait began.
func (c *testCluster) recovered(ctx context.Context) error {
	wctx, cancel := context.WithTimeout(ctx, c.cfg.RecoveryTimeout)
	defer cancel()
	st, err := c.nodes.WaitHealthy(wctx, len(c.nodes))
	if err != nil {
		return err
	}
	leader := c.node(st.Leader)
	self, err := leader.Client().Self(wctx)
	if err != nil {
		return err
	}
	for _, n := range c.nodes {
		err := testcluster.Poll(wctx, func() error {
			s, err := n.Client().Self(wctx)
			if err != nil {
				return err
			}
			return testcluster.Check(s.AppliedIndex >= self.CommitIndex, "applied %d", s.AppliedIndex)
		})
		if err != nil {
			return fmt.Errorf("%s did not catch up to index %d: %v", n.ID, self.CommitIndex, err)
		}
	}
	return nil
}

// nemesis runs one fault: inject, hold, heal. It returns once the fault
// is healed (not necessarily recovered from).
func (c *testCluster) nemesis(ctx context.Context, start time.Time, kind string) error {
	leader, err := c.leader(ctx)
	if err != nil {
		return err
	}
	hold := func() {
		select {
		case <-ctx.Done():
		case <-time.After(c.cfg.Hold):
		}
	}
	pick := func(ns testcluster.Procs) *testcluster.Proc { return ns[c.rng.Intn(len(ns))] }
	switch kind {
	case "kill-leader", "kill-follower":
		victim := leader
		if kind == "kill-follower" {
			victim = pick(c.followers(leader))
		}
		c.event(start, kind, "SIGKILL %s", victim.ID)
		victim.Kill()
		hold()
		c.event(start, kind, "restart %s", victim.ID)
		return victim.Start(c.others(victim))
	case "pause":
		victim := leader
		if c.rng.Intn(2) == 0 {
			victim = pick(c.followers(leader))
		}
		c.event(start, kind, "SIGSTOP %s (leader %s)", victim.ID, leader.ID)
		victim.Pause()
		hold()
		c.event(start, kind, "SIGCONT %s", victim.ID)
		return victim.Resume()
	case "partition-minority":
		// A minority, with the leader in it half of the time.
		ids := c.ids()
		c.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		minority := ids[:(len(ids)-1)/2]
		if c.rng.Intn(2) == 0 && !contains(minority, leader.ID) {
			minority[0] = leader.ID
		}
		var majority []string
		for _, id := range c.ids() {
			if !contains(minority, id) {
				majority = append(majority, id)
			}
		}
		c.event(start, kind, "%v | %v (leader %s)", minority, majority, leader.ID)
		c.net.partition(minority, majority)
		hold()
		c.event(start, kind, "heal")
		c.net.heal()
	case "partition-region":
		// The leader's region (the leader alone without Regions) cut off
		// from the others.
		region, rest := []string{leader.ID}, []string{}
		for i, n := range c.nodes {
			switch {
			case n == leader:
			case c.cfg.Regions != nil && c.cfg.Regions[i] == c.region(leader):
				region = append(region, n.ID)
			default:
				rest = append(rest, n.ID)
			}
		}
		c.event(start, kind, "region %s %v | %v (leader %s)", c.region(leader), region, rest, leader.ID)
		c.net.partition(region, rest)
		hold()
		c.event(start, kind, "heal")
		c.net.heal()
	case "partition-bridge":
		// Two sides that cannot talk, and a bridge node talking to both.
		ids := c.ids()
		c.rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		bridge, rest := ids[0], ids[1:]
		left, right := rest[:len(rest)/2], rest[len(rest)/2:]
		c.event(start, kind, "%v | bridge %s | %v (leader %s)", left, bridge, right, leader.ID)
		c.net.partition(left, right)
		hold()
		c.event(start, kind, "heal")
		c.net.heal()
	case "wipe-rejoin":
		victim := pick(c.followers(leader))
		c.event(start, kind, "SIGKILL %s, wipe its data dir", victim.ID)
		victim.Kill()
		if err := victim.Wipe(); err != nil {
			return err
		}
		hold()
		c.event(start, kind, "restart %s empty, joining", victim.ID)
		return victim.Start(c.others(victim))
	case "transfer-leadership":
		// SIGTERM: the leader drains, hands leadership over and stops;
		// it is started again at once.
		c.event(start, kind, "SIGTERM leader %s", leader.ID)
		if err := leader.Stop(30 * time.Second); err != nil {
			c.event(start, kind, "%v", err)
		}
		if st, err := c.nodes.Status(ctx); err == nil {
			c.event(start, kind, "leader now %s; restart %s", st.Leader, leader.ID)
		}
		return leader.Start(c.others(leader))
	default:
		return fmt.Errorf("unknown nemesis %q", kind)
	}
	return nil
}

// region is n's region ("" without Regions).
func (c *testCluster) region(n *testcluster.Proc) string {
	for i, o := range c.nodes {
		if o == n && c.cfg.Regions != nil {
			return c.cfg.Regions[i]
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// setupGroups creates the workload's providers through the API.
func (c *testCluster) setupGroups(ctx context.Context, w *workload, count int) ([]group, error) {
	groups := make([]group, count)
	work := make(chan int)
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for k := 0; k < 8; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				g := group{id: i}
				for j := range g.providers {
					g.providers[j] = uuid.NewString()
					// Spread set-up over the nodes by index: c.rng is the
					// nemesis's and not safe for these goroutines.
					n := c.nodes[(i+j)%len(c.nodes)]
					if err := c.createProvider(ctx, w, n, fmt.Sprintf("faults-g%d-%c", i, 'a'+j), g.providers[j]); err != nil {
						errs <- err
						return
					}
				}
				for j := range g.consumers {
					g.consumers[j] = uuid.NewString()
				}
				groups[i] = g
			}
		}()
	}
	var err error
feed:
	for i := 0; i < count; i++ {
		select {
		case work <- i:
		case err = <-errs:
			break feed
		}
	}
	close(work)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return groups, err
}

func (c *testCluster) createProvider(ctx context.Context, w *workload, n *testcluster.Proc, name, id string) error {
	// Set-up comes before any fault, but on a loaded machine an election
	// can still answer a write 503 (its outcome unknown): it is tried
	// again until done. The name and id are this run's own, so a conflict
	// means an earlier try took effect (checked for the inventory).
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inventories := "/resource_providers/" + id + "/inventories"
	inv := map[string]any{
		"resource_provider_generation": 0,
		"inventories": map[string]any{
			"VCPU":      map[string]any{"total": vcpuCapacity, "max_unit": vcpuCapacity},
			"MEMORY_MB": map[string]any{"total": memoryCapacity, "max_unit": memoryCapacity},
		},
	}
	return testcluster.Poll(ctx, func() error {
		code, body, err := w.request(ctx, n, "POST", "/resource_providers", map[string]any{"name": name, "uuid": id})
		if err != nil || (code != 200 && code != 409) {
			return fmt.Errorf("creating provider %s: %d %s %v", name, code, body, err)
		}
		code, body, err = w.request(ctx, n, "PUT", inventories, inv)
		if err == nil && code == 409 {
			var got struct {
				Inventories map[string]struct{ Total int } `json:"inventories"`
			}
			if code, body, err = w.request(ctx, n, "GET", inventories, nil); err == nil && code == 200 &&
				json.Unmarshal(body, &got) == nil && got.Inventories["VCPU"].Total == vcpuCapacity {
				return nil
			}
		}
		if err != nil || code != 200 {
			return fmt.Errorf("inventory of %s: %d %s %v", name, code, body, err)
		}
		return nil
	})
}

// crashes lists the nodes' exits nobody asked for.
func (c *testCluster) crashes() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.Crashes()...)
	}
	sort.Strings(out)
	return out
}

// logTails returns the end of every node's log, for failure reports.
func (c *testCluster) logTails(max int) string {
	var b strings.Builder
	for _, n := range c.nodes {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", n.ID, n.LogPath, n.LogTail(max))
	}
	return b.String()
}

func ensureDir(dir string) error { return os.MkdirAll(dir, 0o755) }
