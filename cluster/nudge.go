package cluster

import (
	"strconv"
	"time"

	"github.com/hashicorp/raft"
)

// Prompt elections after a leader dies.
//
// In hashicorp/raft a follower checks at random intervals of 1-2 heartbeat
// timeouts whether it heard from the leader within one heartbeat timeout,
// and only then drops the leader and campaigns (pre-vote first). A voter
// that still knows a leader refuses every pre-vote. So when a leader dies,
// the first survivor to notice campaigns, is refused by the others, and
// waits an election timeout (1-2×) before it tries again; the election
// succeeds only once the last survivor needed for a quorum has noticed on
// its own timer, and when two survivors notice within one round trip of
// each other both campaign and the vote splits (another 1-2 election
// timeouts). On a WAN that made the worst failovers 3.5 s at 150 ms RTT.
//
// nudgeElections shortens the wait for the survivor that completes a
// quorum: a follower that has received pre-vote requests from enough other
// voters that, counting itself, they are a quorum, and that has not heard
// from its leader for a heartbeat timeout either, runs raft's own check
// now instead of at its next random tick. The check is raft's, unchanged
// (no contact within the heartbeat timeout, else nothing happens), so the
// nudge never starts an election that raft would not start at its next
// tick anyway; it only removes up to two heartbeat timeouts of waiting.
// It then campaigns while the others, already candidates without a
// leader, grant its pre-vote and vote: one election, no split, since the
// refused candidates only try again after their election timeout.
//
// Which follower joins when is the election order's (electorder.go): the
// first in the order not campaigning yet joins any campaign at once, the
// later ones in their turn, nobody once a quorum campaigns. With
// Config.PlainElections only a follower that completes a quorum joins, at
// once; one that sees fewer campaigners does nothing, since joining would
// only add one more candidate among several and split the vote (with
// several such followers at once, they can still split it).
func (n *Node) nudgeElections() {
	defer n.done.Done()
	obs, deregister := n.observe(16, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.RequestPreVoteRequest, raft.RequestVoteRequest:
			return true
		}
		return false
	})
	defer deregister()
	// campaigning: when each voter's latest pre-vote request arrived.
	campaigning := map[raft.ServerID]time.Time{}
	var retry <-chan time.Time
	for {
		select {
		case <-n.stop:
			return
		case o := <-obs:
			if req, ok := o.Data.(raft.RequestVoteRequest); ok {
				n.probed(req)
				n.yieldSplitVote(req)
				continue
			}
			req := o.Data.(raft.RequestPreVoteRequest)
			if req.Term > n.raft.CurrentTerm() {
				campaigning[raft.ServerID(req.GetRPCHeader().ID)] = time.Now()
				n.outrankCampaign(req)
			}
		case <-retry:
			retry = nil
		}
		if n.raft.State() != raft.Follower {
			clear(campaigning)
			continue
		}
		fut := n.raft.GetConfiguration()
		if fut.Error() != nil {
			continue
		}
		lastContact := n.raft.LastContact()
		_, leader := n.raft.LeaderWithID()
		wait, join := n.joinCampaign(fut.Configuration(), leader, lastContact, campaigning)
		if !join {
			continue
		}
		// Not before this node's own silence reaches the heartbeat
		// timeout: the others may have lost the leader before it did.
		wait = max(wait, time.Until(lastContact.Add(n.timing.Heartbeat)))
		if wait > 0 {
			retry = time.After(wait + time.Millisecond)
			continue
		}
		n.cfg.Logger.Info("voters are campaigning and the leader has been silent for the heartbeat timeout: checking the leader now",
			"leader", string(leader), "silent", time.Since(lastContact).Round(time.Millisecond).String())
		clear(campaigning)
		n.timers.checkNow(false)
	}
}

// joinCampaign says whether this follower joins the campaigns it has seen,
// and how long it waits first: in its turn of the election order
// (electorder.go), or, with PlainElections, at once when with it they are
// a quorum.
func (n *Node) joinCampaign(conf raft.Configuration, leader raft.ServerID, lastContact time.Time, campaigning map[raft.ServerID]time.Time) (time.Duration, bool) {
	self := raft.ServerID(n.cfg.NodeID)
	if n.cfg.PlainElections {
		return 0, quorumCampaigns(conf, self, leader, lastContact, campaigning)
	}
	voters := 0
	for _, s := range conf.Servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	turn, latest, join := campaignTurn(n.electionOrder(conf, leader), self, voters/2+1, lastContact, campaigning)
	if !join {
		return 0, false
	}
	return time.Until(latest.Add(time.Duration(turn) * turnSlot(n.timing.Heartbeat, n.peers.maxRTT()))), true
}

