package cluster

import (
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Ordered elections: the survivors of a dead leader campaign one after
// another in an order every node computes alike, instead of whenever their
// random timers fire.
//
// With raft's timers alone, each follower notices a dead leader at its
// first random tick (1-2 heartbeat timeouts apart) after a heartbeat
// timeout of silence, so the first notice comes 1-3 heartbeat timeouts
// after the last contact, and when two survivors notice within one-way
// delay of each other both pass the pre-vote and the vote splits (another
// 1-2 election timeouts). nudge.go already lets the survivor that
// completes a quorum join at once; what remained were the random first
// notice and the splits.
//
// The election order (electionOrder) lists the voters other than the
// leader: those outside the leader's region first (a region cut takes the
// leader's region with it), each part in configuration order, and the
// voters that did not answer this node's latest probe last. Every member
// knows the configuration and every member's region (meta.go), and the
// probes of a crashed voter fail for all, so all compute the same order
// for a given leader (a brief disagreement costs at most one more
// campaign, or a turn's wait).
//
//   - The first in the order, the starter, runs raft's leader check as soon
//     as it has not heard from the leader for a heartbeat timeout plus a
//     tenth (orderElections), not at its next random tick; the campaign
//     it starts waits 2-4 election timeouts before trying again, as it
//     only wakes the others.
//   - The other voters double their heartbeat and election timeouts while
//     they follow a leader (electionTimers.follow), so that their own
//     ticks do not notice the silence before the starter's campaign
//     reaches them.
//   - A follower that has seen a campaign, and has itself not heard from
//     the leader for a heartbeat timeout, joins it in its turn
//     (campaignTurn): the first one in the order that is not campaigning
//     yet joins at once, each later one a slot later unless a campaign
//     of the one before it arrived meanwhile, and nobody joins once a
//     quorum campaigns. Joining is raft's own check at the normal
//     heartbeat timeout; a voter that still knows a leader refuses
//     pre-votes, so each campaign fails until the one that completes a
//     quorum, which passes its pre-vote alone and wins: one election.
//
// Only timers change: every vote is raft's, so this cannot elect two
// leaders or a leader with a shorter log, and a starter that misjudges
// (a slow link to a live leader) only sends pre-votes that voters who
// still hear the leader refuse. When the starter dies with the leader,
// the next voter in the order takes over a turn's slot after the
// starter's time (checkAfter), the one after it a slot later, so the
// double failure costs a slot or two, not the waiters' doubled timers.
// Config.PlainElections turns it off (raft's timers and the nudge
// of nudge.go only).

// electionOrder is the order in which the voters other than leader join a
// campaign when leader goes silent: first those this node's probes found
// up (peerconns.go; a crashed voter would otherwise hold every later one
// back a turn, and a crashed starter leave the others on their doubled
// timers), then those found down; within each, those outside leader's
// region first, then those in it (when leader has a region); each part in
// configuration order.
func electionOrder(conf raft.Configuration, leader raft.ServerID, region func(raft.ServerID) string, down func(raft.ServerID) bool) []raft.ServerID {
	leaderRegion := region(leader)
	var parts [4][]raft.ServerID // up away, up near, down away, down near
	for _, s := range conf.Servers {
		if s.Suffrage != raft.Voter || s.ID == leader {
			continue
		}
		i := 0
		if leaderRegion != "" && region(s.ID) == leaderRegion {
			i++
		}
		if down(s.ID) {
			i += 2
		}
		parts[i] = append(parts[i], s.ID)
	}
	return slices.Concat(parts[:]...)
}

// electionOrder is the order for leader as this node sees it.
func (n *Node) electionOrder(conf raft.Configuration, leader raft.ServerID) []raft.ServerID {
	self := raft.ServerID(n.cfg.NodeID)
	return electionOrder(conf, leader, n.regionOf, func(id raft.ServerID) bool { return id != self && n.peers.isDown(id) })
}

// campaignTurn says whether self should join the campaigns it has seen
// since lastContact (campaigning: when each voter's latest pre-vote
// request arrived), and how many turns it waits: the voters before it in
// order that are not campaigning. It joins only while fewer than quorum
// voters campaign; latest is when the newest campaign it counts arrived.
func campaignTurn(order []raft.ServerID, self raft.ServerID, quorum int, lastContact time.Time, campaigning map[raft.ServerID]time.Time) (turn int, latest time.Time, join bool) {
	found, count := false, 0
	for _, id := range order {
		switch t, ok := campaigning[id]; {
		case id == self:
			found = true
		case ok && t.After(lastContact):
			count++
			if t.After(latest) {
				latest = t
			}
		case !found:
			turn++
		}
	}
	if !found || count == 0 || count >= quorum {
		return 0, latest, false
	}
	return turn, latest, true
}

// turnSlot is how long a voter waits per turn before it joins a campaign
// without the one before it: long enough for that voter's pre-vote to
// reach it (the longest round trip to a peer, plus a tenth of the
// heartbeat timeout for the machines), at most half a heartbeat timeout
// (also when no round trip is known yet).
func turnSlot(heartbeat, maxRTT time.Duration) time.Duration {
	if maxRTT <= 0 {
		return heartbeat / 2
	}
	return min(heartbeat/2, maxRTT+heartbeat/10)
}

// starterAfter is the silence after which the starter checks the leader:
// a heartbeat timeout, raft's own threshold, and a tenth (a leader reaches
// its followers every tenth to fifth of it).
func starterAfter(heartbeat time.Duration) time.Duration { return heartbeat + heartbeat/10 }

// electionPlace is this node's place in the election order for the leader
// it follows: 0 for the starter, -1 when it is not a following voter or
// knows no leader.
func (n *Node) electionPlace() int {
	_, leader := n.raft.LeaderWithID()
	fut := n.raft.GetConfiguration()
	if leader == "" || fut.Error() != nil {
		return -1
	}
	return slices.Index(n.electionOrder(fut.Configuration(), leader), raft.ServerID(n.cfg.NodeID))
}

// checkAfter is the silence after which the voter at place in the order
// checks the leader itself: the starter at starterAfter, each later one a
// turn's slot per place after it. Normally a campaign of the one before it
// arrives first and it joins that (nudge.go) instead; when the voters
// before it died with the leader (a shared rack, zone or power feed: the
// starter is found down only by probes, which stop once the leader goes
// quiet), the first survivor in the order starts after a few slots
// instead of on its doubled timers.
func checkAfter(place int, heartbeat, slot time.Duration) time.Duration {
	return starterAfter(heartbeat) + time.Duration(place)*slot
}

func (n *Node) regionOf(id raft.ServerID) string { return n.meta.member(string(id)).Region }

// orderElections keeps this node's timers to its place in the election
// order and checks the leader once it has been silent for its place's
// checkAfter (the starter's starterAfter).
func (n *Node) orderElections() {
	defer n.done.Done()
	hb := n.timing.Heartbeat
	for {
		changed := n.leaderChanges()
		wait := time.Second // the configuration may change without a new leader
		switch n.raft.State() {
		case raft.Leader:
			n.timers.follow(false)
		case raft.Follower:
			place := n.electionPlace()
			n.timers.follow(place > 0)
			if place < 0 {
				break
			}
			silent := time.Since(n.raft.LastContact())
			if wait = checkAfter(place, hb, turnSlot(hb, n.peers.maxRTT())) - silent; wait <= 0 {
				n.cfg.Logger.Info("the leader has been silent past this node's turn in the election order: checking the leader now",
					"place", place, "silent", silent.Round(time.Millisecond).String())
				n.timers.checkNow(true)
				wait = hb
			}
		}
		select {
		case <-n.stop:
			return
		case <-changed:
		case <-time.After(wait):
		}
	}
}

// electionTimers is the node's say over raft's follower and candidate
// timers. ReloadConfig is the only way in: raft wakes its follower loop
// (a leader check at once) or re-arms a candidate's election timer when
// the heartbeat timeout is lowered, and uses the new values at its next
// tick otherwise. Every change goes through here, so that the temporary
// ones put back what the node's role wants.
type electionTimers struct {
	mu   sync.Mutex
	raft *raft.Raft
	base Timing
	slow bool // a waiter: heartbeat and election timeouts doubled
}

func (e *electionTimers) want() (heartbeat, election time.Duration) {
	if e.slow {
		return 2 * e.base.Heartbeat, 2 * e.base.Election
	}
	return e.base.Heartbeat, e.base.Election
}

func (e *electionTimers) set(heartbeat, election time.Duration) error {
	rc := e.raft.ReloadableConfig()
	rc.HeartbeatTimeout, rc.ElectionTimeout = heartbeat, election
	return e.raft.ReloadConfig(rc)
}

// wake sets the timeouts to heartbeat and election so that raft notices
// at once: first a millisecond above, then down to them (raft notices a
// lowered heartbeat timeout, and then reads both as set).
func (e *electionTimers) wake(heartbeat, election time.Duration) {
	if e.set(heartbeat+time.Millisecond, max(election, heartbeat+time.Millisecond)) == nil {
		e.set(heartbeat, election)
	}
}

// follow sets the timeouts of a follower (or leader): doubled for a
// waiter, raft's configured ones otherwise; it also puts back what a
// campaign of checkNow lengthened.
func (e *electionTimers) follow(slow bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.slow = slow
	hb, el := e.want()
	if rc := e.raft.ReloadableConfig(); rc.HeartbeatTimeout != hb || rc.ElectionTimeout != el {
		e.set(hb, el)
	}
}

// checkNow makes the follower loop run raft's leader check at once, with
// the configured heartbeat timeout, rather than at its next random tick.
// The check is raft's: an election starts only if the leader has been
// silent for the heartbeat timeout. With lengthen, the campaign it starts
// waits 2-4 election timeouts instead of 1-2 before trying again (raft
// reads the election timeout when it becomes a candidate; follow puts it
// back once a leader is known): the starter's first campaign is refused
// by design, and only wakes the others, whose campaign it should not
// cross with a second one of its own while theirs is under way.
func (e *electionTimers) checkNow(lengthen bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.slow = false
	hb, el := e.want()
	if lengthen {
		el *= 2
	}
	e.wake(hb, el)
}

// campaignSoon re-arms a candidate's election timer at 1-2 leader lease
// timeouts, the least the other timeouts may be (see rearm).
func (e *electionTimers) campaignSoon(stop <-chan struct{}, settle time.Duration) {
	e.rearm(stop, settle, e.base.LeaderLease, e.base.LeaderLease)
}

// lengthenCandidacy re-arms a candidate's election timer at 2-4 election
// timeouts (see rearm).
func (e *electionTimers) lengthenCandidacy(stop <-chan struct{}, settle time.Duration) {
	e.rearm(stop, settle, e.base.Heartbeat, 2*e.base.Election)
}

// rearm sets the timeouts to heartbeat and election, which makes raft
// re-arm a candidate's election timer with the new election timeout, and
// puts the configured timeouts back after settle (raft has re-armed by
// then on a machine that is not starved; raising them again does not
// re-arm the timer, which stays as it is).
func (e *electionTimers) rearm(stop <-chan struct{}, settle, heartbeat, election time.Duration) {
	e.mu.Lock()
	e.slow = false
	e.wake(heartbeat, election)
	e.mu.Unlock()
	select {
	case <-stop:
	case <-time.After(settle):
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.set(e.want())
}
