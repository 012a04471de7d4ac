package state

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// invTraitIndexOK checks TraitIndex against the providers' own trait sets.
func invTraitIndexOK(t *testing.T, s *Store) {
	t.Helper()
	fresh, err := Load(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plainIndex(fresh.TraitIndex), plainIndex(s.TraitIndex)) {
		t.Fatalf("trait index drifted:\n got %v\nwant %v", plainIndex(s.TraitIndex), plainIndex(fresh.TraitIndex))
	}
}

func invTraitNames(ts []Trait) []string {
	out := []string{}
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return out
}

func TestSetProviderTraits(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateTrait{Name: "CUSTOM_A"}, invT0)
	later := invT0.Add(time.Minute)
	v := invApply(t, s, &SetProviderTraits{Provider: "rp1", Generation: 0,
		Traits: []string{"CUSTOM_A", "HW_CPU_X86_SSE", "CUSTOM_A"}}, later)
	res := v.(ProviderTraitsResult)
	if res.Generation != 1 || !reflect.DeepEqual(invTraitNames(res.Traits), []string{"CUSTOM_A", "HW_CPU_X86_SSE"}) {
		t.Fatalf("got %+v", res)
	}
	if !res.Traits[0].Created.Equal(invT0) {
		t.Fatalf("trait timestamps not copied: %+v", res.Traits[0])
	}
	if p := s.Providers.Get("rp1"); !p.Updated.Equal(later) {
		t.Fatalf("provider updated %v", p.Updated)
	}
	invTraitIndexOK(t, s)
	// The same set again changes nothing, not even the generation.
	v = invApply(t, s, &SetProviderTraits{Provider: "rp1", Generation: 1, Traits: []string{"HW_CPU_X86_SSE", "CUSTOM_A"}}, later)
	if g := v.(ProviderTraitsResult).Generation; g != 1 {
		t.Fatalf("generation %d after a no-op, want 1", g)
	}
	v = invApply(t, s, &SetProviderTraits{Provider: "rp1", Generation: 1, Traits: []string{"HW_CPU_X86_SSE"}}, later)
	if g := v.(ProviderTraitsResult).Generation; g != 2 {
		t.Fatalf("generation %d, want 2", g)
	}
	if ok := s.TraitIndex.Has("CUSTOM_A"); ok {
		t.Fatal("CUSTOM_A still indexed")
	}
	invTraitIndexOK(t, s)
}

func TestSetProviderTraitsRejections(t *testing.T) {
	s := invStore(t)
	invReject(t, s, &SetProviderTraits{Provider: "nope", Generation: 0, Traits: []string{"HW_CPU_X86_SSE"}},
		NotFound, CodeDefault, "No resource provider with uuid nope found")
	invReject(t, s, &SetProviderTraits{Provider: "rp1", Generation: 3, Traits: []string{"HW_CPU_X86_SSE"}},
		Conflict, CodeConcurrentUpdate, "Resource provider's generation already changed. Please update the generation and try again.")
	invReject(t, s, &SetProviderTraits{Provider: "rp1", Generation: 0,
		Traits: []string{"NON_EXISTED_TRAIT2", "HW_CPU_X86_SSE", "NON_EXISTED_TRAIT1", "NON_EXISTED_TRAIT2"}},
		BadRequest, CodeDefault, "No such trait NON_EXISTED_TRAIT1, NON_EXISTED_TRAIT2")
	invTraitIndexOK(t, s)
}

