package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
)

// Secret is the cluster secret of in-process clusters.
const Secret = "test-secret"

// Timeouts of the waits below: generous, since a loaded 2-core machine
// runs many tests at once; a healthy cluster meets them in milliseconds.
const (
	LeaderTimeout   = 10 * time.Second
	JoinTimeout     = 45 * time.Second // a join can wait for a snapshot install to the new node
	ConvergeTimeout = 15 * time.Second
)

// Cluster is a set of in-process nodes: real Raft over the in-memory
// transport, the real API behind the real cluster front, on loopback HTTP.
// Fields are read when a node starts: set them before.
type Cluster struct {
	t     testing.TB
	api   API
	mu    sync.Mutex
	nodes map[string]*Node
	dir   string // holds the nodes' data dirs

	// NewFSM, when set, makes the state machine of a node.
	NewFSM func(id string) *fsm.FSM
	// MaxApplyLag is the readiness bound given to the fronts (0: default).
	MaxApplyLag uint64
	// LeaderRegions is given to the cluster front of nodes started next.
	LeaderRegions []string
	// WrapTransport, when set, wraps the Raft transport of each node
	// started next (to delay, hold or fail its RPCs); the wrapper must
	// delegate to t. Links are made and cut on t itself (Node.Trans): peers
	// deliver to t directly, so a wrapper sees the node's outgoing RPCs.
	WrapTransport func(id string, t *raft.InmemTransport) raft.Transport
}

// Node is one in-process node.
type Node struct {
	ID    string
	Node  *cluster.Node
	Trans *raft.InmemTransport
	Srv   *httptest.Server
	Addr  string     // host:port of the API
	URL   string     // http://Addr
	Logs  *LogBuffer // what the API and the cluster front logged (JSON lines)

	cfg       cluster.Config // as started, for Restart
	down      bool
	stopFront context.CancelFunc // ends the front's background work
}

// Client is the operator API client of the node.
func (n *Node) Client() *front.Client { return &front.Client{Addr: n.Addr, Secret: Secret} }

// LogBuffer collects a node's log lines.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// API makes the Placement API a node serves behind its cluster front
// (httpapi.New in the tests: this package cannot import httpapi, whose
// own tests use it).
type API func(node *cluster.Node, logger *slog.Logger) http.Handler

// New returns an empty cluster whose nodes serve api and stop when the
// test ends.
func New(t testing.TB, api API) *Cluster {
	// The nodes' data dirs live under one dir made before the cleanup
	// that stops the nodes is registered: cleanups run last-in first-out,
	// so it is removed only after every node stopped writing snapshots.
	c := &Cluster{t: t, api: api, nodes: map[string]*Node{}, dir: t.TempDir()}
	t.Cleanup(func() {
		for _, n := range c.All() {
			c.Stop(n)
		}
	})
	return c
}

// Three starts n1 (bootstrapped) and joins n2 and n3 to it, n3 through n2
// (a follower: forwarded to the leader); tune adjusts FastRaft.
func Three(t testing.TB, api API, tune func(*raft.Config)) (*Cluster, []*Node) {
	t.Helper()
	c := New(t, api)
	n1 := c.Start("n1", true, tune)
	c.Leader()
	n2 := c.Start("n2", false, tune)
	n3 := c.Start("n3", false, tune)
	c.Join(n2, n1, false)
	c.Join(n3, n2, false)
	return c, []*Node{n1, n2, n3}
}

// Start opens a node; bootstrap makes it a new single-node cluster.
func (c *Cluster) Start(id string, bootstrap bool, tune func(*raft.Config)) *Node {
	c.t.Helper()
	return c.StartIn(id, "", bootstrap, tune)
}

// StartIn opens a node labelled with region.
func (c *Cluster) StartIn(id, region string, bootstrap bool, tune func(*raft.Config)) *Node {
	c.t.Helper()
	return c.StartWith(id, cluster.Config{Bootstrap: bootstrap, InMemory: true, Tune: FastRaft(tune), Region: region})
}

