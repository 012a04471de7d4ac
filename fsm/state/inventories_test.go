package state

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

var invT0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func invApply(t *testing.T, s *Store, cmd Command, at time.Time) any {
	t.Helper()
	v, err := cmd.Apply(s, Meta{Time: at})
	if err != nil {
		t.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return v
}

func invImage(t *testing.T, s *Store) string {
	t.Helper()
	b, err := json.Marshal(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// invReject applies a command that must fail with exactly this error and
// change nothing.
func invReject(t *testing.T, s *Store, cmd Command, kind Kind, code, detail string) {
	t.Helper()
	before := invImage(t, s)
	gens := map[string]int64{}
	for p := range s.Providers.InOrder() {
		gens[p.UUID] = p.Generation
	}
	_, err := cmd.Apply(s, Meta{Time: invT0.Add(time.Hour)})
	se, ok := err.(*Error)
	if !ok {
		t.Fatalf("%s: want error %q, got %v", cmd.Kind(), detail, err)
	}
	if se.Kind != kind || se.Code != code || se.Detail != detail {
		t.Fatalf("%s: got (%v, %s, %q)\nwant (%v, %s, %q)", cmd.Kind(), se.Kind, se.Code, se.Detail, kind, code, detail)
	}
	if after := invImage(t, s); after != before {
		t.Fatalf("%s: rejected command changed the state\nbefore %s\nafter  %s", cmd.Kind(), before, after)
	}
}

func invValues(class string, total, reserved int64) InventoryValues {
	return InventoryValues{Class: class, Total: total, Reserved: reserved, MinUnit: 1, MaxUnit: MaxInt, StepSize: 1, AllocationRatio: 1}
}

// invStore has provider rp1 (generation 0) and the custom class CUSTOM_X.
func invStore(t *testing.T) *Store {
	t.Helper()
	s := New()
	invApply(t, s, &CreateProvider{UUID: "rp1", Name: "one"}, invT0)
	invApply(t, s, &CreateResourceClass{Name: "CUSTOM_X"}, invT0)
	return s
}

// invAllocate makes consumer c hold used of class on provider.
func invAllocate(t *testing.T, s *Store, c, provider, class string, used int64) {
	t.Helper()
	invApply(t, s, &SetAllocations{Consumers: []ConsumerAllocations{{
		Consumer: c, ProjectID: "p", UserID: "u",
		Allocations: []AllocationRequest{{Provider: provider, Class: class, Used: used}},
	}}}, invT0)
}

func TestCreateInventory(t *testing.T) {
	s := invStore(t)
	v := invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: InventoryValues{
		Class: "DISK_GB", Total: 2048, Reserved: 512, MinUnit: 10, MaxUnit: 1024, StepSize: 10, AllocationRatio: 1.5,
	}}, invT0)
	got := v.(InventoryResult)
	want := InventoryResult{Class: "DISK_GB", Generation: 1, Inventory: Inventory{
		Total: 2048, Reserved: 512, MinUnit: 10, MaxUnit: 1024, StepSize: 10, AllocationRatio: 1.5, Created: invT0,
	}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	p := s.Providers.Get("rp1")
	if p.Generation != 1 || !p.Updated.Equal(invT0) || p.Inventories["DISK_GB"].Total != 2048 {
		t.Fatalf("provider not updated: %+v", p)
	}
	// The result is a copy.
	got.Inventory.Total = 1
	if p.Inventories["DISK_GB"].Total != 2048 {
		t.Fatal("result aliases the store")
	}
}

func TestCreateInventoryRejections(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("DISK_GB", 10, 0)}, invT0)
	invReject(t, s, &CreateInventory{Provider: "nope", Inventory: invValues("VCPU", 1, 0)},
		NotFound, CodeDefault, "No resource provider with uuid nope found")
	invReject(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("VCPU", 4, 4)},
		BadRequest, CodeDefault, "Unable to create inventory for resource provider rp1: Invalid inventory for 'VCPU' on resource provider 'rp1'. The reserved value is greater than or equal to total.")
	invReject(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("VCPU", 4, 5), ReservedCanBeTotal: true},
		BadRequest, CodeDefault, "Unable to create inventory for resource provider rp1: Invalid inventory for 'VCPU' on resource provider 'rp1'. The reserved value is greater than total.")
	// A zero ratio makes a zero capacity, refused before 1.26.
	zero := invValues("VCPU", 4, 0)
	zero.AllocationRatio = 0
	invReject(t, s, &CreateInventory{Provider: "rp1", Inventory: zero},
		BadRequest, CodeDefault, "Unable to create inventory for resource provider rp1: Invalid inventory for 'VCPU' on resource provider 'rp1'. The reserved value is greater than or equal to total.")
	invReject(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("NO_CLASS_14", 4, 0)},
		BadRequest, CodeDefault, "Unable to create inventory for resource provider rp1: No such resource class NO_CLASS_14.")
	invReject(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("DISK_GB", 4, 0)},
		Conflict, CodeConcurrentUpdate, "Update conflict: Inventory for 'DISK_GB' on resource provider 'rp1' already exists.")

	// From 1.26 reserved may equal total.
	v := invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("VCPU", 4, 4), ReservedCanBeTotal: true}, invT0)
	if v.(InventoryResult).Generation != 2 {
		t.Fatalf("generation %d, want 2", v.(InventoryResult).Generation)
	}
}

