package testcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/wanlab"
)

// ProcTimeout bounds the waits of a ProcCluster: processes start, elect
// and join over TCP, slower than in-process nodes on a loaded machine.
const ProcTimeout = 60 * time.Second

// builds are the binaries of a test process that ran Main, by build tags:
// each is built once and shared by the process's tests.
var builds struct {
	sync.Mutex
	dir  string // made by Main ("": every Binary builds anew)
	bins map[string]string
}

// Main runs a package's tests (call it from TestMain) so that Binary builds
// cmd/placementd once per set of build tags for all of them, into a
// directory removed when they end.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "placementd-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	builds.dir, builds.bins = dir, map[string]string{}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// Binary returns cmd/placementd built with the given build tags: the one
// build of the test process if the package runs Main, else a new build
// in a directory of the test.
func Binary(t testing.TB, tags ...string) string {
	t.Helper()
	builds.Lock()
	defer builds.Unlock()
	key := strings.Join(tags, ",")
	if bin, ok := builds.bins[key]; ok {
		return bin
	}
	dir := t.TempDir()
	if builds.dir != "" {
		dir = filepath.Join(builds.dir, fmt.Sprintf("%d", len(builds.bins)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := Build(dir, tags...)
	if err != nil {
		t.Fatal(err)
	}
	if builds.dir != "" {
		builds.bins[key] = bin
	}
	return bin
}

// ProcCluster is placementd processes on loopback for one test: the
// multi-process counterpart of Cluster, with the same verbs (Start,
// Leader, Followers, Converged, Stop, Restart, plus Kill) failing the test
// instead of returning errors. Nodes still running when the test ends are
// killed, and the logs of every node are shown if it failed.
type ProcCluster struct {
	t     testing.TB
	bin   string
	dir   string
	Nodes Procs
	// Secret is the cluster secret of nodes made next ("" for none).
	Secret string
	// Args are extra `placementd serve` flags of nodes made next.
	Args []string
}

// NewProcs returns an empty process cluster of binary bin whose nodes share
// the cluster secret Secret.
func NewProcs(t testing.TB, bin string) *ProcCluster {
	c := &ProcCluster{t: t, bin: bin, dir: t.TempDir(), Secret: Secret}
	t.Cleanup(func() {
		for _, n := range c.Nodes {
			if n.Running() {
				n.Kill()
			}
			if t.Failed() {
				t.Logf("--- log of %s:\n%s", n.ID, n.LogTail(1<<20))
			}
		}
	})
	return c
}

// StartProcs starts n processes of bin: n1 a new cluster, the others
// joining it, with extra serve flags args; it waits until all are healthy.
func StartProcs(t testing.TB, bin string, n int, args ...string) *ProcCluster {
	t.Helper()
	c := NewProcs(t, bin)
	c.Args = args
	for i := 1; i <= n; i++ {
		c.Grow(c.Add(fmt.Sprintf("n%d", i)))
	}
	c.Healthy(n)
	return c
}

// Add makes a node (not started) with free loopback addresses, its data
// dir and log in the cluster's dir.
func (c *ProcCluster) Add(id string) *Proc {
	c.t.Helper()
	httpAddr, err1 := FreeAddr("127.0.0.1")
	raftAddr, err2 := FreeAddr("127.0.0.1")
	if err1 != nil || err2 != nil {
		c.t.Fatal(err1, err2)
	}
	n := &Proc{ID: id, Bin: c.bin, HTTPAddr: httpAddr, RaftAddr: raftAddr, DataDir: filepath.Join(c.dir, id),
		Secret: c.Secret, LogPath: filepath.Join(c.dir, id+".log"), Args: c.Args}
	c.Nodes = append(c.Nodes, n)
	return n
}

// Start runs n, joining the cluster through the API addresses join if
// any (without, a fresh data dir starts a new cluster).
func (c *ProcCluster) Start(n *Proc, join ...string) {
	c.t.Helper()
	if err := n.Start(join); err != nil {
		c.t.Fatal(err)
	}
}

// Grow starts n as a member: the cluster's first node starts a new
// cluster, any other joins it through the first.
func (c *ProcCluster) Grow(n *Proc) {
	c.t.Helper()
	if n == c.Nodes[0] {
		c.Start(n)
	} else {
		c.Start(n, c.Nodes[0].HTTPAddr)
	}
}

// Restart starts n again on its data dir (it must not be running).
func (c *ProcCluster) Restart(n *Proc) { c.t.Helper(); c.Start(n) }

// Kill sends n SIGKILL and waits until it is gone.
func (c *ProcCluster) Kill(n *Proc) {
	c.t.Helper()
	if err := n.Kill(); err != nil {
		c.t.Fatal(err)
	}
}

// Stop stops n gracefully (SIGTERM), failing the test if it does not
// exit within ProcTimeout.
func (c *ProcCluster) Stop(n *Proc) {
	c.t.Helper()
	if err := n.Stop(ProcTimeout); err != nil {
		c.t.Fatal(err)
	}
}

// Running returns the nodes whose process is up.
func (c *ProcCluster) Running() Procs {
	var out Procs
	for _, n := range c.Nodes {
		if n.Running() {
			out = append(out, n)
		}
	}
	return out
}

// must runs one of Procs' waits for up to ProcTimeout and fails the test
// if it fails. A node that exits by itself during the wait (a port taken,
// a refused flag) ends it at once, with that node's exit and log.
func must[T any](c *ProcCluster, wait func(context.Context) (T, error)) T {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ProcTimeout)
	defer cancel()
	ctx, crashed := context.WithCancelCause(ctx)
	defer crashed(nil)
	go c.watchCrashes(ctx, crashed)
	v, err := wait(ctx)
	if cause := context.Cause(ctx); err != nil && cause != nil && cause != ctx.Err() {
		err = fmt.Errorf("gave up waiting: %v", cause)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return v
}

// watchCrashes cancels ctx with the first crash of a node (an exit nobody
// asked for) that happens while ctx lasts.
func (c *ProcCluster) watchCrashes(ctx context.Context, crashed context.CancelCauseFunc) {
	before := map[*Proc]int{}
	for _, n := range c.Nodes {
		before[n] = len(n.Crashes())
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(50 * time.Millisecond):
		}
		for _, n := range c.Nodes {
			if crashes := n.Crashes(); len(crashes) > before[n] {
				crashed(fmt.Errorf("%s; its log ends:\n%s", crashes[len(crashes)-1], n.LogTail(2000)))
				return
			}
		}
	}
}

// Status waits until a running node that knows the leader answers the
// cluster status, and returns it.
func (c *ProcCluster) Status() front.ClusterStatus { c.t.Helper(); return must(c, c.Nodes.Status) }

// Healthy waits until the cluster reports want healthy members.
func (c *ProcCluster) Healthy(want int) front.ClusterStatus {
	c.t.Helper()
	return must(c, func(ctx context.Context) (front.ClusterStatus, error) { return c.Nodes.WaitHealthy(ctx, want) })
}

// Leader waits until the running nodes name a leader among them.
func (c *ProcCluster) Leader() *Proc { c.t.Helper(); return must(c, c.Nodes.Leader) }

// Followers returns the running nodes other than the leader.
func (c *ProcCluster) Followers() Procs {
	c.t.Helper()
	return c.Running().Except(c.Leader())
}

// Converged waits until every running node reports the same digest at
// the same state index, and returns it as digest@index.
func (c *ProcCluster) Converged() string { c.t.Helper(); return must(c, c.Running().Converged) }

// AddLab makes a node (not started) inside host h of a WAN lab, named as
// the host, its API reached with hc (see LabNode).
func (c *ProcCluster) AddLab(h *wanlab.Host, hc *http.Client) *Proc {
	n := LabNode(h, h.Name, c.bin, c.dir, c.Secret, hc, c.Args...)
	c.Nodes = append(c.Nodes, n)
	return n
}
