package cluster_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/front"
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
	if err := n1.Node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	n2 := startTLSNode(t, "n2", false, raftCA, apiCA, counting(1))
	if err := n2.join(t, n1, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "n2 knows the leader's API address", func() bool { _, addr := n2.Node.Leader(); return addr != "" })

	hc := apiCA.client()
	nodes := []*tlsNode{n1, n2}
	// put sends one write through via and returns who served it (reads
	// are answered by a follower itself after a read index; writes are
	// always forwarded to the leader).
	put := func(via *tlsNode) string {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPut, "https://"+via.Addr+"/traits/CUSTOM_FORWARDED", nil)
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Authorization", "Bearer "+secret) // to see X-Placementd-Served-By
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		resp, err := hc.Do(req)
		if err != nil {
			t.Error(err)
			return ""
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusNoContent {
			t.Errorf("PUT via %s: %d", via.ID, resp.StatusCode)
		}
		return resp.Header.Get(front.ServedByHeader)
	}
	// phase sends requests through the follower, workers at a time, and
	// returns how many connections the leader accepted meanwhile; ok is
	// false when another node answered (a loaded machine may hold an
	// election), and the phase must be run again.
	phase := func(requests, workers int) (opened int64, ok bool) {
		leader, via := 0, 1
		if n2.Node.IsLeader() {
			leader, via = 1, 0
		}
		put(nodes[via]) // a connection to the leader, if there was none
		base := accepted[leader].Load()
		var wg sync.WaitGroup
		var moved atomic.Bool
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range requests / workers {
					if by := put(nodes[via]); by != nodes[leader].ID {
						moved.Store(true)
					}
				}
			}()
		}
		wg.Wait()
		return accepted[leader].Load() - base, !moved.Load()
	}
	for _, p := range []struct{ requests, workers int }{{30, 1}, {40, 4}} {
		for try := 1; ; try++ {
			opened, ok := phase(p.requests, p.workers)
			if !ok && try < 3 {
				continue
			}
			if !ok {
				t.Fatal("the leader kept changing")
			}
			// A connection per worker (one is open before the phase), the
			// follower's own touch of the leader (background.go) and its
			// read-index confirmation (front/readlevels.go), which may come while
			// the workers use the connections; and as many again for Go's
			// transport, which dials for a request that finds no idle
			// connection, hands it one freed meanwhile if that comes
			// first, and keeps the dialed one idle (on a loaded machine,
			// where TLS handshakes are slow, CI met 7 for 4 workers).
			// Without keep-alive every request would open one: 30 and 40.
			if want := 2*int64(p.workers) + 2; opened > want {
				t.Fatalf("%d requests forwarded %d at a time opened %d new connections to the leader, want at most %d", p.requests, p.workers, opened, want)
			}
			break
		}
	}

	// Voters keep connections to each other: when leadership moves, the
	// old leader's connection to the new one is already open.
	l, f := 0, 1
	if n2.Node.IsLeader() {
		l, f = 1, 0
	}
	waitFor(t, nodes[l].ID+" opened a connection to "+nodes[f].ID+", a voter", func() bool { return accepted[f].Load() > 0 })
	if err := nodes[l].Node.TransferLeadershipTo(ctx, nodes[f].ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, nodes[l].ID+" follows "+nodes[f].ID, func() bool {
		id, addr := nodes[l].Node.Leader()
		return id == nodes[f].ID && addr != ""
	})
	// The first forwarded request normally reuses the warm connection;
	// a background touch of the new leader at the same moment (the
	// leader change wakes background.go) can hold it and make the request
	// dial a second one. So up to three requests go, one after the other,
	// and one must open no connection.
	reused := false
	for i := 0; i < 3 && !reused; i++ {
		warm := accepted[f].Load()
		if by := put(nodes[l]); by != nodes[f].ID {
			t.Fatalf("served by %q after the transfer to %s", by, nodes[f].ID)
		}
		reused = accepted[f].Load() == warm
	}
	if !reused {
		t.Fatal("every request forwarded to the new leader opened a connection, want the warm one reused")
	}
}
