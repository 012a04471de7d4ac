package cluster

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeApplier stands for the state machine: its applied index and the
// signal closed at each applied entry.
type fakeApplier struct {
	index atomic.Uint64
	mu    sync.Mutex
	sig   chan struct{}
}

func newFakeApplier() *fakeApplier { return &fakeApplier{sig: make(chan struct{})} }

func (f *fakeApplier) applied() uint64 { return f.index.Load() }

func (f *fakeApplier) progress() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sig
}

func (f *fakeApplier) apply(idx uint64) {
	f.index.Store(idx)
	f.mu.Lock()
	close(f.sig)
	f.sig = make(chan struct{})
	f.mu.Unlock()
}

func TestReplayAheadBoundsReads(t *testing.T) {
	f := newFakeApplier()
	f.index.Store(10) // restored from a snapshot at 10
	r := newReplayAhead(100, 20, f.applied, f.progress)

	// Entries of 40 bytes read one after the other: the third fills the
	// budget, the fourth waits.
	for idx := uint64(11); idx <= 13; idx++ {
		if r.mustWait(idx) {
			t.Fatalf("entry %d waits with %d bytes ahead, under the limit", idx, r.bytes)
		}
		r.read(idx, 40)
	}
	if !r.mustWait(14) {
		t.Fatalf("entry 14 does not wait with %d bytes read ahead (limit 100)", r.bytes)
	}
	// Entries already applied, and entries past the log found at start
	// (written since), never wait.
	if r.mustWait(10) || r.mustWait(21) {
		t.Error("an applied entry or one written after the start waits")
	}
	// The state machine applies 11: 80 bytes ahead, 14 may be read.
	f.apply(11)
	if r.mustWait(14) {
		t.Errorf("entry 14 waits with %d bytes ahead after 11 was applied", r.bytes)
	}
	// Read twice (a retry), an entry counts once.
	r.read(14, 40)
	r.read(14, 40)
	if r.bytes != 120 {
		t.Errorf("bytes ahead %d after reading 12, 13 and 14 (twice), want 120", r.bytes)
	}
	// Once the log found at start is applied, nothing waits any more.
	f.apply(20)
	r.read(15, 1000)
	if r.mustWait(16) || r.bytes != 0 {
		t.Errorf("after the replay: waits %v, bytes %d", r.mustWait(16), r.bytes)
	}
}

func TestReplayAheadWaitEndsOnProgress(t *testing.T) {
	f := newFakeApplier()
	r := newReplayAhead(10, 100, f.applied, f.progress)
	r.stallAfter = time.Hour // only progress may end this wait
	r.read(1, 10)
	done := make(chan struct{})
	go func() {
		r.wait(2)
		close(done)
	}()
	f.apply(1)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the read still waits 10 s after the entry ahead of it was applied")
	}
}

// A state machine that makes no progress does not hold a read for ever:
// the entries ahead may be ones it cannot apply before the read is done.
// The test is about time itself: stallAfter is what it checks.
func TestReplayAheadWaitEndsOnStall(t *testing.T) {
	f := newFakeApplier()
	r := newReplayAhead(10, 100, f.applied, f.progress)
	r.stallAfter = 10 * time.Millisecond
	r.read(1, 10)
	done := make(chan struct{})
	go func() {
		r.wait(2)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the read still waits 10 s after the state machine stopped progressing")
	}
}