func TestDeleteProviderTraits(t *testing.T) {
	s := invStore(t)
	invReject(t, s, &DeleteProviderTraits{Provider: "nope"}, NotFound, CodeDefault, "No resource provider with uuid nope found")
	// Nothing to remove: the generation stays.
	invApply(t, s, &DeleteProviderTraits{Provider: "rp1"}, invT0)
	if g := s.Providers.Get("rp1").Generation; g != 0 {
		t.Fatalf("generation %d, want 0", g)
	}
	invApply(t, s, &SetProviderTraits{Provider: "rp1", Generation: 0, Traits: []string{"HW_CPU_X86_SSE"}}, invT0)
	v := invApply(t, s, &DeleteProviderTraits{Provider: "rp1"}, invT0)
	if g := v.(ProviderTraitsResult).Generation; g != 2 || len(s.Providers.Get("rp1").Traits) != 0 {
		t.Fatalf("generation %d traits %v", g, s.Providers.Get("rp1").Traits)
	}
	invTraitIndexOK(t, s)
	// With no provider holding it, the custom trait can go.
	invApply(t, s, &CreateTrait{Name: "CUSTOM_A"}, invT0)
	invApply(t, s, &SetProviderTraits{Provider: "rp1", Generation: 2, Traits: []string{"CUSTOM_A"}}, invT0)
	invReject(t, s, &DeleteTrait{Name: "CUSTOM_A"}, Conflict, CodeDefault, "The trait CUSTOM_A is in use by a resource provider.")
	invApply(t, s, &DeleteProviderTraits{Provider: "rp1"}, invT0)
	invApply(t, s, &DeleteTrait{Name: "CUSTOM_A"}, invT0)
}

func TestTraitCommands(t *testing.T) {
	s := New()
	v := invApply(t, s, &CreateTrait{Name: "CUSTOM_A"}, invT0)
	if r := v.(CreateTraitResult); !r.Created || !r.Trait.Created.Equal(invT0) {
		t.Fatalf("got %+v", r)
	}
	v = invApply(t, s, &CreateTrait{Name: "CUSTOM_A"}, invT0.Add(time.Hour))
	if r := v.(CreateTraitResult); r.Created || !r.Trait.Created.Equal(invT0) {
		t.Fatalf("second create: %+v", r)
	}
	invReject(t, s, &DeleteTrait{Name: "CUSTOM_NONE"}, NotFound, CodeDefault, "No such trait(s): CUSTOM_NONE.")
	invReject(t, s, &DeleteTrait{Name: "HW_CPU_X86_SSE"}, BadRequest, CodeDefault, "Cannot delete standard trait HW_CPU_X86_SSE.")
	invApply(t, s, &DeleteTrait{Name: "CUSTOM_A"}, invT0)
	if s.Traits.Get("CUSTOM_A") != nil {
		t.Fatal("trait not deleted")
	}
}

func TestListTraits(t *testing.T) {
	s := invStore(t)
	for _, n := range []string{"CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2", "CUSTOM_TRAITX3", "CUSTOM_OTHER"} {
		invApply(t, s, &CreateTrait{Name: n}, invT0)
	}
	invApply(t, s, &SetProviderTraits{Provider: "rp1", Generation: 0, Traits: []string{"CUSTOM_TRAIT_1", "HW_CPU_X86_SSE"}}, invT0)
	tr, fa := true, false
	pre := func(p string) *string { return &p }
	for _, tc := range []struct {
		name string
		f    TraitFilter
		want []string
	}{
		{"in", TraitFilter{NameIn: []string{"CUSTOM_TRAIT_2", "CUSTOM_OTHER", "CUSTOM_MISSING"}}, []string{"CUSTOM_OTHER", "CUSTOM_TRAIT_2"}},
		{"empty in", TraitFilter{NameIn: []string{""}}, []string{}},
		// LIKE: "_" matches any character, letters in any case.
		{"prefix", TraitFilter{Prefix: pre("custom_trait_")}, []string{"CUSTOM_TRAITX3", "CUSTOM_TRAIT_1", "CUSTOM_TRAIT_2"}},
		{"prefix percent", TraitFilter{Prefix: pre("CUSTOM_%3")}, []string{"CUSTOM_TRAITX3"}},
		{"associated", TraitFilter{Associated: &tr}, []string{"CUSTOM_TRAIT_1", "HW_CPU_X86_SSE"}},
		{"custom not associated", TraitFilter{Prefix: pre("CUSTOM_"), Associated: &fa}, []string{"CUSTOM_OTHER", "CUSTOM_TRAITX3", "CUSTOM_TRAIT_2"}},
	} {
		if got := invTraitNames(s.ListTraits(tc.f)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v want %v", tc.name, got, tc.want)
		}
	}
	if all := s.ListTraits(TraitFilter{}); len(all) != len(StandardTraits)+4 {
		t.Errorf("unfiltered: %d traits, want %d", len(all), len(StandardTraits)+4)
	}
}

