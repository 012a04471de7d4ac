package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// Member is one server of the Raft configuration with its advertised API.
type Member struct {
	ID       string `json:"id"`
	RaftAddr string `json:"raft_addr"`
	HTTPAddr string `json:"http_addr,omitempty"`
	Voter    bool   `json:"voter"`
	Leader   bool   `json:"leader"`
	Region   string `json:"region,omitempty"`
	Zone     string `json:"zone,omitempty"`
	// BuildVersion and Reads are what the member reported of its build
	// ("" and fsm.PreviousReleaseFormats: it reported nothing, as 0.9.0
	// does), which the cluster version is raised by.
	BuildVersion string      `json:"build_version,omitempty"`
	Reads        fsm.Formats `json:"reads"`
}

// ID is this node's Raft id.
func (n *Node) ID() string { return n.cfg.NodeID }

// HTTPAddr is this node's advertised API address.
func (n *Node) HTTPAddr() string { return n.cfg.HTTPAddr }

// Members lists the latest Raft configuration, by id.
func (n *Node) Members() ([]Member, error) {
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return nil, err
	}
	_, leader := n.raft.LeaderWithID()
	var out []Member
	for _, s := range fut.Configuration().Servers {
		m := n.meta.member(string(s.ID))
		build, reads := reported(m)
		out = append(out, Member{
			ID: string(s.ID), RaftAddr: string(s.Address), HTTPAddr: m.HTTPAddr,
			Voter: s.Suffrage == raft.Voter, Leader: s.ID == leader,
			Region: m.Region, Zone: m.Zone, BuildVersion: build, Reads: reads,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// Leader returns the leader's id and advertised API address, "" when no
// leader is known (or its address is not yet).
func (n *Node) Leader() (id, httpAddr string) {
	_, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if string(lid) == n.cfg.NodeID {
		return n.cfg.NodeID, n.cfg.HTTPAddr
	}
	return string(lid), n.meta.httpAddr(string(lid))
}

// AddMember adds (or updates) a server; only the leader can. A voter
// already present with the same address is left as it is, so a restarting
// node may announce itself again safely (its API address and labels are
// updated). A server at the same Raft address under another id (a node
// that lost its data dir and came back under a new name) is removed first.
func (n *Node) AddMember(ctx context.Context, req JoinRequest) error {
	id, raftAddr, nonVoter := req.ID, req.RaftAddr, req.NonVoter
	if !n.IsLeader() {
		return ErrNotLeader
	}
	if id == "" || raftAddr == "" {
		return errors.New("join: node id and raft address are required")
	}
	n.versionMu.Lock()
	defer n.versionMu.Unlock()
	if err := n.checkJoinBuild(req); err != nil {
		return err
	}
	if err := n.checkJoinSecrets(req); err != nil {
		return err
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	suffrage := raft.Voter
	if nonVoter {
		suffrage = raft.Nonvoter
	}
	present := false
	for _, s := range fut.Configuration().Servers {
		switch {
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr) && s.Suffrage == suffrage:
			present = true
		case s.ID == raft.ServerID(id) && s.Address == raft.ServerAddress(raftAddr) && s.Suffrage == raft.Voter && nonVoter:
			// Demoting a voter goes through DemoteVoter.
			if err := n.raft.DemoteVoter(s.ID, 0, n.cfg.ApplyTimeout).Error(); err != nil {
				return membershipErr(err)
			}
			present = true
		case s.ID == raft.ServerID(id) || s.Address == raft.ServerAddress(raftAddr):
			if s.ID == raft.ServerID(n.cfg.NodeID) {
				return fmt.Errorf("join: %s (%s) conflicts with the leader itself", id, raftAddr)
			}
			if err := n.raft.RemoveServer(s.ID, 0, n.cfg.ApplyTimeout).Error(); err != nil {
				return membershipErr(err)
			}
		}
	}
	if !present {
		var f raft.IndexFuture
		if nonVoter {
			f = n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout)
		} else {
			f = n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(raftAddr), 0, n.cfg.ApplyTimeout)
		}
		if err := f.Error(); err != nil {
			return membershipErr(err)
		}
	}
	want := memberMeta{HTTPAddr: req.HTTPAddr, Region: req.Region, Zone: req.Zone, BuildVersion: req.BuildVersion, Reads: req.Reads}
	if req.HTTPAddr != "" && n.meta.member(id) != want {
		return n.applyMeta(setEntry(id, want))
	}
	return nil
}

// RemoveMember removes a server (a dead one, or one leaving); only the
// leader can. Removing the leader itself hands leadership over first.
func (n *Node) RemoveMember(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	found, voters := false, 0
	for _, s := range fut.Configuration().Servers {
		if s.ID == raft.ServerID(id) {
			found = true
		}
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	if !found {
		return ErrNoSuchMember
	}
	if id == n.cfg.NodeID {
		if voters == 1 {
			return errors.New("cannot remove the only voter")
		}
		// The new leader removes this node.
		if err := n.raft.LeadershipTransfer().Error(); err != nil {
			return membershipErr(err)
		}
		return ErrNotLeader
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, n.cfg.ApplyTimeout).Error(); err != nil {
		return membershipErr(err)
	}
	return n.applyMeta(metaEntry{Op: "delete", ID: id})
}

// ErrNoSuchMember: the node to remove is not in the configuration.
var ErrNoSuchMember = errors.New("no such member")

func membershipErr(err error) error {
	switch {
	case errors.Is(err, raft.ErrNotLeader), errors.Is(err, raft.ErrLeadershipLost),
		errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return ErrNotLeader
	}
	return err
}

func (n *Node) applyMeta(e metaEntry) error {
	if err := n.raft.Apply(encodeMeta(e), n.cfg.ApplyTimeout).Error(); err != nil {
		return membershipErr(err)
	}
	return nil
}

// TransferLeadership hands leadership to another voter when this node
// leads and has one; it returns when a new leader is elected or it failed.
func (n *Node) TransferLeadership() error {
	if !n.IsLeader() || n.voters() < 2 {
		return nil
	}
	return n.raft.LeadershipTransfer().Error()
}

func (n *Node) voters() int {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return 0
	}
	v := 0
	for _, s := range fut.Configuration().Servers {
		if s.Suffrage == raft.Voter {
			v++
		}
	}
	return v
}

// IsMember reports whether this node is in its latest configuration.
func (n *Node) IsMember() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	for _, s := range fut.Configuration().Servers {
		if s.ID == raft.ServerID(n.cfg.NodeID) {
			return true
		}
	}
	return false
}

