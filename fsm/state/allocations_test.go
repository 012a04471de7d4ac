package state

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

var alT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// alApply applies cmd at a fixed time, as the FSM would.
func alApply(s *Store, cmd Command) (any, error) {
	return cmd.Apply(s, Meta{Time: alT0})
}

func alMust(t *testing.T, s *Store, cmd Command) any {
	t.Helper()
	v, err := alApply(s, cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return v
}

// alInv is an inventory record with upstream's defaults.
func alInv(class string, total int64) InventoryValues {
	return InventoryValues{Class: class, Total: total, MinUnit: 1, MaxUnit: MaxInt, StepSize: 1, AllocationRatio: 1}
}

// alProvider creates a provider with inventories through the commands.
func alProvider(t *testing.T, s *Store, uuid, parent string, invs ...InventoryValues) *Provider {
	t.Helper()
	alMust(t, s, &CreateProvider{UUID: uuid, Name: "rp-" + uuid, ParentUUID: parent})
	if len(invs) > 0 {
		alMust(t, s, &SetInventories{Provider: uuid, Generation: 0, Inventories: invs})
	}
	return s.Providers.Get(uuid)
}

func alGen(g int64) *int64 { return &g }

// alClaim is a one-consumer write of the given class amounts on provider.
func alClaim(consumer, provider string, resources ...any) ConsumerAllocations {
	ca := ConsumerAllocations{Consumer: consumer, ProjectID: "proj", UserID: "user"}
	for i := 0; i < len(resources); i += 2 {
		ca.Allocations = append(ca.Allocations, AllocationRequest{
			Provider: provider, Class: resources[i].(string), Used: int64(resources[i+1].(int)),
		})
	}
	return ca
}

func alPut(ca ConsumerAllocations) *SetAllocations {
	return &SetAllocations{Consumers: []ConsumerAllocations{ca}}
}

// alImage is the whole state as JSON, to show a rejected command changed
// nothing.
func alImage(t *testing.T, s *Store) string {
	t.Helper()
	b, err := json.Marshal(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// alCheckIndexes rebuilds the store from its image and compares every
// index with the incrementally maintained one.
func alCheckIndexes(t *testing.T, s *Store) {
	t.Helper()
	fresh, err := Load(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plainHash(fresh.Usage), plainHash(s.Usage)) {
		t.Errorf("project usage index drifted:\n got %+v\nwant %+v", plainHash(s.Usage), plainHash(fresh.Usage))
	}
	if !reflect.DeepEqual(plainIndex(fresh.ProviderConsumers), plainIndex(s.ProviderConsumers)) {
		t.Errorf("provider consumers index drifted:\n got %v\nwant %v", plainIndex(s.ProviderConsumers), plainIndex(fresh.ProviderConsumers))
	}
	for p := range s.Providers.InOrder() {
		u := p.UUID
		if !reflect.DeepEqual(fresh.Providers.Get(u).Usages, p.Usages) {
			t.Errorf("provider %s usages drifted: got %v want %v", u, p.Usages, fresh.Providers.Get(u).Usages)
		}
	}
}

func alWantErr(t *testing.T, err error, kind Kind, code, detail string) {
	t.Helper()
	se, ok := err.(*Error)
	if !ok {
		t.Fatalf("want *Error %q, got %v", detail, err)
	}
	if se.Kind != kind || se.Code != code || se.Detail != detail {
		t.Fatalf("got (%v, %s, %q), want (%v, %s, %q)", se.Kind, se.Code, se.Detail, kind, code, detail)
	}
}

func TestSetAllocationsCreatesConsumerAndBumpsGenerations(t *testing.T) {
	s := New()
	p := alProvider(t, s, "rp1", "", alInv("VCPU", 8), alInv("DISK_GB", 100))
	gen := p.Generation

	ca := alClaim("c1", "rp1", "VCPU", 2, "DISK_GB", 10)
	ca.CheckGeneration = true // null: must be new
	alMust(t, s, alPut(ca))

	c := s.Consumers.Get("c1")
	if c == nil || c.Generation != 1 || c.ProjectID != "proj" || c.UserID != "user" || c.Type != "" {
		t.Fatalf("consumer = %+v", c)
	}
	if p.Generation != gen+1 || !p.Updated.Equal(alT0) {
		t.Errorf("provider generation %d (was %d), updated %v", p.Generation, gen, p.Updated)
	}
	if p.Usages["VCPU"] != 2 || p.Usages["DISK_GB"] != 10 {
		t.Errorf("usages = %v", p.Usages)
	}
	// Stored in provider then class order.
	if got := c.Allocations; len(got) != 2 || got[0].Class != "DISK_GB" || got[1].Class != "VCPU" || !c.Updated.Equal(alT0) {
		t.Errorf("allocations = %+v", got)
	}
	groups := s.ProjectUsage("proj", "")
	if len(groups) != 1 || groups[0].Consumers != 1 || groups[0].Used["VCPU"] != 2 {
		t.Errorf("project usage = %+v", groups)
	}
	alCheckIndexes(t, s)
}

func TestConsumerGenerationCompareAndSwap(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 8))

	// A generation for a consumer that does not exist.
	ca := alClaim("c1", "rp1", "VCPU", 1)
	ca.CheckGeneration, ca.Generation = true, alGen(5)
	_, err := alApply(s, alPut(ca))
	alWantErr(t, err, Conflict, CodeConcurrentUpdate, "consumer generation conflict - expected null but got 5")
	if s.Consumers.Get("c1") != nil {
		t.Fatal("rejected write created the consumer")
	}

	ca.Generation = nil
	alMust(t, s, alPut(ca))

	// null for an existing consumer.
	_, err = alApply(s, alPut(ca))
	alWantErr(t, err, Conflict, CodeConcurrentUpdate, "consumer generation conflict - expected 1 but got None")

	ca.Generation = alGen(7)
	_, err = alApply(s, alPut(ca))
	alWantErr(t, err, Conflict, CodeConcurrentUpdate, "consumer generation conflict - expected 1 but got 7")

	ca.Generation = alGen(1)
	alMust(t, s, alPut(ca))
	if g := s.Consumers.Get("c1").Generation; g != 2 {
		t.Fatalf("generation after matching write = %d, want 2", g)
	}

	// Before 1.28 there is no check, but the generation still moves.
	old := alClaim("c1", "rp1", "VCPU", 3)
	alMust(t, s, alPut(old))
	if g := s.Consumers.Get("c1").Generation; g != 3 {
		t.Fatalf("generation after unchecked write = %d, want 3", g)
	}
}

func TestEmptyAllocationsRemoveConsumer(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 8))
	alProvider(t, s, "rp2", "", alInv("VCPU", 8))
	ca := alClaim("c1", "rp1", "VCPU", 1)
	ca.Allocations = append(ca.Allocations, AllocationRequest{Provider: "rp2", Class: "VCPU", Used: 2})
	alMust(t, s, alPut(ca))
	g1, g2 := s.Providers.Get("rp1").Generation, s.Providers.Get("rp2").Generation

	// A stale generation is refused even for a removal.
	empty := ConsumerAllocations{Consumer: "c1", ProjectID: "proj", UserID: "user", CheckGeneration: true, Generation: alGen(9)}
	if _, err := alApply(s, alPut(empty)); err == nil {
		t.Fatal("stale removal accepted")
	}
	empty.Generation = alGen(1)
	alMust(t, s, alPut(empty))
	if s.Consumers.Get("c1") != nil {
		t.Fatal("consumer kept after its last allocation went")
	}
	// Upstream bumps the providers of the removed allocations.
	if s.Providers.Get("rp1").Generation != g1+1 || s.Providers.Get("rp2").Generation != g2+1 {
		t.Errorf("generations %d %d, want %d %d", s.Providers.Get("rp1").Generation, s.Providers.Get("rp2").Generation, g1+1, g2+1)
	}
	if len(s.Providers.Get("rp1").Usages) != 0 || s.Usage.Len() != 0 || s.ProviderConsumers.Len() != 0 {
		t.Errorf("indexes not emptied: %v %v %v", s.Providers.Get("rp1").Usages, s.Usage, s.ProviderConsumers)
	}
	alCheckIndexes(t, s)
}

