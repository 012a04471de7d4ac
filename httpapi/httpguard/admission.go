package httpguard

import (
	"context"
	"sync"
	"time"
)

// Admission bounds the expensive work running at once, as a capacity
// shared by weighted requests: a count of searches (weight 1 each), or
// the bytes of request bodies being decoded (weight: the body's size). A
// request that does not fit waits at most the admission wait (and never
// past its own deadline), then is refused: the caller answers 503 with
// Retry-After, instead of every request slowing down together until the
// node runs out of memory. Waiting requests are not queued in order: the
// first to fit when capacity is freed goes (a large one may then wait its
// whole wait and be refused while small ones pass).
type Admission struct {
	capacity int64
	wait     time.Duration

	mu    sync.Mutex
	used  int64
	freed chan struct{} // closed, and replaced, when capacity is given back
}

// NewAdmission gives capacity (<= 0: no bound, every Acquire succeeds)
// and a wait of at most wait for room.
func NewAdmission(capacity int64, wait time.Duration) *Admission {
	return &Admission{capacity: capacity, wait: wait, freed: make(chan struct{})}
}

// Acquire takes weight (at most the whole capacity, so that any request
// can run alone), waiting as above. It returns the function giving it
// back, or ok false when no room came in time.
func (a *Admission) Acquire(ctx context.Context, weight int64) (release func(), ok bool) {
	if a == nil || a.capacity <= 0 {
		return func() {}, true
	}
	weight = min(max(weight, 1), a.capacity)
	if !a.Take(ctx, weight) {
		return nil, false
	}
	var once sync.Once
	return func() { once.Do(func() { a.Give(weight) }) }, true
}

// Take takes weight, waiting as Acquire does (but weight is not capped
// at the capacity: more than it never fits); Give returns it.
func (a *Admission) Take(ctx context.Context, weight int64) bool {
	if a == nil || a.capacity <= 0 {
		return true
	}
	var timeout <-chan time.Time
	for {
		freed, ok := a.tryTake(weight)
		if ok {
			return true
		}
		if timeout == nil {
			if a.wait <= 0 {
				return false
			}
			t := time.NewTimer(a.wait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-freed:
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// TryTake takes weight if it fits now, without waiting (a search growing
// its share: waiting while holding a share could leave every search
// waiting on the others).
func (a *Admission) TryTake(weight int64) bool {
	if a == nil || a.capacity <= 0 {
		return true
	}
	_, ok := a.tryTake(weight)
	return ok
}

// tryTake takes weight if it fits; if not, it returns the channel closed
// when capacity is next given back.
func (a *Admission) tryTake(weight int64) (freed <-chan struct{}, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used+weight <= a.capacity {
		a.used += weight
		return nil, true
	}
	return a.freed, false
}

// Give returns weight taken by Take or TryTake.
func (a *Admission) Give(weight int64) {
	if a == nil || a.capacity <= 0 || weight == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.used -= weight
	close(a.freed)
	a.freed = make(chan struct{})
}

// InUse is the capacity taken now.
func (a *Admission) InUse() int64 {
	if a == nil {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.used
}
