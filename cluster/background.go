package cluster

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"
)

// Run does the cluster front's background work until ctx ends: it keeps
// a connection to the leader's API open, and with LeaderRegions it keeps
// the leader in the preferred regions (topology.go).
func (h *Handler) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); h.keepLeaderConnWarm(ctx) }()
	go func() { defer wg.Done(); h.keepLeaderInPreferredRegions(ctx) }()
	wg.Wait()
}

// warmEvery is how often an idle follower touches the leader's API; well
// below the forwarding client's idle timeout, so that the kept connection
// never expires.
const warmEvery = 30 * time.Second

// keepLeaderConnWarm opens a connection to the API of each new leader as
// soon as this node learns of it, and touches it now and then. Forwarded
// requests share the client's keep-alive connections; without this the
// first ones after an election (or after a quiet spell) would pay the TCP
// and TLS handshakes, two or three round trips across a WAN.
func (h *Handler) keepLeaderConnWarm(ctx context.Context) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	warm, touched := "", time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		id, addr := h.node.Leader()
		if id == "" || id == h.node.ID() || addr == "" {
			warm = ""
			continue
		}
		if addr == warm && time.Since(touched) < warmEvery {
			continue
		}
		if h.touch(ctx, addr) == nil {
			warm, touched = addr, time.Now()
		}
	}
}

// touch asks the API at addr for its health through the forwarding client,
// which keeps the connection for the next forwarded request.
func (h *Handler) touch(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.node.peerURL(addr, "/_cluster/health"), nil)
	if err != nil {
		return err
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}