func TestUpdateInventory(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("VCPU", 8, 0)}, invT0)
	invAllocate(t, s, "c1", "rp1", "VCPU", 6) // generation 2
	later := invT0.Add(time.Minute)
	// As upstream, capacity may drop below usage: only a warning there.
	v := invApply(t, s, &UpdateInventory{Provider: "rp1", Generation: 2, Inventory: invValues("VCPU", 4, 1)}, later)
	got := v.(InventoryResult)
	if got.Generation != 3 || got.Inventory.Total != 4 || got.Inventory.Reserved != 1 ||
		!got.Inventory.Created.Equal(invT0) || !got.Inventory.Updated.Equal(later) {
		t.Fatalf("got %+v", got)
	}
	if p := s.Providers.Get("rp1"); p.Generation != 3 || !p.Updated.Equal(later) {
		t.Fatalf("provider generation %d updated %v", p.Generation, p.Updated)
	}
}

func TestUpdateInventoryRejections(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("VCPU", 8, 0)}, invT0)
	invReject(t, s, &UpdateInventory{Provider: "nope", Generation: 1, Inventory: invValues("VCPU", 1, 0)},
		NotFound, CodeDefault, "No resource provider with uuid nope found")
	invReject(t, s, &UpdateInventory{Provider: "rp1", Generation: 5, Inventory: invValues("VCPU", 1, 0)},
		Conflict, CodeConcurrentUpdate, "resource provider generation conflict")
	// The generation is checked before the values.
	invReject(t, s, &UpdateInventory{Provider: "rp1", Generation: 0, Inventory: invValues("VCPU", 1, 7)},
		Conflict, CodeConcurrentUpdate, "resource provider generation conflict")
	invReject(t, s, &UpdateInventory{Provider: "rp1", Generation: 1, Inventory: invValues("VCPU", 8, 8)},
		BadRequest, CodeDefault, "Unable to update inventory for resource provider rp1: Invalid inventory for 'VCPU' on resource provider 'rp1'. The reserved value is greater than or equal to total.")
	invReject(t, s, &UpdateInventory{Provider: "rp1", Generation: 1, Inventory: invValues("HOUSE", 8, 0)},
		NotFound, CodeDefault, "No such resource class HOUSE.")
	invReject(t, s, &UpdateInventory{Provider: "rp1", Generation: 1, Inventory: invValues("MEMORY_MB", 8, 0)},
		BadRequest, CodeDefault, "No inventory record with resource class for resource provider rp1: No inventory of class MEMORY_MB found.")
	invApply(t, s, &UpdateInventory{Provider: "rp1", Generation: 1, Inventory: invValues("VCPU", 8, 8), ReservedCanBeTotal: true}, invT0)
}

