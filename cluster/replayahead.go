package cluster

import (
	"sync"
	"sync/atomic"
	"time"
)

// replayAhead bounds how far Raft reads the log ahead of the state machine
// while a node replays the log it found at start.
//
// Raft applies committed entries by reading them from the log store and
// queueing them for the state machine, up to 128 batches of 64 entries,
// without waiting for them to be applied. At start every entry since the
// last snapshot is committed at once: an import's chunks (a MiB each, up to
// --snapshot-log-mb of them) were all read into memory beside the state
// they were building. replayAhead makes a read of an entry the state
// machine has not reached wait while the entries read ahead of it hold
// limit bytes or more, so the replay holds about limit bytes of entries.
// Raft hands entries over a batch at a time (MaxAppendEntries): a read
// waits only while at least a batch of entries is read ahead, one of which
// has then been handed over, or the state machine could wait for the very
// batch being read. With an import's MiB chunks that is 64 to 128 MiB.
//
// It only holds up reads of entries that were in the log at start, until
// the state machine has applied them all; after that it does nothing. A
// read also goes on once the state machine has made no progress for
// stallAfter: the entries ahead of it may be ones it cannot apply before
// this read is done (a new leader sending its followers entries not yet
// committed), and a slow read is better than none.
// replayAheadBytes is how many bytes of entries a replay reads ahead of the
// state machine: enough to keep it busy, small beside a large state. A
// variable for tests.
var replayAheadBytes int64 = 64 << 20

type replayAhead struct {
	limit      int64
	batch      int           // raft's MaxAppendEntries
	lastAtOpen uint64        // the log's last index when the node opened
	stallAfter time.Duration // no progress for that long: read anyway
	applied    func() uint64
	progress   func() <-chan struct{} // closed at the next applied entry
	// handed is raft's applied index (what it handed to the state
	// machine), set once raft runs: the replay is over when it reaches
	// lastAtOpen. The state machine's own index may never get there: the
	// last entries may be no-ops or configurations, which it never sees.
	handed atomic.Pointer[func() uint64]

	mu    sync.Mutex
	done  bool             // the replay is over: no more waits
	ahead map[uint64]int64 // bytes of entries read beyond the applied index
	bytes int64            // their sum
	peak  int64            // the most bytes ahead at once, for tests
}

func newReplayAhead(limit int64, batch int, lastAtOpen uint64, applied func() uint64, progress func() <-chan struct{}) *replayAhead {
	return &replayAhead{limit: limit, batch: max(batch, 1), lastAtOpen: lastAtOpen, stallAfter: 2 * time.Second,
		applied: applied, progress: progress, ahead: map[uint64]int64{}}
}

// prune forgets the entries the state machine has applied; it reports
// whether the replay is over. Called with mu held.
func (r *replayAhead) prune() bool {
	if r.done {
		return true
	}
	applied := r.applied()
	for idx, n := range r.ahead {
		if idx <= applied {
			delete(r.ahead, idx)
			r.bytes -= n
		}
	}
	if h := r.handed.Load(); h != nil && (*h)() >= r.lastAtOpen {
		r.done, r.ahead, r.bytes = true, nil, 0
	}
	return r.done
}

// wait holds a read of entry idx while it must (mustWait) and the state
// machine still progresses.
func (r *replayAhead) wait(idx uint64) {
	for {
		// The signal is taken before the check: an entry applied in
		// between closes it.
		next := r.progress()
		if !r.mustWait(idx) {
			return
		}
		select {
		case <-next:
		case <-time.After(r.stallAfter):
			return
		}
	}
}

// mustWait reports whether a read of entry idx must wait: an entry of the
// log found at start that the state machine has not applied yet, while
// the entries read ahead of it hold limit bytes and make a batch.
func (r *replayAhead) mustWait(idx uint64) bool {
	// Before raft runs (handed unset), NewRaft reads the log for its
	// configurations: nothing is applied meanwhile, and nothing waits.
	if idx > r.lastAtOpen || r.handed.Load() == nil {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return !r.prune() && idx > r.applied() && r.bytes >= r.limit && len(r.ahead) >= r.batch
}

// read records n bytes of entry idx as read. Only commands count: other
// entries never reach the state machine's Apply, which is what frees them.
func (r *replayAhead) read(idx uint64, n int64, command bool) {
	if idx > r.lastAtOpen || !command || r.handed.Load() == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.prune() || idx <= r.applied() {
		return
	}
	if old, ok := r.ahead[idx]; ok {
		r.bytes -= old
	}
	r.ahead[idx] = n
	r.bytes += n
	r.peak = max(r.peak, r.bytes)
}
