package state

import (
	"fmt"
	"sort"
	"strings"
)

// MaxInt is upstream's db constant MAX_INT, the bound of inventory fields
// and the default max_unit.
const MaxInt = 0x7FFFFFFF

// InventoryValues is one resource class's inventory as a client writes it
// (defaults already filled in by the HTTP layer).
type InventoryValues struct {
	Class           string  `json:"Class"`
	Total           int64   `json:"Total"`
	Reserved        int64   `json:"Reserved"`
	MinUnit         int64   `json:"MinUnit"`
	MaxUnit         int64   `json:"MaxUnit"`
	StepSize        int64   `json:"StepSize"`
	AllocationRatio float64 `json:"AllocationRatio"`
}

// capacity is upstream's Inventory.capacity: int((total - reserved) *
// allocation_ratio), truncated toward zero.
func (v *InventoryValues) capacity() int64 {
	return int64(float64(v.Total-v.Reserved) * v.AllocationRatio)
}

// checkCapacity is upstream's _validate_inventory_capacity: before 1.26 a
// capacity of zero or less is invalid, from 1.26 (reservedCanBeTotal) only
// a negative one.
func (v *InventoryValues) checkCapacity(provider string, reservedCanBeTotal bool) string {
	c := v.capacity()
	switch {
	case reservedCanBeTotal && c < 0:
		return fmt.Sprintf("Invalid inventory for '%s' on resource provider '%s'. The reserved value is greater than total.", v.Class, provider)
	case !reservedCanBeTotal && c <= 0:
		return fmt.Sprintf("Invalid inventory for '%s' on resource provider '%s'. The reserved value is greater than or equal to total.", v.Class, provider)
	}
	return ""
}

// InventoryResult is an inventory record with its class and the provider
// generation after the command (or at the time of a read).
type InventoryResult struct {
	Class      string
	Inventory  Inventory
	Generation int64
}

// InventoriesResult is a provider's whole inventory after SetInventories.
type InventoriesResult struct {
	Generation  int64
	Inventories []InventoryResult // by class name
}

// ProviderInventories copies a provider's inventory, by class name.
func (p *Provider) ProviderInventories() []InventoryResult {
	out := make([]InventoryResult, 0, len(p.Inventories))
	for _, class := range SortedKeys(p.Inventories) {
		out = append(out, InventoryResult{Class: class, Inventory: *p.Inventories[class], Generation: p.Generation})
	}
	return out
}

// bumpGeneration records a change to a provider: upstream increments the
// generation with an UPDATE of the provider row, which also sets its
// updated_at.
func (p *Provider) bumpGeneration(m Meta) {
	p.Generation++
	p.Updated = m.Time
}

// inventoryInUse returns upstream's InventoryInUse message if any of the
// classes has allocations on p. The classes are listed in class id order,
// as upstream's GROUP BY resource_class_id gives them.
func (s *Store) inventoryInUse(p *Provider, classes []string) string {
	var used []string
	for _, c := range classes {
		if p.Usages[c] > 0 {
			used = append(used, c)
		}
	}
	if len(used) == 0 {
		return ""
	}
	sort.Slice(used, func(i, j int) bool { return s.classID(used[i]) < s.classID(used[j]) })
	return fmt.Sprintf("Inventory for '%s' on resource provider '%s' in use.", strings.Join(used, ", "), p.UUID)
}

func (s *Store) classID(name string) int {
	if rc := s.Classes.Get(name); rc != nil {
		return rc.ID
	}
	return -1
}

func newInventory(v *InventoryValues, m Meta) *Inventory {
	return &Inventory{
		Total: v.Total, Reserved: v.Reserved, MinUnit: v.MinUnit, MaxUnit: v.MaxUnit,
		StepSize: v.StepSize, AllocationRatio: v.AllocationRatio, Created: m.Time,
	}
}

