package state

import "testing"

// alFixture is upstream's AllocationFixture: a provider with DISK_GB and
// VCPU and three consumers on it; the provider ends at generation 5.
func alFixture(t *testing.T) *Store {
	t.Helper()
	s := New()
	disk := alInv("DISK_GB", 2048)
	disk.StepSize, disk.MinUnit, disk.MaxUnit = 10, 10, 1000
	vcpu := alInv("VCPU", 10)
	vcpu.MaxUnit = 10
	alMust(t, s, &CreateProvider{UUID: "rp", Name: "rp"})
	alMust(t, s, &CreateInventory{Provider: "rp", Inventory: disk})
	alMust(t, s, &CreateInventory{Provider: "rp", Inventory: vcpu})
	alMust(t, s, alPut(alClaim("c0", "rp", "DISK_GB", 1000)))
	alMust(t, s, alPut(alClaim("c1", "rp", "VCPU", 6)))
	alt := alClaim("alt", "rp", "DISK_GB", 20, "VCPU", 1)
	alt.UserID = "alt-user"
	alMust(t, s, alPut(alt))
	if g := s.Providers.Get("rp").Generation; g != 5 {
		t.Fatalf("fixture generation %d, want 5", g)
	}
	return s
}

func alChecked(ca ConsumerAllocations, gen *int64) ConsumerAllocations {
	ca.CheckGeneration, ca.Generation = true, gen
	return ca
}

// TestReshapeMovesInventoryAndAllocations follows upstream's reshaper.yaml:
// VCPU inventory and its allocations move to a child and back, with the
// provider generations upstream reports.
func TestReshapeMovesInventoryAndAllocations(t *testing.T) {
	s := alFixture(t)
	alMust(t, s, &CreateProvider{UUID: "child", Name: "child", ParentUUID: "rp"})
	disk := alInv("DISK_GB", 2048)
	disk.StepSize, disk.MinUnit, disk.MaxUnit = 10, 10, 1200
	vcpu := alInv("VCPU", 10)
	vcpu.MaxUnit = 8

	alt := alClaim("alt", "rp", "DISK_GB", 20)
	alt.UserID = "alt-user"
	alt.Allocations = append(alt.Allocations, AllocationRequest{Provider: "child", Class: "VCPU", Used: 1})
	move := &Reshape{
		Inventories: []ReshapeInventory{
			{Provider: "rp", Generation: 5, Inventories: []InventoryValues{disk}},
			{Provider: "child", Generation: 0, Inventories: []InventoryValues{vcpu}},
		},
		Allocations: []ConsumerAllocations{
			alChecked(alClaim("c0", "rp", "DISK_GB", 1000), alGen(1)),
			alChecked(alClaim("c1", "child", "VCPU", 8), alGen(1)),
			alChecked(alt, alGen(1)),
		},
	}
	alMust(t, s, move)
	rp, child := s.Providers.Get("rp"), s.Providers.Get("child")
	if rp.Generation != 8 || child.Generation != 3 {
		t.Fatalf("generations rp %d child %d, want 8 and 3", rp.Generation, child.Generation)
	}
	if _, ok := rp.Inventories["VCPU"]; ok || rp.Usages["DISK_GB"] != 1020 || child.Usages["VCPU"] != 9 {
		t.Fatalf("rp inventories %v usages %v, child usages %v", rp.Inventories, rp.Usages, child.Usages)
	}
	if rp.Inventories["DISK_GB"].MaxUnit != 1200 {
		t.Error("final inventory not written")
	}
	alCheckIndexes(t, s)

	// Back again, under new consumers; c1 is emptied and deleted.
	vcpu.MaxUnit = 8
	back := &Reshape{
		Inventories: []ReshapeInventory{
			{Provider: "rp", Generation: 8, Inventories: []InventoryValues{disk, vcpu}},
			{Provider: "child", Generation: 3},
		},
		Allocations: []ConsumerAllocations{
			alChecked(alClaim("c0", "rp", "DISK_GB", 1000), alGen(2)),
			alChecked(alClaim("n1", "rp", "VCPU", 8), nil),
			alChecked(alClaim("n2", "rp", "DISK_GB", 20, "VCPU", 1), nil),
			alChecked(ConsumerAllocations{Consumer: "c1", ProjectID: "proj", UserID: "user"}, alGen(2)),
			alChecked(alClaim("alt", "rp", "DISK_GB", 20), alGen(2)),
		},
	}
	alMust(t, s, back)
	if rp.Generation != 11 || child.Generation != 5 {
		t.Fatalf("generations rp %d child %d, want 11 and 5", rp.Generation, child.Generation)
	}
	if rp.Usages["VCPU"] != 9 || rp.Usages["DISK_GB"] != 1040 || len(child.Usages) != 0 || len(child.Inventories) != 0 {
		t.Fatalf("rp usages %v, child usages %v inventories %v", rp.Usages, child.Usages, child.Inventories)
	}
	if s.Consumers.Get("c1") != nil {
		t.Error("emptied consumer kept")
	}
	alCheckIndexes(t, s)
}

