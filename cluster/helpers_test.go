package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
)

const secret = "test-secret"

// testCluster is a set of in-process nodes: real Raft over the in-memory
// transport, the real API behind the real cluster front, on loopback HTTP.
type testCluster struct {
	t     *testing.T
	mu    sync.Mutex
	nodes map[string]*testNode
	dir   string // holds the nodes' data dirs
	// newFSM, when set, makes the state machine of a node; maxApplyLag is
	// the readiness bound given to the nodes' fronts (0: the default).
	newFSM      func(id string) *fsm.FSM
	maxApplyLag uint64
	// leaderRegions is given to the cluster front of nodes started next.
	leaderRegions []string
}

type testNode struct {
	id    string
	node  *cluster.Node
	trans *raft.InmemTransport
	srv   *httptest.Server
	addr  string // host:port of the API
	down  bool
	logs  *logBuffer // what the API and the cluster front logged (JSON lines)
	// stopFront ends the front's background work (Handler.Run).
	stopFront context.CancelFunc
}

// logBuffer collects a node's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newTestCluster(t *testing.T) *testCluster {
	// The nodes' data dirs live under one dir made before the cleanup
	// that stops the nodes is registered: cleanups run last-in first-out,
	// so it is removed only after every node stopped writing snapshots.
	c := &testCluster{t: t, nodes: map[string]*testNode{}, dir: t.TempDir()}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			c.stop(n)
		}
	})
	return c
}

// fastRaft shortens the timeouts (in-memory transport, loaded CI box).
func fastRaft(tune func(*raft.Config)) func(*raft.Config) {
	return func(rc *raft.Config) {
		rc.HeartbeatTimeout = 200 * time.Millisecond
		rc.ElectionTimeout = 200 * time.Millisecond
		rc.LeaderLeaseTimeout = 100 * time.Millisecond
		rc.CommitTimeout = 5 * time.Millisecond
		if tune != nil {
			tune(rc)
		}
	}
}

// start opens a node; bootstrap makes it a new single-node cluster.
func (c *testCluster) start(id string, bootstrap bool, tune func(*raft.Config)) *testNode {
	c.t.Helper()
	return c.startIn(id, "", bootstrap, tune)
}

// startIn opens a node labelled with region.
func (c *testCluster) startIn(id, region string, bootstrap bool, tune func(*raft.Config)) *testNode {
	c.t.Helper()
	_, trans := raft.NewInmemTransport(raft.ServerAddress(id))
	dir, err := os.MkdirTemp(c.dir, id+"-")
	if err != nil {
		c.t.Fatal(err)
	}
	return c.startWith(id, trans, cluster.Config{Bootstrap: bootstrap, InMemory: true, DataDir: dir, Tune: fastRaft(tune), Region: region})
}

func (c *testCluster) startWith(id string, trans *raft.InmemTransport, cfg cluster.Config) *testNode {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	cfg.NodeID, cfg.Transport, cfg.HTTPAddr = id, trans, ln.Addr().String()
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Name: "raft-" + id, Level: hclog.Error, Output: io.Discard})
	machine := fsm.New()
	if c.newFSM != nil {
		machine = c.newFSM(id)
	}
	node, err := cluster.Open(cfg, machine)
	if err != nil {
		c.t.Fatal(err)
	}
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	api := httpapi.New(node, httpapi.Config{Logger: logger})
	front := node.Handler(api, cluster.HandlerOptions{Secret: secret, LeaderWait: 5 * time.Second,
		MaxApplyLag: c.maxApplyLag, Logger: logger, LeaderRegions: c.leaderRegions})
	srv := httptest.NewUnstartedServer(front)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	ctx, stopFront := context.WithCancel(context.Background())
	go front.Run(ctx)
	n := &testNode{id: id, node: node, trans: trans, srv: srv, addr: ln.Addr().String(), logs: logs, stopFront: stopFront}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, o := range c.nodes {
		if !o.down {
			o.trans.Connect(raft.ServerAddress(id), trans)
			trans.Connect(raft.ServerAddress(o.id), o.trans)
		}
	}
	c.nodes[id] = n
	return n
}

