package image

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

func TestBodyRoundTrip(t *testing.T) {
	s := state.New()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	(&state.CreateResourceClass{Name: "CUSTOM_A"}).Apply(s, state.Meta{Time: now})
	(&state.CreateTrait{Name: "CUSTOM_T"}).Apply(s, state.Meta{Time: now})
	img := s.Image()
	var buf bytes.Buffer
	if err := WriteBody(&buf, img); err != nil {
		t.Fatal(err)
	}
	got, err := ReadBody(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if Digest(got) != Digest(img) {
		t.Fatal("digest changed through write and read")
	}
	loaded, err := state.Load(got)
	if err != nil {
		t.Fatal(err)
	}
	if Digest(loaded.Image()) != Digest(img) {
		t.Fatal("loaded state differs")
	}
}

func TestReadBodyRefusesDamage(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteBody(&buf, state.New().Image()); err != nil {
		t.Fatal(err)
	}
	whole := buf.Bytes()
	for _, in := range [][]byte{nil, []byte("something else\n"), whole[:len(whole)-8]} {
		if _, err := ReadBody(bytes.NewReader(in)); err == nil {
			t.Errorf("read %q without error", in)
		}
	}
}

func TestDigestDiffersWithState(t *testing.T) {
	a, b := state.New(), state.New()
	(&state.CreateTrait{Name: "CUSTOM_T"}).Apply(b, state.Meta{})
	if Digest(a.Image()) == Digest(b.Image()) {
		t.Fatal("different states share a digest")
	}
}

// The digest is the state's alone: the same state at another log index
// (an import verified on a cluster that has since applied a no-op, a
// status taken later) has the same digest.
func TestDigestLeavesOutTheLogIndex(t *testing.T) {
	s := state.New()
	(&state.CreateTrait{Name: "CUSTOM_T"}).Apply(s, state.Meta{})
	a, b := s.Image(), s.Image()
	a.LastIndex, b.LastIndex = 7, 4242
	if Digest(a) != Digest(b) {
		t.Fatal("the digest changed with the log index alone")
	}
	if a.LastIndex != 7 {
		t.Fatal("Digest changed the image")
	}
}

// A consumer's allocations are written and read in the order the state
// holds them: the order of the write that set them.
func TestAllocationOrderSurvives(t *testing.T) {
	s := state.New()
	m := state.Meta{Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	for _, u := range []string{"pa", "pb"} {
		(&state.CreateProvider{UUID: u, Name: u}).Apply(s, m)
		(&state.SetInventories{Provider: u, Inventories: []state.InventoryValues{
			{Class: "VCPU", Total: 8, MinUnit: 1, MaxUnit: 8, StepSize: 1, AllocationRatio: 1},
			{Class: "DISK_GB", Total: 8, MinUnit: 1, MaxUnit: 8, StepSize: 1, AllocationRatio: 1}}}).Apply(s, m)
	}
	want := []state.Allocation{{ProviderUUID: "pb", Class: "VCPU", Used: 1}, {ProviderUUID: "pa", Class: "VCPU", Used: 2}, {ProviderUUID: "pa", Class: "DISK_GB", Used: 3}}
	req := state.ConsumerAllocations{Consumer: "c", ProjectID: "p", UserID: "u"}
	for _, a := range want {
		req.Allocations = append(req.Allocations, state.AllocationRequest{Provider: a.ProviderUUID, Class: a.Class, Used: a.Used})
	}
	if _, err := (&state.SetAllocations{Consumers: []state.ConsumerAllocations{req}, WriteOrder: true}).Apply(s, m); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteBody(&buf, s.Image()); err != nil {
		t.Fatal(err)
	}
	img, err := ReadBody(&buf)
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := state.Load(img)
	if err != nil {
		t.Fatal(err)
	}
	if got := loaded.Consumers.Get("c").Allocations; !reflect.DeepEqual(got, want) {
		t.Errorf("allocations %v, want %v", got, want)
	}
}
