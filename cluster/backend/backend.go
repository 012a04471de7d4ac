package backend

import (
	"errors"
	"sync"
	"time"
)

var (
	// ErrNotLeader: this node cannot take the request now and the command
	// was certainly not appended to the log.
	ErrNotLeader = errors.New("not the leader")
	// ErrUnknownOutcome: the command was handed to Raft but leadership was
	// lost or the node stopped before its result was known; it may commit.
	ErrUnknownOutcome = errors.New("outcome of the write is unknown")
)

// NotAppliedHeader marks a 503 whose write certainly did not reach the
// log (ErrNotLeader: the node was not, or no longer, leading): a
// forwarding node sends it again to the next leader instead of relaying
// the 503.
const NotAppliedHeader = "X-Placementd-Not-Applied"

// Level is how fresh the state a read is served from must be
// (docs/cluster.md "Read levels").
type Level int

const (
	// Linearizable (the zero value): the state includes every write
	// acknowledged before the read began. The node runs its read barrier
	// before the read, unless the caller has made the state that fresh
	// already (ReadOptions.Confirmed).
	Linearizable Level = iota
	// Bounded: the node's newest confirmation with the leader is at most
	// ReadOptions.MaxStaleness old, so the state includes every write
	// acknowledged before that long ago; when it is older, the node runs
	// its read barrier instead, as for a linearizable read.
	Bounded
	// Stale: the node's state as it is, however old.
	Stale
)

// String is the level's name in the X-Placementd-Read-Level header.
func (l Level) String() string {
	switch l {
	case Bounded:
		return "bounded"
	case Stale:
		return "stale"
	}
	return "linearizable"
}

// ReadOptions say how a read is served (httpapi.Backend's Read). The zero
// value is a linearizable read through the node's read barrier, what the
// API asks for when nothing else was said.
type ReadOptions struct {
	Level Level
	// MaxStaleness is a Bounded read's bound on the age of the node's
	// newest confirmation.
	MaxStaleness time.Duration
	// Confirmed says that the caller has already made sure the state meets
	// Level (the front's read index on a follower, or its own check of a
	// bounded read's confirmation when the request came): the node reads
	// its state as it is, without a barrier or a second check.
	Confirmed bool
	// Served, when set, is told the index of every state the request was
	// served from, so that the answer can say which state it came from.
	Served *Served
}

// Served collects the index of the states one request was served from:
// the oldest, when it reads more than once. Safe for concurrent use.
type Served struct {
	mu    sync.Mutex
	index uint64
	read  bool
}

// Note records a read of the state at index.
func (s *Served) Note(index uint64) {
	s.mu.Lock()
	if !s.read || index < s.index {
		s.index, s.read = index, true
	}
	s.mu.Unlock()
}

// Index is the oldest state noted; false when nothing was read.
func (s *Served) Index() (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.index, s.read
}