func (c *testCluster) stop(n *testNode) {
	c.mu.Lock()
	if n.down {
		c.mu.Unlock()
		return
	}
	n.down = true
	for _, o := range c.nodes {
		if o != n {
			o.trans.Disconnect(raft.ServerAddress(n.id))
		}
	}
	c.mu.Unlock()
	n.stopFront()
	n.srv.Close()
	n.node.Shutdown()
}

// join adds n through the API of via and waits until n has caught up.
func (c *testCluster) join(n, via *testNode, nonVoter bool) {
	c.t.Helper()
	// Generous: a join can wait for a snapshot install to the new node
	// before its configuration commits, slow on a loaded 2-core machine.
	ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
	defer cancel()
	if err := n.node.JoinCluster(ctx, []string{via.addr}, secret, nonVoter); err != nil {
		c.t.Fatalf("join %s: %v", n.id, err)
	}
	for ctx.Err() == nil {
		if id, addr := n.node.Leader(); id != "" && addr != "" {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.t.Fatalf("%s does not know the leader's address after joining", n.id)
}

// leader waits for a leader among the running nodes.
func (c *testCluster) leader() *testNode {
	c.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		for _, n := range c.nodes {
			if !n.down && n.node.IsLeader() {
				c.mu.Unlock()
				return n
			}
		}
		c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	c.t.Fatal("no leader within 10s")
	return nil
}

func (c *testCluster) followers() []*testNode {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*testNode
	for _, n := range c.nodes {
		if !n.down && !n.node.IsLeader() {
			out = append(out, n)
		}
	}
	return out
}

// converged waits until every running node has applied the same placement
// state, and returns its digest.
func (c *testCluster) converged() string {
	c.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	var last []string
	for time.Now().Before(deadline) {
		last = nil
		seen := map[string]bool{}
		c.mu.Lock()
		for _, n := range c.nodes {
			if !n.down {
				d, idx := n.node.FSM.Digest()
				key := fmt.Sprintf("%s@%d", d, idx)
				// ... and knows every member's API address.
				if members, err := n.node.Members(); err != nil {
					key = err.Error()
				} else {
					for _, m := range members {
						if m.HTTPAddr == "" {
							key = "no address for " + m.ID
						}
					}
				}
				seen[key] = true
				last = append(last, n.id+"="+key)
			}
		}
		c.mu.Unlock()
		if len(seen) == 1 {
			for k := range seen {
				return k
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.t.Fatalf("nodes did not converge: %v", last)
	return ""
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.body, &v); err != nil {
		t.Fatalf("body is not JSON: %q", r.body)
	}
	return v
}

// do sends a Placement request as admin at microversion 1.39, with the
// cluster secret (answers name the node that served them only then).
func do(t *testing.T, n *testNode, method, path string, body any, headers ...string) response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+n.addr+path, rd)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	req.Header.Set("Authorization", "Bearer "+secret)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s via %s: %v", method, path, n.id, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return response{status: resp.StatusCode, header: resp.Header, body: raw}
}

func client(n *testNode) *cluster.Client { return &cluster.Client{Addr: n.addr, Secret: secret} }

// threeNodes starts n1 (bootstrapped) and joins n2, n3 to it.
func threeNodes(t *testing.T, tune func(*raft.Config)) (*testCluster, []*testNode) {
	c := newTestCluster(t)
	n1 := c.start("n1", true, tune)
	c.leader()
	n2 := c.start("n2", false, tune)
	n3 := c.start("n3", false, tune)
	c.join(n2, n1, false)
	c.join(n3, n2, false) // through a follower: forwarded to the leader
	return c, []*testNode{n1, n2, n3}
}
