package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/testcluster"
	"github.com/placementd/placementd/internal/wanlab"
)

type config struct {
	rtts       []rttSpec
	clientRTT  time.Duration // < 0: half the node RTT
	nodes      int
	requests   int
	failovers  int
	idle       time.Duration
	load       float64 // requests per second while idling (0: idle)
	serveFlags []string
	// serveFlagsB, when set, makes the failovers and region cuts of each
	// row alternate between serveFlags (A) and serveFlags plus these (B),
	// every node restarted with the other set in between: an A/B
	// comparison within one run.
	serveFlagsB []string
	// binB, when set, is the placementd binary of mode B (e.g. one built
	// from main): a before/after comparison within one run.
	binB string
	// settle is how long a trial waits after the nodes were restarted for
	// it (A/B), so that what a node sets up after a restart (connections
	// to its peers) is in place, as it is in a cluster that runs.
	settle  time.Duration
	timeout time.Duration
	dir     string
	// regions, when set, gives each node a region (and so the number of
	// nodes); nodes of one region are regionRTT apart, of two regions the
	// row's RTT. The leader is kept in the first one (--leader-regions),
	// and each row also cuts the leader's region off and heals it.
	regions    []string
	regionRTT  time.Duration
	regionCuts int
}

// rttSpec is one row: the node-to-node RTT and its jitter (±).
type rttSpec struct{ rtt, jitter time.Duration }

func (r rttSpec) String() string {
	s := strconv.FormatInt(r.rtt.Milliseconds(), 10)
	if r.jitter > 0 {
		s += " ± " + strconv.FormatInt(r.jitter.Milliseconds(), 10)
	}
	return s
}

func parseRTTs(s string) ([]rttSpec, error) {
	var out []rttSpec
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		rtt, jit, _ := strings.Cut(item, "/")
		r, err := strconv.Atoi(rtt)
		j := 0
		if err == nil && jit != "" {
			j, err = strconv.Atoi(jit)
		}
		if err != nil || r < 0 || j < 0 || j > r {
			return nil, fmt.Errorf("-rtts: %q is not MS or MS/JITTER_MS (jitter at most the RTT)", item)
		}
		out = append(out, rttSpec{time.Duration(r) * time.Millisecond, time.Duration(j) * time.Millisecond})
	}
	if len(out) == 0 {
		return nil, errors.New("-rtts: no RTT given")
	}
	return out, nil
}

