package fsm

import (
	"time"

	"github.com/placementd/placementd/fsm/state"
)

// The scenarios the golden logs were written from (golden_test.go). Each
// is written twice: every command its own entry (NAME-singles.json), and
// the same commands three to a batch entry (NAME-batches.json). Once a golden file exists
// its scenario here no longer matters to the tests, which read only the
// file: change a scenario's commands only to write a new file (a new
// name), never to rewrite an old one.
//
// Together the scenarios must use every command kind and give every
// field a non-zero value somewhere (TestGoldenCoversEveryKind,
// TestGoldenFieldsCovered); a new command or field gets a new scenario.

const (
	gRoot     = "9a0c0000-0000-4000-8000-000000000001"
	gChild    = "9a0c0000-0000-4000-8000-000000000002"
	gOther    = "9a0c0000-0000-4000-8000-000000000003"
	gGone     = "9a0c0000-0000-4000-8000-000000000004"
	gConsumer = "9a0c0000-0000-4000-8000-0000000000c1"
	gSecond   = "9a0c0000-0000-4000-8000-0000000000c2"
	gProject  = "9a0c0000-0000-4000-8000-0000000000f1"
	gUser     = "9a0c0000-0000-4000-8000-0000000000f2"
	gAgg      = "9a0c0000-0000-4000-8000-0000000000a1"
)

// goldenStart is the time of a scenario's first command; each next one
// is a little over a second later (nanoseconds included, which a time's
// JSON must keep).
var goldenStart = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.UTC)

type goldenScenario struct {
	name  string
	about string
	cmds  []state.Command
}

func ptr[T any](v T) *T { return &v }

// vcpu, memory and disk are inventories with every field set.
var (
	vcpu   = state.InventoryValues{Class: "VCPU", Total: 64, Reserved: 4, MinUnit: 1, MaxUnit: 32, StepSize: 1, AllocationRatio: 4}
	memory = state.InventoryValues{Class: "MEMORY_MB", Total: 262144, Reserved: 2048, MinUnit: 256, MaxUnit: 131072, StepSize: 256, AllocationRatio: 1.5}
	disk   = state.InventoryValues{Class: "DISK_GB", Total: 2000, Reserved: 10, MinUnit: 10, MaxUnit: 1000, StepSize: 10, AllocationRatio: 1}
)

