package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// sharedRounds runs a check in rounds that concurrent callers share: the
// leader's confirmation of its leadership (verifyLeader), and a follower's
// read index fetched from the leader (readindex.go). A caller joins the
// round that has not started yet, so the round that answers it began
// after the call: what the round establishes holds for every caller in
// it. Under load one round serves many callers, and up to maxRounds
// rounds overlap so that a caller waits for little more than one round.
// A round may also return a value every caller in it gets (the term a
// leader's round confirmed).
type sharedRounds struct {
	run func() (uint64, error) // one round; safe to run concurrently with itself

	mu      sync.Mutex
	next    *round // the round callers join; nil until one does
	running bool   // the loop is starting rounds

	// inflight counts the rounds under way (freed is closed when one
	// ends); last is when the loop started the last one, and took how
	// long one takes in nanoseconds (a moving average).
	slotMu   sync.Mutex
	inflight int
	freed    chan struct{}
	last     time.Time
	took     atomic.Int64
	// started counts the rounds run (for tests).
	started atomic.Int64
}

// round is one run of the check, shared by the callers that joined it.
type round struct {
	done chan struct{}
	val  uint64
	err  error
}

func newSharedRounds(run func() (uint64, error)) *sharedRounds {
	return &sharedRounds{run: run, freed: make(chan struct{})}
}

// join waits for the result of a round that starts after the call.
func (s *sharedRounds) join(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	if s.next == nil {
		s.next = &round{done: make(chan struct{})}
	}
	r := s.next
	if !s.running {
		s.running = true
		go s.loop()
	}
	s.mu.Unlock()
	select {
	case <-r.done:
		return r.val, r.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// maxRounds bounds the rounds in flight at once (a leader's round holds a
// heartbeat to every peer, a follower's a request to the leader).
const maxRounds = 8

// roundLimit is how many rounds may be in flight when one takes d. On a
// fast network one at a time is best: a round takes little longer than
// the reads it serves, and fewer rounds mean fewer messages to process
// per read. Across regions a read would wait for the round in flight and
// then its own, nearly two round trips; overlapping rounds (one more per
// millisecond a round takes) bring that to little more than one.
func roundLimit(d time.Duration) int {
	return min(max(int(d/time.Millisecond), 1), maxRounds)
}

// loop starts a round for the callers waiting, until none waits. Rounds
// overlap up to roundLimit, started at least a round's duration divided by
// that limit apart: a caller then waits for at most that before its round
// starts, and a round gathers every caller that came meanwhile.
func (s *sharedRounds) loop() {
	for {
		limit := s.acquire()
		gap := time.Duration(s.took.Load()) / time.Duration(limit)
		if wait := time.Until(s.last.Add(gap)); wait > 0 {
			time.Sleep(wait)
		}
		s.mu.Lock()
		r := s.next
		s.next = nil
		if r == nil {
			s.running = false
			s.mu.Unlock()
			s.release()
			return
		}
		s.mu.Unlock()
		s.started.Add(1)
		s.last = time.Now()
		go func(start time.Time) {
			r.val, r.err = s.run()
			close(r.done)
			if r.err == nil {
				d := int64(time.Since(start))
				s.took.Store((3*s.took.Load() + d) / 4)
			}
			s.release()
		}(s.last)
	}
}

// acquire waits until another round may start, counts it, and returns the
// limit it was admitted under.
func (s *sharedRounds) acquire() int {
	for {
		s.slotMu.Lock()
		limit := roundLimit(time.Duration(s.took.Load()))
		if s.inflight < limit {
			s.inflight++
			s.slotMu.Unlock()
			return limit
		}
		freed := s.freed
		s.slotMu.Unlock()
		<-freed
	}
}

func (s *sharedRounds) release() {
	s.slotMu.Lock()
	s.inflight--
	close(s.freed)
	s.freed = make(chan struct{})
	s.slotMu.Unlock()
}
