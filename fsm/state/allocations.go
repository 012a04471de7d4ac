package state

import (
	"fmt"
	"strings"
)

// AllocationRequest is an amount of one class a consumer asks for on one
// provider.
type AllocationRequest struct {
	Provider string `json:"Provider"`
	Class    string `json:"Class"`
	Used     int64  `json:"Used"`
}

// ConsumerAllocations is one consumer's part of an allocation write: the
// consumer's whole new set of allocations (none removes them all) and its
// attributes.
type ConsumerAllocations struct {
	Consumer  string `json:"Consumer"`
	ProjectID string `json:"ProjectID"`
	UserID    string `json:"UserID"`
	// ConsumerType is given from microversion 1.38; "" leaves the
	// consumer's type as it is (a new consumer then has none).
	ConsumerType string `json:"ConsumerType,omitempty"`
	// CheckGeneration (1.28+) requires Generation to equal the consumer's
	// generation; a nil Generation (JSON null) requires a new consumer.
	CheckGeneration bool   `json:"CheckGeneration,omitempty"`
	Generation      *int64 `json:"Generation,omitempty"`
	// Allocations in the request document's order, which decides which
	// error is reported first.
	Allocations []AllocationRequest `json:"Allocations"`
}

// SetAllocations replaces the allocations of one consumer (PUT
// /allocations/{uuid}) or of several (POST /allocations), all or nothing.
type SetAllocations struct {
	// Post selects POST /allocations' wording of errors.
	Post      bool                  `json:"Post,omitempty"`
	Consumers []ConsumerAllocations `json:"Consumers"`
	// WriteOrder keeps each consumer's allocations in the order of the
	// request, which is upstream's (its rows' insertion order). Entries
	// written before it existed sort them by provider and class, and
	// replaying them must give the state it gave.
	WriteOrder bool `json:"WriteOrder,omitempty"`
}

func (c *SetAllocations) Kind() string { return "allocations.set" }

func (c *SetAllocations) Apply(s *Store, m Meta) (any, error) {
	plan, fail := s.planAllocations(c.Consumers, s.currentInventory, c.WriteOrder)
	if fail != nil {
		switch fail.stage {
		case failNoClass:
			if c.Post {
				return nil, Errorf("Unable to allocate inventory %s", fail.err.Detail)
			}
			return nil, Errorf("Unable to allocate inventory for consumer %s: %s", c.Consumers[0].Consumer, fail.err.Detail)
		case failInventory:
			return nil, Conflictf(CodeDefault, "Unable to allocate inventory: %s", fail.err.Detail)
		}
		return nil, fail.err
	}
	s.applyAllocationPlan(plan, m)
	return nil, nil
}

// DeleteConsumerAllocations is DELETE /allocations/{uuid}: it removes every
// allocation of the consumer and the consumer. As upstream, it changes no
// provider generation.
type DeleteConsumerAllocations struct {
	Consumer string `json:"Consumer"`
}

func (c *DeleteConsumerAllocations) Kind() string { return "allocations.delete" }

func (c *DeleteConsumerAllocations) Apply(s *Store, m Meta) (any, error) {
	con := s.Consumers.Get(c.Consumer)
	if con == nil || len(con.Allocations) == 0 {
		return nil, NotFoundf("No allocations for consumer '%s'", c.Consumer)
	}
	s.indexConsumer(con, -1)
	s.Consumers = s.Consumers.delete(con.UUID)
	return nil, nil
}

// Stages at which an allocation plan can fail: they decide how each
// command words the error.
const (
	failFinal     = iota // the error is complete as it is
	failNoClass          // upstream's ResourceClassNotFound (a NotFound)
	failInventory        // upstream's InvalidInventory family
)

type planFailure struct {
	stage int
	err   *Error
}

// usageSlot is one class on one provider.
type usageSlot struct{ provider, class string }

type consumerPlan struct {
	req      *ConsumerAllocations
	existing *Consumer
	allocs   []Allocation // the new allocations, in the order to store
	// visited is upstream's "consumer in the allocation list": it has new
	// allocations or loses old ones. Its generation goes up, and it is
	// deleted if it ends with none.
	visited bool
}

// allocPlan is a validated replacement of some consumers' allocations.
type allocPlan struct {
	consumers []consumerPlan
	// bump holds the providers whose generation goes up: those named in
	// the new allocations and those of consumers whose allocations are
	// emptied (upstream increments every provider of its allocation list).
	bump map[string]bool
	// removed and added are the usage changes per slot.
	removed map[usageSlot]int64
	added   map[usageSlot]int64
}

// currentInventory is the inventory capacity checks use outside the
// reshaper.
func (s *Store) currentInventory(provider, class string) *Inventory {
	if p := s.Providers.Get(provider); p != nil {
		return p.Inventories[class]
	}
	return nil
}

