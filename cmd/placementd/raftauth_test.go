package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
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
				// A port free on every address: one found free on
				// 127.0.0.1 may be held elsewhere by another test.
				wildcard, err := testcluster.FreeAddr("0.0.0.0")
				if err != nil {
					t.Fatal(err)
				}
				_, port, _ := net.SplitHostPort(wildcard)
				n.RaftAddr, n.RaftAdvertise = "0.0.0.0:"+port, "127.0.0.1:"+port
				n.Args = []string{"--raft-insecure-plaintext"}
			}
			c.Start(n)
			testcluster.WaitFor(t, 30*time.Second, n.ID+" answers /readyz with 200", func() error {
				if err := n.Exited(); err != nil {
					return testcluster.Abort(err)
				}
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
	var health anonymousHealth
	readHealth := func() error { return health.read(n) }
	testcluster.WaitFor(t, 30*time.Second, "n1 ready", readHealth)
	before := health

	if err := forgeAppend(n, before.Term, before.LastLogIndex); err == nil || strings.Contains(err.Error(), "answered") {
		t.Errorf("the forged AppendEntries got an answer: %v", err)
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

// anonymousHealth is what /_cluster/health tells anyone.
type anonymousHealth struct {
	Term         uint64 `json:"term"`
	LastLogIndex uint64 `json:"last_log_index"`
	AppliedIndex uint64 `json:"applied_index"`
	Ready        bool   `json:"ready"`
}

// settle waits until n is ready with its whole log applied and no new
// entry for half a second (a new node writes its first entries after it
// is ready): an entry forged after that index is the next one, not one
// that replaces an entry already applied.
func (h *anonymousHealth) settle(t *testing.T, n *testcluster.Proc) {
	t.Helper()
	var last anonymousHealth
	var since time.Time
	testcluster.WaitFor(t, 30*time.Second, n.ID+" ready and settled", func() error {
		if err := h.read(n); err != nil {
			return err
		}
		if *h != last || h.AppliedIndex != h.LastLogIndex {
			last, since = *h, time.Now()
		}
		return testcluster.Check(h.AppliedIndex == h.LastLogIndex && time.Since(since) >= 500*time.Millisecond, "still moving: %+v", *h)
	})
}

// read fills h from n's /_cluster/health, and fails unless n is ready.
func (h *anonymousHealth) read(n *testcluster.Proc) error {
	if err := n.Exited(); err != nil {
		return testcluster.Abort(err)
	}
	resp, err := http.Get("http://" + n.HTTPAddr + "/_cluster/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(h); err != nil {
		return err
	}
	return testcluster.Check(h.Ready, "not ready: %+v", *h)
}

// forgeAppend sends n, over plain TCP as any local process can, an
// AppendEntries from a leader of a later term with one entry after
// lastIndex that is not a placement command, committed at once; it
// returns the transport's error, or says n answered but refused it (nil:
// n took the entry).
func forgeAppend(n *testcluster.Proc, term, lastIndex uint64) error {
	trans, err := raft.NewTCPTransport("127.0.0.1:0", nil, 1, 5*time.Second, io.Discard)
	if err != nil {
		return err
	}
	defer trans.Close()
	next := lastIndex + 1
	req := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("intruder"), Addr: []byte(trans.LocalAddr())},
		// No previous entry to match (raft then checks none), a term
		// ahead of any election meanwhile.
		Term:              term + 10,
		Entries:           []*raft.Log{{Index: next, Term: term + 10, Type: raft.LogCommand, Data: []byte("not a placement command")}},
		LeaderCommitIndex: next,
	}
	var resp raft.AppendEntriesResponse
	if err := trans.AppendEntries(raft.ServerID(n.ID), raft.ServerAddress(n.RaftAddr), req, &resp); err != nil {
		return err
	}
	if !resp.Success {
		return fmt.Errorf("answered, entry refused: %+v", resp)
	}
	return nil
}

// An undecodable committed entry (forged here through a plaintext Raft
// port) stops the node with the entry's index, its bytes and what to do,
// not a panic; a restart stops the same way, before serving a read of a
// state that misses the entry.
func TestUndecodableEntryStopsTheNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs placementd processes")
	}
	c := testcluster.NewProcs(t, testcluster.Binary(t))
	c.Secret = ""
	n := c.Add("n1")
	n.Args = []string{"--raft-insecure-plaintext", "--log-level", "error"}
	c.Start(n)
	var health anonymousHealth
	health.settle(t, n)
	// The node may stop before it answers (the entry is applied as soon
	// as it is stored).
	if err := forgeAppend(n, health.Term, health.LastLogIndex); err != nil {
		t.Logf("the forged AppendEntries (plaintext Raft): %v", err)
	}
	bad := health.LastLogIndex + 1
	for run := 1; run <= 2; run++ {
		testcluster.WaitFor(t, 30*time.Second, "n1 stops", func() error {
			return testcluster.Check(!n.Running(), "still running")
		})
		logs := n.LogTail(1 << 20)
		if i := strings.LastIndex(logs, "=== "); i >= 0 {
			logs = logs[i:] // this run's
		}
		for _, want := range []string{fmt.Sprintf("committed Raft log entry %d cannot be decoded", bad), `not a placement command`, "move this node's data dir aside"} {
			if !strings.Contains(logs, want) {
				t.Errorf("run %d: the log does not say %q:\n%s", run, want, logs)
			}
		}
		if strings.Contains(logs, "goroutine ") {
			t.Errorf("run %d: a stack trace instead of a stop:\n%s", run, logs)
		}
		if n.LastExit() == nil {
			t.Errorf("run %d: exit status 0", run)
		}
		if run == 1 {
			c.Restart(n)
		}
	}
}