func main() {
	var c config
	rtts := flag.String("rtts", "0,20,80,150,80/20", "node-to-node RTTs in ms, one table row each; MS/J adds ± J ms of jitter")
	clientRTT := flag.Int("client-rtt", -1, "client-to-node RTT in ms (-1: half the node RTT, as a client in one of the regions)")
	flag.IntVar(&c.nodes, "nodes", 3, "voters")
	flag.IntVar(&c.requests, "requests", 100, "requests per latency figure (sequential; the median is printed)")
	flag.IntVar(&c.failovers, "failovers", 3, "leader kills per row (the median and the worst are printed)")
	flag.DurationVar(&c.idle, "idle", time.Minute, "how long each row idles while elections are counted (0: skip)")
	flag.Float64Var(&c.load, "load", 0, "light load while elections are counted: this many requests per second (a write through the leader, then reads on each node in turn), 0: idle")
	serveFlags := flag.String("serve-flags", "", "extra flags for every `placementd serve`, e.g. the timing profile: --raft-timing-multiplier 0.5")
	serveFlagsB := flag.String("serve-flags-b", "", "when set, failovers and region cuts alternate between -serve-flags (A) and -serve-flags plus these (B), all nodes restarted in between, e.g. --raft-ordered-elections=false")
	flag.StringVar(&c.binB, "bin-b", "", "placementd binary for B (A is built from this tree): failovers and region cuts alternate between the two, e.g. a build of main for a before/after comparison")
	flag.DurationVar(&c.settle, "settle", 0, "with -serve-flags-b or -bin-b: wait this long after restarting the nodes before a trial")
	flag.DurationVar(&c.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	flag.StringVar(&c.dir, "dir", "", "where binaries, data dirs and node logs go (default: a temporary dir, removed at the end)")
	regions := flag.String("regions", "", "region of each node, e.g. a,a,b,b,c (sets -nodes): the row's RTT is then between regions, the leader is kept in the first region listed, and each row also cuts the leader's region off")
	flag.DurationVar(&c.regionRTT, "region-rtt", time.Millisecond, "RTT between nodes of one region (with -regions)")
	flag.IntVar(&c.regionCuts, "region-cuts", 1, "region cuts per row (with -regions; the median and the worst are printed)")
	flag.Parse()
	if c.regions = strings.Split(*regions, ","); *regions == "" {
		c.regions = nil
	} else {
		c.nodes = len(c.regions)
	}
	var err error
	if c.rtts, err = parseRTTs(*rtts); err != nil {
		fail(err)
	}
	c.clientRTT = time.Duration(*clientRTT) * time.Millisecond
	c.serveFlags = strings.Fields(*serveFlags)
	c.serveFlagsB = strings.Fields(*serveFlagsB)
	if c.nodes < 2 || c.requests < 1 || c.failovers < 0 {
		fail(errors.New("want -nodes ≥ 2, -requests ≥ 1, -failovers ≥ 0"))
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c, os.Stdout); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "wan-bench:", err)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

// bench is one run: the lab, the nodes, the client.
type bench struct {
	cfg    config
	lab    *wanlab.Lab
	nodes  testcluster.Procs
	args   [][]string   // each node's flags before the serve flags
	mode   int          // 0: the nodes run with -serve-flags (A), 1: plus -serve-flags-b, or -bin-b (B)
	bins   [2]string    // placementd binary of A and B
	client *http.Client // from the client host: every request pays its RTT
	ctl    *http.Client // from the control host: no delay, for status polls
	rpUUID string       // the provider the reads fetch
}

// row is one line of the table.
type row struct {
	spec                                    rttSpec
	clientRTT                               time.Duration
	writeLeader, writeFollower              time.Duration
	readLeader, readFollower, staleFollower time.Duration
	failovers                               [2][]time.Duration // by mode (A, B)
	terms                                   [2][]uint64        // elections (terms) each failover took
	elections                               int
	regionLoss, leaderBack                  [2][]time.Duration // with -regions, by mode
	load                                    [2]string          // load average at the row's start and end
	err                                     error
}

func run(ctx context.Context, cfg config, out io.Writer) error {
	if os.Geteuid() != 0 {
		return errors.New("the WAN lab needs root (network namespaces, iptables)")
	}
	dir := cfg.dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "wan-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	logf("building placementd and wan-delayer in %s", dir)
	bin, err := testcluster.Build(dir)
	if err != nil {
		return err
	}
	delayer, err := wanlab.BuildDelayer(dir)
	if err != nil {
		return err
	}
	lab, err := wanlab.New(delayer)
	if err != nil {
		return err
	}
	defer lab.Close()
	b := &bench{cfg: cfg, lab: lab, bins: [2]string{bin, bin}}
	if cfg.binB != "" {
		b.bins[1] = cfg.binB
	}
	if err := b.start(ctx, bin, dir); err != nil {
		return err
	}
	defer func() {
		for _, n := range b.nodes {
			if n.Running() {
				n.Kill()
			}
		}
	}()

	var rows []row
	for _, spec := range cfg.rtts {
		r := b.row(ctx, spec)
		rows = append(rows, r)
		if r.err != nil {
			logf("row %s: %v", spec, r.err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	if st, err := lab.Stats(); err == nil {
		logf("delayer: %d packets, %d delayed, %d dropped on cut links; released on average %d µs after due, at worst %d µs",
			st.Packets, st.Delayed, st.Dropped, st.MeanLate, st.MaxLate)
	}
	printTable(out, cfg, rows)
	return ctx.Err()
}

const secret = "wan-bench-secret"

// start creates the hosts and starts the cluster: n1 founds it, the
// others join.
func (b *bench) start(ctx context.Context, bin, dir string) error {
	ctl, err := b.lab.AddHost("ctl")
	if err != nil {
		return err
	}
	cl, err := b.lab.AddHost("client")
	if err != nil {
		return err
	}
	b.ctl, b.client = ctl.HTTPClient(), cl.HTTPClient()
	var join []string
	for i := 1; i <= b.cfg.nodes; i++ {
		id := fmt.Sprintf("n%d", i)
		h, err := b.lab.AddHost(id)
		if err != nil {
			return err
		}
		// Killed leaders come back with their data: membership stays.
		args := []string{"--leave-on-shutdown=false"}
		if b.cfg.regions != nil {
			args = append(args, "--region", b.cfg.regions[i-1], "--leader-regions", b.cfg.regions[0])
		}
		b.args = append(b.args, args)
		n := testcluster.LabNode(h, id, bin, dir, secret, b.ctl, append(args, b.cfg.serveFlags...)...)
		if err := n.Start(join); err != nil {
			return err
		}
		b.nodes = append(b.nodes, n)
		if i == 1 {
			join = []string{n.HTTPAddr}
			if _, err := b.waitHealthy(ctx, 1); err != nil {
				return fmt.Errorf("%w\n%s", err, n.LogTail(2000))
			}
		}
	}
	logf("starting %d nodes", b.cfg.nodes)
	st, err := b.waitHealthy(ctx, b.cfg.nodes)
	if err != nil {
		return err
	}
	b.rpUUID = uuid.NewString()
	resp, err := b.do(ctx, b.ctl, b.addr(st.Leader), http.MethodPost, "/resource_providers",
		map[string]string{"uuid": b.rpUUID, "name": "wan-bench-reads"}, nil)
	if err != nil || resp != http.StatusOK {
		return fmt.Errorf("creating the provider the reads fetch: %d %v", resp, err)
	}
	return nil
}

func (b *bench) waitHealthy(ctx context.Context, n int) (front.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	return b.nodes[:n].WaitHealthy(ctx, n)
}

func (b *bench) addr(id string) string {
	for _, n := range b.nodes {
		if n.ID == id {
			return n.HTTPAddr
		}
	}
	return ""
}

// setRTT gives every pair of nodes spec and the client its RTT to each.
func (b *bench) setRTT(spec rttSpec) (client rttSpec, err error) {
	client = rttSpec{spec.rtt / 2, spec.jitter / 2}
	if b.cfg.clientRTT >= 0 {
		client = rttSpec{b.cfg.clientRTT, 0}
	}
	for i, a := range b.nodes {
		for j, c := range b.nodes[i+1:] {
			rtt, jitter := spec.rtt, spec.jitter
			if b.cfg.regions != nil && b.cfg.regions[i] == b.cfg.regions[i+1+j] {
				rtt, jitter = b.cfg.regionRTT, 0
			}
			if err := b.lab.SetRTT(a.ID, c.ID, rtt, jitter); err != nil {
				return client, err
			}
		}
		if err := b.lab.SetRTT("client", a.ID, client.rtt, client.jitter); err != nil {
			return client, err
		}
	}
	return client, nil
}

func (b *bench) row(ctx context.Context, spec rttSpec) (r row) {
	r.spec = spec
	client, err := b.setRTT(spec)
	if err != nil {
		r.err = err
		return r
	}
	r.clientRTT = client.rtt
	r.load[0] = loadAverage()
	logf("node RTT %s ms, client RTT %d ms, load average %s", spec, client.rtt.Milliseconds(), r.load[0])
	st, err := b.waitHealthy(ctx, b.cfg.nodes)
	if err != nil {
		r.err = err
		return r
	}
	leader, follower := b.addr(st.Leader), ""
	for _, n := range b.nodes {
		if n.ID != st.Leader {
			follower = n.HTTPAddr
			break
		}
	}
	read := "/resource_providers/" + b.rpUUID
	stale := http.Header{front.StaleReadHeader: {"true"}}
	for _, f := range []struct {
		dst         *time.Duration
		addr, write string
		hdr         http.Header
	}{
		{&r.writeLeader, leader, "w", nil}, {&r.writeFollower, follower, "w", nil},
		{&r.readLeader, leader, read, nil}, {&r.readFollower, follower, read, nil},
		{&r.staleFollower, follower, read, stale},
	} {
		if *f.dst, err = b.median(ctx, f.addr, f.write, f.hdr); err != nil {
			r.err = err
			return r
		}
	}
	logf("  writes %v / %v, reads %v / %v, stale %v (leader / follower, p50)", r.writeLeader, r.writeFollower, r.readLeader, r.readFollower, r.staleFollower)
	if b.cfg.idle > 0 {
		if r.elections, err = b.idleElections(ctx); err != nil {
			r.err = err
			return r
		}
		logf("  %d elections in %s idle", r.elections, b.cfg.idle)
	}
	for i := range b.cfg.regionCuts {
		if b.cfg.regions == nil {
			break
		}
		m := b.alternate(i)
		if err := b.setMode(ctx, m); err != nil {
			r.err = err
			return r
		}
		loss, back, err := b.regionLoss(ctx)
		if err != nil {
			r.err = err
			return r
		}
		r.regionLoss[m], r.leaderBack[m] = append(r.regionLoss[m], loss), append(r.leaderBack[m], back)
		logf("  %sleader's region cut off: writes again after %v; healed: leader back in %s after %v", b.modeName(m), loss, b.cfg.regions[0], back)
	}
	for i := range b.cfg.failovers {
		m := b.alternate(i)
		if err := b.setMode(ctx, m); err != nil {
			r.err = err
			return r
		}
		d, terms, err := b.failover(ctx)
		if err != nil {
			r.err = err
			return r
		}
		r.failovers[m], r.terms[m] = append(r.failovers[m], d), append(r.terms[m], terms)
		logf("  %sfailover %v (%d elections)", b.modeName(m), d, terms)
	}
	r.load[1] = loadAverage()
	return r
}

// alternate is the mode of a row's i-th trial: A, B, A, B... with
// -serve-flags-b, else A.
func (b *bench) alternate(i int) int {
	if !b.ab() {
		return 0
	}
	return i % 2
}

// ab says whether trials alternate between A and B.
func (b *bench) ab() bool { return len(b.cfg.serveFlagsB) > 0 || b.cfg.binB != "" }

func (b *bench) modeName(m int) string {
	if !b.ab() {
		return ""
	}
	return [2]string{"A: ", "B: "}[m]
}

// setMode restarts every node, one at a time, with the binary and flags of
// mode m, and waits cfg.settle.
func (b *bench) setMode(ctx context.Context, m int) error {
	if m == b.mode {
		return nil
	}
	logf("  restarting the nodes with the flags of %s", strings.TrimSuffix(b.modeName(m), ": "))
	for i, n := range b.nodes {
		if err := n.Stop(30 * time.Second); err != nil {
			return fmt.Errorf("stopping %s: %w", n.ID, err)
		}
		n.Args = append(append(append([]string{}, b.args[i]...), b.cfg.serveFlags...), b.cfg.serveFlagsB[:len(b.cfg.serveFlagsB)*m]...)
		n.Bin = b.bins[m]
		if err := n.Start(nil); err != nil {
			return err
		}
		if _, err := b.waitHealthy(ctx, len(b.nodes)); err != nil {
			return err
		}
	}
	b.mode = m
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(b.cfg.settle):
	}
	return nil
}

// loadAverage is the host's 1, 5 and 15 minute load averages.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// median times cfg.requests sequential requests to addr after a few
// unmeasured ones (connections warm): path "w" is a write (a new
// provider), any other path a GET.
func (b *bench) median(ctx context.Context, addr, path string, hdr http.Header) (time.Duration, error) {
	var ds []time.Duration
	retries := 0
	for i := -3; i < b.cfg.requests; i++ {
		method, p, body, want := http.MethodGet, path, any(nil), http.StatusOK
		if path == "w" {
			u := uuid.NewString()
			method, p, body = http.MethodPost, "/resource_providers", map[string]string{"uuid": u, "name": "wan-" + u}
		}
		start := time.Now()
		code, err := b.do(ctx, b.client, addr, method, p, body, hdr)
		if err == nil && code == http.StatusServiceUnavailable && retries < 5 {
			// A leader change under way (on a loaded machine a leader can
			// miss its lease): retried as a client would, not timed.
			retries++
			logf("  %s %s on %s: 503, retried (%d so far)", method, p, addr, retries)
			i--
			continue
		}
		if err != nil || code != want {
			return 0, fmt.Errorf("%s %s on %s: %d %v", method, p, addr, code, err)
		}
		if i >= 0 {
			ds = append(ds, time.Since(start))
		}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2], nil
}

// idleElections counts the terms that passed while the cluster idled:
// each election, won or not, starts a term (pre-votes that fail do not).
func (b *bench) idleElections(ctx context.Context) (int, error) {
	before, err := b.maxTerm(ctx)
	if err != nil {
		return 0, err
	}
	done := make(chan struct{})
	stopLoad := make(chan struct{})
	go func() { defer close(done); b.lightLoad(ctx, stopLoad) }()
	select {
	case <-ctx.Done():
	case <-time.After(b.cfg.idle):
	}
	close(stopLoad)
	<-done
	if ctx.Err() != nil {
		return 0, ctx.Err()
	}
	after, err := b.maxTerm(ctx)
	return int(after - before), err
}

// lightLoad sends cfg.load requests per second until stop: every fourth a
// write through the first node, the others reads of the provider on each
// node in turn (linearizable: a follower's goes through a read index).
// Failures are counted and logged at the end, not fatal: the figure is
// the elections.
func (b *bench) lightLoad(ctx context.Context, stop <-chan struct{}) {
	if b.cfg.load <= 0 {
		return
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / b.cfg.load))
	defer tick.Stop()
	var sent, failed int
	var worst time.Duration
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-stop:
			logf("  light load: %d requests (%.1f/s), %d failed, slowest %v", sent, b.cfg.load, failed, worst)
			return
		case <-tick.C:
		}
		n := b.nodes[i%len(b.nodes)]
		method, path, body := http.MethodGet, "/resource_providers/"+b.rpUUID, any(nil)
		if i%4 == 0 {
			u := uuid.NewString()
			method, path, body = http.MethodPost, "/resource_providers", map[string]string{"uuid": u, "name": "wan-" + u}
		}
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		start := time.Now()
		code, err := b.do(rctx, b.client, n.HTTPAddr, method, path, body, nil)
		cancel()
		sent++
		worst = max(worst, time.Since(start))
		if err != nil || code != http.StatusOK {
			failed++
		}
	}
}

