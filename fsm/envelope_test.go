package fsm

import (
	"bytes"
	stdjson "encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// allocationEntry is the entry of a PUT /allocations/{uuid} with three
// classes on one provider: the commonest write under load.
func allocationEntry(tb testing.TB) []byte {
	cmd := &state.SetAllocations{Consumers: []state.ConsumerAllocations{{
		Consumer: "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d03", ProjectID: "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d05", UserID: "bench-user",
		CheckGeneration: true,
		Allocations: []state.AllocationRequest{
			{Provider: "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d01", Class: "VCPU", Used: 2},
			{Provider: "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d01", Class: "MEMORY_MB", Used: 2048},
			{Provider: "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d01", Class: "DISK_GB", Used: 20},
		}}}}
	data, err := Encode(cmd, t0)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// Entries are written and read with goccy/go-json; an older build (or any
// other reader) uses encoding/json, so the bytes must be exactly what
// encoding/json writes, and reading them must give the same command.
func TestEncodeWritesWhatEncodingJSONWrites(t *testing.T) {
	gen := int64(3)
	for _, cmd := range []state.Command{
		&state.CreateTrait{Name: "CUSTOM_<&>\u2028é"},
		&state.SetInventories{Provider: "p", Generation: 4, Inventories: []state.InventoryValues{
			{Class: "VCPU", Total: 64, MaxUnit: 64, StepSize: 1, AllocationRatio: 16},
			{Class: "MEMORY_MB", Total: 262144, Reserved: 512, AllocationRatio: 1.5},
			{Class: "DISK_GB", Total: 1, AllocationRatio: 0.0001},
			{Class: "CUSTOM_X", Total: 1 << 62, AllocationRatio: 1e21},
		}},
		&state.SetAllocations{Post: true, Consumers: []state.ConsumerAllocations{
			{Consumer: "c1", CheckGeneration: true, Generation: &gen, ConsumerType: "INSTANCE"},
			{Consumer: "c2", Allocations: []state.AllocationRequest{{Provider: "p", Class: "VCPU", Used: 1}}},
		}},
	} {
		got, err := Encode(cmd, t0.Add(123456789*time.Nanosecond))
		if err != nil {
			t.Fatal(err)
		}
		payload, _ := stdjson.Marshal(cmd)
		want, _ := stdjson.Marshal(envelope{Version: 1, Kind: cmd.Kind(), Time: t0.Add(123456789 * time.Nanosecond), Payload: payload})
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", cmd.Kind(), got, want)
		}
		entries, err := Decode(want)
		if err != nil {
			t.Fatal(err)
		}
		std := NewCommand(cmd.Kind())
		if err := stdjson.Unmarshal(payload, std); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(entries[0].Cmd, std) || !reflect.DeepEqual(std, cmd) {
			t.Errorf("%s: decoded %#v, encoding/json decodes %#v", cmd.Kind(), entries[0].Cmd, std)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data := allocationEntry(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeBatch8(b *testing.B) {
	e := allocationEntry(b)
	data := EncodeBatch([][]byte{e, e, e, e, e, e, e, e})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		allocationEntry(b)
	}
}

// An allocation write that keeps its request's order is a version 3 entry,
// which builds that would sort it refuse; every other command stays
// version 1. Version 3 entries decode to the same command.
func TestEntryVersionOfWriteOrder(t *testing.T) {
	alloc := []state.ConsumerAllocations{{Consumer: "c", Allocations: []state.AllocationRequest{{Provider: "p", Class: "VCPU", Used: 1}}}}
	for _, c := range []struct {
		cmd  state.Command
		want int
	}{
		{&state.SetAllocations{Consumers: alloc}, 1},
		{&state.SetAllocations{Consumers: alloc, WriteOrder: true}, 3},
		{&state.Reshape{Allocations: alloc}, 1},
		{&state.Reshape{Allocations: alloc, WriteOrder: true}, 3},
		{&state.CreateTrait{Name: "CUSTOM_T"}, 1},
		{&state.CreateResourceClass{Name: "CUSTOM_C"}, 1},
		{&state.CreateResourceClass{Name: "CUSTOM_C", MaxPlusOne: true}, 3},
	} {
		data, err := Encode(c.cmd, t0)
		if err != nil {
			t.Fatal(err)
		}
		var env struct{ V int }
		stdjson.Unmarshal(data, &env)
		if env.V != c.want {
			t.Errorf("%s %+v: version %d, want %d", c.cmd.Kind(), c.cmd, env.V, c.want)
		}
		entries, err := Decode(EncodeBatch([][]byte{data, data}))
		if err != nil || len(entries) != 2 || !reflect.DeepEqual(entries[0].Cmd, c.cmd) {
			t.Errorf("%s: decoded %v, %v", c.cmd.Kind(), entries, err)
		}
	}
}