// quorumCampaigns says whether the voters that sent this node a pre-vote
// request since it last heard from its leader, with this node, are a
// quorum of conf's voters. The leader's own requests do not count, nor do
// non-voters', nor requests older than the last contact (the leader spoke
// since: those campaigns were refused and the sender is a follower again).
func quorumCampaigns(conf raft.Configuration, self, leader raft.ServerID, lastContact time.Time, campaigning map[raft.ServerID]time.Time) bool {
	voters, count := 0, 0
	selfVotes := false
	for _, s := range conf.Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		voters++
		switch {
		case s.ID == self:
			selfVotes = true
		case s.ID == leader:
		case campaigning[s.ID].After(lastContact):
			count++
		}
	}
	if !selfVotes || count == 0 {
		return false
	}
	return count+1 >= voters/2+1
}

// yieldSplitVote breaks the tie of a split vote. Two candidates that
// campaign in the same term each vote for themselves and refuse the
// other; both then wait a random 1-2 election timeouts and campaign again,
// and when their timers fire within half an RTT of each other the vote
// splits again. A candidate that receives the vote request of a voter with
// a lower id for its own term therefore lengthens its current wait to 2-4
// election timeouts (raft re-arms a candidate's timer when the election
// timeout changes, which it notices when the heartbeat timeout is
// lowered; both are put back shortly after, which leaves the re-armed
// timer as it is). The other campaigns first, alone, and this node, still
// a candidate without a leader, grants its pre-vote and vote. Only the
// wait changes: raft's rules decide the votes, so this cannot elect two
// leaders, and if the other candidate dies the cluster elects after the
// longer wait. If raft has not re-armed the timer by the time the timeouts
// are put back (a very busy machine), nothing changes.
func (n *Node) yieldSplitVote(req raft.RequestVoteRequest) {
	from := string(req.GetRPCHeader().ID)
	if req.LeadershipTransfer || from == "" || from >= n.cfg.NodeID ||
		n.raft.State() != raft.Candidate || req.Term != n.raft.CurrentTerm() {
		return
	}
	n.cfg.Logger.Info("split vote: yielding the next campaign to the candidate with the lower id", "candidate", from, "term", req.Term)
	n.timers.lengthenCandidacy(n.stop, splitYieldSettle)
}

// splitYieldSettle is how long a changed election timeout stays set
// (yieldSplitVote, outrankCampaign): ample for raft's candidate loop to
// notice it on an idle machine.
const splitYieldSettle = 50 * time.Millisecond

// outrankCampaign handles a campaign this candidate refuses because its own
// log is longer: the voter behind it has dropped its leader (it would not
// campaign otherwise), so this node's next pre-vote may now pass, while
// the other's never will. Raft would wait out this node's election timer
// (1-2 election timeouts, 2-4 for the starter); it campaigns again after
// 1-2 leader lease timeouts instead, the shortest timer ReloadConfig
// allows (the lease bounds the heartbeat timeout, which bounds the
// election timeout). Only the wait changes.
func (n *Node) outrankCampaign(req raft.RequestPreVoteRequest) {
	if n.raft.State() != raft.Candidate {
		return
	}
	stats := n.raft.Stats()
	lastIndex, err1 := strconv.ParseUint(stats["last_log_index"], 10, 64)
	lastTerm, err2 := strconv.ParseUint(stats["last_log_term"], 10, 64)
	if err1 != nil || err2 != nil || !logAhead(lastTerm, lastIndex, req.LastLogTerm, req.LastLogIndex) {
		return
	}
	n.cfg.Logger.Info("a campaign of a voter with a shorter log: campaigning again soon", "candidate", string(req.GetRPCHeader().ID))
	n.timers.campaignSoon(n.stop, splitYieldSettle)
}

// logAhead says whether a log ending at (term, index) is more up to date
// than one ending at (otherTerm, otherIndex), as raft's vote compares them.
func logAhead(term, index, otherTerm, otherIndex uint64) bool {
	return term > otherTerm || term == otherTerm && index > otherIndex
}