func TestSetInventories(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &SetInventories{Provider: "rp1", Generation: 0, Inventories: []InventoryValues{
		invValues("VCPU", 8, 0), invValues("DISK_GB", 100, 0),
	}}, invT0)
	later := invT0.Add(time.Minute)
	v := invApply(t, s, &SetInventories{Provider: "rp1", Generation: 1, Inventories: []InventoryValues{
		invValues("DISK_GB", 200, 0), invValues("CUSTOM_X", 3, 0),
	}}, later)
	got := v.(InventoriesResult)
	if got.Generation != 2 || len(got.Inventories) != 2 ||
		got.Inventories[0].Class != "CUSTOM_X" || got.Inventories[1].Class != "DISK_GB" {
		t.Fatalf("got %+v", got)
	}
	disk := got.Inventories[1].Inventory
	if disk.Total != 200 || !disk.Created.Equal(invT0) || !disk.Updated.Equal(later) {
		t.Fatalf("DISK_GB %+v", disk)
	}
	if x := got.Inventories[0].Inventory; !x.Created.Equal(later) || !x.Updated.IsZero() {
		t.Fatalf("CUSTOM_X %+v", x)
	}
	if _, ok := s.Providers.Get("rp1").Inventories["VCPU"]; ok {
		t.Fatal("VCPU inventory not removed")
	}
	// An empty set still bumps the generation, as upstream.
	v = invApply(t, s, &SetInventories{Provider: "rp1", Generation: 2, Inventories: []InventoryValues{}}, later)
	if g := v.(InventoriesResult).Generation; g != 3 || len(s.Providers.Get("rp1").Inventories) != 0 {
		t.Fatalf("generation %d, inventories %v", g, s.Providers.Get("rp1").Inventories)
	}
	v = invApply(t, s, &SetInventories{Provider: "rp1", Generation: 3}, later)
	if g := v.(InventoriesResult).Generation; g != 4 {
		t.Fatalf("generation %d, want 4", g)
	}
}

func TestSetInventoriesRejections(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateProvider{UUID: "rp2", Name: "two"}, invT0)
	invApply(t, s, &SetInventories{Provider: "rp1", Generation: 0, Inventories: []InventoryValues{
		invValues("VCPU", 8, 0), invValues("DISK_GB", 100, 0), invValues("MEMORY_MB", 100, 0),
	}}, invT0)
	invAllocate(t, s, "c1", "rp1", "DISK_GB", 10)
	invAllocate(t, s, "c2", "rp1", "VCPU", 1)
	gen := s.Providers.Get("rp1").Generation

	invReject(t, s, &SetInventories{Provider: "nope", Generation: 0},
		NotFound, CodeDefault, "No resource provider with uuid nope found")
	invReject(t, s, &SetInventories{Provider: "rp1", Generation: gen + 1},
		Conflict, CodeConcurrentUpdate, "resource provider generation conflict")
	// The first bad record in request order is reported, capacity before
	// unknown classes.
	invReject(t, s, &SetInventories{Provider: "rp2", Generation: 0, Inventories: []InventoryValues{
		invValues("HOUSE", 1, 0), invValues("MEMORY_MB", 5, 6), invValues("VCPU", 5, 5),
	}}, BadRequest, CodeDefault, "Unable to update inventory for resource provider rp2: Invalid inventory for 'MEMORY_MB' on resource provider 'rp2'. The reserved value is greater than or equal to total.")
	invReject(t, s, &SetInventories{Provider: "rp2", Generation: 0, Inventories: []InventoryValues{
		invValues("VCPU", 5, 0), invValues("HOUSE", 1, 0), invValues("BARN", 1, 0),
	}}, BadRequest, CodeDefault, "Unknown resource class in inventory for resource provider rp2: No such resource class HOUSE.")
	// Classes in use are listed in class id order (VCPU 0, DISK_GB 2).
	invReject(t, s, &SetInventories{Provider: "rp1", Generation: gen, Inventories: []InventoryValues{
		invValues("MEMORY_MB", 100, 0),
	}}, Conflict, CodeInventoryInUse, "update conflict: Inventory for 'VCPU, DISK_GB' on resource provider 'rp1' in use.")
	// Keeping the used classes works, even below their usage.
	invApply(t, s, &SetInventories{Provider: "rp1", Generation: gen, Inventories: []InventoryValues{
		invValues("VCPU", 1, 0), invValues("DISK_GB", 5, 0),
	}}, invT0)
}

