package fsm

import (
	"fmt"
	"io"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/snapshot"
)

// Result is what Apply returns through raft's ApplyFuture.Response: the
// command's value, or its rejection.
type Result struct {
	Value any
	Err   error
}

// FSM applies placement commands to the state.
type FSM struct {
	mu    sync.RWMutex
	store *state.Store
	// OnApply, when set, is called after each command with its kind and
	// error (nil on success); used for metrics. It must not block.
	OnApply func(kind string, err error)
}

// New returns an FSM over an empty state.
func New() *FSM { return &FSM{store: state.New()} }

// Apply implements raft.FSM. A single-command entry returns its Result; a
// batch entry returns a []Result, one per command in order.
func (f *FSM) Apply(l *raft.Log) any {
	if l.Type != raft.LogCommand {
		return nil
	}
	entries, err := Decode(l.Data)
	if err != nil {
		// Continuing would let this replica diverge from the others.
		panic(fmt.Sprintf("fsm: cannot decode log entry %d: %v", l.Index, err))
	}
	results := make([]Result, len(entries))
	f.mu.Lock()
	for i, e := range entries {
		results[i].Value, results[i].Err = e.Cmd.Apply(f.store, state.Meta{Index: l.Index, Time: e.Time})
	}
	f.store.LastIndex = l.Index
	f.mu.Unlock()
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

// ApplyCommand applies a command directly, outside Raft. Tests and tools
// that build state without a cluster use it.
func (f *FSM) ApplyCommand(cmd state.Command, m state.Meta) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return cmd.Apply(f.store, m)
}

// Read runs fn with the state under a read lock. fn must not keep
// references to the state after it returns.
func (f *FSM) Read(fn func(s *state.Store)) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	fn(f.store)
}

// Snapshot implements raft.FSM. The image is taken under the read lock; it
// shares no mutable data with the store.
func (f *FSM) Snapshot() (raft.FSMSnapshot, error) {
	f.mu.RLock()
	img := f.store.Image()
	f.mu.RUnlock()
	return &fsmSnapshot{img: img}, nil
}

// Restore implements raft.FSM: it builds a new store from the snapshot and
// swaps it in.
func (f *FSM) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	img, err := snapshot.Read(rc)
	if err != nil {
		return err
	}
	store, err := state.Load(img)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.store = store
	f.mu.Unlock()
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
	f.mu.RLock()
	img := f.store.Image()
	f.mu.RUnlock()
	return snapshot.Digest(img), img.LastIndex
}

type fsmSnapshot struct{ img *state.Image }

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	if err := snapshot.Write(sink, s.img); err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) Release() {}
