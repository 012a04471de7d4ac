package front

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
)

// Leader preference (Options.LeaderRegions; the topology itself is the
// node's, cluster/topology.go) and the operator API's leadership transfer.

// regionRank is the place of region in the preference list; regions not
// listed come after all listed ones.
func regionRank(prefer []string, region string) int {
	if i := slices.Index(prefer, region); i >= 0 && region != "" {
		return i
	}
	return len(prefer)
}

// preferStreak is how many checks in a row a voter of a preferred region
// must pass before leadership moves to it: a voter that just came back
// (a healed partition) proves it is steady before it takes over.
const preferStreak = 3

// keepLeaderInPreferredRegions runs on every node and acts while the node
// leads from outside its best preferred region: it asks the voters of
// better regions for their status, and hands leadership to the best one
// that has followed this leader and applied what was committed, check
// after check.
func (h *Handler) keepLeaderInPreferredRegions(ctx context.Context) {
	prefer := h.opts.LeaderRegions
	if len(prefer) == 0 {
		return
	}
	if h.opts.Secret == "" {
		h.opts.Logger.Warn("leader regions need the cluster secret to check the other voters: ignored", "leader_regions", prefer)
		return
	}
	every := max(time.Second, 2*h.node.Timing().Heartbeat)
	streak := map[string]int{}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if !h.node.IsLeader() || h.node.WritesStopped() {
			clear(streak)
			continue
		}
		best := h.preferredVoter(ctx, prefer, streak, every)
		if best == "" {
			continue
		}
		h.opts.Logger.Info("handing leadership to a voter of a preferred region", "to", best,
			"from_region", h.node.Region(), "leader_regions", prefer)
		if err := h.node.TransferLeadershipTo(ctx, best); err != nil {
			h.opts.Logger.Warn("leadership transfer to a preferred region failed", "to", best, "error", err)
		}
		clear(streak)
	}
}

// preferredVoter checks the voters of regions better than this leader's
// once, counts their passed checks in streak, and returns the best one
// whose streak is long enough ("" when none).
func (h *Handler) preferredVoter(ctx context.Context, prefer []string, streak map[string]int, timeout time.Duration) string {
	own := regionRank(prefer, h.node.Region())
	members, err := h.node.Members()
	if err != nil || own == 0 {
		return ""
	}
	var better []cluster.Member
	for _, m := range members {
		if m.Voter && m.ID != h.node.ID() && m.HTTPAddr != "" && regionRank(prefer, m.Region) < own {
			better = append(better, m)
		} else {
			delete(streak, m.ID)
		}
	}
	sort.SliceStable(better, func(i, j int) bool {
		return regionRank(prefer, better[i].Region) < regionRank(prefer, better[j].Region)
	})
	commit := h.node.Progress().Commit
	heartbeat := h.node.Timing().Heartbeat
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	found := ""
	for _, m := range better {
		var st cluster.NodeStatus
		err := getJSON(ctx, h.client, h.node.PeerURL(m.HTTPAddr, "/_cluster/self?digest=false"), "Bearer "+h.opts.Secret, &st)
		healthy := err == nil && st.State == raft.Follower.String() && st.Leader == h.node.ID() &&
			st.LastContactMS >= 0 && st.LastContactMS < heartbeat.Milliseconds() && st.AppliedIndex >= commit
		if !healthy {
			streak[m.ID] = 0
			continue
		}
		streak[m.ID]++
		if found == "" && streak[m.ID] >= preferStreak {
			found = m.ID
		}
	}
	return found
}

// transferLeadership serves POST /_cluster/transfer-leadership on the
// leader: {"to": NODE} or {} for any voter.
func (h *Handler) transferLeadership(w http.ResponseWriter, r *http.Request) {
	var req TransferRequest
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err == nil && len(bytes.TrimSpace(body)) > 0 {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		writeErrorBody(w, http.StatusBadRequest, "transfer-leadership: a JSON body {\"to\": NODE} or none is expected: "+err.Error())
		return
	}
	err = h.node.TransferLeadershipTo(r.Context(), req.To)
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		// Not the leader (any more): the forwarding node sends the
		// request on to the one that is.
		w.Header().Set(NotAppliedHeader, "true")
		writeUnavailable(w, "Leadership changed; retry.", true)
		return
	case errors.Is(err, cluster.ErrNoSuchMember):
		writeErrorBody(w, http.StatusNotFound, fmt.Sprintf("transfer-leadership: no member %q", req.To))
		return
	case err != nil:
		writeErrorBody(w, http.StatusConflict, "transfer-leadership: "+err.Error())
		return
	}
	if req.To == h.node.ID() {
		writeJSONBody(w, http.StatusOK, TransferResult{From: req.To, To: req.To}) // already there
		return
	}
	h.opts.Logger.Info("leadership transferred on request", "to", req.To)
	writeJSONBody(w, http.StatusOK, TransferResult{From: h.node.ID(), To: h.waitNewLeader(r.Context())})
}

// waitNewLeader returns the leader this node knows once it is another
// node, bounded by a few heartbeats ("" if none is known by then).
func (h *Handler) waitNewLeader(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 4*h.node.Timing().Heartbeat)
	defer cancel()
	for {
		if id, _ := h.node.Leader(); id != "" && id != h.node.ID() {
			return id
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TransferRequest is the body of POST /_cluster/transfer-leadership.
type TransferRequest struct {
	To string `json:"to,omitempty"` // "": the voter Raft picks
}

// TransferResult answers it: the old and the new leader.
type TransferResult struct {
	From string `json:"from"`
	To   string `json:"to"`
}
