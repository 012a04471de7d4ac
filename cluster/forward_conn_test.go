package cluster_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
)

// Forwarding between members keeps its connections, TLS on: requests a
// follower forwards one after another open no new connection to the
// leader, concurrent ones at most one each, and after a leader change the
// follower has its connection to the new leader open before the first
// forwarded request needs it (no TCP or TLS handshake on the request's
// path, two or three round trips on a WAN): voters keep one open to each
// other.
func TestForwardingKeepsConnections(t *testing.T) {
	raftCA, apiCA := newCA(t, "raft CA"), newCA(t, "api CA")
	var accepted [2]atomic.Int64 // connections each node's API accepted
	counting := func(i int) func(*http.Server) {
		return func(srv *http.Server) {
			srv.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					accepted[i].Add(1)
				}
			}
		}
	}
	n1 := startTLSNode(t, "n1", true, raftCA, apiCA, counting(0))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := n1.node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	n2 := startTLSNode(t, "n2", false, raftCA, apiCA, counting(1))
	if err := n2.join(t, n1, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 knows the leader's API address", func() bool { _, addr := n2.node.Leader(); return addr != "" })

	hc := apiCA.client()
	get := func(via *tlsNode, wantBy string) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+via.addr+"/resource_providers", nil)
		req.Header.Set("X-Auth-Token", "admin")
		resp, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get(cluster.ServedByHeader) != wantBy {
			t.Errorf("GET via %s: %d served by %q, want 200 from %s", via.id, resp.StatusCode, resp.Header.Get(cluster.ServedByHeader), wantBy)
		}
	}
	get(n2, "n1")
	base := accepted[0].Load()
	for range 30 {
		get(n2, "n1")
	}
	if n := accepted[0].Load() - base; n != 0 {
		t.Fatalf("30 requests forwarded one after another opened %d new connections to the leader, want none", n)
	}
	const workers = 4
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 10 {
				get(n2, "n1")
			}
		}()
	}
	wg.Wait()
	if n := accepted[0].Load() - base; n > workers {
		t.Fatalf("%d concurrent forwarders opened %d connections to the leader", workers, n)
	}

	// Voters keep connections to each other: when leadership moves to n2,
	// n1's connection to it is already open.
	waitFor(t, "n1 opened a connection to n2, a voter", func() bool { return accepted[1].Load() > 0 })
	if err := n1.node.TransferLeadershipTo(ctx, "n2"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n1 follows n2", func() bool { id, addr := n1.node.Leader(); return id == "n2" && addr != "" })
	warm := accepted[1].Load()
	get(n1, "n2")
	if n := accepted[1].Load() - warm; n != 0 {
		t.Fatalf("the first request forwarded to the new leader opened %d connections, want the warm one", n)
	}
}