func goldenScenarios() []goldenScenario {
	return []goldenScenario{
		{name: "providers", about: "resource providers: create (root and child), rename, reparent, delete; failures",
			cmds: []state.Command{
				&state.CreateProvider{UUID: gRoot, Name: "root"},
				&state.CreateProvider{UUID: gChild, Name: "child", ParentUUID: gRoot},
				&state.CreateProvider{UUID: gOther, Name: "other"},
				&state.CreateProvider{UUID: gGone, Name: "gone"},
				&state.CreateProvider{UUID: gGone, Name: "gone again"}, // exists: refused
				&state.UpdateProvider{UUID: gRoot, Name: "root renamed"},
				&state.UpdateProvider{UUID: gChild, Name: "child", ParentUUID: ptr(gOther)}, // refused without AllowReparenting
				&state.UpdateProvider{UUID: gChild, Name: "child moved", ParentUUID: ptr(gOther), AllowReparenting: true},
				&state.UpdateProvider{UUID: gChild, Name: "child moved", ParentUUID: ptr(""), AllowReparenting: true},
				&state.DeleteProvider{UUID: gGone},
				&state.DeleteProvider{UUID: gGone}, // gone: refused
			}},
		{name: "classes-traits", about: "custom resource classes and traits: create, rename, delete; failures",
			cmds: []state.Command{
				&state.CreateResourceClass{Name: "CUSTOM_GOLD"},
				&state.CreateResourceClass{Name: "CUSTOM_GOLD", IfMissing: true},
				&state.CreateResourceClass{Name: "CUSTOM_GOLD"}, // exists: refused
				&state.CreateResourceClass{Name: "CUSTOM_SILVER"},
				&state.RenameResourceClass{Name: "CUSTOM_SILVER", NewName: "CUSTOM_BRONZE"},
				&state.DeleteResourceClass{Name: "CUSTOM_BRONZE"},
				&state.DeleteResourceClass{Name: "VCPU"}, // standard: refused
				&state.CreateTrait{Name: "CUSTOM_GOLDEN"},
				&state.CreateTrait{Name: "CUSTOM_GOLDEN"},
				&state.CreateTrait{Name: "CUSTOM_FLEETING"},
				&state.DeleteTrait{Name: "CUSTOM_FLEETING"},
				&state.DeleteTrait{Name: "HW_CPU_X86_AVX2"}, // standard: refused
			}},
		{name: "inventories", about: "inventories: create, update, set, delete one, delete all; generation conflicts",
			cmds: []state.Command{
				&state.CreateProvider{UUID: gRoot, Name: "root"},
				&state.CreateInventory{Provider: gRoot, Inventory: vcpu},
				&state.CreateInventory{Provider: gRoot, Inventory: state.InventoryValues{Class: "DISK_GB", Total: 100, Reserved: 100, MinUnit: 1, MaxUnit: 100, StepSize: 1, AllocationRatio: 1}, ReservedCanBeTotal: true},
				&state.UpdateInventory{Provider: gRoot, Generation: 2, Inventory: state.InventoryValues{Class: "VCPU", Total: 128, Reserved: 8, MinUnit: 2, MaxUnit: 64, StepSize: 2, AllocationRatio: 2}},
				&state.UpdateInventory{Provider: gRoot, Generation: 2, Inventory: vcpu}, // stale generation: refused
				&state.UpdateInventory{Provider: gRoot, Generation: 3, Inventory: state.InventoryValues{Class: "DISK_GB", Total: 50, Reserved: 50, MinUnit: 1, MaxUnit: 50, StepSize: 1, AllocationRatio: 1}, ReservedCanBeTotal: true},
				&state.SetInventories{Provider: gRoot, Generation: 4, Inventories: []state.InventoryValues{memory, vcpu, disk}},
				&state.SetInventories{Provider: gRoot, Generation: 5, Inventories: []state.InventoryValues{{Class: "VCPU", Total: 1, Reserved: 1, MinUnit: 1, MaxUnit: 1, StepSize: 1, AllocationRatio: 1}}, ReservedCanBeTotal: true},
				&state.DeleteInventory{Provider: gRoot, Class: "VCPU"},
				&state.DeleteInventory{Provider: gRoot, Class: "VCPU"}, // none left: refused
				&state.SetInventories{Provider: gRoot, Generation: 7, Inventories: []state.InventoryValues{vcpu, disk}},
				&state.DeleteInventories{Provider: gRoot},
			}},
		{name: "provider-traits-aggregates", about: "a provider's traits and aggregates: set, delete; generation conflicts",
			cmds: []state.Command{
				&state.CreateProvider{UUID: gRoot, Name: "root"},
				&state.CreateTrait{Name: "CUSTOM_GOLDEN"},
				&state.SetProviderTraits{Provider: gRoot, Generation: 0, Traits: []string{"HW_CPU_X86_AVX2", "CUSTOM_GOLDEN"}},
				&state.SetProviderTraits{Provider: gRoot, Generation: 0, Traits: []string{"CUSTOM_GOLDEN"}}, // stale: refused
				&state.SetProviderTraits{Provider: gRoot, Generation: 1, Traits: []string{"CUSTOM_NOT_THERE"}},
				&state.SetAggregates{UUID: gRoot, Aggregates: []string{gAgg}},
				&state.SetAggregates{UUID: gRoot, Aggregates: []string{gAgg, gProject}, Generation: ptr(int64(1))},
				&state.SetAggregates{UUID: gRoot, Aggregates: nil, Generation: ptr(int64(1))}, // stale: refused
				&state.DeleteProviderTraits{Provider: gRoot},
			}},
		{name: "allocations", about: "allocations: PUT and POST forms, consumer generations and types, over capacity, delete",
			cmds: []state.Command{
				&state.CreateProvider{UUID: gRoot, Name: "root"},
				&state.CreateProvider{UUID: gChild, Name: "child", ParentUUID: gRoot},
				&state.SetInventories{Provider: gRoot, Inventories: []state.InventoryValues{vcpu, memory}},
				&state.SetInventories{Provider: gChild, Inventories: []state.InventoryValues{disk}},
				&state.SetAllocations{Consumers: []state.ConsumerAllocations{{
					Consumer: gConsumer, ProjectID: gProject, UserID: gUser, ConsumerType: "INSTANCE", CheckGeneration: true,
					Allocations: []state.AllocationRequest{
						{Provider: gRoot, Class: "VCPU", Used: 4}, {Provider: gRoot, Class: "MEMORY_MB", Used: 4096},
						{Provider: gChild, Class: "DISK_GB", Used: 100}},
				}}},
				&state.SetAllocations{Consumers: []state.ConsumerAllocations{{ // generation 0 is stale: refused
					Consumer: gConsumer, ProjectID: gProject, UserID: gUser, CheckGeneration: true, Generation: ptr(int64(0)),
					Allocations: []state.AllocationRequest{{Provider: gRoot, Class: "VCPU", Used: 2}},
				}}},
				&state.SetAllocations{Post: true, Consumers: []state.ConsumerAllocations{
					{Consumer: gConsumer, ProjectID: gProject, UserID: gUser, ConsumerType: "MIGRATION", CheckGeneration: true, Generation: ptr(int64(1)),
						Allocations: []state.AllocationRequest{{Provider: gRoot, Class: "VCPU", Used: 8}}},
					{Consumer: gSecond, ProjectID: gProject, UserID: gUser,
						Allocations: []state.AllocationRequest{{Provider: gChild, Class: "DISK_GB", Used: 1000}}},
				}},
				&state.SetAllocations{Post: true, Consumers: []state.ConsumerAllocations{{ // over capacity: refused
					Consumer: gSecond, ProjectID: gProject, UserID: gUser,
					Allocations: []state.AllocationRequest{{Provider: gRoot, Class: "VCPU", Used: 1000}},
				}}},
				&state.DeleteConsumerAllocations{Consumer: gSecond},
				&state.DeleteConsumerAllocations{Consumer: gSecond}, // none left: refused
			}},
		{name: "reshape", about: "the reshaper: inventories and allocations moved from a root to a child at once",
			cmds: []state.Command{
				&state.CreateProvider{UUID: gRoot, Name: "root"},
				&state.CreateProvider{UUID: gChild, Name: "child", ParentUUID: gRoot},
				&state.SetInventories{Provider: gRoot, Inventories: []state.InventoryValues{vcpu, disk}},
				&state.SetAllocations{Consumers: []state.ConsumerAllocations{{
					Consumer: gConsumer, ProjectID: gProject, UserID: gUser,
					Allocations: []state.AllocationRequest{{Provider: gRoot, Class: "VCPU", Used: 4}, {Provider: gRoot, Class: "DISK_GB", Used: 20}},
				}}},
				&state.Reshape{ // the root's generation is stale: refused
					Inventories: []state.ReshapeInventory{{Provider: gRoot, Generation: 0, Inventories: []state.InventoryValues{disk}}},
				},
				&state.Reshape{
					Inventories: []state.ReshapeInventory{
						{Provider: gRoot, Generation: 2, Inventories: []state.InventoryValues{disk}},
						{Provider: gChild, Generation: 0, Inventories: []state.InventoryValues{vcpu}},
					},
					Allocations: []state.ConsumerAllocations{{
						Consumer: gConsumer, ProjectID: gProject, UserID: gUser, ConsumerType: "INSTANCE", CheckGeneration: true, Generation: ptr(int64(1)),
						Allocations: []state.AllocationRequest{{Provider: gChild, Class: "VCPU", Used: 4}, {Provider: gRoot, Class: "DISK_GB", Used: 20}},
					}},
				},
			}},
		{name: "write-order", about: "log entry v3: allocations kept in the order written (PUT, POST, the reshaper) and classes numbered as upstream numbers them, beside commands without either",
			cmds: writeOrderScenario()},
		{name: "import", about: "imports: a first chunk with every kind of object and identifiers kept, a second one, a refused one, and a replacing one",
			cmds: importCommands()},
	}
}