func TestReplacingAllocationsOnlyBumpsNamedProviders(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 8))
	alProvider(t, s, "rp2", "", alInv("VCPU", 8))
	alMust(t, s, alPut(alClaim("c1", "rp1", "VCPU", 1)))
	g1, g2 := s.Providers.Get("rp1").Generation, s.Providers.Get("rp2").Generation
	// Moving the claim to rp2: upstream's allocation list names rp2 only.
	alMust(t, s, alPut(alClaim("c1", "rp2", "VCPU", 1)))
	if s.Providers.Get("rp1").Generation != g1 || s.Providers.Get("rp2").Generation != g2+1 {
		t.Errorf("generations %d %d, want %d %d", s.Providers.Get("rp1").Generation, s.Providers.Get("rp2").Generation, g1, g2+1)
	}
	if s.Providers.Get("rp1").Usages["VCPU"] != 0 || s.Providers.Get("rp2").Usages["VCPU"] != 1 {
		t.Errorf("usages not moved")
	}
	alCheckIndexes(t, s)
}

func TestCapacityChecks(t *testing.T) {
	s := New()
	vcpu := alInv("VCPU", 10)
	vcpu.Reserved = 2
	vcpu.AllocationRatio = 1.5 // capacity (10-2)*1.5 = 12
	disk := alInv("DISK_GB", 1000)
	disk.MinUnit, disk.MaxUnit, disk.StepSize = 10, 500, 10
	alProvider(t, s, "rp1", "", vcpu, disk)

	alMust(t, s, alPut(alClaim("a", "rp1", "VCPU", 12)))
	before := alImage(t, s)
	_, err := alApply(s, alPut(alClaim("b", "rp1", "VCPU", 1)))
	alWantErr(t, err, Conflict, CodeDefault, "Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider 'rp1'. The requested amount would exceed the capacity.")
	if alImage(t, s) != before {
		t.Fatal("rejected write changed the state")
	}
	// A consumer's own old allocations do not count against it.
	alMust(t, s, alPut(alClaim("a", "rp1", "VCPU", 12)))

	for _, amount := range []int{5, 505, 15} {
		_, err := alApply(s, alPut(alClaim("d", "rp1", "DISK_GB", amount)))
		alWantErr(t, err, Conflict, CodeDefault, "Unable to allocate inventory: Unable to create allocation for 'DISK_GB' on resource provider 'rp1'. The requested amount would violate inventory constraints.")
	}
	alMust(t, s, alPut(alClaim("d", "rp1", "DISK_GB", 500)))
}