// StartWith opens a node with cfg; NodeID, Transport, HTTPAddr and Logger
// are filled in, and DataDir when empty (a new dir of the cluster's).
func (c *Cluster) StartWith(id string, cfg cluster.Config) *Node {
	c.t.Helper()
	if cfg.DataDir == "" {
		dir, err := os.MkdirTemp(c.dir, id+"-")
		if err != nil {
			c.t.Fatal(err)
		}
		cfg.DataDir = dir
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(id))
	cfg.NodeID, cfg.Transport, cfg.HTTPAddr = id, trans, ln.Addr().String()
	if c.WrapTransport != nil {
		cfg.Transport = c.WrapTransport(id, trans)
	}
	cfg.Logger = QuietRaftLogger(id)
	machine := fsm.New()
	if c.NewFSM != nil {
		machine = c.NewFSM(id)
	}
	node, err := cluster.Open(cfg, machine)
	if err != nil {
		ln.Close()
		c.t.Fatalf("open %s: %v", id, err)
	}
	logs := &LogBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	fr := front.New(node, c.api(node, logger), front.Options{Secret: Secret, LeaderWait: 5 * time.Second,
		MaxApplyLag: c.MaxApplyLag, Logger: logger, LeaderRegions: c.LeaderRegions})
	srv := httptest.NewUnstartedServer(fr)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	ctx, stopFront := context.WithCancel(context.Background())
	go fr.Run(ctx)
	go front.KeepReported(ctx, node, Secret)
	n := &Node{ID: id, Node: node, Trans: trans, Srv: srv, Addr: ln.Addr().String(), URL: srv.URL,
		Logs: logs, cfg: cfg, stopFront: stopFront}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.nodes {
		if !o.down && o.ID != id {
			o.Trans.Connect(raft.ServerAddress(id), trans)
			trans.Connect(raft.ServerAddress(o.ID), o.Trans)
		}
	}
	c.nodes[id] = n
	return n
}

// Stop shuts the node down (its data dir stays); stopping twice is a no-op.
func (c *Cluster) Stop(n *Node) {
	c.mu.Lock()
	if n.down {
		c.mu.Unlock()
		return
	}
	n.down = true
	for _, o := range c.nodes {
		if o != n {
			o.Trans.Disconnect(raft.ServerAddress(n.ID))
		}
	}
	c.mu.Unlock()
	n.stopFront()
	n.Srv.Close()
	n.Node.Shutdown()
}

// Restart stops n if it runs and opens it again on its data dir with the
// config it was started with (on a new API port); it returns the new node.
func (c *Cluster) Restart(n *Node) *Node {
	c.t.Helper()
	c.Stop(n)
	return c.StartWith(n.ID, n.cfg)
}

// RestartWith stops n if it runs and opens it again on its data dir with
// the config it was started with as change leaves it (e.g. Reads: the
// build it stands for); it returns the new node.
func (c *Cluster) RestartWith(n *Node, change func(*cluster.Config)) *Node {
	c.t.Helper()
	c.Stop(n)
	cfg := n.cfg
	change(&cfg)
	return c.StartWith(n.ID, cfg)
}

// Cut disconnects the Raft transport between a and b both ways.
func (c *Cluster) Cut(a, b *Node) {
	a.Trans.Disconnect(raft.ServerAddress(b.ID))
	b.Trans.Disconnect(raft.ServerAddress(a.ID))
}

// Heal connects the Raft transport between a and b again.
func (c *Cluster) Heal(a, b *Node) {
	a.Trans.Connect(raft.ServerAddress(b.ID), b.Trans)
	b.Trans.Connect(raft.ServerAddress(a.ID), a.Trans)
}

// Node returns the node named id (running or stopped; nil if none).
func (c *Cluster) Node(id string) *Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id]
}

// All returns every node started, by id.
func (c *Cluster) All() []*Node { return c.pick(func(*Node) bool { return true }) }

// Running returns the nodes not stopped, by id.
func (c *Cluster) Running() []*Node { return c.pick(func(n *Node) bool { return !n.down }) }

// Followers returns the running nodes that do not lead at the moment.
func (c *Cluster) Followers() []*Node {
	return c.pick(func(n *Node) bool { return !n.down && !n.Node.IsLeader() })
}

