package front

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/placementd/placementd/cluster"
)

// Run does the cluster front's background work until ctx ends: it keeps
// connections to the other voters' APIs open, and with LeaderRegions it
// keeps the leader in the preferred regions (leaderregions.go).
func (h *Handler) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); h.keepLeaderConnWarm(ctx) }()
	go func() { defer wg.Done(); h.keepVoterConnsWarm(ctx) }()
	go func() { defer wg.Done(); h.keepLeaderInPreferredRegions(ctx) }()
	wg.Wait()
}

// warmEvery is how often a node touches the API of each other voter; well
// below the forwarding client's idle timeout, so that the kept connection
// never expires.
const warmEvery = 30 * time.Second

// Forwarded requests share the forwarding client's keep-alive connections.
// Without the two loops below, the first requests after an election (or
// after a quiet spell) would pay the TCP and TLS handshakes, two or three
// round trips across a WAN: every voter keeps a connection open to every
// other voter, one of which becomes the next leader, and a node opens one
// to a new leader as soon as it learns of it (a non-voter, or a voter that
// could not reach it before).

// apiConns counts the forwarding client's open connections per address.
// A connection the peer closed (it restarted) is closed by the client as
// soon as the peer's close arrives, so an address with none open needs a
// touch, however recently the last one was: a peer's restart is repaired
// at the next tick of keepVoterConnsWarm, not warmEvery later, and a new
// leader's connection is opened when it is learnt even if it was touched
// just before its restart.
type apiConns struct {
	mu   sync.Mutex
	open map[string]int
}

// dialer wraps dial so that every connection it makes is counted until
// it is closed.
func (c *apiConns) dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if c.open == nil {
			c.open = map[string]int{}
		}
		c.open[addr]++
		c.mu.Unlock()
		return &countedConn{Conn: conn, closed: func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.open[addr]--; c.open[addr] <= 0 {
				delete(c.open, addr)
			}
		}}, nil
	}
}

// warm says whether a connection to addr is open.
func (c *apiConns) warm(addr string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.open[addr] > 0
}

type countedConn struct {
	net.Conn
	once   sync.Once
	closed func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.closed)
	return c.Conn.Close()
}

// keepLeaderConnWarm touches the API of each new leader as soon as this
// node learns of it, unless a connection to it is open (a voter's).
func (h *Handler) keepLeaderConnWarm(ctx context.Context) {
	for {
		changed := h.node.LeaderChanges() // before the check: no change is missed
		if id, addr := h.node.Leader(); id != "" && id != h.node.ID() && addr != "" && !h.conns.warm(addr) {
			h.touch(ctx, addr)
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// keepVoterConnsWarm touches every other voter's API every warmEvery, and
// within a second when no connection to it is open (a failure, or the
// voter restarted), and warns when a round trip is above half the
// leader lease: a new leader steps down unless a follower answers within
// the lease, so the lease must be well above the RTT.
func (h *Handler) keepVoterConnsWarm(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	due := map[string]time.Time{}    // API address -> next touch
	warned := map[string]time.Time{} // API address -> last warning
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		members, err := h.node.Members()
		if err != nil {
			continue
		}
		var wg sync.WaitGroup
		var mu sync.Mutex // over due and warned, which the touches below update
		now := time.Now()
		for _, m := range members {
			mu.Lock()
			later := now.Before(due[m.HTTPAddr]) && h.conns.warm(m.HTTPAddr)
			mu.Unlock()
			if !m.Voter || m.ID == h.node.ID() || m.HTTPAddr == "" || later {
				continue
			}
			wg.Add(1)
			go func(m cluster.Member) {
				defer wg.Done()
				rtt, err := h.touch(ctx, m.HTTPAddr)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					due[m.HTTPAddr] = now.Add(time.Second)
					return
				}
				due[m.HTTPAddr] = now.Add(warmEvery)
				lease := h.node.Timing().LeaderLease
				// rtt is 0 when the touch opened the connection.
				if 2*rtt > lease && time.Since(warned[m.HTTPAddr]) > 10*time.Minute {
					warned[m.HTTPAddr] = time.Now()
					h.opts.Logger.Warn("round trip to a voter is long for the Raft timing: a new leader steps down unless followers answer within the leader lease; raise --raft-timing-multiplier (docs/cluster.md)",
						"voter", m.ID, "rtt", rtt.Round(time.Millisecond), "leader_lease", lease)
				}
			}(m)
		}
		wg.Wait()
	}
}

// touch asks the API at addr for its health through the forwarding client,
// which keeps the connection for the next forwarded request. It returns
// the round trip the answer took over a connection that was already open
// (0 when it had to open one: the handshakes would count).
func (h *Handler) touch(ctx context.Context, addr string) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reused := false
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotConn: func(c httptrace.GotConnInfo) { reused = c.Reused }})
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.node.PeerURL(addr, "/_cluster/health"), nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := h.client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	rtt := time.Since(start)
	if !reused {
		rtt = 0
	}
	return rtt, resp.Body.Close()
}