func TestOverCapacityToleratedWhenNoWorse(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 10))
	alMust(t, s, alPut(alClaim("a", "rp1", "VCPU", 8)))
	// Shrink the inventory below the usage (allowed, as upstream).
	alMust(t, s, &SetInventories{Provider: "rp1", Generation: s.Providers.Get("rp1").Generation, Inventories: []InventoryValues{alInv("VCPU", 4)}})
	// Reducing the over-commitment is allowed...
	alMust(t, s, alPut(alClaim("a", "rp1", "VCPU", 6)))
	// ...raising it is not.
	if _, err := alApply(s, alPut(alClaim("a", "rp1", "VCPU", 7))); err == nil {
		t.Fatal("worse over-commitment accepted")
	}
}

func TestAllocationErrorsInUpstreamOrder(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 8))
	alProvider(t, s, "rp2", "")

	_, err := alApply(s, alPut(alClaim("c", "nope", "VCPU", 1)))
	alWantErr(t, err, BadRequest, CodeDefault, "Allocation for resource provider 'nope' that does not exist.")

	_, err = alApply(s, alPut(alClaim("c", "rp1", "COWS", 1)))
	alWantErr(t, err, BadRequest, CodeDefault, "Unable to allocate inventory for consumer c: No such resource class COWS.")
	post := &SetAllocations{Post: true, Consumers: []ConsumerAllocations{alClaim("c", "rp1", "CUSTOM_PONY", 1)}}
	_, err = alApply(s, post)
	alWantErr(t, err, BadRequest, CodeDefault, "Unable to allocate inventory No such resource class CUSTOM_PONY.")

	// rp2 has no inventory of any class asked for.
	_, err = alApply(s, alPut(alClaim("c", "rp2", "DISK_GB", 1)))
	alWantErr(t, err, Conflict, CodeDefault, "Unable to allocate inventory: Inventory for 'DISK_GB' on resource provider 'rp2' invalid.")
	// Several classes are named in the order of a Python set of their
	// ids: IPV4_ADDRESS (9) before SRIOV_NET_VF (4).
	_, err = alApply(s, alPut(alClaim("c", "rp2", "SRIOV_NET_VF", 1, "IPV4_ADDRESS", 1)))
	alWantErr(t, err, Conflict, CodeDefault, "Unable to allocate inventory: Inventory for 'IPV4_ADDRESS, SRIOV_NET_VF' on resource provider 'rp2' invalid.")
	// rp1 has inventory of one class asked for, not of the other.
	_, err = alApply(s, alPut(alClaim("c", "rp1", "VCPU", 1, "PCI_DEVICE", 1)))
	alWantErr(t, err, Conflict, CodeDefault, "Unable to allocate inventory: Inventory for 'PCI_DEVICE' on resource provider 'rp1' invalid.")

	// A generation conflict is reported before a missing provider.
	bad := alClaim("c", "nope", "VCPU", 1)
	bad.CheckGeneration, bad.Generation = true, alGen(3)
	_, err = alApply(s, alPut(bad))
	alWantErr(t, err, Conflict, CodeConcurrentUpdate, "consumer generation conflict - expected null but got 3")
}

