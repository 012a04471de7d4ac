package httpguard

import (
	"context"
	"time"
)

// Admission bounds how many expensive requests run at once. A request
// past the bound waits for a slot at most the admission wait (and never
// past its own deadline), then is refused: the caller answers 503 with
// Retry-After, instead of every request slowing down together until the
// node runs out of memory.
type Admission struct {
	slots chan struct{}
	wait  time.Duration
}

// NewAdmission gives n slots (n <= 0: no bound, every Acquire succeeds)
// and a wait of at most wait for one.
func NewAdmission(n int, wait time.Duration) *Admission {
	a := &Admission{wait: wait}
	if n > 0 {
		a.slots = make(chan struct{}, n)
	}
	return a
}

// Acquire takes a slot, waiting as above. It returns the function giving
// the slot back, or ok false when none came free in time.
func (a *Admission) Acquire(ctx context.Context) (release func(), ok bool) {
	if a == nil || a.slots == nil {
		return func() {}, true
	}
	select {
	case a.slots <- struct{}{}:
		return a.release, true
	default:
	}
	if a.wait <= 0 {
		return nil, false
	}
	t := time.NewTimer(a.wait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return a.release, true
	case <-t.C:
	case <-ctx.Done():
	}
	return nil, false
}

func (a *Admission) release() { <-a.slots }

// InUse is the number of slots taken now.
func (a *Admission) InUse() int {
	if a == nil {
		return 0
	}
	return len(a.slots)
}
