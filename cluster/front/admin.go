package front

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
)

// The operator API, under /_cluster/ (a prefix Placement does not use).
// Every endpoint but /_cluster/health needs "Authorization: Bearer SECRET"
// with the cluster secret; a node started without one refuses them.
//
//	GET  /_cluster/health    ready for traffic? 200 or 503 (no secret; node
//	                         ids and addresses only with the secret)
//	GET  /_cluster/read-index  the leader's read index (members only: a
//	                         member token, member.go; readlevels.go)
//	GET  /_cluster/self      this node's Raft state and state digest
//	GET  /_cluster/status    members, leader, term, every node's report
//	POST /_cluster/join      {"id","raft_addr","http_addr","non_voter",...}
//	POST /_cluster/remove    {"id"}
//	POST /_cluster/transfer-leadership  {"to"} or {}: hand leadership over
//	GET  /_cluster/snapshot  a consistent placement snapshot (backup)
//	GET|POST /_cluster/import  state contents | apply an import chunk (import.go)

// MemberStatus is a member as the cluster status reports it.
type MemberStatus struct {
	cluster.Member
	Healthy bool                `json:"healthy"`
	Error   string              `json:"error,omitempty"`
	Status  *cluster.NodeStatus `json:"status,omitempty"`
}

// ClusterStatus answers GET /_cluster/status.
type ClusterStatus struct {
	Leader  string         `json:"leader"`
	Term    uint64         `json:"term"`
	Members []MemberStatus `json:"members"`
	// ClusterVersion is the formats every member reads, which the leader
	// may write (as the node asked applied it).
	ClusterVersion fsm.ClusterVersion `json:"cluster_version"`
	// Warnings: regions whose loss would cost the quorum (cluster.QuorumWarnings),
	// members whose Raft timing differs.
	Warnings []string `json:"warnings,omitempty"`
}

func (h *Handler) ready() bool {
	if h.draining.Load() || !h.node.IsMember() {
		return false
	}
	id, _ := h.node.Leader()
	return id != ""
}

// anonymousStatus is what /_cluster/health tells a caller without the
// cluster secret: readiness, Raft state and indexes, nothing naming a
// node (ids, addresses, regions) or its timing.
func anonymousStatus(st cluster.NodeStatus) cluster.NodeStatus {
	return cluster.NodeStatus{
		State: st.State, Term: st.Term, LastLogIndex: st.LastLogIndex, CommitIndex: st.CommitIndex,
		AppliedIndex: st.AppliedIndex, LastSnapshotIndex: st.LastSnapshotIndex,
		LastContactMS: st.LastContactMS, Ready: st.Ready,
	}
}

func (h *Handler) authorized(r *http.Request) bool {
	if h.opts.Secret == "" {
		return false
	}
	got := []byte(r.Header.Get("Authorization"))
	ok := subtle.ConstantTimeCompare(got, []byte("Bearer "+h.opts.Secret)) == 1
	if h.opts.SecretNext != "" {
		ok = subtle.ConstantTimeCompare(got, []byte("Bearer "+h.opts.SecretNext)) == 1 || ok
	}
	return ok
}

// checkSecret answers 403 when no cluster secret is configured and 401
// when the request does not carry it; it reports whether to go on.
func (h *Handler) checkSecret(w http.ResponseWriter, r *http.Request) bool {
	if h.opts.Secret == "" {
		writeErrorBody(w, http.StatusForbidden, "The operator API is disabled: start placementd with --cluster-secret.")
		return false
	}
	if !h.authorized(r) {
		writeErrorBody(w, http.StatusUnauthorized, "The cluster secret is missing or wrong.")
		return false
	}
	return true
}

// RequireSecret serves next only to requests carrying the cluster secret,
// as the operator API does (/metrics on the API port).
func (h *Handler) RequireSecret(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.checkSecret(w, r) {
			next.ServeHTTP(w, r)
		}
	})
}

func (h *Handler) admin(w http.ResponseWriter, r *http.Request) {
	route := r.Method + " " + r.URL.Path
	if route == "GET /_cluster/health" || route == "HEAD /_cluster/health" {
		st := h.node.Status(false)
		st.Ready = h.ready()
		if !h.mayNameNodes(r) {
			st = anonymousStatus(st)
		}
		code := http.StatusOK
		if !st.Ready {
			code = http.StatusServiceUnavailable
		}
		writeJSONBody(w, code, st)
		return
	}
	if route == "GET "+readIndexPath {
		if !callerOf(r).member {
			writeErrorBody(w, http.StatusUnauthorized, "Only members of the cluster may ask for a read index.")
			return
		}
		h.serveReadIndex(w, r)
		return
	}
	if !h.checkSecret(w, r) {
		return
	}
	switch route {
	case "GET /_cluster/self":
		st := h.node.Status(r.URL.Query().Get("digest") != "false")
		st.Ready = h.ready()
		writeJSONBody(w, http.StatusOK, st)
	case "GET /_cluster/status":
		writeJSONBody(w, http.StatusOK, h.clusterStatus(r.Context(), r.Header.Get("Authorization")))
	case "POST /_cluster/join":
		h.toLeader(w, r, http.HandlerFunc(h.join))
	case "POST /_cluster/remove":
		h.toLeader(w, r, http.HandlerFunc(h.remove))
	case "POST /_cluster/transfer-leadership":
		h.toLeader(w, r, http.HandlerFunc(h.transferLeadership))
	case "GET /_cluster/import", "POST /_cluster/import":
		h.toLeader(w, r, http.HandlerFunc(h.importEndpoint))
	case "GET /_cluster/snapshot":
		h.toLeader(w, r, http.HandlerFunc(h.snapshot))
	default:
		writeErrorBody(w, http.StatusNotFound, "No such operator endpoint: "+route)
	}
}