func TestPostAllocationsAllOrNothing(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 4))
	alProvider(t, s, "rp2", "", alInv("VCPU", 4))
	alMust(t, s, alPut(alClaim("old", "rp1", "VCPU", 2)))
	before := alImage(t, s)

	// Every failure on the last consumer leaves the earlier ones unapplied.
	lasts := map[string]ConsumerAllocations{
		"capacity":   alClaim("z", "rp2", "VCPU", 5),
		"provider":   alClaim("z", "nope", "VCPU", 1),
		"class":      alClaim("z", "rp2", "CUSTOM_X", 1),
		"inventory":  alClaim("z", "rp2", "DISK_GB", 1),
		"generation": {Consumer: "old", ProjectID: "p", UserID: "u", CheckGeneration: true, Generation: alGen(42)},
	}
	for name, last := range lasts {
		cmd := &SetAllocations{Post: true, Consumers: []ConsumerAllocations{
			alClaim("x", "rp1", "VCPU", 1),
			{Consumer: "old", ProjectID: "proj", UserID: "user"}, // removal
			alClaim("y", "rp2", "VCPU", 1),
			last,
		}}
		if _, err := alApply(s, cmd); err == nil {
			t.Fatalf("%s: failing write accepted", name)
		}
		if alImage(t, s) != before {
			t.Fatalf("%s: rejected write changed the state", name)
		}
	}
}