// Providers with the same traits share one map, which no command changes
// in place; the shared sets are forgotten when no provider holds them.
func TestProviderTraitSetsShared(t *testing.T) {
	s := New()
	for _, u := range []string{"rp1", "rp2", "rp3"} {
		alProvider(t, s, u, "")
	}
	set := func(u string, traits ...string) {
		t.Helper()
		alMust(t, s, &SetProviderTraits{Provider: u, Generation: s.Providers.Get(u).Generation, Traits: traits})
	}
	same := func(a, b string) bool {
		return reflect.ValueOf(s.Providers.Get(a).Traits).UnsafePointer() == reflect.ValueOf(s.Providers.Get(b).Traits).UnsafePointer()
	}
	set("rp1", "HW_CPU_X86_AVX", "COMPUTE_NODE")
	set("rp2", "COMPUTE_NODE", "HW_CPU_X86_AVX")
	set("rp3", "COMPUTE_NODE")
	if !same("rp1", "rp2") || same("rp1", "rp3") {
		t.Fatalf("rp1/rp2 shared %v, rp1/rp3 shared %v", same("rp1", "rp2"), same("rp1", "rp3"))
	}
	shared := s.Providers.Get("rp2").Traits
	set("rp1", "COMPUTE_NODE")
	if !reflect.DeepEqual(shared, map[string]bool{"HW_CPU_X86_AVX": true, "COMPUTE_NODE": true}) || !same("rp1", "rp3") {
		t.Fatalf("changing rp1 changed rp2's traits to %v (or rp1 did not join rp3's set)", shared)
	}
	alMust(t, s, &DeleteProvider{UUID: "rp2"})
	if len(s.traitSets.sets) != 1 || s.traitSets.sets["COMPUTE_NODE"].providers != 2 {
		t.Errorf("shared sets %v", s.traitSets.sets)
	}
	set("rp1")
	set("rp3")
	if len(s.traitSets.sets) != 0 || len(s.Providers.Get("rp1").Traits) != 0 {
		t.Errorf("shared sets %v left after every provider dropped its traits", s.traitSets.sets)
	}
	invTraitIndexOK(t, s)
	// A restored store shares them too.
	set("rp1", "COMPUTE_NODE")
	set("rp3", "COMPUTE_NODE")
	fresh, err := Load(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	a, b := fresh.Providers.Get("rp1").Traits, fresh.Providers.Get("rp3").Traits
	if reflect.ValueOf(a).UnsafePointer() != reflect.ValueOf(b).UnsafePointer() || fresh.traitSets.sets["COMPUTE_NODE"].providers != 2 {
		t.Errorf("Load did not share the trait set")
	}
}

// Traits held by the same providers share one set in the trait index,
// after a restore (Load) and through commands that give several providers
// the same traits; a provider holding only some of them parts the sets.
func TestTraitsOfTheSameProvidersShareOneSet(t *testing.T) {
	s := New()
	traits := []string{"COMPUTE_NODE", "HW_CPU_X86_AVX2", "HW_CPU_X86_SSE"}
	for i, u := range []string{rpA, rpB, rpC} {
		alMust(t, s, &CreateProvider{UUID: u, Name: fmt.Sprint("p", i)})
		alMust(t, s, &SetProviderTraits{Provider: u, Traits: traits})
	}
	root := func(s *Store, trait string) any { return s.TraitIndex.Get(trait).m.m }
	shared := func(s *Store) bool {
		return root(s, traits[0]) == root(s, traits[1]) && root(s, traits[1]) == root(s, traits[2])
	}
	if !shared(s) {
		t.Fatal("commands gave equal trait sets a copy each")
	}
	re, err := Load(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	if !shared(re) || re.TraitIndex.Get(traits[0]).Len() != 3 {
		t.Fatal("Load gave equal trait sets a copy each")
	}
	alMust(t, re, &SetProviderTraits{Provider: rpC, Generation: 1, Traits: traits[:2]})
	if root(re, traits[0]) != root(re, traits[1]) || root(re, traits[1]) == root(re, traits[2]) ||
		re.TraitIndex.Get(traits[2]).Len() != 2 || re.TraitIndex.Get(traits[0]).Len() != 3 {
		t.Fatal("a provider dropping one trait did not part that trait's set alone")
	}
	invTraitIndexOK(t, re)
}