func (b *bench) maxTerm(ctx context.Context) (uint64, error) {
	st, err := b.waitHealthy(ctx, b.cfg.nodes)
	if err != nil {
		return 0, err
	}
	var term uint64
	for _, m := range st.Members {
		if m.Status != nil {
			term = max(term, m.Status.Term)
		}
	}
	return term, nil
}

// failover kills the leader and times the first write a surviving node
// accepts after it; then the old leader restarts and the cluster heals.
func (b *bench) failover(ctx context.Context) (time.Duration, uint64, error) {
	before, err := b.maxTerm(ctx)
	if err != nil {
		return 0, 0, err
	}
	st, err := b.waitHealthy(ctx, b.cfg.nodes)
	if err != nil {
		return 0, 0, err
	}
	var dead, via *testcluster.Proc
	for _, n := range b.nodes {
		if n.ID == st.Leader {
			dead = n
		} else if via == nil {
			via = n
		}
	}
	logf("  killing the leader %s, writing through %s", dead.ID, via.ID)
	start := time.Now()
	if err := dead.Kill(); err != nil {
		return 0, 0, err
	}
	var took time.Duration
	for {
		if ctx.Err() != nil {
			return 0, 0, ctx.Err()
		}
		u := uuid.NewString()
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		code, err := b.do(rctx, b.client, via.HTTPAddr, http.MethodPost, "/resource_providers", map[string]string{"uuid": u, "name": "wan-" + u}, nil)
		cancel()
		if err == nil && code == http.StatusOK {
			took = time.Since(start)
			break
		}
		if time.Since(start) > 2*time.Minute {
			return 0, 0, fmt.Errorf("no write accepted within 2 minutes of the leader's kill: %d %v", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The elections the failover took, counted on the survivors before
	// the old leader comes back (its restart may move leadership again).
	var after uint64
	for _, n := range b.nodes {
		if n == dead {
			continue
		}
		if s, err := n.Client().Self(ctx); err == nil {
			after = max(after, s.Term)
		}
	}
	if err := dead.Start(nil); err != nil {
		return 0, 0, err
	}
	_, err = b.waitHealthy(ctx, b.cfg.nodes)
	return took, after - before, err
}

// regionLoss waits for the leader to be in the preferred region, cuts that
// region off from the other nodes and the client, and times the first
// write a node elsewhere accepts; then it heals the cut and times the
// leader's return to the preferred region.
func (b *bench) regionLoss(ctx context.Context) (loss, back time.Duration, err error) {
	preferred := b.cfg.regions[0]
	st, err := b.waitLeaderIn(ctx, preferred, 2*time.Minute)
	if err != nil {
		return 0, 0, err
	}
	var cut, rest []string
	var via *testcluster.Proc
	for i, n := range b.nodes {
		if b.cfg.regions[i] == preferred {
			cut = append(cut, n.ID)
		} else {
			rest = append(rest, n.ID)
			if via == nil {
				via = n
			}
		}
	}
	if via == nil {
		return 0, 0, errors.New("-regions: every node is in the preferred region")
	}
	logf("  cutting off %s (%s, leader %s), writing through %s", preferred, strings.Join(cut, ","), st.Leader, via.ID)
	start := time.Now()
	if err := b.lab.Partition(cut, append(rest, "client")); err != nil {
		return 0, 0, err
	}
	var attempts []string
	for {
		u := uuid.NewString()
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		sent := time.Since(start)
		code, err := b.do(rctx, b.client, via.HTTPAddr, http.MethodPost, "/resource_providers", map[string]string{"uuid": u, "name": "wan-" + u}, nil)
		cancel()
		attempts = append(attempts, fmt.Sprintf("%.3f→%.3f %d", sent.Seconds(), time.Since(start).Seconds(), code))
		if err == nil && code == http.StatusOK {
			loss = time.Since(start)
			logf("  writes after the cut (sent→answered s, status): %s", strings.Join(attempts, ", "))
			logf("  region cut breakdown: %s", b.cutBreakdown(rest, start, loss))
			break
		}
		if ctx.Err() != nil || time.Since(start) > 2*time.Minute {
			b.lab.Heal()
			return 0, 0, fmt.Errorf("no write accepted within 2 minutes of the region cut: %d %v", code, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	start = time.Now()
	if err := b.lab.Heal(); err != nil {
		return loss, 0, err
	}
	if _, err := b.waitLeaderIn(ctx, preferred, 2*time.Minute); err != nil {
		return loss, 0, err
	}
	return loss, time.Since(start), nil
}

// cutBreakdown splits the time from a region cut to the first write
// accepted after it, from the survivors' own logs (one host, one clock):
// detection (the first survivor campaigns), election (a survivor enters
// the leader state) and the rest (the new leader's first write: the
// client's retry pace, forwarding and the commit across regions).
func (b *bench) cutBreakdown(survivors []string, start time.Time, write time.Duration) string {
	var campaign, elected time.Time
	for _, id := range survivors {
		n := b.nodes.Named(id)
		if n == nil {
			continue
		}
		c, l := raftEvents(n.LogTail(4<<20), start)
		if !c.IsZero() && (campaign.IsZero() || c.Before(campaign)) {
			campaign = c
		}
		if !l.IsZero() && (elected.IsZero() || l.Before(elected)) {
			elected = l
		}
	}
	if campaign.IsZero() || elected.IsZero() {
		return "no campaign or election found in the survivors' logs (nodes need --log-level info)"
	}
	return fmt.Sprintf("first campaign %v, leader elected %v, first write %v (%v after the election)",
		campaign.Sub(start).Round(time.Millisecond), elected.Sub(start).Round(time.Millisecond),
		write.Round(time.Millisecond), (write - elected.Sub(start)).Round(time.Millisecond))
}

// raftEvents finds, in a node's text log, the first time after since it
// entered the candidate state and the first it entered the leader state
// (raft logs the latter at info: run the nodes with --log-level info).
func raftEvents(log string, since time.Time) (candidate, leader time.Time) {
	for _, line := range strings.Split(log, "\n") {
		isCandidate := strings.Contains(line, "entering candidate state") || strings.Contains(line, "starting election")
		isLeader := strings.Contains(line, "entering leader state")
		if !isCandidate && !isLeader {
			continue
		}
		ts, ok := strings.CutPrefix(line, "time=")
		if !ok {
			continue
		}
		ts, _, _ = strings.Cut(ts, " ")
		at, err := time.Parse(time.RFC3339Nano, ts)
		if err != nil || at.Before(since) {
			continue
		}
		if isCandidate && candidate.IsZero() {
			candidate = at
		}
		if isLeader && leader.IsZero() {
			leader = at
		}
	}
	return candidate, leader
}

// waitLeaderIn waits until the leader is a node of region, says so itself,
// and every member follows it: a node cut off with the old leader can
// name it for a while after it stepped down, and a cut begun then would
// not cut the leader off.
func (b *bench) waitLeaderIn(ctx context.Context, region string, limit time.Duration) (front.ClusterStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	for {
		st, err := b.nodes.Status(ctx)
		if err == nil && leadsIn(st, region) {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("the leader did not come to region %s: %v", region, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// leadsIn reports whether the leader of st is in region, in the leader
// state, and followed by every member.
func leadsIn(st front.ClusterStatus, region string) bool {
	in := false
	for _, m := range st.Members {
		if !m.Healthy {
			return false
		}
		if m.ID == st.Leader {
			in = m.Region == region && m.Status.State == "Leader"
		}
	}
	return in
}

// do sends one Placement API request as admin and drains the answer.
func (b *bench) do(ctx context.Context, hc *http.Client, addr, method, path string, body any, hdr http.Header) (int, error) {
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://"+addr+path, rd)
	if err != nil {
		return 0, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
}

func printTable(w io.Writer, cfg config, rows []row) {
	fmt.Fprintf(w, "\n%d voters, %d requests per figure (p50, ms), %d failovers per row (median / worst), elections counted over %s idle",
		cfg.nodes, cfg.requests, cfg.failovers, cfg.idle)
	if cfg.load > 0 {
		fmt.Fprintf(w, " under light load (%.1f requests/s)", cfg.load)
	}
	if cfg.regions != nil {
		fmt.Fprintf(w, "; regions %s (%s apart within one), leader kept in %s", strings.Join(cfg.regions, ","), cfg.regionRTT, cfg.regions[0])
	}
	if len(cfg.serveFlags) > 0 {
		fmt.Fprintf(w, "; serve flags: %s", strings.Join(cfg.serveFlags, " "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
	regionCols, regionSep := "", ""
	if cfg.regions != nil {
		regionCols, regionSep = "\t| leader's region cut → write ok\t| healed → leader back", "\t| ---\t| ---"
	}
	fmt.Fprintln(tw, "| node RTT\t| client RTT\t| write via leader\t| write via follower\t| read on leader\t| read on follower\t| stale read on follower\t| failover (kill leader → write ok)\t| elections"+regionCols+"\t|")
	fmt.Fprintln(tw, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---"+regionSep+"\t|")
	for _, r := range rows {
		if r.err != nil && r.staleFollower == 0 {
			fmt.Fprintf(tw, "| %s\t| %s\t| error: %v\t|\t|\t|\t|\t|\t|\t|\n", r.spec, ms(r.clientRTT), r.err)
			continue
		}
		fo := medianWorst(r.failovers[0])
		el := "-"
		if cfg.idle > 0 {
			el = strconv.Itoa(r.elections)
		}
		region := ""
		if cfg.regions != nil {
			region = fmt.Sprintf("\t| %s\t| %s", medianWorst(r.regionLoss[0]), medianWorst(r.leaderBack[0]))
		}
		fmt.Fprintf(tw, "| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s\t| %s%s\t|\n", r.spec, ms(r.clientRTT),
			ms(r.writeLeader), ms(r.writeFollower), ms(r.readLeader), ms(r.readFollower), ms(r.staleFollower), fo, el, region)
		if r.err != nil {
			fmt.Fprintf(tw, "| \t| error after the figures: %v\t|\t|\t|\t|\t|\t|\t|\t|\n", r.err)
		}
	}
	tw.Flush()
	if len(cfg.serveFlagsB) > 0 || cfg.binB != "" {
		var bdesc []string
		if cfg.binB != "" {
			bdesc = append(bdesc, "the binary "+cfg.binB)
		}
		if len(cfg.serveFlagsB) > 0 {
			bdesc = append(bdesc, "the flags above plus "+strings.Join(cfg.serveFlagsB, " "))
		}
		fmt.Fprintf(w, "\nA/B, alternating within each row (all nodes restarted in between, then %s settling): A = the flags above, B = %s\n\n", cfg.settle, strings.Join(bdesc, ", "))
		tw = tabwriter.NewWriter(w, 0, 4, 1, ' ', 0)
		fmt.Fprintln(tw, "| node RTT\t| load average (start, end)\t| failover A (median / worst, n)\t| failover B\t| elections per failover A\t| B\t| region cut → write ok A\t| B\t|")
		fmt.Fprintln(tw, "| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t| ---\t|")
		for _, r := range rows {
			fmt.Fprintf(tw, "| %s\t| %s; %s\t| %s (%d)\t| %s (%d)\t| %s\t| %s\t| %s\t| %s\t|\n", r.spec, r.load[0], r.load[1],
				medianWorst(r.failovers[0]), len(r.failovers[0]), medianWorst(r.failovers[1]), len(r.failovers[1]),
				countTerms(r.terms[0]), countTerms(r.terms[1]), medianWorst(r.regionLoss[0]), medianWorst(r.regionLoss[1]))
		}
		tw.Flush()
	}
}

// medianWorst prints the median and the largest of ds, "-" for none.
func medianWorst(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return fmt.Sprintf("%.2f s / %.2f s", s[len(s)/2].Seconds(), s[len(s)-1].Seconds())
}

// countTerms prints how many failovers took 1, 2, ... elections: "1×18 2×2".
func countTerms(terms []uint64) string {
	if len(terms) == 0 {
		return "-"
	}
	count := map[uint64]int{}
	var keys []uint64
	for _, t := range terms {
		if count[t] == 0 {
			keys = append(keys, t)
		}
		count[t]++
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d×%d", k, count[k]))
	}
	return strings.Join(parts, " ")
}
