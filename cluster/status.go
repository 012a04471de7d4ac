package cluster

import (
	"strconv"
	"time"

	"github.com/placementd/placementd/fsm"
)

// NodeStatus is what a node reports about itself (the operator API's
// /_cluster/self and /_cluster/health, cluster/front).
type NodeStatus struct {
	ID                string `json:"id"`
	State             string `json:"state"`
	Leader            string `json:"leader"`
	Term              uint64 `json:"term"`
	LastLogIndex      uint64 `json:"last_log_index"`
	CommitIndex       uint64 `json:"commit_index"`
	AppliedIndex      uint64 `json:"applied_index"`
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
	// LastContactMS: milliseconds since a follower last heard from the
	// leader (0 on the leader, -1 never).
	LastContactMS int64  `json:"last_contact_ms"`
	RaftAddr      string `json:"raft_addr"`
	HTTPAddr      string `json:"http_addr"`
	Region        string `json:"region,omitempty"`
	Zone          string `json:"zone,omitempty"`
	// TimingMS is the node's Raft timing in milliseconds (heartbeat,
	// election, leader_lease, commit): members should agree.
	TimingMS map[string]int64 `json:"timing_ms,omitempty"`
	Ready    bool             `json:"ready"`
	// Digest is the hash of the placement state as of StateIndex, the last
	// placement command applied: nodes at the same StateIndex must agree.
	Digest     string `json:"digest"`
	StateIndex uint64 `json:"state_index"`
	// BuildVersion and Reads: this node's build and the formats it reads;
	// ClusterVersion: the cluster version as it applied it
	// (clusterversion.go).
	BuildVersion   string              `json:"build_version,omitempty"`
	Reads          *fsm.Formats        `json:"reads,omitempty"`
	ClusterVersion *fsm.ClusterVersion `json:"cluster_version,omitempty"`
}

// JoinRequest asks the leader to add a server (AddMember); it is the body
// of the operator API's POST /_cluster/join (cluster/front).
type JoinRequest struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr"`
	NonVoter bool   `json:"non_voter"`
	Region   string `json:"region,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// The joining node's build and the formats it reads (none from 0.9.0).
	BuildVersion string      `json:"build_version,omitempty"`
	Reads        fsm.Formats `json:"reads,omitzero"`
	// SecretIDs name the cluster secrets the node accepts, current first
	// (cluster.SecretID; secretrotation.go).
	SecretIDs []string `json:"secret_ids,omitempty"`
}

// Status reports this node.
func (n *Node) Status(withDigest bool) NodeStatus {
	st := NodeStatus{
		ID: n.cfg.NodeID, State: n.raft.State().String(), Term: n.raft.CurrentTerm(),
		LastLogIndex: n.raft.LastIndex(), CommitIndex: n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(), RaftAddr: n.RaftAddr(), HTTPAddr: n.cfg.HTTPAddr,
		Region: n.cfg.Region, Zone: n.cfg.Zone, TimingMS: n.timing.millis(),
	}
	st.Leader, _ = n.Leader()
	build, reads := n.BuildReport()
	cv := n.ClusterVersion()
	st.BuildVersion, st.Reads, st.ClusterVersion = build, &reads, &cv
	if v, err := strconv.ParseUint(n.raft.Stats()["last_snapshot_index"], 10, 64); err == nil {
		st.LastSnapshotIndex = v
	}
	switch lc := n.raft.LastContact(); {
	case n.IsLeader():
	case lc.IsZero():
		st.LastContactMS = -1
	default:
		st.LastContactMS = time.Since(lc).Milliseconds()
	}
	if withDigest {
		st.Digest, st.StateIndex = n.fsm.Digest()
	}
	return st
}

// Follows reports whether the node of st is healthy under leader: it is
// the leader, or names it and heard from it within the last 5 s.
func (st *NodeStatus) Follows(leader string) bool {
	return st != nil && st.Leader != "" && st.Leader == leader &&
		(st.State == "Leader" || (st.LastContactMS >= 0 && st.LastContactMS < 5000))
}