// writeOrderScenario uses log entry v3: allocation writes that keep their
// order, and classes numbered as upstream numbers them.
func writeOrderScenario() []state.Command {
	return []state.Command{
		&state.CreateProvider{UUID: gRoot, Name: "root"},
		&state.CreateProvider{UUID: gChild, Name: "child", ParentUUID: gRoot},
		&state.CreateProvider{UUID: gOther, Name: "other"},
		&state.SetInventories{Provider: gRoot, Inventories: []state.InventoryValues{vcpu, memory}},
		&state.SetInventories{Provider: gChild, Inventories: []state.InventoryValues{disk}},
		&state.SetInventories{Provider: gOther, Inventories: []state.InventoryValues{vcpu, disk}},
		&state.SetAllocations{WriteOrder: true, Consumers: []state.ConsumerAllocations{{
			Consumer: gConsumer, ProjectID: gProject, UserID: gUser, ConsumerType: "INSTANCE",
			Allocations: []state.AllocationRequest{
				{Provider: gOther, Class: "DISK_GB", Used: 10}, {Provider: gRoot, Class: "VCPU", Used: 2},
				{Provider: gChild, Class: "DISK_GB", Used: 20}, {Provider: gRoot, Class: "MEMORY_MB", Used: 512}},
		}}},
		&state.SetAllocations{Post: true, WriteOrder: true, Consumers: []state.ConsumerAllocations{
			{Consumer: gSecond, ProjectID: gProject, UserID: gUser,
				Allocations: []state.AllocationRequest{{Provider: gOther, Class: "VCPU", Used: 1}, {Provider: gChild, Class: "DISK_GB", Used: 10}}},
			{Consumer: gConsumer, ProjectID: gProject, UserID: gUser, CheckGeneration: true, Generation: ptr(int64(1)),
				Allocations: []state.AllocationRequest{{Provider: gRoot, Class: "MEMORY_MB", Used: 1024}, {Provider: gOther, Class: "VCPU", Used: 2}}},
		}},
		// The same consumer's allocations written without WriteOrder
		// (an older build's entry): sorted by provider, then class.
		&state.SetAllocations{Consumers: []state.ConsumerAllocations{{
			Consumer: gSecond, ProjectID: gProject, UserID: gUser,
			Allocations: []state.AllocationRequest{{Provider: gOther, Class: "VCPU", Used: 1}, {Provider: gChild, Class: "DISK_GB", Used: 10}},
		}}},
		&state.Reshape{WriteOrder: true,
			Inventories: []state.ReshapeInventory{{Provider: gChild, Generation: 4, Inventories: []state.InventoryValues{disk, vcpu}}},
			Allocations: []state.ConsumerAllocations{{
				Consumer: gSecond, ProjectID: gProject, UserID: gUser, CheckGeneration: true, Generation: ptr(int64(2)),
				Allocations: []state.AllocationRequest{{Provider: gChild, Class: "VCPU", Used: 1}, {Provider: gOther, Class: "DISK_GB", Used: 20}, {Provider: gChild, Class: "DISK_GB", Used: 10}},
			}},
		},
		&state.CreateResourceClass{Name: "CUSTOM_A", MaxPlusOne: true},
		&state.CreateResourceClass{Name: "CUSTOM_B", MaxPlusOne: true},
		&state.DeleteResourceClass{Name: "CUSTOM_B"},
		&state.CreateResourceClass{Name: "CUSTOM_C", MaxPlusOne: true}, // gets CUSTOM_B's id again
		&state.CreateResourceClass{Name: "CUSTOM_D"},                   // an older build's entry: the counter
		&state.CreateResourceClass{Name: "CUSTOM_A", IfMissing: true, MaxPlusOne: true},
	}
}

