package candidates

import (
	"cmp"
	"iter"
	"slices"
	"strings"

	"github.com/placementd/placementd/fsm/state"
)

// Every read this package makes of the state's maps and indexes goes
// through the functions of this file, so that a change in how the store
// holds them (persistent maps, see state's pmap.go) is made here alone.

// providerByUUID is the provider with that uuid, or nil.
func providerByUUID(st *state.Store, uuid string) *state.Provider { return st.Providers.Get(uuid) }

// providerCount is the number of providers.
func providerCount(st *state.Store) int { return st.Providers.Len() }

// providersInOrder yields every provider in ID order; providerCursor walks
// them one at a time.
func providersInOrder(st *state.Store) iter.Seq[*state.Provider] { return st.ProvidersInOrder() }

func providerCursor(st *state.Store) *state.ProviderCursor { return st.ProviderCursor() }

// providerSlots numbers n slots, each holding at most one provider (at
// returns nil for an empty one) and every provider in exactly one, for
// the random sampling (sample.go), which draws slots at random: the slots
// are the provider IDs (deleted ones empty), each found in logarithmic
// time.
func providerSlots(st *state.Store) (n int, at func(i int) *state.Provider) {
	return int(st.NextProviderID - 1), func(i int) *state.Provider { return st.Providers.ByID(int64(i + 1)) }
}

// shapeKey changes when providers are created or deleted, parents change,
// or traits or aggregates do (the persistent indexes are replaced on
// every change, and their identities compared): what tells that a
// sampling shape (sample.go) may have changed. Inventories are not in it
// (a provider's record is replaced by allocations too): the sampling
// checks each anchor it meets against the shape.
type shapeKey struct {
	children, aggregates, traits any
	nextID                       int64
	providers                    int
}

func shapeKeyOf(st *state.Store) shapeKey {
	return shapeKey{children: st.Children.Identity(), aggregates: st.AggregateIndex.Identity(),
		traits: st.TraitIndex.Identity(), nextID: st.NextProviderID, providers: st.Providers.Len()}
}

// hasProviderTrees reports whether some provider has a parent.
func hasProviderTrees(st *state.Store) bool { return st.Children.Len() > 0 }

// hasChildren reports whether p has child providers.
func hasChildren(st *state.Store, p *state.Provider) bool { return st.Children.Has(p.UUID) }

// appendChildren appends p's children, in no particular order, to buf.
func appendChildren(st *state.Store, buf []*state.Provider, p *state.Provider) []*state.Provider {
	for u := range st.Children.Get(p.UUID).All() {
		buf = append(buf, st.Providers.Get(u))
	}
	return buf
}

// parentOf is p's parent, or nil for a root.
func parentOf(st *state.Store, p *state.Provider) *state.Provider {
	if p.ParentUUID == "" {
		return nil
	}
	return st.Providers.Get(p.ParentUUID)
}

// classByName is the resource class of that name, or nil.
func classByName(st *state.Store, name string) *state.ResourceClass { return st.Classes.Get(name) }

// traitExists reports whether the trait is defined.
func traitExists(st *state.Store, name string) bool { return st.Traits.Has(name) }

// providersWithTrait yields the providers that have trait t, in no
// particular order; countWithTrait is how many there are.
func providersWithTrait(st *state.Store, t string) iter.Seq[*state.Provider] {
	return indexMembers(st, st.TraitIndex.Get(t))
}

func countWithTrait(st *state.Store, t string) int { return st.TraitIndex.Get(t).Len() }

// providersInAggregate yields the providers in aggregate a, in no
// particular order; countInAggregate is how many there are.
func providersInAggregate(st *state.Store, a string) iter.Seq[*state.Provider] {
	return indexMembers(st, st.AggregateIndex.Get(a))
}

func countInAggregate(st *state.Store, a string) int { return st.AggregateIndex.Get(a).Len() }

// aggregateMembers yields the uuids of the providers in aggregate a.
func aggregateMembers(st *state.Store, a string) iter.Seq[string] {
	return st.AggregateIndex.Get(a).All()
}

func indexMembers(st *state.Store, set state.Set) iter.Seq[*state.Provider] {
	return func(yield func(*state.Provider) bool) {
		for u := range set.All() {
			if p := st.Providers.Get(u); p != nil && !yield(p) {
				return
			}
		}
	}
}

// appendTraitsInIDOrder appends p's traits in upstream's (trait id) order.
func appendTraitsInIDOrder(st *state.Store, out []string, p *state.Provider) []string {
	return st.AppendTraitsInIDOrder(out, p)
}

// What a provider holds.

func hasTrait(p *state.Provider, t string) bool { return p.Traits[t] }

// aggregatesOf yields p's aggregates, in no particular order.
func aggregatesOf(p *state.Provider) iter.Seq[string] {
	return func(yield func(string) bool) {
		for a := range p.Aggregates {
			if !yield(a) {
				return
			}
		}
	}
}

// inventoryOf is p's inventory of class, or nil.
func inventoryOf(p *state.Provider, class string) *state.Inventory { return p.Inventories[class] }

// usageOf is what p's allocations use of class.
func usageOf(p *state.Provider, class string) int64 { return p.Usages[class] }

// appendInventoryClassesByID appends the classes p has inventory of, by
// class id (as state's SortByClassID: an unknown class, id -1, first;
// ties by name); ids memoizes the ids looked up, for the providers of one
// answer, which hold the same few classes. inventoryCount is how many
// there are.
func appendInventoryClassesByID(st *state.Store, ids map[string]int, buf []string, p *state.Provider) []string {
	start := len(buf)
	for c := range p.Inventories {
		buf = append(buf, c)
		if _, ok := ids[c]; !ok {
			ids[c] = -1
			if rc := classByName(st, c); rc != nil {
				ids[c] = rc.ID
			}
		}
	}
	slices.SortFunc(buf[start:], func(a, b string) int { return cmp.Or(cmp.Compare(ids[a], ids[b]), strings.Compare(a, b)) })
	return buf
}

func inventoryCount(p *state.Provider) int { return len(p.Inventories) }

func traitCount(p *state.Provider) int { return len(p.Traits) }

// hasAllTraits reports whether p has a trait of every OR-group; hasAnyTrait
// whether it has one of traits. The aggregate forms are the same over p's
// aggregates.
func hasAllTraits(p *state.Provider, groups [][]string) bool { return inAll(p.Traits, groups) }

func hasAnyTrait(p *state.Provider, traits []string) bool { return hasAny(p.Traits, traits) }

func inAllAggregates(p *state.Provider, groups [][]string) bool { return inAll(p.Aggregates, groups) }

func inAnyAggregate(p *state.Provider, aggs []string) bool { return hasAny(p.Aggregates, aggs) }

// inAll reports whether set holds a key of every OR-group of groups.
func inAll(set map[string]bool, groups [][]string) bool {
	for _, anyOf := range groups {
		hit := false
		for _, k := range anyOf {
			if set[k] {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

func hasAny(set map[string]bool, keys []string) bool {
	for _, k := range keys {
		if set[k] {
			return true
		}
	}
	return false
}
