package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/placementd/placementd/internal/testcluster"
)

// serve refuses an unauthenticated Raft port where others can reach it,
// before it writes anything to the data dir.
func TestServeRefusesUnauthenticatedRaft(t *testing.T) {
	pems := t.TempDir()
	ca, cert, key := writePEM(t, pems, "a-")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"wildcard Raft address without secret", []string{"--raft-addr", "0.0.0.0:0"}, "not a loopback address and Raft has no authentication"},
		{"non-loopback IP without secret", []string{"--raft-addr", "10.255.255.1:0"}, "not a loopback address"},
		{"host name without secret", []string{"--raft-addr", "placementd-1:8779"}, "not a loopback address"},
		{"insecure flag with certificate files", []string{"--raft-insecure-plaintext",
			"--raft-tls-cert-file", cert, "--raft-tls-key-file", key, "--raft-tls-ca-file", ca}, "contradicts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			err := serve(append([]string{"--http-addr", "127.0.0.1:0", "--data-dir", dir}, tc.args...))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("serve %v: %v, want %q", tc.args, err, tc.want)
			}
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("the data dir was created (%v)", err)
			}
		})
	}
}

// A node whose Raft state shows a cluster of two, restarted without its
// secret (so without Raft authentication), refuses to run.
func TestServeRefusesUnauthenticatedMember(t *testing.T) {
	dir := t.TempDir()
	bolt, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), MsgpackUseNewTimeFormat: true})
	if err != nil {
		t.Fatal(err)
	}
	snaps, err := raft.NewFileSnapshotStore(dir, 1, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("n1")
	rc := raft.DefaultConfig()
	rc.LocalID = "n1"
	two := raft.Configuration{Servers: []raft.Server{
		{ID: "n1", Address: "127.0.0.1:1", Suffrage: raft.Voter},
		{ID: "n2", Address: "127.0.0.1:2", Suffrage: raft.Voter},
	}}
	if err := raft.BootstrapCluster(rc, bolt, bolt, snaps, trans, two); err != nil {
		t.Fatal(err)
	}
	bolt.Close()
	err = serve([]string{"--log-level", "error", "--node-id", "n1", "--http-addr", "127.0.0.1:0", "--raft-addr", "127.0.0.1:0", "--data-dir", dir})
	if err == nil || !strings.Contains(err.Error(), "member of a 2-node cluster with an unauthenticated Raft port") {
		t.Fatalf("serve: %v", err)
	}
}

// --raft-insecure-plaintext lets a single node bind Raft to every
// interface, and says so loudly in its log; a node with no secret on
// loopback (what `placementd serve` does with no flags) starts as before.
func TestRaftInsecurePlaintextEscape(t *testing.T) {
	if testing.Short() {
		t.Skip("runs placementd processes")
	}
	bin := testcluster.Binary(t)
	for _, tc := range []struct {
		name     string
		insecure bool
	}{{"loopback, no flags", false}, {"wildcard with the flag", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c := testcluster.NewProcs(t, bin)
			c.Secret = ""
			n := c.Add("n1")
			if tc.insecure {
				_, port, _ := strings.Cut(n.RaftAddr, ":")
				n.RaftAddr, n.RaftAdvertise = "0.0.0.0:"+port, n.RaftAddr
				n.Args = []string{"--raft-insecure-plaintext"}
			}
			c.Start(n)
			testcluster.WaitFor(t, 30*time.Second, n.ID+" answers /readyz with 200", func() error {
				resp, err := http.Get("http://" + n.HTTPAddr + "/readyz")
				if err != nil {
					return err
				}
				resp.Body.Close()
				return testcluster.Check(resp.StatusCode == http.StatusOK, "status %d", resp.StatusCode)
			})
			warned := strings.Contains(n.LogTail(1<<20), "RAFT IS UNAUTHENTICATED")
			if warned != tc.insecure {
				t.Errorf("warning in the log: %v, want %v\n%s", warned, tc.insecure, n.LogTail(3000))
			}
		})
	}
}

// A lone node started without a secret (`make run`) serves Raft over TLS
// keyed by a random secret of its data dir (0600): a local process that
// forges an AppendEntries from the term and index /_cluster/health shows,
// with an entry the state machine cannot decode, gets no answer, and the
// node stays up, its term and log untouched.
func TestLoneNodeRaftRefusesForgedAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("runs placementd processes")
	}
	c := testcluster.NewProcs(t, testcluster.Binary(t))
	c.Secret = ""
	n := c.Add("n1")
	c.Start(n)
	var health struct {
		Term         uint64 `json:"term"`
		LastLogIndex uint64 `json:"last_log_index"`
		Ready        bool   `json:"ready"`
	}
	readHealth := func() error {
		resp, err := http.Get("http://" + n.HTTPAddr + "/_cluster/health")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&health); err != nil {
			return err
		}
		return testcluster.Check(health.Ready, "not ready: %+v", health)
	}
	testcluster.WaitFor(t, 30*time.Second, "n1 ready", readHealth)
	before := health

	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer trans.Close()
	next := before.LastLogIndex + 1
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(trans.LocalAddr())},
		Term:      before.Term + 1, PrevLogEntry: before.LastLogIndex, PrevLogTerm: before.Term,
		Entries:           []*raft.Log{{Index: next, Term: before.Term + 1, Type: raft.LogCommand, Data: []byte("not a placement command")}},
		LeaderCommitIndex: next,
	}
	var resp raft.AppendEntriesResponse
	if err := trans.AppendEntries("n1", raft.ServerAddress(n.RaftAddr), req, &resp); err == nil {
		t.Errorf("the forged AppendEntries got an answer: %+v", resp)
	}
	// The node would have taken the term before answering; the entry
	// would be applied within a heartbeat.
	testcluster.WaitFor(t, 10*time.Second, "n1 ready after the forgery", readHealth)
	if !n.Running() || health.Term > before.Term {
		t.Fatalf("after the forgery: running %v, health %+v (before %+v)\n%s", n.Running(), health, before, n.LogTail(3000))
	}
	info, err := os.Stat(filepath.Join(n.DataDir, "raft-local-secret"))
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("the data dir's Raft secret: %v %v, want a file of mode 0600", info, err)
	}
}
