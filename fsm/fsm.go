package fsm

import (
	"io"
	"runtime/debug"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
)

// Result is what Apply returns through raft's ApplyFuture.Response: the
// command's value, or its rejection.
type Result struct {
	Value any
	Err   error
}

// FSM applies placement commands to the state. It holds the current
// version of the state (a *state.Store that never changes once published):
// Apply builds the next version from it and swaps it in atomically, so
// readers take a version without any lock and keep it as long as they
// need, while writes go on.
type FSM struct {
	// writeMu serialises the writers (Apply, ApplyCommand, Restore); Raft
	// calls them from one goroutine, tools and tests from any. Readers
	// never take it.
	writeMu sync.Mutex
	current atomic.Pointer[state.Store]
	// OnApply, when set, is called after each command with its kind and
	// error (nil on success); used for metrics. It must not block.
	OnApply func(kind string, err error)
	// OnUndecodable, when set, is told of a committed entry Apply cannot
	// decode, and must not return (it stops the process); without it
	// Apply panics (undecodable.go).
	OnUndecodable func(*UndecodableEntry)
}

// New returns an FSM over an empty state.
func New() *FSM {
	f := &FSM{}
	f.current.Store(state.New())
	return f
}

// Apply implements raft.FSM. A single-command entry returns its Result; a
// batch entry returns a []Result, one per command in order. The entry's
// commands are applied to one new version, published once they all are:
// a reader sees the state before the entry or after it, never within.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	entries, err := Decode(l.Data)
	if err != nil {
		// Continuing would let this replica diverge from the others.
		f.StopAt(l.Index, l.Data, err)
	}
	results := make([]Result, len(entries))
	f.writeMu.Lock()
	next := f.current.Load().Edit()
	for i, e := range entries {
		results[i].Value, results[i].Err = next.Apply(e.Cmd, state.Meta{Index: l.Index, Time: e.Time})
	}
	next.LastIndex = l.Index
	f.current.Store(next)
	f.writeMu.Unlock()
	if f.OnApply != nil {
		for i, e := range entries {
			f.OnApply(e.Cmd.Kind(), results[i].Err)
		}
	}
	if len(results) == 1 {
		return results[0]
	}
	return results
}

// Results reads what Apply returned (a raft.ApplyFuture's Response) as
// one Result per command; nil when it is neither form.
func Results(resp any) []Result {
	switch r := resp.(type) {
	case Result:
		return []Result{r}
	case []Result:
		return r
	}
	return nil
}

// ApplyCommand applies a command directly, outside Raft, as a version of
// its own. Tests and tools that build state without a cluster use it.
func (f *FSM) ApplyCommand(cmd state.Command, m state.Meta) (any, error) {
	f.writeMu.Lock()
	defer f.writeMu.Unlock()
	next := f.current.Load().Edit()
	v, err := next.Apply(cmd, m)
	if err == nil {
		f.current.Store(next)
	}
	return v, err
}

// Version returns the current version of the state. It never changes: the
// caller may keep it, read it from any goroutine and for as long as it
// likes, without holding up writes.
func (f *FSM) Version() *state.Store { return f.current.Load() }

// Read runs fn over the current version. It takes no lock: fn may run as
// long as it needs without holding up writes or other reads, and sees one
// consistent version throughout.
func (f *FSM) Read(fn func(s *state.Store)) { fn(f.Version()) }

// Snapshot implements raft.FSM. It only takes the current version (O(1));
// Persist serialises it while later entries are applied.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	return &fsmSnapshot{version: f.Version()}, nil
}

// Restore implements raft.FSM: it builds a new store from the snapshot and
// swaps it in.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := ReadSnapshot(rc)
	if err != nil {
		return err
	}
	store, err := state.Load(img)
	if err != nil {
		return err
	}
	f.writeMu.Lock()
	f.current.Store(store)
	f.writeMu.Unlock()
	// The decoded snapshot and the store it replaced are garbage as large
	// as the state. Collect them and return the memory now: otherwise the
	// heap's next goal is set from the restore's peak (twice the state
	// under Go's default GOGC), and replaying the log after it fills that.
	debug.FreeOSMemory()
	return nil
}

// Digest is a hash of the whole state, equal on replicas that hold the
// same state.
func (f *FSM) Digest() (string, uint64) {
	img := f.Version().Image()
	return image.Digest(img), img.LastIndex
}

type fsmSnapshot struct{ version *state.Store }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := WriteSnapshot(sink, s.version.Image()); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