func (h *Handler) join(w http.ResponseWriter, r *http.Request) {
	var req cluster.JoinRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeErrorBody(w, http.StatusBadRequest, "join: "+err.Error())
		return
	}
	if err := h.node.AddMember(r.Context(), req); err != nil {
		h.membershipError(w, err)
		return
	}
	h.opts.Logger.Info("member joined", "id", req.ID, "raft", req.RaftAddr, "http", req.HTTPAddr, "non_voter", req.NonVoter,
		"region", req.Region, "zone", req.Zone)
	members, _ := h.node.Members()
	writeJSONBody(w, http.StatusOK, map[string]any{"members": members})
}

func (h *Handler) remove(w http.ResponseWriter, r *http.Request) {
	var req struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.ID == "" {
		writeErrorBody(w, http.StatusBadRequest, "remove: a JSON body {\"id\": NODE} is required")
		return
	}
	if err := h.node.RemoveMember(r.Context(), req.ID); err != nil {
		h.membershipError(w, err)
		return
	}
	h.opts.Logger.Info("member removed", "id", req.ID)
	members, _ := h.node.Members()
	writeJSONBody(w, http.StatusOK, map[string]any{"members": members})
}

func (h *Handler) membershipError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, cluster.ErrNotLeader):
		writeUnavailable(w, "Leadership changed; retry.", true)
	case errors.Is(err, cluster.ErrNoSuchMember):
		writeErrorBody(w, http.StatusNotFound, err.Error())
	default:
		writeErrorBody(w, http.StatusConflict, err.Error())
	}
}

// snapshot streams a placement snapshot (fsm.WriteSnapshot format) of a
// state at least as new as every write acknowledged before the request.
func (h *Handler) snapshot(w http.ResponseWriter, r *http.Request) {
	if err := h.node.ReadBarrier(r.Context()); err != nil {
		writeUnavailable(w, "Cannot confirm leadership: "+err.Error(), true)
		return
	}
	snap, err := h.node.Snapshot()
	if err != nil {
		writeErrorBody(w, http.StatusInternalServerError, err.Error())
		return
	}
	defer snap.Release()
	w.Header().Set("Content-Type", "application/octet-stream")
	w.WriteHeader(http.StatusOK)
	// A failure mid-stream leaves a truncated gzip stream, which the
	// reader rejects.
	snap.Persist(&responseSink{w: w})
}

type responseSink struct{ w http.ResponseWriter }

func (s *responseSink) Write(p []byte) (int, error) { return s.w.Write(p) }
func (s *responseSink) Close() error                { return nil }
func (s *responseSink) Cancel() error               { return nil }
func (s *responseSink) ID() string                  { return "http" }

var _ raft.SnapshotSink = (*responseSink)(nil)

// clusterStatus asks every member for its report, in parallel.
func (h *Handler) clusterStatus(ctx context.Context, auth string) ClusterStatus {
	out := ClusterStatus{Term: h.node.Term(), ClusterVersion: h.node.ClusterVersion()}
	out.Leader, _ = h.node.Leader()
	members, err := h.node.Members()
	if err != nil {
		return out
	}
	out.Warnings = cluster.QuorumWarnings(members)
	out.Members = make([]MemberStatus, len(members))
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for i, m := range members {
		out.Members[i].Member = m
		wg.Add(1)
		go func(ms *MemberStatus) {
			defer wg.Done()
			var st cluster.NodeStatus
			if ms.ID == h.node.ID() {
				st = h.node.Status(true)
				st.Ready = h.ready()
			} else if ms.HTTPAddr == "" {
				ms.Error = "API address not known yet"
				return
			} else if err := getJSON(ctx, h.client, h.node.PeerURL(ms.HTTPAddr, "/_cluster/self"), auth, &st); err != nil {
				ms.Error = err.Error()
				return
			}
			ms.Status = &st
		}(&out.Members[i])
	}
	wg.Wait()
	if w := timingMismatch(out.Members); w != "" {
		out.Warnings = append(out.Warnings, w)
	}
	for i := range out.Members {
		ms := &out.Members[i]
		ms.Healthy = ms.Status.Follows(out.Leader)
	}
	return out
}

// timingMismatch warns when members report different Raft timing: a
// follower with a shorter heartbeat timeout than the leader expects starts
// elections a slow link would not justify.
func timingMismatch(members []MemberStatus) string {
	seen := map[string][]string{}
	for _, m := range members {
		if m.Status != nil && m.Status.TimingMS != nil {
			t := m.Status.TimingMS
			key := fmt.Sprintf("heartbeat %dms, election %dms, leader lease %dms, commit %dms", t["heartbeat"], t["election"], t["leader_lease"], t["commit"])
			seen[key] = append(seen[key], m.ID)
		}
	}
	if len(seen) < 2 {
		return ""
	}
	var parts []string
	for _, key := range slices.Sorted(maps.Keys(seen)) {
		parts = append(parts, strings.Join(seen[key], ", ")+": "+key)
	}
	return "members run different Raft timing (give every node the same --raft-* settings): " + strings.Join(parts, "; ")
}

func getJSON(ctx context.Context, c *http.Client, url, auth string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(dst)
}

func writeJSONBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(v)
}