func TestDeleteInventory(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &SetInventories{Provider: "rp1", Generation: 0, Inventories: []InventoryValues{
		invValues("VCPU", 8, 0), invValues("DISK_GB", 100, 0),
	}}, invT0)
	invAllocate(t, s, "c1", "rp1", "VCPU", 1) // generation 2
	invReject(t, s, &DeleteInventory{Provider: "nope", Class: "VCPU"},
		NotFound, CodeDefault, "No resource provider with uuid nope found")
	invReject(t, s, &DeleteInventory{Provider: "rp1", Class: "HOUSE"},
		NotFound, CodeDefault, "No inventory of class HOUSE found for delete: No such resource class HOUSE.")
	invReject(t, s, &DeleteInventory{Provider: "rp1", Class: "MEMORY_MB"},
		NotFound, CodeDefault, "No inventory of class MEMORY_MB found for delete: No inventory of class MEMORY_MB found for delete")
	invReject(t, s, &DeleteInventory{Provider: "rp1", Class: "VCPU"},
		Conflict, CodeConcurrentUpdate, "Unable to delete inventory of class VCPU: Inventory for 'VCPU' on resource provider 'rp1' in use.")
	v := invApply(t, s, &DeleteInventory{Provider: "rp1", Class: "DISK_GB"}, invT0)
	if g := v.(InventoryResult).Generation; g != 3 {
		t.Fatalf("generation %d, want 3", g)
	}
	if _, ok := s.Providers.Get("rp1").Inventories["DISK_GB"]; ok {
		t.Fatal("DISK_GB not deleted")
	}
}

func TestDeleteInventories(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &SetInventories{Provider: "rp1", Generation: 0, Inventories: []InventoryValues{
		invValues("VCPU", 8, 0), invValues("DISK_GB", 100, 0),
	}}, invT0)
	invAllocate(t, s, "c1", "rp1", "DISK_GB", 1)
	invReject(t, s, &DeleteInventories{Provider: "nope"},
		NotFound, CodeDefault, "No resource provider with uuid nope found")
	invReject(t, s, &DeleteInventories{Provider: "rp1"},
		Conflict, CodeInventoryInUse, "Inventory for 'DISK_GB' on resource provider 'rp1' in use.")
	invApply(t, s, &DeleteConsumerAllocations{Consumer: "c1"}, invT0)
	gen := s.Providers.Get("rp1").Generation
	invApply(t, s, &DeleteInventories{Provider: "rp1"}, invT0)
	invApply(t, s, &DeleteInventories{Provider: "rp1"}, invT0)
	if p := s.Providers.Get("rp1"); len(p.Inventories) != 0 || p.Generation != gen+2 {
		t.Fatalf("inventories %v generation %d, want none and %d", p.Inventories, p.Generation, gen+2)
	}
}

func TestDeleteResourceClassInUse(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("CUSTOM_X", 1, 0)}, invT0)
	invReject(t, s, &DeleteResourceClass{Name: "CUSTOM_X"}, Conflict, CodeDefault,
		"Error in delete resource class: Cannot delete resource class CUSTOM_X. Class is in use in inventory.")
	invReject(t, s, &DeleteResourceClass{Name: "VCPU"}, BadRequest, CodeDefault,
		"Error in delete resource class: Cannot delete standard resource class VCPU.")
	invReject(t, s, &DeleteResourceClass{Name: "CUSTOM_Y"}, NotFound, CodeDefault, "No such resource class CUSTOM_Y.")
	invApply(t, s, &DeleteInventory{Provider: "rp1", Class: "CUSTOM_X"}, invT0)
	invApply(t, s, &DeleteResourceClass{Name: "CUSTOM_X"}, invT0)
	if s.Classes.Get("CUSTOM_X") != nil {
		t.Fatal("class not deleted")
	}
}

