package state

import (
	"fmt"
	"sort"
	"strings"
)

// ReshapeInventory is one provider's new inventory in a reshape.
type ReshapeInventory struct {
	Provider    string            `json:"Provider"`
	Generation  int64             `json:"Generation"`
	Inventories []InventoryValues `json:"Inventories"` // request order
}

// Reshape is POST /reshaper: it replaces the inventories of some providers
// and the allocations of some consumers at once, all or nothing.
//
// Upstream does it in three steps in one transaction: an interim inventory
// per provider (the new records plus the old classes the request drops),
// then the allocations, checked against that interim inventory, then the
// final inventory, which fails if a dropped class still has allocations.
// The checks here are the same, made before anything changes, and the
// provider generations move as upstream's do: once for the interim
// inventory when the new one is not empty, once for the allocations when
// the provider is in them, once for the final inventory.
type Reshape struct {
	Inventories []ReshapeInventory    `json:"Inventories"`
	Allocations []ConsumerAllocations `json:"Allocations"`
	// WriteOrder is SetAllocations.WriteOrder.
	WriteOrder bool `json:"WriteOrder,omitempty"`
}

func (c *Reshape) Kind() string { return "reshape" }

func (c *Reshape) Apply(s *Store, m Meta) (any, error) {
	seen := map[string]bool{}
	for _, ri := range c.Inventories {
		if seen[ri.Provider] {
			return nil, Errorf("malformed reshaper data: provider %s given twice in inventories", ri.Provider)
		}
		seen[ri.Provider] = true
		p := s.Providers.Get(ri.Provider)
		if p == nil {
			return nil, newError(BadRequest, CodeProviderNotFound,
				"Resource provider %s in inventories not found: No resource provider with uuid %s found",
				ri.Provider, ri.Provider)
		}
		if p.Generation != ri.Generation {
			return nil, Conflictf(CodeConcurrentUpdate,
				"resource provider generation conflict for provider %s: actual: %d, given: %d",
				ri.Provider, p.Generation, ri.Generation)
		}
	}
	wrap := func(f *planFailure) error {
		switch f.stage {
		case failNoClass:
			return Errorf("malformed reshaper data: %s", f.err.Detail)
		case failInventory:
			return Conflictf(CodeDefault, "Unable to allocate inventory: %s", f.err.Detail)
		}
		return f.err
	}
	if fail := s.checkConsumersAndProviders(c.Allocations); fail != nil {
		return nil, wrap(fail)
	}

	interim := map[string]map[string]*Inventory{}
	for _, ri := range c.Inventories {
		if len(ri.Inventories) == 0 {
			continue
		}
		p := s.Providers.Get(ri.Provider)
		inv := make(map[string]*Inventory, len(p.Inventories)+len(ri.Inventories))
		for class, old := range p.Inventories {
			inv[class] = old
		}
		for i := range ri.Inventories {
			v := &ri.Inventories[i]
			if s.Classes.Get(v.Class) == nil {
				return nil, wrap(&planFailure{failNoClass, NotFoundf("No such resource class %s.", v.Class)})
			}
			inv[v.Class] = newInventory(v, m)
		}
		interim[ri.Provider] = inv
	}
	lookup := func(provider, class string) *Inventory {
		if inv, ok := interim[provider]; ok {
			return inv[class]
		}
		return s.currentInventory(provider, class)
	}
	plan, fail := s.planAllocations(c.Allocations, lookup, c.WriteOrder)
	if fail != nil {
		return nil, wrap(fail)
	}

	// The final inventory may drop only classes left without allocations.
	for _, ri := range c.Inventories {
		p := s.Providers.Get(ri.Provider)
		keep := map[string]bool{}
		for _, v := range ri.Inventories {
			keep[v.Class] = true
		}
		var inUse []string
		for class := range p.Inventories {
			if !keep[class] && plan.usageAfter(p, class) > 0 {
				inUse = append(inUse, class)
			}
		}
		if len(inUse) > 0 {
			sort.Slice(inUse, func(i, j int) bool { return s.classID(inUse[i]) < s.classID(inUse[j]) })
			return nil, Conflictf(CodeInventoryInUse, "update conflict: Inventory for '%s' on resource provider '%s' in use.",
				strings.Join(inUse, ", "), p.UUID)
		}
	}

	s.applyAllocationPlan(plan, m)
	for _, ri := range c.Inventories {
		p := s.editProvider(s.Providers.Get(ri.Provider))
		if len(ri.Inventories) > 0 {
			p.bumpGeneration(m) // the interim inventory
		}
		if _, msg := s.replaceInventories(p, ri.Inventories, m); msg != "" {
			// Ruled out above; going on would leave a half-applied reshape.
			panic(fmt.Sprintf("reshape: final inventory of %s refused after checks: %s", p.UUID, msg))
		}
	}
	return nil, nil
}