// Alone reports whether this node is the only server it knows of.
func (n *Node) Alone() bool {
	fut := n.raft.GetConfiguration()
	if fut.Error() != nil {
		return false
	}
	s := fut.Configuration().Servers
	return len(s) == 1 && s[0].ID == raft.ServerID(n.cfg.NodeID)
}

func (n *Node) selfMeta() memberMeta {
	build, reads := n.BuildReport()
	return memberMeta{HTTPAddr: n.cfg.HTTPAddr, Region: n.cfg.Region, Zone: n.cfg.Zone, BuildVersion: build, Reads: reads}
}

// PeerHTTPAddrs are the known API addresses of the other members.
func (n *Node) PeerHTTPAddrs() []string {
	var out []string
	t := n.meta.table()
	for _, id := range sortedIDs(t) {
		if id != n.cfg.NodeID && t[id].HTTPAddr != "" {
			out = append(out, t[id].HTTPAddr)
		}
	}
	return out
}

// leaderChanges returns a channel closed when this node next sees the
// leader change (to another node, or to none).
func (n *Node) leaderChanges() <-chan struct{} {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	if n.leaderCh == nil {
		n.leaderCh = make(chan struct{})
	}
	return n.leaderCh
}

// observe registers an observer of the raft observations filter keeps,
// delivered on a channel of size buffered (raft drops what does not fit);
// the caller defers the returned deregistration.
func (n *Node) observe(size int, filter func(*raft.Observation) bool) (<-chan raft.Observation, func()) {
	obs := make(chan raft.Observation, size)
	observer := raft.NewObserver(obs, false, filter)
	n.raft.RegisterObserver(observer)
	return obs, func() { n.raft.DeregisterObserver(observer) }
}

func isLeaderObservation(o *raft.Observation) bool {
	_, ok := o.Data.(raft.LeaderObservation)
	return ok
}

// watchLeader closes the leaderChanges channel at each change of leader:
// as Raft observes it, and, should an observation be dropped, at the next
// check of a slow ticker.
func (n *Node) watchLeader() {
	defer n.done.Done()
	obs, deregister := n.observe(16, isLeaderObservation)
	defer deregister()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	last, _ := n.raft.LeaderWithID()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		case <-obs:
		}
		if now, _ := n.raft.LeaderWithID(); now != last {
			last = now
			n.lmu.Lock()
			if n.leaderCh != nil {
				close(n.leaderCh)
				n.leaderCh = nil
			}
			n.lmu.Unlock()
		}
	}
}

// maintain keeps the membership table in step with the configuration
// while this node leads: its own API address and labels, and no entries
// of servers that were removed.
func (n *Node) maintain() {
	defer n.done.Done()
	// Act as soon as this node becomes leader (followers need its address
	// to forward), and now and then in case a proposal failed.
	obs, deregister := n.observe(4, isLeaderObservation)
	defer deregister()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-tick.C:
		case <-obs:
		}
		if !n.IsLeader() {
			continue
		}
		if self := n.selfMeta(); n.cfg.HTTPAddr != "" && n.meta.member(n.cfg.NodeID) != self {
			n.applyMeta(setEntry(n.cfg.NodeID, self))
		}
		fut := n.raft.GetConfiguration()
		if fut.Error() != nil {
			continue
		}
		in := map[string]bool{}
		for _, s := range fut.Configuration().Servers {
			in[string(s.ID)] = true
		}
		for id := range n.meta.table() {
			if !in[id] {
				n.applyMeta(metaEntry{Op: "delete", ID: id})
			}
		}
		n.raiseClusterVersion()
	}
}

// RestoreBackup replaces the whole placement state, on every member, with
// a placement snapshot (fsm.WriteSnapshot format). Only the leader can; meant
// for seeding a new cluster from a backup.
func (n *Node) RestoreBackup(data []byte) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	// Raft refuses a restore until the configuration entry of a newly
	// bootstrapped cluster is applied: a barrier waits for it.
	if err := n.raft.Barrier(n.cfg.ApplyTimeout).Error(); err != nil {
		return membershipErr(err)
	}
	meta := &raft.SnapshotMeta{Version: raft.SnapshotVersionMax, Size: int64(len(data))}
	if err := n.raft.Restore(meta, bytes.NewReader(data), n.cfg.ApplyTimeout); err != nil {
		return err
	}
	// The backup holds no member addresses, and the log before it is gone:
	// write the table again after it, so members that install this
	// snapshot still learn where to forward.
	table := n.meta.table()
	for _, id := range sortedIDs(table) {
		if err := n.applyMeta(setEntry(id, table[id])); err != nil {
			return err
		}
	}
	return nil
}
