package fsm

import (
	"bytes"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/statecheck"
)

const versionHosts = 8

func hostUUID(i int) string     { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
func consumerUUID(i int) string { return fmt.Sprintf("c0000000-0000-4000-8000-%012d", i) }

// hostsFSM is an FSM with versionHosts providers of 1000 VCPU each, built
// through Apply; next is the next free log index.
func hostsFSM(t *testing.T) (f *FSM, next uint64) {
	f = New()
	next = 1
	apply := func(cmd state.Command) {
		if res := f.Apply(entry(t, next, cmd)).(Result); res.Err != nil {
			t.Fatalf("%s: %v", cmd.Kind(), res.Err)
		}
		next++
	}
	for i := range versionHosts {
		apply(&state.CreateProvider{UUID: hostUUID(i), Name: fmt.Sprint("host", i)})
		apply(&state.SetInventories{Provider: hostUUID(i), Inventories: []state.InventoryValues{
			{Class: "VCPU", Total: 1000, MinUnit: 1, MaxUnit: 1000, StepSize: 1, AllocationRatio: 1},
		}})
	}
	return f, next
}

// claim puts consumer c's allocation of used VCPU on host h; used 0
// empties it.
func claim(c, h int, used int64) state.Command {
	var allocs []state.AllocationRequest
	if used > 0 {
		allocs = []state.AllocationRequest{{Provider: hostUUID(h), Class: "VCPU", Used: used}}
	}
	return &state.SetAllocations{Consumers: []state.ConsumerAllocations{{
		Consumer: consumerUUID(c), ProjectID: "p", UserID: "u", Allocations: allocs,
	}}}
}

// writeLoad is a bounded run of allocation writes (claims, moves,
// removals), some entries batches of several commands, starting at log
// index next.
func writeLoad(t *testing.T, f *FSM, next uint64, entries int) {
	for i := range entries {
		var cmds []state.Command
		for j := range 1 + i%3 {
			n := i*3 + j
			cmds = append(cmds, claim(n%40, n%versionHosts, int64(1+n%5)))
			if n%7 == 0 {
				cmds = append(cmds, claim((n+13)%40, 0, 0))
			}
		}
		var data []byte
		if len(cmds) == 1 {
			data = encode(t, cmds[0])
		} else {
			var parts [][]byte
			for _, c := range cmds {
				parts = append(parts, encode(t, c))
			}
			data = EncodeBatch(parts)
		}
		f.Apply(&raft.Log{Index: next, Type: raft.LogCommand, Data: data})
		next++
	}
}

func encode(t *testing.T, cmd state.Command) []byte {
	data, err := Encode(cmd, t0)
	if err != nil {
		t.Error(err)
	}
	return data
}

// consistentVersion requires a version to be consistent in itself: the usage
// each provider records is the sum of the allocations against it, in
// total too, and every index is what Load rebuilds from the data.
func consistentVersion(v *state.Store) error {
	var usages, allocated int64
	perProvider := map[string]int64{}
	for p := range v.ProvidersInOrder() {
		usages += p.Usages["VCPU"]
	}
	for c := range v.Consumers.Values() {
		for _, a := range c.Allocations {
			allocated += a.Used
			perProvider[a.ProviderUUID] += a.Used
		}
	}
	if usages != allocated {
		return fmt.Errorf("version at %d: usages sum to %d, allocations to %d", v.LastIndex, usages, allocated)
	}
	for p := range v.ProvidersInOrder() {
		if p.Usages["VCPU"] != perProvider[p.UUID] {
			return fmt.Errorf("version at %d: %s records %d used, its allocations %d", v.LastIndex, p.Name, p.Usages["VCPU"], perProvider[p.UUID])
		}
	}
	return statecheck.Consistent(v)
}

// Readers take versions while Apply runs (run with -race): every version
// is consistent in itself, versions only move forward, and a version a
// reader keeps does not change while later ones are published.
func TestReadersSeeConsistentVersionsWhileApplyRuns(t *testing.T) {
	f, next := hostsFSM(t)
	writesDone := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			kept := f.Version()
			keptDigest := statecheck.Digest(kept)
			last := kept.LastIndex
			// Bounded by the writer: it stops when the writes are done
			// (and after at most 100,000 reads).
			for reads := 0; reads < 100_000; reads++ {
				select {
				case <-writesDone:
					reads = 100_000
				default:
				}
				var err error
				f.Read(func(v *state.Store) {
					if v.LastIndex < last {
						err = fmt.Errorf("a read saw index %d after %d", v.LastIndex, last)
						return
					}
					last = v.LastIndex
					err = consistentVersion(v)
				})
				if err != nil {
					errs <- err
					return
				}
			}
			if statecheck.Digest(kept) != keptDigest {
				errs <- fmt.Errorf("a kept version changed")
			}
		}()
	}
	writeLoad(t, f, next, 300)
	close(writesDone)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := consistentVersion(f.Version()); err != nil {
		t.Fatal(err)
	}
}

// A snapshot is the version current when it was taken: Persist writes it
// while later entries are applied, and restoring it gives that version's
// digest, not the newer one's.
func TestSnapshotPersistsItsVersionWhileWritesGoOn(t *testing.T) {
	f, next := hostsFSM(t)
	writeLoad(t, f, next, 50)
	next += 50
	want, wantIndex := f.Digest()
	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	persisted := make(chan error, 1)
	sink := &memSink{}
	go func() { persisted <- snap.Persist(sink) }()
	writeLoad(t, f, next, 200)
	if err := <-persisted; err != nil {
		t.Fatal(err)
	}
	snap.Release()
	if now, _ := f.Digest(); now == want {
		t.Fatal("the writes after the snapshot changed nothing: the test proves nothing")
	}
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if got, gotIndex := g.Digest(); got != want || gotIndex != wantIndex {
		t.Fatalf("restored %s@%d, want the snapshot's version %s@%d", got, gotIndex, want, wantIndex)
	}
	if err := consistentVersion(g.Version()); err != nil {
		t.Fatal(err)
	}
}

// A rejected command inside a batch leaves no trace in the version the
// batch publishes: the batch's result is that of its accepted command
// alone.
func TestRejectedCommandInBatchChangesNothing(t *testing.T) {
	f, next := hostsFSM(t)
	g, _ := hostsFSM(t)
	writeLoad(t, f, next, 20)
	writeLoad(t, g, next, 20)
	next += 20
	accepted, rejected := claim(100, 1, 3), claim(101, 2, 5000) // more than the host has
	results := Results(f.Apply(&raft.Log{Index: next, Type: raft.LogCommand,
		Data: EncodeBatch([][]byte{encode(t, accepted), encode(t, rejected)})}))
	if len(results) != 2 || results[0].Err != nil || results[1].Err == nil {
		t.Fatalf("results %+v", results)
	}
	g.Apply(&raft.Log{Index: next, Type: raft.LogCommand, Data: encode(t, accepted)})
	if statecheck.Digest(f.Version()) != statecheck.Digest(g.Version()) {
		t.Fatal("the rejected command of a batch left a trace")
	}
	if err := consistentVersion(f.Version()); err != nil {
		t.Fatal(err)
	}
}