// updatedInventory returns a new record: old overwritten with v (records
// in a version never change). Upstream's UPDATE sets updated_at even when
// nothing changes.
func updatedInventory(old *Inventory, v *InventoryValues, m Meta) *Inventory {
	inv := *old
	inv.Total, inv.Reserved, inv.MinUnit, inv.MaxUnit = v.Total, v.Reserved, v.MinUnit, v.MaxUnit
	inv.StepSize, inv.AllocationRatio = v.StepSize, v.AllocationRatio
	inv.Updated = m.Time
	return &inv
}

// CreateInventory is POST /resource_providers/{uuid}/inventories: it adds
// one class's inventory, which must not exist yet. No generation is given.
type CreateInventory struct {
	Provider           string          `json:"Provider"`
	Inventory          InventoryValues `json:"Inventory"`
	ReservedCanBeTotal bool            `json:"ReservedCanBeTotal,omitempty"` // microversion 1.26
}

func (c *CreateInventory) Kind() string { return "inventory.create" }

func (c *CreateInventory) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	v := &c.Inventory
	if msg := v.checkCapacity(p.UUID, c.ReservedCanBeTotal); msg != "" {
		return nil, Errorf("Unable to create inventory for resource provider %s: %s", p.UUID, msg)
	}
	if s.Classes.Get(v.Class) == nil {
		return nil, Errorf("Unable to create inventory for resource provider %s: No such resource class %s.", p.UUID, v.Class)
	}
	if p.Inventories[v.Class] != nil {
		// Upstream hits the unique constraint on (provider, class).
		return nil, Conflictf(CodeConcurrentUpdate,
			"Update conflict: Inventory for '%s' on resource provider '%s' already exists.", v.Class, p.UUID)
	}
	inv := newInventory(v, m)
	p = s.editProvider(p)
	p.Inventories[v.Class] = inv
	p.bumpGeneration(m)
	return InventoryResult{Class: v.Class, Inventory: *inv, Generation: p.Generation}, nil
}

// UpdateInventory is PUT /resource_providers/{uuid}/inventories/{class}:
// it replaces one existing class's inventory. As upstream, capacity may
// drop below current usage (upstream only logs a warning).
type UpdateInventory struct {
	Provider           string          `json:"Provider"`
	Generation         int64           `json:"Generation"`
	Inventory          InventoryValues `json:"Inventory"`
	ReservedCanBeTotal bool            `json:"ReservedCanBeTotal,omitempty"`
}

func (c *UpdateInventory) Kind() string { return "inventory.update" }

func (c *UpdateInventory) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	if c.Generation != p.Generation {
		return nil, Conflictf(CodeConcurrentUpdate, "resource provider generation conflict")
	}
	v := &c.Inventory
	if msg := v.checkCapacity(p.UUID, c.ReservedCanBeTotal); msg != "" {
		return nil, Errorf("Unable to update inventory for resource provider %s: %s", p.UUID, msg)
	}
	if s.Classes.Get(v.Class) == nil {
		// Upstream lets this NotFound escape the handler.
		return nil, ClassNotFound(v.Class)
	}
	inv := p.Inventories[v.Class]
	if inv == nil {
		return nil, Errorf("No inventory record with resource class for resource provider %s: No inventory of class %s found.", p.UUID, v.Class)
	}
	inv = updatedInventory(inv, v, m)
	p = s.editProvider(p)
	p.Inventories[v.Class] = inv
	p.bumpGeneration(m)
	return InventoryResult{Class: v.Class, Inventory: *inv, Generation: p.Generation}, nil
}

// SetInventories is PUT /resource_providers/{uuid}/inventories: it replaces
// the provider's whole inventory. Inventories are in the request
// document's order, which decides which invalid class is reported.
type SetInventories struct {
	Provider           string            `json:"Provider"`
	Generation         int64             `json:"Generation"`
	Inventories        []InventoryValues `json:"Inventories"`
	ReservedCanBeTotal bool              `json:"ReservedCanBeTotal,omitempty"`
}

func (c *SetInventories) Kind() string { return "inventory.set" }