func TestPostMovesClaimOnFullProvider(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 4))
	alMust(t, s, alPut(alClaim("instance", "rp1", "VCPU", 4)))
	// The instance claim becomes a migration claim in one write: the
	// capacity check counts the removal.
	cmd := &SetAllocations{Post: true, Consumers: []ConsumerAllocations{
		alClaim("migration", "rp1", "VCPU", 4),
		{Consumer: "instance", ProjectID: "proj", UserID: "user"},
	}}
	alMust(t, s, cmd)
	if s.Consumers.Get("instance") != nil || s.Consumers.Get("migration") == nil || s.Providers.Get("rp1").Usages["VCPU"] != 4 {
		t.Fatalf("claim not moved: %v %v", s.Consumers, s.Providers.Get("rp1").Usages)
	}
	// Two consumers asking for the same slot are summed.
	cmd = &SetAllocations{Post: true, Consumers: []ConsumerAllocations{
		alClaim("migration", "rp1", "VCPU", 2),
		alClaim("other", "rp1", "VCPU", 3),
	}}
	if _, err := alApply(s, cmd); err == nil {
		t.Fatal("5 VCPU fitted in 4")
	}
	alCheckIndexes(t, s)
}

func TestDeleteConsumerAllocations(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 4))
	_, err := alApply(s, &DeleteConsumerAllocations{Consumer: "c1"})
	alWantErr(t, err, NotFound, CodeDefault, "No allocations for consumer 'c1'")
	alMust(t, s, alPut(alClaim("c1", "rp1", "VCPU", 4)))
	gen := s.Providers.Get("rp1").Generation
	alMust(t, s, &DeleteConsumerAllocations{Consumer: "c1"})
	if s.Consumers.Get("c1") != nil || s.Providers.Get("rp1").Usages["VCPU"] != 0 || s.Usage.Len() != 0 {
		t.Fatal("allocations not deleted")
	}
	if s.Providers.Get("rp1").Generation != gen {
		t.Error("DELETE bumped the provider generation (upstream does not)")
	}
}

func TestConsumerTypesAndProjectUsage(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 100), alInv("DISK_GB", 100))
	a := alClaim("a", "rp1", "VCPU", 1, "DISK_GB", 5)
	a.ConsumerType = "INSTANCE"
	b := alClaim("b", "rp1", "VCPU", 2)
	b.ConsumerType = "MIGRATION"
	b.UserID = "alt"
	c := alClaim("c", "rp1", "DISK_GB", 3) // no type: unknown
	alMust(t, s, &SetAllocations{Post: true, Consumers: []ConsumerAllocations{a, b, c}})

	if s.ConsumerTypes.Get("INSTANCE") == nil || s.ConsumerTypes.Get("MIGRATION") == nil || s.ConsumerTypes.Len() != 2 {
		t.Fatalf("types = %v", s.ConsumerTypes)
	}
	got := s.ProjectUsage("proj", "")
	want := []UsageGroup{
		{Type: "", Consumers: 1, Used: map[string]int64{"DISK_GB": 3}},
		{Type: "INSTANCE", Consumers: 1, Used: map[string]int64{"VCPU": 1, "DISK_GB": 5}},
		{Type: "MIGRATION", Consumers: 1, Used: map[string]int64{"VCPU": 2}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("project usage\n got %+v\nwant %+v", got, want)
	}
	if got := s.ProjectUsage("proj", "alt"); len(got) != 1 || got[0].Type != "MIGRATION" {
		t.Fatalf("user usage = %+v", got)
	}

	// Retyping moves the consumer between groups; a write without a type
	// (before 1.38) keeps it.
	a2 := alClaim("a", "rp1", "VCPU", 1)
	a2.ConsumerType = "MIGRATION"
	alMust(t, s, alPut(a2))
	alMust(t, s, alPut(alClaim("a", "rp1", "VCPU", 1)))
	if s.Consumers.Get("a").Type != "MIGRATION" {
		t.Fatalf("type = %q", s.Consumers.Get("a").Type)
	}
	// Types outlive their consumers.
	alMust(t, s, &DeleteConsumerAllocations{Consumer: "a"})
	alMust(t, s, &DeleteConsumerAllocations{Consumer: "b"})
	if s.ConsumerTypes.Get("INSTANCE") == nil || s.ConsumerTypes.Get("MIGRATION") == nil {
		t.Fatal("consumer types deleted")
	}
	alCheckIndexes(t, s)
}

