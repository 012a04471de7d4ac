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

// running is raft's applied index while it replays (0: nothing handed).
var running = func() uint64 { return 0 }

func TestReplayAheadBoundsReads(t *testing.T) {
	f := newFakeApplier()
	f.index.Store(10) // restored from a snapshot at 10
	// Before raft runs, NewRaft reads the log for configurations: no
	// read waits or counts.
	early := newReplayAhead(10, 1, 20, f.applied, f.progress)
	early.read(11, 100, true)
	if early.mustWait(12) || early.bytes != 0 {
		t.Error("a read before raft runs waits or counts")
	}
	r := newReplayAhead(100, 2, 20, f.applied, f.progress)
	notYet := func() uint64 { return 10 }
	r.handed.Store(&notYet) // raft runs, has handed over up to 10

	// Entries of 40 bytes read one after the other: the third fills the
	// budget, the fourth waits.
	for idx := uint64(11); idx <= 13; idx++ {
		if r.mustWait(idx) {
			t.Fatalf("entry %d waits with %d bytes ahead, under the limit", idx, r.bytes)
		}
		r.read(idx, 40, true)
	}
	if !r.mustWait(14) {
		t.Fatalf("entry 14 does not wait with %d bytes read ahead (limit 100)", r.bytes)
	}
	// Fewer entries ahead than a batch: raft may not have handed any of
	// them over yet, so a read goes on whatever their size.
	big := newReplayAhead(100, 4, 20, f.applied, f.progress)
	big.handed.Store(&notYet)
	for idx := uint64(11); idx <= 13; idx++ {
		big.read(idx, 1000, true)
	}
	if big.mustWait(14) {
		t.Error("the fourth entry of a batch of 4 waits for the three before it")
	}
	big.read(14, 1000, true)
	if !big.mustWait(15) {
		t.Error("a read past a whole batch over the limit does not wait")
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
	r.read(14, 40, true)
	r.read(14, 40, true)
	r.read(15, 40, false) // a no-op: never applied, never counted
	if r.bytes != 120 {
		t.Errorf("bytes ahead %d after reading 12, 13 and 14 (twice), want 120", r.bytes)
	}
	// Once raft has handed over the log found at start, nothing waits
	// any more, whatever the state machine has applied.
	handed := func() uint64 { return 20 }
	r.handed.Store(&handed)
	r.read(16, 1000, true)
	if r.mustWait(17) || r.bytes != 0 {
		t.Errorf("after the replay: waits %v, bytes %d", r.mustWait(17), r.bytes)
	}
}

func TestReplayAheadWaitEndsOnProgress(t *testing.T) {
	f := newFakeApplier()
	r := newReplayAhead(10, 1, 100, f.applied, f.progress)
	r.handed.Store(&running)
	r.stallAfter = time.Hour // only progress may end this wait
	r.read(1, 10, true)
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
	r := newReplayAhead(10, 1, 100, f.applied, f.progress)
	r.handed.Store(&running)
	r.stallAfter = 10 * time.Millisecond
	r.read(1, 10, true)
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