func (c *Cluster) pick(keep func(*Node) bool) []*Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*Node
	for _, n := range c.nodes {
		if keep(n) {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Join adds n through the API of via and waits until n knows the leader's
// address.
func (c *Cluster) Join(n, via *Node, nonVoter bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), JoinTimeout)
	defer cancel()
	if err := front.JoinCluster(ctx, n.Node, []string{via.Addr}, Secret, nonVoter); err != nil {
		c.t.Fatalf("join %s via %s: %v", n.ID, via.ID, err)
	}
	WaitFor(c.t, JoinTimeout, n.ID+" knows the leader's address after joining", func() error {
		id, addr := n.Node.Leader()
		return Check(id != "" && addr != "", "leader %q at %q", id, addr)
	})
}

// Leader waits until a running node leads and returns it.
func (c *Cluster) Leader() *Node {
	c.t.Helper()
	var leader *Node
	WaitFor(c.t, LeaderTimeout, "a leader among the running nodes", func() error {
		for _, n := range c.Running() {
			if n.Node.IsLeader() {
				leader = n
				return nil
			}
		}
		return fmt.Errorf("none of %s leads", ids(c.Running()))
	})
	return leader
}

// LeaderIs waits until n leads.
func (c *Cluster) LeaderIs(n *Node) {
	c.t.Helper()
	WaitFor(c.t, LeaderTimeout, n.ID+" leads", func() error {
		id, _ := n.Node.Leader()
		return Check(n.Node.IsLeader(), "%s sees leader %q", n.ID, id)
	})
}

// Converged waits until every running node has applied the same placement
// state and knows every member's API address, and returns that state as
// digest@index.
func (c *Cluster) Converged() string {
	c.t.Helper()
	var state string
	WaitFor(c.t, ConvergeTimeout, "the running nodes converge", func() error {
		var err error
		state, err = c.agreed()
		return err
	})
	return state
}

// agreed returns the state every running node reports, or an error
// listing what each reports.
func (c *Cluster) agreed() (string, error) {
	seen := map[string]bool{}
	var each []string
	for _, n := range c.Running() {
		d, idx := n.Node.Digest()
		key := fmt.Sprintf("%s@%d", d, idx)
		if members, err := n.Node.Members(); err != nil {
			key = err.Error()
		} else {
			for _, m := range members {
				if m.HTTPAddr == "" {
					key = "no address for " + m.ID
				}
			}
		}
		seen[key] = true
		each = append(each, n.ID+"="+key)
	}
	if len(seen) != 1 {
		return "", fmt.Errorf("nodes differ: %s", strings.Join(each, ", "))
	}
	for k := range seen {
		return k, nil
	}
	return "", nil
}

// Do sends a Placement request to n (see the package's Do) with the
// cluster secret: answers name the node that served them only then.
func (n *Node) Do(t testing.TB, method, path string, body any, headers ...string) Response {
	t.Helper()
	return Do(t, n.URL, method, path, body, withSecret(headers)...)
}

// Send is Do for callers that handle the error themselves.
func (n *Node) Send(hc *http.Client, method, path string, body any, headers ...string) (Response, error) {
	return Send(hc, n.URL, method, path, body, withSecret(headers)...)
}

// withSecret puts the cluster secret before headers (which may override it).
func withSecret(headers []string) []string {
	return append([]string{"Authorization", "Bearer " + Secret}, headers...)
}

func ids(nodes []*Node) string {
	var out []string
	for _, n := range nodes {
		out = append(out, n.ID)
	}
	return "[" + strings.Join(out, " ") + "]"
}

// Isolate cuts n off from every other node, both ways.
func (c *Cluster) Isolate(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n.Trans.DisconnectAll()
	for _, o := range c.nodes {
		if o != n && !o.down {
			o.Trans.Disconnect(raft.ServerAddress(n.ID))
		}
	}
}

// Reconnect connects n again to every running node, both ways.
func (c *Cluster) Reconnect(n *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.nodes {
		if o != n && !o.down {
			o.Trans.Connect(raft.ServerAddress(n.ID), n.Trans)
			n.Trans.Connect(raft.ServerAddress(o.ID), o.Trans)
		}
	}
}
