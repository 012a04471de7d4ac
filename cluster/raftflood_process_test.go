package cluster_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// floodRaft keeps conns silent TCP connections open to addr, from 2
// connections per loopback address 127.0.x.y other than 127.0.0.1, dialing
// again (after a pause) whenever the node closes one, until ctx ends. It
// returns the number of dials made so far.
func floodRaft(ctx context.Context, wg *sync.WaitGroup, addr string, conns, firstIP int) *atomic.Int64 {
	var dials atomic.Int64
	for i := range conns {
		n := firstIP + i/2
		ip := net.ParseIP(fmt.Sprintf("127.0.%d.%d", 1+n/250, 2+n%250))
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: time.Second}
			for ctx.Err() == nil {
				c, err := d.DialContext(ctx, "tcp", addr)
				dials.Add(1)
				if err == nil {
					stop := context.AfterFunc(ctx, func() { c.Close() })
					c.Read(make([]byte, 1)) // until the node closes it
					stop()
					c.Close()
				}
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
	}
	return &dials
}

// Silent connections from 150 addresses flood both followers' Raft ports
// (300 each, more than the strangers' half of the 256 handshake places),
// and the leader is killed: the followers still reach each other, elect a
// leader and keep it. Before members had places of their own, the new
// leader stepped down after 9 s (it could not reach the flooded
// follower) and a stable leader came 12 s after the kill (10 s here, with
// the flood started after the members' addresses are known or not).
func TestRaftHandshakeFloodFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs placementd processes")
	}
	c := testcluster.StartProcs(t, testcluster.Binary(t), 3, "--leave-on-shutdown=false")
	c.Healthy(3)
	leader := c.Leader()
	followers := c.Nodes.Except(leader)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	const conns = 300
	var dials []*atomic.Int64
	for i, f := range followers {
		dials = append(dials, floodRaft(ctx, &wg, f.RaftAddr, conns, i*conns/2))
	}
	testcluster.WaitFor(t, 30*time.Second, "the flood in place", func() error {
		for i, d := range dials {
			if n := d.Load(); n < conns {
				return fmt.Errorf("follower %d: %d dials", i, n)
			}
		}
		return nil
	})

	c.Kill(leader)
	killed := time.Now()
	// The first leader after the kill must keep its term for stableFor.
	const stableFor = 12 * time.Second
	var elected time.Time
	var term uint64
	var id string
	testcluster.WaitFor(t, 40*time.Second, "a stable leader", func() error {
		qctx, qcancel := context.WithTimeout(ctx, time.Second)
		defer qcancel()
		for _, f := range followers {
			self, err := f.Client().Self(qctx)
			if err != nil || self.State != "Leader" {
				continue
			}
			if self.Term != term || f.ID != id {
				if term != 0 {
					t.Errorf("leader %s (term %d, elected %.1f s after the kill) gave way to %s (term %d) after %.1f s",
						id, term, elected.Sub(killed).Seconds(), f.ID, self.Term, time.Since(elected).Seconds())
				}
				elected, term, id = time.Now(), self.Term, f.ID
			}
		}
		if term == 0 || time.Since(elected) < stableFor {
			return fmt.Errorf("leader %q term %d since %v", id, term, time.Since(elected))
		}
		return nil
	})
	// Without the flood a leader comes about 1 s after the kill; before
	// members had places of their own, 10 s under it.
	if took := elected.Sub(killed); took > 5*time.Second {
		t.Errorf("a leader only %.2f s after the kill", took.Seconds())
	}
	t.Logf("under the flood (%d silent connections to each follower, %d and %d dials), a leader %.2f s after the kill, kept for %v",
		conns, dials[0].Load(), dials[1].Load(), elected.Sub(killed).Seconds(), stableFor)
}