func (c *SetInventories) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	if c.Generation != p.Generation {
		return nil, Conflictf(CodeConcurrentUpdate, "resource provider generation conflict")
	}
	for i := range c.Inventories {
		if msg := c.Inventories[i].checkCapacity(p.UUID, c.ReservedCanBeTotal); msg != "" {
			return nil, Errorf("Unable to update inventory for resource provider %s: %s", p.UUID, msg)
		}
	}
	for _, v := range c.Inventories {
		if s.Classes.Get(v.Class) == nil {
			return nil, Errorf("Unknown resource class in inventory for resource provider %s: No such resource class %s.", p.UUID, v.Class)
		}
	}
	p, msg := s.replaceInventories(p, c.Inventories, m)
	if msg != "" {
		return nil, Conflictf(CodeInventoryInUse, "update conflict: %s", msg)
	}
	return InventoriesResult{Generation: p.Generation, Inventories: p.ProviderInventories()}, nil
}

// replaceInventories makes p's inventory exactly want and bumps the
// generation (always, as upstream, even when nothing changed), and
// returns the provider as it is now. If a class to remove has allocations
// it changes nothing and returns the InventoryInUse message.
func (s *Store) replaceInventories(p *Provider, want []InventoryValues, m Meta) (*Provider, string) {
	keep := make(map[string]bool, len(want))
	for _, v := range want {
		keep[v.Class] = true
	}
	var gone []string
	for _, class := range SortedKeys(p.Inventories) {
		if !keep[class] {
			gone = append(gone, class)
		}
	}
	if msg := s.inventoryInUse(p, gone); msg != "" {
		return p, msg
	}
	p = s.editProvider(p)
	for _, class := range gone {
		delete(p.Inventories, class)
	}
	for i := range want {
		v := &want[i]
		if inv := p.Inventories[v.Class]; inv != nil {
			p.Inventories[v.Class] = updatedInventory(inv, v, m)
		} else {
			p.Inventories[v.Class] = newInventory(v, m)
		}
	}
	p.bumpGeneration(m)
	return p, ""
}

// DeleteInventory is DELETE /resource_providers/{uuid}/inventories/{class}.
// It takes no generation.
type DeleteInventory struct {
	Provider string `json:"Provider"`
	Class    string `json:"Class"`
}

func (c *DeleteInventory) Kind() string { return "inventory.delete" }

func (c *DeleteInventory) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	if s.Classes.Get(c.Class) == nil {
		return nil, NotFoundf("No inventory of class %s found for delete: No such resource class %s.", c.Class, c.Class)
	}
	// Upstream checks allocations before looking for the inventory.
	if msg := s.inventoryInUse(p, []string{c.Class}); msg != "" {
		// Upstream reports this with the concurrent update code.
		return nil, Conflictf(CodeConcurrentUpdate, "Unable to delete inventory of class %s: %s", c.Class, msg)
	}
	if p.Inventories[c.Class] == nil {
		return nil, NotFoundf("No inventory of class %s found for delete: No inventory of class %s found for delete", c.Class, c.Class)
	}
	p = s.editProvider(p)
	delete(p.Inventories, c.Class)
	p.bumpGeneration(m)
	return InventoryResult{Class: c.Class, Generation: p.Generation}, nil
}

// DeleteInventories is DELETE /resource_providers/{uuid}/inventories
// (1.5): it removes every class, bumping the generation even when there
// was none.
type DeleteInventories struct {
	Provider string `json:"Provider"`
}

func (c *DeleteInventories) Kind() string { return "inventory.delete_all" }

func (c *DeleteInventories) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.Provider)
	if p == nil {
		return nil, ProviderNotFound(c.Provider)
	}
	p, msg := s.replaceInventories(p, nil, m)
	if msg != "" {
		return nil, Conflictf(CodeInventoryInUse, "%s", msg)
	}
	return InventoriesResult{Generation: p.Generation}, nil
}
