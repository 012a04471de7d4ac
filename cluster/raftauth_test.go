package cluster_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

// openSecretNode opens a node over real TCP whose Raft TLS is derived
// from raftSecret.
func openSecretNode(t *testing.T, id, raftSecret string, bootstrap bool) *cluster.Node {
	t.Helper()
	cfg, err := cluster.RaftTLSFromSecret(raftSecret, id)
	if err != nil {
		t.Fatal(err)
	}
	node, err := cluster.Open(cluster.Config{
		NodeID: id, RaftAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:1",
		Bootstrap: bootstrap, InMemory: true, RaftTLS: cfg,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "raft-" + id, Level: hclog.Error, Output: io.Discard}),
		Tune:   tcpTiming,
	}, fsm.New())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { node.Shutdown() })
	return node
}

// Nodes that share a secret, each with a certificate of its own made at
// start, form a cluster over TLS; a peer whose certificate comes from
// another secret is refused before raft sees its RPC, so a forged
// leadership-transfer vote changes nothing, while the same connection
// with a certificate of the right secret is answered.
func TestRaftTLSFromSecret(t *testing.T) {
	n1 := openSecretNode(t, "n1", "cluster secret", true)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n1.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	n2 := openSecretNode(t, "n2", "cluster secret", false)
	if err := n1.Raft().AddVoter("n2", raft.ServerAddress(n2.RaftAddr()), 0, 10*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.Apply(ctx, &state.CreateResourceClass{Name: "CUSTOM_OVER_TLS"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 has the write", func() bool { return hasClass(n2, "CUSTOM_OVER_TLS") })

	term := n1.Raft().CurrentTerm()
	vote := func(trans raft.Transport, transfer bool) error {
		req := &raft.RequestVoteRequest{
			RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte(n2.RaftAddr())},
			Term:      term + 1000, LastLogIndex: 1 << 40, LastLogTerm: term + 1000,
			LeadershipTransfer: transfer,
		}
		if !transfer {
			req.Term, req.LastLogIndex, req.LastLogTerm = 0, 0, 0 // a stale vote: answered, ignored
		}
		var resp raft.RequestVoteResponse
		return trans.RequestVote("n1", raft.ServerAddress(n1.RaftAddr()), req, &resp)
	}
	other, err := cluster.RaftTLSFromSecret("another secret", "intruder")
	if err != nil {
		t.Fatal(err)
	}
	if err := vote(tlsIntruder(t, other.Certificates[0]), true); err == nil {
		t.Error("a peer with a certificate of another secret got an answer")
	}
	if got := n1.Raft().CurrentTerm(); got != term || !n1.IsLeader() {
		t.Fatalf("after the refused vote: term %d (was %d), leader %v", got, term, n1.IsLeader())
	}

	// Control: the same transport with a certificate of the cluster's
	// secret is answered.
	same, err := cluster.RaftTLSFromSecret("cluster secret", "insider")
	if err != nil {
		t.Fatal(err)
	}
	if err := vote(tlsIntruder(t, same.Certificates[0]), false); err != nil {
		t.Fatalf("a peer with the cluster's secret: %v", err)
	}
}
