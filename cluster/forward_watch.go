package cluster

import (
	"context"
	"errors"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

var errLeaderMoved = errors.New("another node leads now, and the old leader does not answer")

// untilLeaderMoves is the context of a request forwarded to leader id at
// addr: it ends with ctx, or when this node has seen another node lead and
// the old leader, which has not begun to answer, does not answer a health
// check either within a heartbeat timeout (at least 2 s), or at once when
// this node had stopped hearing from the old leader (no contact for half a
// heartbeat timeout while it knew no leader). A leader cut off
// by a partition never answers, and the request would otherwise wait for
// its client to give up, long after the next leader was elected. The
// forwarding loop then sends a read again to the new leader, and answers a
// write 503 (its outcome is unknown: the old leader may have committed it
// before it was cut off). An old leader that answers the check is left to
// answer the request: during a leadership transfer it forwards the writes
// it held to the new leader as soon as it learns of it.
func (h *Handler) untilLeaderMoves(ctx context.Context, id, addr string) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	var answering atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { answering.Store(true) }})
	go func() {
		lostLeader := false
		for {
			changed := h.node.leaderChanges() // before the check: no change is missed
			now, _ := h.node.Leader()
			if now == "" && time.Since(h.node.Raft.LastContact()) >= h.node.Timing().Heartbeat/2 {
				lostLeader = true
			}
			if now != "" && now != id {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
		if answering.Load() {
			return
		}
		if lostLeader {
			// This node itself stopped hearing from the old leader before
			// the election: the old leader is dead or cut off from here,
			// and a health check would only time out. (A leadership
			// transfer keeps the heartbeats coming until the new leader
			// takes over.)
			cancel(errLeaderMoved)
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