func TestProjectAndUserChangeMovesUsage(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 100))
	alMust(t, s, alPut(alClaim("a", "rp1", "VCPU", 4)))
	moved := alClaim("a", "rp1", "VCPU", 4)
	moved.ProjectID, moved.UserID = "other", "someone"
	alMust(t, s, alPut(moved))
	if len(s.ProjectUsage("proj", "")) != 0 || s.ProjectUsage("other", "someone")[0].Used["VCPU"] != 4 {
		t.Fatalf("usage not moved: %+v", s.Usage)
	}
	alCheckIndexes(t, s)
}

func TestNewConsumerWithoutAllocationsIsKept(t *testing.T) {
	// Upstream's ensure_consumer creates the consumer and, with nothing
	// to write, leaves it: a later "must be new" write then conflicts.
	s := New()
	empty := ConsumerAllocations{Consumer: "c", ProjectID: "p", UserID: "u", CheckGeneration: true}
	alMust(t, s, alPut(empty))
	if c := s.Consumers.Get("c"); c == nil || c.Generation != 0 {
		t.Fatalf("consumer = %+v", c)
	}
	alProvider(t, s, "rp1", "", alInv("VCPU", 1))
	claim := alClaim("c", "rp1", "VCPU", 1)
	claim.CheckGeneration = true
	_, err := alApply(s, alPut(claim))
	alWantErr(t, err, Conflict, CodeConcurrentUpdate, "consumer generation conflict - expected 0 but got None")
	claim.Generation = alGen(0)
	alMust(t, s, alPut(claim))
	alCheckIndexes(t, s)
}

func TestProviderAllocations(t *testing.T) {
	s := New()
	alProvider(t, s, "rp1", "", alInv("VCPU", 100))
	alProvider(t, s, "rp2", "", alInv("VCPU", 100))
	alMust(t, s, alPut(alClaim("b", "rp1", "VCPU", 2)))
	ca := alClaim("a", "rp1", "VCPU", 1)
	ca.Allocations = append(ca.Allocations, AllocationRequest{Provider: "rp2", Class: "VCPU", Used: 7})
	alMust(t, s, alPut(ca))
	got := s.ProviderAllocations("rp1")
	if len(got) != 2 || got[0].ConsumerUUID != "a" || got[0].Used != 1 || got[1].ConsumerUUID != "b" || got[1].ConsumerGeneration != 1 {
		t.Fatalf("provider allocations = %+v", got)
	}
}

func TestAllocationCommandsSurviveTheLog(t *testing.T) {
	// Commands travel as JSON: a decoded command must apply identically.
	ca := alClaim("c", "rp1", "VCPU", 1)
	ca.CheckGeneration, ca.Generation, ca.ConsumerType = true, alGen(0), "INSTANCE"
	for _, cmd := range []Command{
		&SetAllocations{Post: true, Consumers: []ConsumerAllocations{ca}},
		&Reshape{Inventories: []ReshapeInventory{{Provider: "rp1", Generation: 3, Inventories: []InventoryValues{alInv("VCPU", 2)}}}, Allocations: []ConsumerAllocations{ca}},
		&DeleteConsumerAllocations{Consumer: "c"},
	} {
		b, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		back := emptyOf(cmd)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, cmd) {
			t.Errorf("%s changed through JSON:\n got %+v\nwant %+v", cmd.Kind(), back, cmd)
		}
	}
	if !strings.HasPrefix((&SetAllocations{}).Kind(), "allocations.") {
		t.Error("unexpected kind")
	}
}

