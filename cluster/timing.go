package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Timing is the Raft timing of a node: how quickly a dead leader is
// replaced, against how long a slow network may go quiet before an
// election starts for nothing. docs/cluster.md gives values per RTT.
type Timing struct {
	// Heartbeat (raft's HeartbeatTimeout): a follower that has not heard
	// from the leader for this long, checked at random intervals of 1-2x
	// it, starts an election; the leader sends heartbeats every tenth.
	Heartbeat time.Duration
	// Election (ElectionTimeout): a candidate that has not won within 1-2x
	// this tries again.
	Election time.Duration
	// LeaderLease (LeaderLeaseTimeout): a leader that has not heard from a
	// quorum for this long steps down.
	LeaderLease time.Duration
	// Commit (CommitTimeout): with no new write, the leader still sends an
	// append this often, so followers learn the commit index.
	Commit time.Duration
}

// baseTiming is hashicorp/raft's defaults: multiplier 1, the timing
// placementd had before it could be set.
var baseTiming = Timing{Heartbeat: time.Second, Election: time.Second, LeaderLease: 500 * time.Millisecond, Commit: 50 * time.Millisecond}

// TimingProfile is the base timing with the heartbeat, election and lease
// timeouts scaled by multiplier, as Consul's raft_multiplier does (the
// commit timeout paces idle appends and does not scale).
func TimingProfile(multiplier float64) Timing {
	scale := func(d time.Duration) time.Duration {
		return time.Duration(float64(d) * multiplier).Round(time.Millisecond)
	}
	t := baseTiming
	t.Heartbeat, t.Election, t.LeaderLease = scale(t.Heartbeat), scale(t.Election), scale(t.LeaderLease)
	return t
}

// orBase fills the zero fields from the base timing.
func (t Timing) orBase() Timing {
	for _, f := range []struct{ v, base *time.Duration }{
		{&t.Heartbeat, &baseTiming.Heartbeat}, {&t.Election, &baseTiming.Election},
		{&t.LeaderLease, &baseTiming.LeaderLease}, {&t.Commit, &baseTiming.Commit},
	} {
		if *f.v == 0 {
			*f.v = *f.base
		}
	}
	return t
}

// Validate checks the timeouts against each other with raft's own rules,
// so that a bad setting stops the node at start with a message that names
// it, not inside raft.
func (t Timing) Validate() error {
	t = t.orBase()
	var errs []error
	for _, f := range []struct {
		name string
		v    time.Duration
		min  time.Duration
	}{
		{"heartbeat timeout", t.Heartbeat, 5 * time.Millisecond},
		{"election timeout", t.Election, 5 * time.Millisecond},
		{"leader lease timeout", t.LeaderLease, 5 * time.Millisecond},
		{"commit timeout", t.Commit, time.Millisecond},
	} {
		if f.v < f.min {
			errs = append(errs, fmt.Errorf("%s %s is below raft's minimum %s", f.name, f.v, f.min))
		}
	}
	if t.LeaderLease > t.Heartbeat {
		errs = append(errs, fmt.Errorf("leader lease timeout %s is longer than the heartbeat timeout %s: a leader must notice it lost the quorum before the followers elect another", t.LeaderLease, t.Heartbeat))
	}
	if t.Election < t.Heartbeat {
		errs = append(errs, fmt.Errorf("election timeout %s is shorter than the heartbeat timeout %s", t.Election, t.Heartbeat))
	}
	if t.Commit >= t.Heartbeat {
		errs = append(errs, fmt.Errorf("commit timeout %s is not below the heartbeat timeout %s: idle followers would learn of commits only after they could have started an election", t.Commit, t.Heartbeat))
	}
	return errors.Join(errs...)
}

func (t Timing) apply(rc *raft.Config) {
	t = t.orBase()
	rc.HeartbeatTimeout, rc.ElectionTimeout = t.Heartbeat, t.Election
	rc.LeaderLeaseTimeout, rc.CommitTimeout = t.LeaderLease, t.Commit
}

// Timing is the node's Raft timing, as Raft was started with it.
func (n *Node) Timing() Timing { return n.timing }

func (t Timing) millis() map[string]int64 {
	return map[string]int64{"heartbeat": t.Heartbeat.Milliseconds(), "election": t.Election.Milliseconds(),
		"leader_lease": t.LeaderLease.Milliseconds(), "commit": t.Commit.Milliseconds()}
}

func timingOf(rc *raft.Config) Timing {
	return Timing{Heartbeat: rc.HeartbeatTimeout, Election: rc.ElectionTimeout, LeaderLease: rc.LeaderLeaseTimeout, Commit: rc.CommitTimeout}
}
