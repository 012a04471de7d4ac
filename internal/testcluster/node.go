package testcluster

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
)

// SingleNodeRaft shortens the timeouts of a single-node cluster, which
// elects itself after one election timeout: tests that open many nodes
// start faster.
func SingleNodeRaft(tune func(*raft.Config)) func(*raft.Config) {
	return func(rc *raft.Config) {
		rc.HeartbeatTimeout = 50 * time.Millisecond
		rc.ElectionTimeout = 50 * time.Millisecond
		rc.LeaderLeaseTimeout = 50 * time.Millisecond
		if tune != nil {
			tune(rc)
		}
	}
}

// FastRaft shortens the timeouts of nodes of a multi-node cluster (the
// in-memory transport, on a loaded CI machine), then applies tune.
func FastRaft(tune func(*raft.Config)) func(*raft.Config) {
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

// OpenNode opens a new single-node cluster and waits until it leads; it is
// shut down when the test ends. cfg is cluster.Open's, with defaults for
// what it leaves empty: NodeID "n1", Bootstrap, the in-memory transport
// and log (unless a RaftAddr or DataDir is given), SingleNodeRaft timeouts
// and a quiet Raft logger. machine nil is a new FSM.
func OpenNode(t testing.TB, cfg cluster.Config, machine *fsm.FSM) *cluster.Node {
	t.Helper()
	if cfg.NodeID == "" {
		cfg.NodeID = "n1"
	}
	cfg.Bootstrap = true
	if cfg.Transport == nil && cfg.RaftAddr == "" {
		_, trans := raft.NewInmemTransport(raft.ServerAddress(cfg.NodeID))
		cfg.Transport = trans
		cfg.InMemory = cfg.DataDir == ""
	}
	if cfg.Tune == nil {
		cfg.Tune = SingleNodeRaft(nil)
	}
	if cfg.Logger == nil {
		cfg.Logger = QuietRaftLogger(cfg.NodeID)
	}
	if machine == nil {
		machine = fsm.New()
	}
	node, err := cluster.Open(cfg, machine)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Shutdown() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatalf("%s did not become leader: %v", cfg.NodeID, err)
	}
	return node
}

// QuietRaftLogger logs Raft's errors only, to nowhere.
func QuietRaftLogger(id string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "raft-" + id, Level: hclog.Error, Output: io.Discard})
}

// Quiet is a logger for the API and the cluster front that drops all.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Front serves api behind node's cluster front (operator API included) on
// loopback HTTP until the test ends; opts.Logger defaults to Quiet.
func Front(t testing.TB, node *cluster.Node, api http.Handler, opts front.Options) *httptest.Server {
	if opts.Logger == nil {
		opts.Logger = Quiet
	}
	return Serve(t, front.New(node, api, opts))
}