// With WriteOrder a consumer's allocations keep the request's order (the
// order upstream's rows have); without (entries of older builds) they are
// sorted by provider creation, then class, as those builds stored them.
func TestAllocationsWriteOrder(t *testing.T) {
	s := New()
	alProvider(t, s, "pa", "", alInv("VCPU", 8), alInv("MEMORY_MB", 8))
	alProvider(t, s, "pb", "", alInv("DISK_GB", 8))
	req := ConsumerAllocations{Consumer: "c", ProjectID: "p", UserID: "u", Allocations: []AllocationRequest{
		{Provider: "pb", Class: "DISK_GB", Used: 1},
		{Provider: "pa", Class: "VCPU", Used: 1},
		{Provider: "pa", Class: "MEMORY_MB", Used: 2},
	}}
	written := []Allocation{{"pb", "DISK_GB", 1}, {"pa", "VCPU", 1}, {"pa", "MEMORY_MB", 2}}
	sorted := []Allocation{{"pa", "MEMORY_MB", 2}, {"pa", "VCPU", 1}, {"pb", "DISK_GB", 1}}

	alMust(t, s, &SetAllocations{Consumers: []ConsumerAllocations{req}, WriteOrder: true})
	if got := s.Consumers.Get("c").Allocations; !reflect.DeepEqual(got, written) {
		t.Errorf("WriteOrder: %v, want %v", got, written)
	}
	img := s.Image()
	loaded, err := Load(img)
	if err != nil || !reflect.DeepEqual(loaded.Consumers.Get("c").Allocations, written) {
		t.Errorf("after Image and Load: %v (%v)", loaded.Consumers.Get("c").Allocations, err)
	}

	req.Generation, req.CheckGeneration = alGen(1), true
	alMust(t, s, &SetAllocations{Consumers: []ConsumerAllocations{req}})
	if got := s.Consumers.Get("c").Allocations; !reflect.DeepEqual(got, sorted) {
		t.Errorf("without WriteOrder: %v, want %v", got, sorted)
	}

	req.Generation = alGen(2)
	alMust(t, s, &Reshape{Allocations: []ConsumerAllocations{req}, WriteOrder: true})
	if got := s.Consumers.Get("c").Allocations; !reflect.DeepEqual(got, written) {
		t.Errorf("reshape with WriteOrder: %v, want %v", got, written)
	}
}

// With MaxPlusOne a custom class is numbered one above the highest there
// is, as upstream numbers them, so the id of a deleted highest class is
// given again; without it (older entries) the counter goes on.
func TestClassIDs(t *testing.T) {
	s := New()
	create := func(name string, upstream bool) int {
		t.Helper()
		v := alMust(t, s, &CreateResourceClass{Name: name, MaxPlusOne: upstream})
		return v.(CreateClassResult).Class.ID
	}
	if id := create("CUSTOM_A", true); id != MinCustomClassID {
		t.Errorf("first: %d", id)
	}
	alMust(t, s, &DeleteResourceClass{Name: "CUSTOM_A"})
	if id := create("CUSTOM_B", true); id != MinCustomClassID {
		t.Errorf("after deleting the highest: %d, want %d again", id, MinCustomClassID)
	}
	alMust(t, s, &DeleteResourceClass{Name: "CUSTOM_B"})
	if id := create("CUSTOM_C", false); id != MinCustomClassID+1 {
		t.Errorf("without MaxPlusOne: %d, want the counter's %d", id, MinCustomClassID+1)
	}
	if id := create("CUSTOM_D", true); id != MinCustomClassID+2 {
		t.Errorf("after an older entry: %d", id)
	}
}

// emptyOf returns a new, empty command of cmd's type, to decode cmd's JSON
// into as fsm.Decode does (fsm's table of kinds is not importable here).
func emptyOf(cmd Command) Command {
	return reflect.New(reflect.TypeOf(cmd).Elem()).Interface().(Command)
}
