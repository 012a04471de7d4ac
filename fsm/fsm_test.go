package fsm

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm/state"
)

var t0 = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func entry(t *testing.T, index uint64, cmd state.Command) *raft.Log {
	t.Helper()
	data, err := Encode(cmd, t0.Add(time.Duration(index)*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return &raft.Log{Index: index, Type: raft.LogCommand, Data: data}
}

func TestEnvelopeRoundTrip(t *testing.T) {
	data, err := Encode(&state.CreateResourceClass{Name: "CUSTOM_A", IfMissing: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Fatalf("decoded %d commands", len(entries))
	}
	got, ok := entries[0].Cmd.(*state.CreateResourceClass)
	if !ok || got.Name != "CUSTOM_A" || !got.IfMissing || !entries[0].Time.Equal(t0) {
		t.Fatalf("decoded %#v at %v", entries[0].Cmd, entries[0].Time)
	}
}

// A batch keeps each command's order and its proposer's time.
func TestBatchRoundTrip(t *testing.T) {
	var parts [][]byte
	for i, name := range []string{"CUSTOM_A", "CUSTOM_B", "CUSTOM_C"} {
		data, err := Encode(&state.CreateTrait{Name: name}, t0.Add(time.Duration(i)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, data)
	}
	entries, err := Decode(EncodeBatch(parts))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("decoded %d commands, want 3", len(entries))
	}
	for i, name := range []string{"CUSTOM_A", "CUSTOM_B", "CUSTOM_C"} {
		got, ok := entries[i].Cmd.(*state.CreateTrait)
		if !ok || got.Name != name || !entries[i].Time.Equal(t0.Add(time.Duration(i)*time.Millisecond)) {
			t.Errorf("command %d: %#v at %v", i, entries[i].Cmd, entries[i].Time)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for name, data := range map[string]string{
		"not json":      "{",
		"unknown kind":  `{"v":1,"k":"no.such","t":"2026-01-01T00:00:00Z","p":{}}`,
		"newer format":  `{"v":99,"k":"trait.create","t":"2026-01-01T00:00:00Z","p":{}}`,
		"bad payload":   `{"v":1,"k":"trait.create","t":"2026-01-01T00:00:00Z","p":{"Name":5}}`,
		"batch in v1":   `{"v":1,"k":"batch","p":[` + traitEntry + `,` + traitEntry + `]}`,
		"batch of one":  `{"v":2,"k":"batch","p":[` + traitEntry + `]}`,
		"empty batch":   `{"v":2,"k":"batch","p":[]}`,
		"nested batch":  `{"v":2,"k":"batch","p":[` + traitEntry + `,{"v":2,"k":"batch","p":[` + traitEntry + `,` + traitEntry + `]}]}`,
		"bad element":   `{"v":2,"k":"batch","p":[` + traitEntry + `,{"v":1,"k":"no.such","p":{}}]}`,
		"newer element": `{"v":2,"k":"batch","p":[` + traitEntry + `,{"v":99,"k":"trait.create","p":{}}]}`,
		"batch object":  `{"v":2,"k":"batch","p":{}}`,
	} {
		if _, err := Decode([]byte(data)); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

const traitEntry = `{"v":1,"k":"trait.create","t":"2026-01-01T00:00:00Z","p":{"Name":"CUSTOM_T"}}`

// Apply gives a batch one result per command, in order; a rejected command
// changes nothing and does not stop the ones after it, and each command
// sees the ones before it.
func TestApplyBatch(t *testing.T) {
	var parts [][]byte
	for i, cmd := range []state.Command{
		&state.CreateTrait{Name: "CUSTOM_X"},
		&state.DeleteTrait{Name: "HW_CPU_X86_AVX"}, // standard: rejected
		&state.DeleteTrait{Name: "CUSTOM_X"},       // sees the first
		&state.CreateTrait{Name: "CUSTOM_Y"},
	} {
		data, err := Encode(cmd, t0.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, data)
	}
	log := &raft.Log{Index: 7, Type: raft.LogCommand, Data: EncodeBatch(parts)}
	var kinds []string
	f := New()
	f.OnApply = func(kind string, err error) { kinds = append(kinds, kind) }
	results, ok := f.Apply(log).([]Result)
	if !ok || len(results) != 4 {
		t.Fatalf("batch apply returned %#v", f.Apply(log))
	}
	if results[0].Err != nil || results[2].Err != nil || results[3].Err != nil {
		t.Fatalf("accepted commands failed: %+v", results)
	}
	if se, ok := results[1].Err.(*state.Error); !ok || se.Kind != state.BadRequest {
		t.Fatalf("deleting a standard trait: %+v", results[1])
	}
	if len(kinds) != 4 || kinds[1] != "trait.delete" {
		t.Fatalf("OnApply saw %v", kinds)
	}
	f.Read(func(s *state.Store) {
		if s.LastIndex != 7 || s.Traits.Get("CUSTOM_X") != nil || s.Traits.Get("HW_CPU_X86_AVX") == nil || s.Traits.Get("CUSTOM_Y") == nil {
			t.Fatalf("state after the batch: index %d, traits X %v Y %v", s.LastIndex, s.Traits.Get("CUSTOM_X"), s.Traits.Get("CUSTOM_Y"))
		}
		if !s.Traits.Get("CUSTOM_Y").Created.Equal(t0.Add(3 * time.Second)) {
			t.Fatalf("CUSTOM_Y created at %v, not its proposer's time", s.Traits.Get("CUSTOM_Y").Created)
		}
	})
	// The same commands as separate entries, the last at the same index,
	// give the same state.
	g := New()
	for i, data := range parts {
		g.Apply(&raft.Log{Index: uint64(4 + i), Type: raft.LogCommand, Data: data})
	}
	if a, _ := f.Digest(); a != func() string { d, _ := g.Digest(); return d }() {
		t.Fatal("a batch and the same commands one by one give different states")
	}
}

func TestApplyReturnsResultAndRejection(t *testing.T) {
	f := New()
	res := f.Apply(entry(t, 1, &state.CreateTrait{Name: "CUSTOM_X"})).(Result)
	if res.Err != nil || !res.Value.(state.CreateTraitResult).Created {
		t.Fatalf("create: %+v", res)
	}
	res = f.Apply(entry(t, 2, &state.DeleteTrait{Name: "HW_CPU_X86_AVX"})).(Result)
	se, ok := res.Err.(*state.Error)
	if !ok || se.Kind != state.BadRequest {
		t.Fatalf("deleting a standard trait: %+v", res)
	}
	f.Read(func(s *state.Store) {
		if s.LastIndex != 2 || s.Traits.Get("CUSTOM_X") == nil || s.Traits.Get("HW_CPU_X86_AVX") == nil {
			t.Fatalf("state after apply: index %d", s.LastIndex)
		}
		if !s.Traits.Get("CUSTOM_X").Created.Equal(t0.Add(time.Second)) {
			t.Fatalf("trait time %v is not the proposer's", s.Traits.Get("CUSTOM_X").Created)
		}
	})
}

func TestApplyPanicsOnUndecodableEntry(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("an undecodable entry was skipped; replicas could diverge")
		}
	}()
	New().Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: []byte("garbage")})
}

type memSink struct {
	bytes.Buffer
	cancelled bool
}

func (m *memSink) ID() string    { return "mem" }
func (m *memSink) Cancel() error { m.cancelled = true; return nil }
func (m *memSink) Close() error  { return nil }

func TestSnapshotRestoreGivesIdenticalState(t *testing.T) {
	f := New()
	cmds := []state.Command{
		&state.CreateResourceClass{Name: "CUSTOM_GOLD"},
		&state.CreateResourceClass{Name: "CUSTOM_SILVER"},
		&state.DeleteResourceClass{Name: "CUSTOM_GOLD"},
		&state.CreateTrait{Name: "CUSTOM_FAST"},
	}
	for i, c := range cmds {
		f.Apply(entry(t, uint64(i+1), c))
	}
	want, wantIndex := f.Digest()

	snap, err := f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &memSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	g := New()
	if err := g.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	got, gotIndex := g.Digest()
	if got != want || gotIndex != wantIndex {
		t.Fatalf("restored digest %s@%d, want %s@%d", got, gotIndex, want, wantIndex)
	}
	// The restored store keeps allocating ids where the original left off.
	r1 := f.Apply(entry(t, 10, &state.CreateResourceClass{Name: "CUSTOM_NEW"})).(Result)
	r2 := g.Apply(entry(t, 10, &state.CreateResourceClass{Name: "CUSTOM_NEW"})).(Result)
	if r1.Value.(state.CreateClassResult).Class.ID != r2.Value.(state.CreateClassResult).Class.ID {
		t.Fatal("restored store allocates a different class id")
	}
	if a, _ := f.Digest(); a != func() string { d, _ := g.Digest(); return d }() {
		t.Fatal("states diverged after the same command")
	}
}

func TestRestoreRejectsGarbage(t *testing.T) {
	if err := New().Restore(io.NopCloser(strings.NewReader("not a snapshot\n"))); err == nil {
		t.Fatal("restored garbage")
	}
}
