package cluster_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster/proctest"
)

// startProcCluster runs three placementd processes on loopback that share
// a cluster secret, n2 and n3 joining n1, with extra serve flags, and
// waits until all three are healthy.
func startProcCluster(t *testing.T, bin string, args ...string) []*proctest.Node {
	t.Helper()
	dir := t.TempDir()
	var nodes []*proctest.Node
	for _, id := range []string{"n1", "n2", "n3"} {
		httpAddr, err1 := proctest.FreeAddr("127.0.0.1")
		raftAddr, err2 := proctest.FreeAddr("127.0.0.1")
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		n := &proctest.Node{ID: id, Bin: bin, HTTPAddr: httpAddr, RaftAddr: raftAddr,
			DataDir: filepath.Join(dir, id), Secret: secret, LogPath: filepath.Join(dir, id+".log"),
			Args: append([]string{"--leave-on-shutdown=false"}, args...)}
		var join []string
		if len(nodes) > 0 {
			join = []string{nodes[0].HTTPAddr}
		}
		if err := n.Start(join); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { n.Kill() })
		nodes = append(nodes, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := proctest.WaitHealthy(ctx, nodes, 3); err != nil {
		for _, n := range nodes {
			t.Logf("%s log:\n%s", n.ID, n.LogTail(3000))
		}
		t.Fatal(err)
	}
	return nodes
}

// forgeLeadershipVote sends the leader of nodes a RequestVote as a member
// (a follower's id and address, which an attacker can learn) with a term
// far ahead and LeadershipTransfer set, which tells raft to skip its "I
// have a leader" check: encoded by raft's own NetworkTransport over plain
// TCP, as anyone who reaches the Raft port can. It returns the leader and
// its term before, the term forged and the transport's error.
func forgeLeadershipVote(t *testing.T, nodes []*proctest.Node) (leader *proctest.Node, before, forged uint64, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := proctest.Status(ctx, nodes)
	if err != nil {
		t.Fatal(err)
	}
	var victim *proctest.Node
	for _, n := range nodes {
		switch {
		case n.ID == st.Leader:
			leader = n
		case victim == nil:
			victim = n
		}
	}
	self, err := leader.Client().Self(ctx)
	if err != nil || self.State != "Leader" {
		t.Fatalf("leader %s: %+v %v", leader.ID, self, err)
	}
	before, forged = self.Term, self.Term+1000
	trans, terr := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if terr != nil {
		t.Fatal(terr)
	}
	defer trans.Close()
	req := &raft.RequestVoteRequest{
		RPCHeader: raft.RPCHeader{
			ProtocolVersion: raft.ProtocolVersionMax,
			ID:              []byte(victim.ID), Addr: []byte(victim.RaftAddr),
		},
		Term: forged, Candidate: []byte(victim.RaftAddr),
		LastLogIndex: 1 << 40, LastLogTerm: forged,
		LeadershipTransfer: true,
	}
	var resp raft.RequestVoteResponse
	err = trans.RequestVote(raft.ServerID(leader.ID), raft.ServerAddress(leader.RaftAddr), req, &resp)
	return leader, before, forged, err
}

// The forged RequestVote of issue 21: with Raft authenticated by the
// cluster secret (the default when there is one) the connection is
// refused and the leader keeps its term and its leadership. The same
// forgery against a cluster started with --raft-insecure-plaintext
// deposes the leader and moves the term to the forged one: the attack is
// real, and the test sees it when the port is open.
func TestForgedLeadershipVote(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs placementd processes")
	}
	bin := buildBinary(t)

	t.Run("secret-derived TLS refuses it", func(t *testing.T) {
		nodes := startProcCluster(t, bin)
		leader, before, forged, err := forgeLeadershipVote(t, nodes)
		if err == nil {
			t.Errorf("the forged RequestVote got an answer")
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		self, serr := leader.Client().Self(ctx)
		if serr != nil {
			t.Fatal(serr)
		}
		if self.Term >= forged {
			t.Fatalf("the leader took the forged term: %d -> %d", before, self.Term)
		}
		// The raft handler would have moved the term before answering, so
		// it is checked at once; only a spontaneous election (a loaded
		// machine) may have moved it since, by a few terms.
		if self.Term == before && self.State != "Leader" {
			t.Fatalf("%s stepped down without a new term: %+v", leader.ID, self)
		}
		if self.Term != before {
			t.Logf("an election happened meanwhile (term %d -> %d): not the forgery's", before, self.Term)
		}
	})

	t.Run("--raft-insecure-plaintext lets it through", func(t *testing.T) {
		nodes := startProcCluster(t, bin, "--raft-insecure-plaintext")
		if !strings.Contains(nodes[0].LogTail(4000), "RAFT IS UNAUTHENTICATED") {
			t.Errorf("no loud warning in the log:\n%s", nodes[0].LogTail(4000))
		}
		leader, before, forged, err := forgeLeadershipVote(t, nodes)
		if err != nil {
			t.Fatalf("the forged RequestVote: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		self, serr := leader.Client().Self(ctx)
		if serr != nil {
			t.Fatal(serr)
		}
		if self.Term < forged {
			t.Fatalf("the plaintext leader kept term %d (was %d, forged %d): the forgery did not reproduce", self.Term, before, forged)
		}
		t.Logf("plaintext: term %d -> %d, %s now %s", before, self.Term, leader.ID, self.State)
	})
}
