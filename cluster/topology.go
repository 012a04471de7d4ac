package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/raft"
)

// Topology: every node may carry a region and a zone label (Config.Region,
// Config.Zone). They travel through the Raft log with the member's API
// address (meta.go), so every node knows every member's labels, even those
// of members that are down. They serve three purposes:
//
//   - cluster status, /_cluster APIs and metrics show them;
//   - QuorumWarnings says when losing one region would leave the voters
//     without a quorum (a 3-voter cluster with 2 voters in one region);
//   - leader preference (the front's Options.LeaderRegions, in
//     cluster/front): a leader outside the preferred regions hands
//     leadership to a voter inside them (TransferLeadershipTo) once that
//     voter is healthy and caught up, so that writes from the main region
//     do not cross the WAN twice.

// ErrNotVoter: leadership can only go to a voter.
var ErrNotVoter = errors.New("not a voter")

// QuorumWarnings lists the regions whose loss alone would leave fewer
// voters than a quorum. Nothing when no member has a region label.
func QuorumWarnings(members []Member) []string {
	labelled := false
	voters := 0
	byRegion := map[string][]string{}
	for _, m := range members {
		labelled = labelled || m.Region != ""
		if m.Voter {
			voters++
			byRegion[m.Region] = append(byRegion[m.Region], m.ID)
		}
	}
	if !labelled || voters == 0 {
		return nil
	}
	quorum := voters/2 + 1
	var out []string
	for _, region := range sortedIDs(byRegion) {
		ids := byRegion[region]
		if left := voters - len(ids); left < quorum {
			name := region
			if name == "" {
				name = "(no region)"
			}
			out = append(out, fmt.Sprintf("losing region %s (voters %s) would leave %d of %d voters, short of a quorum of %d: spread the voters over more regions",
				name, strings.Join(ids, ", "), left, voters, quorum))
		}
	}
	return out
}

// TransferLeadershipTo hands leadership to voter id, or with id "" to the
// voter Raft finds most up to date, and returns when another node leads or
// the transfer failed. Meanwhile writes are held as in a graceful stop:
// those already proposed finish here first, new ones wait and go to the
// next leader, so none gets an unknown outcome from the transfer (one
// caught between the front's check and the write gate is refused as not
// applied, safe to retry).
func (n *Node) TransferLeadershipTo(ctx context.Context, id string) error {
	if !n.IsLeader() {
		return ErrNotLeader
	}
	if id == n.cfg.NodeID {
		return nil
	}
	members, err := n.Members()
	if err != nil {
		return err
	}
	var target *Member
	voters := 0
	for i, m := range members {
		if m.Voter {
			voters++
		}
		if m.ID == id {
			target = &members[i]
		}
	}
	switch {
	case id != "" && target == nil:
		return ErrNoSuchMember
	case id != "" && !target.Voter:
		return fmt.Errorf("%s: %w", id, ErrNotVoter)
	case voters < 2:
		return errors.New("no other voter to hand leadership to")
	}
	n.gate.Lock()
	n.handingOver++
	n.gate.Unlock()
	defer func() {
		n.gate.Lock()
		n.handingOver--
		n.gate.Unlock()
	}()
	if err := n.waitProposed(ctx); err != nil {
		return err
	}
	var fut raft.Future
	if target == nil {
		fut = n.raft.LeadershipTransfer()
	} else {
		fut = n.raft.LeadershipTransferToServer(raft.ServerID(target.ID), raft.ServerAddress(target.RaftAddr))
	}
	return membershipErr(fut.Error())
}
