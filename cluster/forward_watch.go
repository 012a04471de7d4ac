package cluster

import (
	"context"
	"errors"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

var errLeaderMoved = errors.New("another node leads now, and the old leader did not answer")

// untilLeaderMoves is the context of a request forwarded to leader id: it
// ends with ctx, or when this node has seen another node lead for a
// heartbeat timeout while id has not begun to answer. A leader cut off by
// a partition never answers, and the request would otherwise wait for its
// client to give up, long after the next leader was elected. The forwarding
// loop then sends a read again to the new leader, and answers a write 503
// (its outcome is unknown: the old leader may have committed it before it
// was cut off). The grace lets a reachable old leader answer what it holds:
// during a leadership transfer it forwards held writes to the new leader as
// soon as it learns of it.
func (h *Handler) untilLeaderMoves(ctx context.Context, id string) context.Context {
	ctx, cancel := context.WithCancelCause(ctx)
	var answering atomic.Bool
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{GotFirstResponseByte: func() { answering.Store(true) }})
	go func() {
		for {
			changed := h.node.leaderChanges() // before the check: no change is missed
			if now, _ := h.node.Leader(); now != "" && now != id {
				break
			}
			select {
			case <-ctx.Done():
				return
			case <-changed:
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(h.node.Timing().Heartbeat):
			if !answering.Load() {
				cancel(errLeaderMoved)
			}
		}
	}()
	return ctx
}
