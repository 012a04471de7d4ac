package faults

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

var (
	soak = flag.Duration("faults.soak", 0,
		"run the soak: the workload under every nemesis for this long per cluster size (make fault-soak)")
	soakNodes = flag.String("faults.nodes", "3,5", "cluster sizes of the soak")
	soakDir   = flag.String("faults.dir", "", "where the soak keeps data dirs, logs and reports (default: a new dir under $TMPDIR)")

	wan        = flag.Duration("faults.wan", 0, "run the WAN check for this long: 5 voters over 3 regions with delayed Raft links (make wan-check)")
	wanRTT     = flag.Duration("faults.wan-rtt", 150*time.Millisecond, "RTT of the WAN check's Raft links")
	wanJitter  = flag.Duration("faults.wan-jitter", 30*time.Millisecond, "jitter (±) on the WAN check's RTT")
	wanRegions = flag.String("faults.wan-regions", "a,a,b,b,c", "region of each node of the WAN check; the leader is kept in the first")
	wanFlags   = flag.String("faults.wan-flags", "--raft-timing-multiplier 0.5 --raft-election-timeout 1s --raft-leader-lease-timeout 400ms",
		"serve flags of the WAN check's nodes: the timing profile for its RTT (docs/cluster.md)")
)

// The tests share one build of placementd per set of build tags, and
// those that run clusters run them in parallel (up to -parallel, GOMAXPROCS
// by default): each cluster has its own processes, ports, data dirs and
// Raft proxies.
func TestMain(m *testing.M) { testcluster.Main(m) }

// report logs a run's figures and fails the test on any finding.
func report(t *testing.T, reps []*Report) {
	t.Helper()
	t.Logf("\n%s", Table(reps))
	for _, r := range reps {
		kinds := map[string]bool{}
		for _, e := range r.Events {
			kinds[e.Kind] = true
		}
		t.Logf("%d nodes: outcomes %v, digest %s", r.Nodes, r.Counts, r.Digest)
		for i, v := range r.Violations {
			if i == 30 {
				t.Errorf("... %d more", len(r.Violations)-i)
				break
			}
			t.Errorf("%d nodes: %s", r.Nodes, v)
		}
		if r.Linearizable != "yes" {
			t.Errorf("%d nodes: linearizable: %s", r.Nodes, r.Linearizable)
		}
	}
}

// notRun lists the nemeses of kinds that rep's run did not use.
func notRun(rep *Report, kinds []string) []string {
	seen := map[string]bool{}
	for _, e := range rep.Events {
		seen[e.Kind] = true
	}
	var out []string
	for _, kind := range kinds {
		if !seen[kind] {
			out = append(out, kind)
		}
	}
	return out
}

// TestFaultsShort is the short run of the suite: a 3-node and a 5-node
// cluster (in parallel), each through every nemesis once, under the full
// checks.
func TestFaultsShort(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection: runs placementd clusters for a few minutes")
	}
	t.Parallel()
	bin := testcluster.Binary(t)
	for _, nodes := range []int{3, 5} {
		t.Run(fmt.Sprintf("%d nodes", nodes), func(t *testing.T) {
			t.Parallel()
			rep, err := Run(context.Background(), Config{
				Nodes: nodes, Bin: bin, Dir: t.TempDir(),
				Duration: 60 * time.Second, Hold: 3 * time.Second, Quiet: 500 * time.Millisecond,
				CheckTimeout: time.Minute, Logf: t.Logf,
			})
			if err != nil {
				t.Fatal(err)
			}
			for _, kind := range notRun(rep, AllNemeses) {
				t.Errorf("%d nodes: nemesis %s did not run", nodes, kind)
			}
			report(t, []*Report{rep})
		})
	}
}

// TestBrokenReadsCaught proves the harness can fail: built with the
// faults_broken_reads tag, every node answers reads from its own state
// without the read barrier (a follower may lag, a partitioned or paused
// node may be far behind). The checker must find the history not
// linearizable.
func TestBrokenReadsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection: runs a placementd cluster")
	}
	t.Parallel()
	bin := testcluster.Binary(t, "faults_broken_reads")
	rep, err := Run(context.Background(), Config{
		Nodes: 3, Bin: bin, Dir: t.TempDir(), Duration: 30 * time.Second,
		Nemeses: []string{"partition-minority", "pause", "kill-leader"}, Hold: 4 * time.Second,
		CheckTimeout: time.Minute, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", Table([]*Report{rep}))
	if rep.Linearizable != "no" {
		t.Fatalf("stale reads went unnoticed: linearizable %q, violations %v", rep.Linearizable, rep.Violations)
	}
}

// TestSoak is `make fault-soak`: every cluster size of -faults.nodes under the
// workload and all nemeses for -faults.soak each, then the summary table.
func TestSoak(t *testing.T) {
	if *soak == 0 {
		t.Skip("the soak runs with -faults.soak DURATION (make fault-soak)")
	}
	dir := *soakDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "placementd-soak-"+time.Now().Format("20060102-150405"))
	}
	bin, err := testcluster.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	var reps []*Report
	for _, s := range strings.Split(*soakNodes, ",") {
		nodes, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil {
			t.Fatalf("-faults.nodes: %v", err)
		}
		rep, err := Run(context.Background(), Config{
			Nodes: nodes, Bin: bin, Dir: filepath.Join(dir, fmt.Sprintf("n%d", nodes)), Duration: *soak,
			CheckTimeout: 30 * time.Minute, Logf: t.Logf,
		})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, rep)
		fmt.Printf("%d nodes done: %d operations, linearizable %s, %d violations\n",
			nodes, rep.Ops, rep.Linearizable, len(rep.Violations))
	}
	summary := Table(reps)
	os.WriteFile(filepath.Join(dir, "summary.txt"), []byte(summary), 0o644)
	fmt.Printf("\nsoak summary (logs and data in %s):\n%s", dir, summary)
	report(t, reps)
}

// TestWAN is `make wan-check`: the workload and the linearizability and
// invariant checks of the soak, on voters spread over regions whose Raft
// links are a WAN (-faults.wan-rtt ± -faults.wan-jitter, the nodes on the
// timing profile for it), under the WAN nemeses: the leader's region cut
// off, the leader killed, a minority cut off, a hand-over. With the
// leader kept in the first region, every heal also moves leadership back.
func TestWAN(t *testing.T) {
	if *wan == 0 {
		t.Skip("the WAN check runs with -faults.wan DURATION (make wan-check)")
	}
	dir := *soakDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "placementd-wan-check-"+time.Now().Format("20060102-150405"))
	}
	bin, err := testcluster.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Config{
		Bin: bin, Dir: filepath.Join(dir, "run"), Duration: *wan,
		Regions: strings.Split(*wanRegions, ","), ServeFlags: strings.Fields(*wanFlags),
		RaftOneWay: *wanRTT / 2, RaftJitter: *wanJitter / 2,
		Nemeses: WANNemeses, Hold: 5 * time.Second, Quiet: 2 * time.Second,
		CheckTimeout: 10 * time.Minute, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range notRun(rep, WANNemeses) {
		t.Errorf("nemesis %s did not run (a longer -faults.wan runs every one)", kind)
	}
	fmt.Printf("WAN check (%s ± %s Raft RTT, regions %s; logs and data in %s): %d operations, linearizable %s, %d violations\n",
		*wanRTT, *wanJitter, *wanRegions, dir, rep.Ops, rep.Linearizable, len(rep.Violations))
	report(t, []*Report{rep})
}
