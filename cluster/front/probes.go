package front

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// Liveness and readiness probes, unauthenticated, for orchestrators and
// load balancers (placementd serve mounts them at /healthz and /readyz):
//
//	/healthz  200 while the process answers HTTP
//	/readyz   200 when /_cluster/health would say ready (a member that
//	          knows a leader and is not shutting down) and the node has
//	          applied the log up to the commit index it knows; 503 with
//	          the reason otherwise
//	/readyz?leader=true
//	          the same, and only on the leader: a load balancer checking
//	          it sends every request to the leader, sparing the hop a
//	          follower makes to forward it (a fifth to a third of a
//	          3-node cluster's CPU per write when clients are spread
//	          over all nodes)
//
// The applied-index check keeps a node that is replaying its log or
// installing a snapshot out of rotation: with stale reads it would serve
// old state. So does a state machine stuck on one entry for readyWait, or
// more than Options.MaxApplyLag entries behind the commit index
// while it applies (Raft's applied index counts entries handed to the
// state machine, not entries it has applied: the probe watches the state
// machine itself).

// readyWait bounds how long /readyz waits for the state machine to reach
// the commit index noted when the probe came in (a busy node applies
// continuously and is always slightly behind).
const readyWait = 500 * time.Millisecond

// Probe is the body of /readyz. Leader is empty for a caller without the
// cluster secret.
type Probe struct {
	Ready        bool   `json:"ready"`
	Reason       string `json:"reason,omitempty"`
	State        string `json:"state"`
	Leader       string `json:"leader"`
	CommitIndex  uint64 `json:"commit_index"`
	AppliedIndex uint64 `json:"applied_index"`
	// StateMachineIndex is the last entry the state machine finished.
	StateMachineIndex uint64 `json:"state_machine_index"`
}

// Healthz answers that the process is alive.
func (h *Handler) Healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Write([]byte("ok\n"))
}

// Readyz answers 200 when the node should receive traffic, 503 otherwise.
func (h *Handler) Readyz(w http.ResponseWriter, r *http.Request) {
	p := h.Readiness(r.Context())
	if p.Ready && r.URL.Query().Get("leader") == "true" && p.Leader != h.node.ID() {
		p.Ready, p.Reason = false, "not the leader"
	}
	if !h.mayNameNodes(r) {
		// Node ids only with the cluster secret (member.go).
		p.Leader = ""
	}
	code := http.StatusOK
	if !p.Ready {
		code = http.StatusServiceUnavailable
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSONBody(w, code, p)
}

// Readiness is the verdict of /readyz.
func (h *Handler) Readiness(ctx context.Context) Probe {
	pr := h.node.Progress()
	p := Probe{State: pr.State, CommitIndex: pr.Commit, AppliedIndex: pr.Handed, StateMachineIndex: pr.Applied}
	p.Leader, _ = h.node.Leader()
	p.Ready = h.ready()
	switch {
	case p.Ready:
	case h.draining.Load():
		p.Reason = "shutting down"
	case !h.node.IsMember():
		p.Reason = "not a member of the cluster (yet)"
	default:
		p.Reason = "no leader known"
	}
	if !p.Ready {
		return p
	}
	applying := pr.Applying
	if applying != 0 && p.CommitIndex > p.StateMachineIndex+h.opts.MaxApplyLag {
		p.Ready = false
		p.Reason = fmt.Sprintf("the state machine is %d entries behind the commit index", p.CommitIndex-p.StateMachineIndex)
		return p
	}
	ctx, cancel := context.WithTimeout(ctx, readyWait)
	defer cancel()
	for {
		stuck := applying != 0 && pr.Applying == applying
		if p.AppliedIndex >= p.CommitIndex && !stuck {
			break
		}
		select {
		case <-ctx.Done():
			p.Ready, p.Reason = false, "applying the log: behind the commit index"
			if stuck {
				p.Reason = fmt.Sprintf("the state machine has been applying entry %d for over %s", applying, readyWait)
			}
			return p
		case <-time.After(5 * time.Millisecond):
		}
		pr = h.node.Progress()
		p.AppliedIndex = pr.Handed
	}
	p.StateMachineIndex = pr.Applied
	return p
}