func importCommands() []state.Command {
	created := time.Date(2024, 5, 6, 7, 8, 9, 987654321, time.UTC)
	updated := created.Add(36 * time.Hour)
	inv := func(class string, total int64) state.InventoryImage {
		return state.InventoryImage{Class: class, Inventory: state.Inventory{Total: total, Reserved: 1, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: 2,
			Created: created, Updated: updated}}
	}
	first := &state.ImportChunk{
		First:         true,
		CustomClasses: []state.ResourceClass{{ID: 10007, Name: "CUSTOM_IMPORTED", Created: created, Updated: updated}},
		CustomTraits:  []state.Trait{{Name: "CUSTOM_IMPORTED", Standard: true, Created: created, Updated: updated}}, // Standard: not kept
		ConsumerTypes: []state.ConsumerType{{ID: 3, Name: "INSTANCE", Created: created, Updated: updated}},
		Providers: []state.ProviderImage{
			{ID: 12, UUID: gChild, Name: "imported child", Generation: 4, ParentUUID: gRoot, RootUUID: gRoot, Created: created, Updated: updated,
				Inventories: []state.InventoryImage{inv("CUSTOM_IMPORTED", 8)}},
			{ID: 11, UUID: gRoot, Name: "imported root", Generation: 7, RootUUID: gRoot, Created: created, Updated: updated,
				Inventories: []state.InventoryImage{inv("DISK_GB", 500), inv("VCPU", 32)},
				Traits:      []string{"CUSTOM_IMPORTED", "HW_CPU_X86_AVX2"}, Aggregates: []string{gAgg}},
		},
		Consumers: []state.ConsumerImage{{Consumer: state.Consumer{
			UUID: gConsumer, ProjectID: gProject, UserID: gUser, Type: "INSTANCE", Generation: 3, Created: created, Updated: updated,
			Allocations: []state.Allocation{{ProviderUUID: gRoot, Class: "VCPU", Used: 2}, {ProviderUUID: gChild, Class: "CUSTOM_IMPORTED", Used: 1}},
		}}},
		NextProviderID: 40, NextClassID: 10020, NextConsumerTypeID: 9,
	}
	second := &state.ImportChunk{
		Providers: []state.ProviderImage{{UUID: gOther, Name: "imported later", Inventories: []state.InventoryImage{inv("MEMORY_MB", 1024)}}},
		Consumers: []state.ConsumerImage{{Consumer: state.Consumer{UUID: gSecond, ProjectID: gProject, UserID: gUser,
			Allocations: []state.Allocation{{ProviderUUID: gOther, Class: "MEMORY_MB", Used: 512}}}}},
	}
	replace := &state.ImportChunk{
		First: true, Replace: true,
		Providers: []state.ProviderImage{{UUID: gGone, Name: "replacing", Inventories: []state.InventoryImage{inv("VCPU", 4)}}},
	}
	return []state.Command{
		first,
		&state.ImportChunk{First: true, CustomTraits: []state.Trait{{Name: "CUSTOM_LATE"}}}, // not empty: refused
		second,
		&state.SetAllocations{Consumers: []state.ConsumerAllocations{{
			Consumer: gConsumer, ProjectID: gProject, UserID: gUser, CheckGeneration: true, Generation: ptr(int64(3)),
			Allocations: []state.AllocationRequest{{Provider: gChild, Class: "CUSTOM_IMPORTED", Used: 2}},
		}}},
		&state.CreateTrait{Name: "CUSTOM_AFTER_IMPORT"},
		&state.SetProviderTraits{Provider: gOther, Generation: 0, Traits: []string{"CUSTOM_AFTER_IMPORT"}},
		&state.CreateResourceClass{Name: "CUSTOM_AFTER_IMPORT"},
		replace,
	}
}

// goldenSnapshotScenario is the scenario whose state, written as a
// snapshot, is the golden snapshot; the replacing import at its end is
// left out, so that the snapshot holds one of everything an image has.
func goldenSnapshotScenario() []state.Command {
	cmds := importCommands()
	return cmds[:len(cmds)-1]
}
