package model

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// TestModelMatchesState runs random operations through the model and
// through fsm/state's commands side by side: without faults, the model
// must predict every answer of the real state machine, or the checker
// would judge correct histories wrong (or wrong ones right).
func TestModelMatchesState(t *testing.T) {
	providers := []string{rpA, rpB}
	consumers := []string{c1, c2, "c3333333-0000-4000-8000-000000000003", "c4444444-0000-4000-8000-000000000004"}
	caps := map[string]int64{"VCPU": 4, "MEMORY_MB": 1000}
	capacity := func(provider, class string) int64 { return caps[class] }
	at := state.Meta{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}

	st := state.New()
	for _, p := range providers {
		if _, err := (&state.CreateProvider{UUID: p, Name: p}).Apply(st, at); err != nil {
			t.Fatal(err)
		}
		var inv []state.InventoryValues
		for class, c := range caps {
			inv = append(inv, state.InventoryValues{Class: class, Total: c, MaxUnit: c, MinUnit: 1, StepSize: 1, AllocationRatio: 1})
		}
		if _, err := (&state.SetInventories{Provider: p, Inventories: inv}).Apply(st, at); err != nil {
			t.Fatal(err)
		}
	}

	rng := rand.New(rand.NewSource(1))
	known := map[string]*int64{} // what a client would have learnt
	write := func() ConsumerWrite {
		c := consumers[rng.Intn(len(consumers))]
		w := ConsumerWrite{Consumer: c, Generation: known[c]}
		if rng.Intn(5) == 0 { // a stale or made-up generation
			g := int64(rng.Intn(4))
			w.Generation = &g
			if rng.Intn(2) == 0 {
				w.Generation = nil
			}
		}
		for _, p := range providers {
			if rng.Intn(2) == 0 {
				w.Allocations = append(w.Allocations,
					Amount{p, "VCPU", int64(1 + rng.Intn(3))}, Amount{p, "MEMORY_MB", int64(1 + rng.Intn(300))})
			}
		}
		return w
	}
	var m State
	results := map[Result]int{}
	for i := 0; i < 5000; i++ {
		var in Input
		switch k := rng.Intn(10); {
		case k < 4:
			in = Input{Kind: PutAllocations, Writes: []ConsumerWrite{write()}}
		case k < 6:
			in = Input{Kind: PostAllocations, Writes: []ConsumerWrite{write()}}
			if w := write(); w.Consumer != in.Writes[0].Consumer {
				in.Writes = append(in.Writes, w)
			}
		case k < 7:
			in = Input{Kind: DeleteAllocations, Consumer: consumers[rng.Intn(len(consumers))]}
		case k < 9:
			in = Input{Kind: ReadConsumer, Consumer: consumers[rng.Intn(len(consumers))]}
		default:
			in = Input{Kind: ReadUsages, Provider: providers[rng.Intn(len(providers))]}
		}
		want, next := Apply(m, in, capacity)
		got := applyState(t, st, in, at)
		if !want.Equal(got) {
			t.Fatalf("op %d %s: model says %s, state says %s\nmodel state: %s",
				i, Describe(in, Output{}), Describe(in, want), Describe(in, got), m.key())
		}
		results[got.Result]++
		m = next
		// Learn generations as a client would, from reads.
		if in.Kind == ReadConsumer {
			if got.Generation >= 0 {
				g := got.Generation
				known[in.Consumer] = &g
			} else {
				delete(known, in.Consumer)
			}
		}
	}
	t.Logf("results: %v", results)
	for _, r := range []Result{OK, GenerationConflict, CapacityConflict, NotFound} {
		if results[r] == 0 {
			t.Errorf("no operation ended %s: the comparison is too weak", r)
		}
	}
}

// applyState runs in through fsm/state the way the HTTP handlers do
// (microversion 1.28+: consumer generations checked).
func applyState(t *testing.T, st *state.Store, in Input, at state.Meta) Output {
	t.Helper()
	var err error
	switch in.Kind {
	case PutAllocations, PostAllocations:
		cmd := &state.SetAllocations{Post: in.Kind == PostAllocations}
		for _, w := range in.Writes {
			ca := state.ConsumerAllocations{Consumer: w.Consumer, ProjectID: "p", UserID: "u",
				CheckGeneration: true, Generation: w.Generation}
			for _, a := range w.Allocations {
				ca.Allocations = append(ca.Allocations, state.AllocationRequest{Provider: a.Provider, Class: a.Class, Used: a.Used})
			}
			cmd.Consumers = append(cmd.Consumers, ca)
		}
		_, err = cmd.Apply(st, at)
	case DeleteAllocations:
		_, err = (&state.DeleteConsumerAllocations{Consumer: in.Consumer}).Apply(st, at)
	case ReadConsumer:
		out := Output{Result: OK, Generation: -1}
		if c := st.ConsumerCopy(in.Consumer); c != nil && len(c.Allocations) > 0 {
			out.Generation = c.Generation
			for _, a := range c.Allocations {
				out.Allocations = append(out.Allocations, Amount{a.ProviderUUID, a.Class, a.Used})
			}
			out.Allocations = Normalize(out.Allocations)
		}
		return out
	case ReadUsages:
		return Output{Result: OK, Usages: sortAmounts(in.Provider, st.Providers.Get(in.Provider).Usages)}
	}
	return Output{Result: resultOf(err)}
}

func resultOf(err error) Result {
	if err == nil {
		return OK
	}
	se, ok := err.(*state.Error)
	if !ok {
		panic(err)
	}
	switch {
	case se.Kind == state.Conflict && se.Code == state.CodeConcurrentUpdate:
		return GenerationConflict
	case se.Kind == state.Conflict:
		return CapacityConflict
	case se.Kind == state.NotFound:
		return NotFound
	}
	panic(fmt.Sprintf("unexpected error %v", err))
}