// usageAfter is a slot's usage once the plan is applied.
func (pl *allocPlan) usageAfter(p *Provider, class string) int64 {
	k := usageSlot{p.UUID, class}
	return p.Usages[class] - pl.removed[k] + pl.added[k]
}

// planAllocations validates the replacement of the consumers' allocations
// with upstream's checks, in upstream's order, and changes nothing:
//
//  1. consumer generations (1.28+), consumer by consumer;
//  2. the providers named exist;
//  3. the resource classes exist;
//  4. every provider has inventory of at least one class in the request;
//  5. allocation by allocation: inventory of the class on the provider,
//     min_unit/max_unit/step_size, then capacity: (total - reserved) *
//     allocation_ratio must hold the usage of the other consumers plus
//     everything the request asks of that slot, unless the request leaves
//     an over-committed slot no worse than it was.
//
// inv gives the inventory to check against (the reshaper's interim
// inventory differs from the current one). With writeOrder each
// consumer's new allocations keep the request's order; else they are
// sorted (sortAllocations).
func (s *Store) planAllocations(reqs []ConsumerAllocations, inv func(provider, class string) *Inventory, writeOrder bool) (*allocPlan, *planFailure) {
	if fail := s.checkConsumersAndProviders(reqs); fail != nil {
		return nil, fail
	}
	pl, list := s.allocationList(reqs)
	if fail := s.checkClassesAndInventories(pl, list, inv); fail != nil {
		return nil, fail
	}
	if fail := s.checkAmounts(pl, list, inv); fail != nil {
		return nil, fail
	}
	if !writeOrder {
		for i := range pl.consumers {
			s.sortAllocations(pl.consumers[i].allocs)
		}
	}
	return pl, nil
}

// allocLine is one line of upstream's allocation list.
type allocLine struct {
	provider, class string
	used            int64
}

// allocationList makes the plan of each consumer's new allocations and
// the usage changes, and upstream's allocation list: the requested
// allocations, or for a consumer whose allocations are emptied its old
// ones with used 0.
func (s *Store) allocationList(reqs []ConsumerAllocations) (*allocPlan, []allocLine) {
	var list []allocLine
	pl := &allocPlan{bump: map[string]bool{}, removed: map[usageSlot]int64{}, added: map[usageSlot]int64{}}
	for i := range reqs {
		r := &reqs[i]
		cp := consumerPlan{req: r, existing: s.Consumers.Get(r.Consumer)}
		var old []Allocation
		if cp.existing != nil {
			old = cp.existing.Allocations
		}
		for _, a := range old {
			pl.removed[usageSlot{a.ProviderUUID, a.Class}] += a.Used
		}
		if len(r.Allocations) == 0 {
			for _, a := range old {
				list = append(list, allocLine{a.ProviderUUID, a.Class, 0})
			}
		}
		merged := map[usageSlot]int{}
		for _, a := range r.Allocations {
			list = append(list, allocLine{a.Provider, a.Class, a.Used})
			k := usageSlot{a.Provider, a.Class}
			pl.added[k] += a.Used
			// A provider named twice (with and without dashes) sums up.
			if j, dup := merged[k]; dup {
				cp.allocs[j].Used += a.Used
				continue
			}
			merged[k] = len(cp.allocs)
			cp.allocs = append(cp.allocs, Allocation{ProviderUUID: a.Provider, Class: a.Class, Used: a.Used})
		}
		cp.visited = len(r.Allocations) > 0 || len(old) > 0
		pl.consumers = append(pl.consumers, cp)
	}
	return pl, list
}

// checkClassesAndInventories is steps 3 and 4: the classes exist, and
// every provider of the list has inventory of one of them. The providers
// of the list are those whose generation goes up (pl.bump).
func (s *Store) checkClassesAndInventories(pl *allocPlan, list []allocLine, inv func(provider, class string) *Inventory) *planFailure {
	classSet := map[string]bool{}
	for _, l := range list {
		if s.Classes.Get(l.class) == nil {
			return &planFailure{failNoClass, NotFoundf("No such resource class %s.", l.class)}
		}
		classSet[l.class] = true
	}
	var missing []string
	seen := map[string]bool{}
	for _, l := range list {
		if seen[l.provider] {
			continue
		}
		seen[l.provider] = true
		pl.bump[l.provider] = true
		hasAny := false
		for class := range classSet {
			if inv(l.provider, class) != nil {
				hasAny = true
				break
			}
		}
		if !hasAny {
			missing = append(missing, l.provider)
		}
	}
	if len(missing) > 0 {
		// Upstream names the classes from a Python set of their ids.
		var ids []int
		names := map[int]string{}
		for _, l := range list {
			id := s.classID(l.class)
			ids, names[id] = append(ids, id), l.class
		}
		var classes []string
		for _, id := range pyIntSetOrder(ids) {
			classes = append(classes, names[id])
		}
		return &planFailure{failInventory, invalidInventory(strings.Join(classes, ", "), strings.Join(missing, ", "))}
	}
	return nil
}