func TestRenameResourceClassCarriesInventoryAndUsage(t *testing.T) {
	s := invStore(t)
	invApply(t, s, &CreateInventory{Provider: "rp1", Inventory: invValues("CUSTOM_X", 5, 0)}, invT0)
	invAllocate(t, s, "c1", "rp1", "CUSTOM_X", 2)
	invApply(t, s, &CreateResourceClass{Name: "CUSTOM_Z"}, invT0)
	invReject(t, s, &RenameResourceClass{Name: "CUSTOM_X", NewName: "CUSTOM_Z"}, Conflict, CodeDefault,
		"Resource class already exists: CUSTOM_Z")
	invReject(t, s, &RenameResourceClass{Name: "VCPU", NewName: "CUSTOM_V"}, BadRequest, CodeDefault,
		"Cannot update standard resource class VCPU")
	invReject(t, s, &RenameResourceClass{Name: "CUSTOM_Q", NewName: "CUSTOM_V"}, NotFound, CodeDefault,
		"No such resource class CUSTOM_Q.")
	invApply(t, s, &RenameResourceClass{Name: "CUSTOM_X", NewName: "CUSTOM_Y"}, invT0)
	p := s.Providers.Get("rp1")
	if p.Inventories["CUSTOM_Y"] == nil || p.Usages["CUSTOM_Y"] != 2 || p.Inventories["CUSTOM_X"] != nil {
		t.Fatalf("inventories %v usages %v", p.Inventories, p.Usages)
	}
	fresh, err := Load(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fresh.Providers.Get("rp1").Usages, p.Usages) {
		t.Fatalf("usages %v, rebuilt %v", p.Usages, fresh.Providers.Get("rp1").Usages)
	}
}

func TestCapacityTruncates(t *testing.T) {
	// int((7 - 2) * 0.5) = 2, truncated as Python's int().
	v := InventoryValues{Total: 7, Reserved: 2, AllocationRatio: 0.5}
	if c := v.capacity(); c != 2 {
		t.Fatalf("capacity %d, want 2", c)
	}
	v = InventoryValues{Total: 3, Reserved: 4, AllocationRatio: 0.5}
	if c := v.capacity(); c != 0 {
		t.Fatalf("capacity %d, want 0 (toward zero)", c)
	}
}

// TestInventoryCommandsSurviveTheLog encodes each command as the log does
// and checks that replaying it gives the same state.
func TestInventoryCommandsSurviveTheLog(t *testing.T) {
	cmds := []Command{
		&CreateProvider{UUID: "rp1", Name: "one"},
		&CreateInventory{Provider: "rp1", Inventory: invValues("VCPU", 4, 0), ReservedCanBeTotal: true},
		&UpdateInventory{Provider: "rp1", Generation: 1, Inventory: invValues("VCPU", 5, 1)},
		&SetInventories{Provider: "rp1", Generation: 2, Inventories: []InventoryValues{invValues("DISK_GB", 3, 0)}},
		&DeleteInventory{Provider: "rp1", Class: "DISK_GB"},
		&DeleteInventories{Provider: "rp1"},
	}
	direct, replayed := New(), New()
	for _, c := range cmds {
		invApply(t, direct, c, invT0)
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		c2 := emptyOf(c)
		if err := json.Unmarshal(b, c2); err != nil {
			t.Fatal(err)
		}
		invApply(t, replayed, c2, invT0)
	}
	if a, b := invImage(t, direct), invImage(t, replayed); a != b {
		t.Fatalf("replay differs:\n%s\n%s", a, b)
	}
}

// TestStandardListsMatchSharedData checks the embedded standard resource
// classes and traits against the shared copies when they are present.
func TestStandardListsMatchSharedData(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no shared data at %s", dir)
	}
	for file, embedded := range map[string][]string{
		"standard_resource_classes.txt": StandardResourceClasses,
		"standard_traits.txt":           StandardTraits,
	} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if want := lines(string(b)); !reflect.DeepEqual(embedded, want) {
			t.Errorf("%s differs from the shared copy (%d entries here, %d there)", file, len(embedded), len(want))
		}
		local, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if string(local) != string(b) {
			t.Errorf("fsm/state/%s is not byte-identical to the shared copy", file)
		}
	}
	if len(StandardResourceClasses) == 0 || StandardResourceClasses[0] != "VCPU" {
		t.Errorf("VCPU must be standard class 0, got %v", StandardResourceClasses[:1])
	}
}