func TestReshapeFailuresChangeNothing(t *testing.T) {
	s := alFixture(t)
	alMust(t, s, &CreateProvider{UUID: "child", Name: "child", ParentUUID: "rp"})
	before := alImage(t, s)
	disk := alInv("DISK_GB", 2048)
	disk.StepSize, disk.MinUnit, disk.MaxUnit = 10, 10, 1200
	vcpu := alInv("VCPU", 10)
	vcpu.MaxUnit = 8
	good := func() *Reshape {
		alt := alClaim("alt", "rp", "DISK_GB", 20)
		alt.UserID = "alt-user"
		alt.Allocations = append(alt.Allocations, AllocationRequest{Provider: "child", Class: "VCPU", Used: 1})
		return &Reshape{
			Inventories: []ReshapeInventory{
				{Provider: "rp", Generation: 5, Inventories: []InventoryValues{disk}},
				{Provider: "child", Generation: 0, Inventories: []InventoryValues{vcpu}},
			},
			Allocations: []ConsumerAllocations{
				alChecked(alClaim("c0", "rp", "DISK_GB", 1000), alGen(1)),
				alChecked(alClaim("c1", "child", "VCPU", 8), alGen(1)),
				alChecked(alt, alGen(1)),
			},
		}
	}
	cases := []struct {
		name   string
		break_ func(r *Reshape)
		kind   Kind
		code   string
		detail string
	}{
		{"last consumer over max_unit", func(r *Reshape) { r.Allocations[2].Allocations[1].Used = 9 }, Conflict, CodeDefault,
			"Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider 'child'. The requested amount would violate inventory constraints."},
		{"last consumer generation", func(r *Reshape) { r.Allocations[2].Generation = alGen(7) }, Conflict, CodeConcurrentUpdate,
			"consumer generation conflict - expected 1 but got 7"},
		{"last provider generation", func(r *Reshape) { r.Inventories[1].Generation = 4 }, Conflict, CodeConcurrentUpdate,
			"resource provider generation conflict for provider child: actual: 0, given: 4"},
		{"last provider missing", func(r *Reshape) { r.Inventories[1].Provider = "ghost" }, BadRequest, CodeProviderNotFound,
			"Resource provider ghost in inventories not found: No resource provider with uuid ghost found"},
		{"unknown class in inventory", func(r *Reshape) { r.Inventories[1].Inventories[0].Class = "DISK_OF_STEEL" }, BadRequest, CodeDefault,
			"malformed reshaper data: No such resource class DISK_OF_STEEL."},
		{"allocations left on dropped inventory", func(r *Reshape) { r.Allocations = r.Allocations[:2] }, Conflict, CodeInventoryInUse,
			"update conflict: Inventory for 'VCPU' on resource provider 'rp' in use."},
		{"capacity of the final inventory", func(r *Reshape) { r.Inventories[1].Inventories[0].Total = 8 }, Conflict, CodeDefault,
			"Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider 'child'. The requested amount would exceed the capacity."},
	}
	for _, tc := range cases {
		r := good()
		tc.break_(r)
		_, err := alApply(s, r)
		if err == nil {
			t.Fatalf("%s: accepted", tc.name)
		}
		alWantErr(t, err, tc.kind, tc.code, tc.detail)
		if alImage(t, s) != before {
			t.Fatalf("%s: rejected reshape changed the state", tc.name)
		}
	}
	alMust(t, s, good())
}

func TestReshapeEmptyAllocationsInventoryInUse(t *testing.T) {
	s := alFixture(t)
	r := &Reshape{Inventories: []ReshapeInventory{{Provider: "rp", Generation: 5, Inventories: []InventoryValues{alInv("VCPU", 1)}}}}
	_, err := alApply(s, r)
	alWantErr(t, err, Conflict, CodeInventoryInUse, "update conflict: Inventory for 'DISK_GB' on resource provider 'rp' in use.")
	// Claiming VCPU as a new consumer does not fit next to c1 and alt.
	r.Allocations = []ConsumerAllocations{alChecked(alClaim("inst", "rp", "VCPU", 1), nil)}
	_, err = alApply(s, r)
	alWantErr(t, err, Conflict, CodeDefault, "Unable to allocate inventory: Unable to create allocation for 'VCPU' on resource provider 'rp'. The requested amount would exceed the capacity.")
}