// checkAmounts is step 5: each allocation against its inventory's
// constraints and capacity.
func (s *Store) checkAmounts(pl *allocPlan, list []allocLine, inv func(provider, class string) *Inventory) *planFailure {
	asked := map[usageSlot]int64{}
	for _, l := range list {
		k := usageSlot{l.provider, l.class}
		asked[k] += l.used
		if l.used == 0 {
			continue
		}
		in := inv(l.provider, l.class)
		if in == nil {
			return &planFailure{failInventory, invalidInventory(l.class, l.provider)}
		}
		if l.used < in.MinUnit || l.used > in.MaxUnit || in.StepSize == 0 || l.used%in.StepSize != 0 {
			return &planFailure{failInventory, Conflictf(CodeDefault,
				"Unable to create allocation for '%s' on resource provider '%s'. The requested amount would violate inventory constraints.",
				l.class, l.provider)}
		}
		prev := s.Providers.Get(l.provider).Usages[l.class]
		others := prev - pl.removed[k]
		capacity := float64(in.Total-in.Reserved) * in.AllocationRatio
		if capacity < float64(others+l.used) || capacity < float64(others+asked[k]) {
			// Over capacity is tolerated when it is no worse than before.
			if !(prev > 0 && others+asked[k] <= prev) {
				return &planFailure{failInventory, Conflictf(CodeDefault,
					"Unable to create allocation for '%s' on resource provider '%s'. The requested amount would exceed the capacity.",
					l.class, l.provider)}
			}
		}
	}
	return nil
}

// checkConsumersAndProviders is what upstream checks before it writes
// anything: consumer generations (1.28+), consumer by consumer, then that
// the providers named exist.
func (s *Store) checkConsumersAndProviders(reqs []ConsumerAllocations) *planFailure {
	for i := range reqs {
		r := &reqs[i]
		existing := s.Consumers.Get(r.Consumer)
		if r.CheckGeneration {
			if existing == nil && r.Generation != nil ||
				existing != nil && (r.Generation == nil || *r.Generation != existing.Generation) {
				return &planFailure{failFinal, consumerGenerationConflict(existing, r.Generation)}
			}
		}
	}
	for i := range reqs {
		for _, a := range reqs[i].Allocations {
			if s.Providers.Get(a.Provider) == nil {
				return &planFailure{failFinal, Errorf("Allocation for resource provider '%s' that does not exist.", a.Provider)}
			}
		}
	}
	return nil
}

func invalidInventory(class, provider string) *Error {
	return Conflictf(CodeDefault, "Inventory for '%s' on resource provider '%s' invalid.", class, provider)
}

// applyAllocationPlan makes a validated plan so. Every consumer change goes
// through indexConsumer: out with the old allocations and attributes, in
// with the new.
func (s *Store) applyAllocationPlan(pl *allocPlan, m Meta) {
	for i := range pl.consumers {
		cp := &pl.consumers[i]
		r := cp.req
		c := cp.existing
		if c != nil {
			s.indexConsumer(c, -1)
			// A new struct: stored consumers are part of published
			// versions and are never changed in place.
			changed := *c
			c = &changed
		} else {
			c = &Consumer{UUID: r.Consumer, Created: m.Time}
		}
		c.ProjectID, c.UserID = r.ProjectID, r.UserID
		if r.ConsumerType != "" {
			s.ensureConsumerType(r.ConsumerType, m)
			c.Type = r.ConsumerType
		}
		c.Allocations = cp.allocs
		// One copy of each uuid, class, project and user string however
		// many consumers name it, not the copies decoded from each entry.
		s.internConsumer(c)
		c.Updated = m.Time
		if cp.visited {
			c.Generation++
			if len(c.Allocations) == 0 {
				s.Consumers = s.Consumers.delete(c.UUID)
				continue
			}
		}
		// A new consumer asked to have no allocations is kept, without
		// any, as upstream's ensure_consumer leaves it.
		s.Consumers = s.Consumers.set(c.UUID, c)
		s.indexConsumer(c, +1)
	}
	for _, u := range SortedKeys(pl.bump) {
		s.editProvider(s.Providers.Get(u)).bumpGeneration(m)
	}
}

// String helps test failure messages.
func (f *planFailure) String() string { return fmt.Sprintf("stage %d: %s", f.stage, f.err.Detail) }
