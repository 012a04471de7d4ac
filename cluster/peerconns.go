package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Followers keep Raft connections open to each other.
//
// raft's transport dials a peer the first time it sends it an RPC and then
// keeps the connection in its pool. A leader's followers never send each
// other anything until an election, so a candidate's first message to a
// peer (its pre-vote request) pays the TCP handshake first, and the TLS
// handshake with mutual TLS: one or two extra round trips in every
// election, 150-300 ms at 150 ms RTT. A follower therefore sends every
// other voter but the leader an RPC that changes nothing, every second and
// as soon as a new leader is known, which leaves an open connection in
// the pool for the next election (and replaces one a restarted peer left
// dead: the RPC fails on it, raft drops it, and the RPC is sent again
// until it goes over a new one; the pool may hold several dead ones).
//
// The RPC is a vote request of term 0 marked as a leadership transfer:
// raft refuses it at once, without a log line or any change, because
// every member's term is at least 1 (a request of an older term is
// refused, and the transfer mark only skips the "I have a leader" refusal,
// which logs a warning). A node still at term 0 (new, not yet reached by
// the leader) records a vote for term 0, in which nobody is ever elected.
// It goes through the transport below the ack tracker. Its outcome and
// round trip (over a connection that was open: a failed first try does
// not count) are kept per peer for the election order (electorder.go).

// A restarted peer leaves dead connections in the others' pools until
// their next probe; it probes them as soon as it knows the leader, and a
// follower probed by a peer it has not probed for half a period probes it
// back at once (nudgeElections sees the probe: raft observes every vote
// request), so the pools are fresh well within the period.

// peerProbeEvery is how often a follower refreshes its connections to the
// other voters.
const peerProbeEvery = time.Second

func (n *Node) keepPeerConnsWarm(trans raft.Transport) {
	defer n.done.Done()
	tick := time.NewTicker(peerProbeEvery)
	defer tick.Stop()
	var running sync.WaitGroup
	defer running.Wait()
	busy := map[raft.ServerID]bool{} // a probe still under way (a cut-off peer holds it for the transport's timeout)
	sent := map[raft.ServerID]time.Time{}
	var mu sync.Mutex
	local := trans.EncodePeer(raft.ServerID(n.cfg.NodeID), trans.LocalAddr())
	for {
		changed := n.leaderChanges()
		only := raft.ServerID("") // a peer whose probe arrived: probe it back
		select {
		case <-n.stop:
			return
		case <-tick.C:
		case <-changed:
		case only = <-n.probedBy:
		}
		if n.raft.State() != raft.Follower {
			continue
		}
		fut := n.raft.GetConfiguration()
		if fut.Error() != nil {
			continue
		}
		_, leader := n.raft.LeaderWithID()
		if !isVoter(fut.Configuration(), raft.ServerID(n.cfg.NodeID)) {
			continue // removed, or a non-voter: it never campaigns
		}
		if leader == "" || time.Since(n.raft.LastContact()) > n.timing.Heartbeat/2 {
			// An election is under way or may begin: a probe now would
			// hold the pooled connection to a peer while raft sends its
			// vote requests, and raft's would then dial a new one (2.5
			// round trips with TLS; seen to reorder campaigns and split
			// the vote). The loop wakes at a leader change, too, which
			// is how it would meet the start of an election.
			continue
		}
		for _, s := range fut.Configuration().Servers {
			if s.Suffrage != raft.Voter || s.ID == leader || s.ID == raft.ServerID(n.cfg.NodeID) ||
				only != "" && (s.ID != only || time.Since(sent[s.ID]) < peerProbeEvery/2) {
				continue
			}
			mu.Lock()
			if busy[s.ID] {
				mu.Unlock()
				continue
			}
			busy[s.ID] = true
			sent[s.ID] = time.Now()
			mu.Unlock()
			running.Add(1)
			go func(s raft.Server) {
				defer running.Done()
				req := raft.RequestVoteRequest{
					RPCHeader:          raft.RPCHeader{ProtocolVersion: n.protocolVersion, ID: []byte(n.cfg.NodeID), Addr: local},
					Term:               0,
					LeadershipTransfer: true,
				}
				var resp raft.RequestVoteResponse
				sent := time.Now()
				if trans.RequestVote(s.ID, s.Address, &req, &resp) == nil {
					n.peers.answered(s.ID, time.Since(sent))
				} else {
					// Most likely pooled connections the peer's restart
					// left dead: raft drops each one that fails, and once
					// the pool is empty this dials afresh. A dead pooled
					// connection fails at once; a slow failure (a peer cut
					// off) is not tried again and again.
					var err error
					for try := 0; try <= raftConnPool; try++ {
						sent = time.Now()
						if err = trans.RequestVote(s.ID, s.Address, &req, &resp); err == nil || time.Since(sent) > time.Second {
							break
						}
					}
					n.peers.tried(s.ID, err == nil)
				}
				mu.Lock()
				busy[s.ID] = false
				mu.Unlock()
			}(s)
		}
	}
}

func isVoter(conf raft.Configuration, id raft.ServerID) bool {
	for _, s := range conf.Servers {
		if s.ID == id {
			return s.Suffrage == raft.Voter
		}
	}
	return false
}

// peerProbes keeps what the latest probe of each voter found: whether it
// answered, and the round trip when it answered on an open connection.
type peerProbes struct {
	mu   sync.Mutex
	rtt  map[raft.ServerID]time.Duration
	down map[raft.ServerID]bool
}

func (p *peerProbes) answered(id raft.ServerID, rtt time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rtt == nil {
		p.rtt, p.down = map[raft.ServerID]time.Duration{}, map[raft.ServerID]bool{}
	}
	p.rtt[id], p.down[id] = rtt, false
}

func (p *peerProbes) tried(id raft.ServerID, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down == nil {
		p.rtt, p.down = map[raft.ServerID]time.Duration{}, map[raft.ServerID]bool{}
	}
	p.down[id] = !ok
}

// isDown says whether id's latest probe failed (a voter never probed is
// not down).
func (p *peerProbes) isDown(id raft.ServerID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.down[id]
}

// maxRTT is the longest of the round trips kept (0: none yet).
func (p *peerProbes) maxRTT() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	var longest time.Duration
	for _, d := range p.rtt {
		longest = max(longest, d)
	}
	return longest
}

// probed notes a probe from peer id (a vote request of term 0 marked as a
// transfer), for keepPeerConnsWarm to probe it back.
func (n *Node) probed(req raft.RequestVoteRequest) {
	if req.Term != 0 || !req.LeadershipTransfer || len(req.GetRPCHeader().ID) == 0 {
		return
	}
	select {
	case n.probedBy <- raft.ServerID(req.GetRPCHeader().ID):
	default:
	}
}
