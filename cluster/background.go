package cluster

import (
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"
)

// Run does the cluster front's background work until ctx ends: it keeps
// connections to the other voters' APIs open, and with LeaderRegions it
// keeps the leader in the preferred regions (topology.go).
func (h *Handler) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(3)
	w := &warmth{at: map[string]time.Time{}}
	go func() { defer wg.Done(); h.keepLeaderConnWarm(ctx, w) }()
	go func() { defer wg.Done(); h.keepVoterConnsWarm(ctx, w) }()
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

// warmth remembers when each API address was last touched successfully:
// its connection is open.
type warmth struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (w *warmth) touched(addr string) {
	w.mu.Lock()
	w.at[addr] = time.Now()
	w.mu.Unlock()
}

func (w *warmth) warm(addr string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Since(w.at[addr]) < warmEvery
}

// keepLeaderConnWarm touches the API of each new leader as soon as this
// node learns of it, unless its connection is known to be open (a voter).
func (h *Handler) keepLeaderConnWarm(ctx context.Context, w *warmth) {
	for {
		changed := h.node.leaderChanges() // before the check: no change is missed
		if id, addr := h.node.Leader(); id != "" && id != h.node.ID() && addr != "" && !w.warm(addr) {
			if _, err := h.touch(ctx, addr); err == nil {
				w.touched(addr)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// keepVoterConnsWarm touches every other voter's API every warmEvery (a
// second after a failure), and warns when a round trip is above half the
// leader lease: a new leader steps down unless a follower answers within
// the lease, so the lease must be well above the RTT.
func (h *Handler) keepVoterConnsWarm(ctx context.Context, w *warmth) {
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
			later := now.Before(due[m.HTTPAddr])
			mu.Unlock()
			if !m.Voter || m.ID == h.node.ID() || m.HTTPAddr == "" || later {
				continue
			}
			wg.Add(1)
			go func(m Member) {
				defer wg.Done()
				rtt, err := h.touch(ctx, m.HTTPAddr)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					due[m.HTTPAddr] = now.Add(time.Second)
					return
				}
				due[m.HTTPAddr] = now.Add(warmEvery)
				w.touched(m.HTTPAddr)
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.node.peerURL(addr, "/_cluster/health"), nil)
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
