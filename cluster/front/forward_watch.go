package front

import (
	"context"
	"errors"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

var (
	errLeaderMoved = errors.New("another node leads now, and the old leader does not answer")
	errLeaderLost  = errors.New("this node lost the leader (a heartbeat timeout of silence) and an election is under way")
	errNewLeader   = errors.New("another node leads now")
)

// leaderGone returns once this node's Raft gives up on leader id:
// errLeaderLost when it knows no leader and has heard from none for a
// heartbeat timeout (it campaigns, or has joined a campaign), errNewLeader
// when it names another leader; or ctx's error when ctx ends first.
func (h *Handler) leaderGone(ctx context.Context, id string) error {
	hb := h.node.Timing().Heartbeat
	for {
		changed := h.node.LeaderChanges() // before the check: no change is missed
		now, _ := h.node.Leader()
		var again <-chan time.Time
		if now == "" {
			// Raft drops the leader when it campaigns (a heartbeat
			// timeout of silence) or hears of a newer term; the silence
			// tells the two apart.
			silent := time.Since(h.node.LastContact())
			if silent >= hb {
				return errLeaderLost
			}
			// Campaigns seen before this node's own timeout: look again
			// when it would have one.
			again = time.After(hb - silent)
		} else if now != id {
			return errNewLeader
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-again:
		}
	}
}

// untilLeaderMoves is the context of a request forwarded to leader id at
// addr: it ends with ctx; or, when the old leader has not begun to answer,
// as soon as this node's Raft itself gives up on it (no leader known and no
// contact for a heartbeat timeout: this node has started or joined an
// election); or when this node has seen another node lead and the old
// leader does not answer a health check either within a heartbeat timeout
// (at least 2 s). A leader cut off by a partition never answers, and the
// request would otherwise wait for its client to give up, long after the
// next leader was elected. The forwarding loop then sends a read again to
// the next leader, and answers a write 503 (its outcome is unknown: the old
// leader may have committed it before it was cut off). Answering the write
// when the election begins, not when it ends, lets the client's retry wait
// here for the new leader and go to it the moment this node learns of it,
// instead of crossing the client's link once more after the election. An
// old leader that answers the check is left to answer the request: during
// a leadership transfer it forwards the writes it held to the new leader
// as soon as it learns of it, and keeps its heartbeats coming meanwhile.
func (h *Handler) untilLeaderMoves(ctx context.Context, id, addr string) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	var answering atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { answering.Store(true) }})
	go func() {
		switch h.leaderGone(ctx, id) {
		case errLeaderLost:
			if !answering.Load() {
				// The old leader is dead or cut off from here: a health
				// check would only time out.
				cancel(errLeaderLost)
			}
			return
		case errNewLeader:
		default:
			return
		}
		if answering.Load() {
			return
		}
		// Not derived from ctx, whose trace would count the check's answer
		// as the request's; it ends with ctx all the same.
		check, stop := context.WithTimeout(context.Background(), max(h.node.Timing().Heartbeat, 2*time.Second))
		defer stop()
		defer context.AfterFunc(ctx, stop)()
		_, err := h.touch(check, addr)
		if err != nil && ctx.Err() == nil && !answering.Load() {
			cancel(errLeaderMoved)
		}
	}()
	return ctx
}
