package state

import (
	"iter"
	"sort"
	"sync/atomic"

	"github.com/benbjohnson/immutable"
)

// SharingTrait marks a provider whose inventory the providers of its
// aggregates may use.
const SharingTrait = "MISC_SHARES_VIA_AGGREGATE"

// ProvidersInOrder yields every provider in ID (creation) order, for
// searches. It walks the version's ID-ordered provider map, and the first
// walk of a version that reaches the end keeps the list it went through
// for the version's later walks: a slice is several times quicker to walk
// than the tree, and a walk that stops early (most searches) builds
// nothing. A version made by a write starts without a list.
func (s *Store) ProvidersInOrder() iter.Seq[*Provider] {
	root := s.Providers.byID.m
	if list := s.order.list(root); list != nil {
		return func(yield func(*Provider) bool) {
			for _, p := range list {
				if !yield(p) {
					return
				}
			}
		}
	}
	return func(yield func(*Provider) bool) {
		var list []*Provider
		for p := range s.Providers.InOrder() {
			if !yield(p) {
				return
			}
			list = append(list, p)
		}
		s.order.keep(root, list)
	}
}

// ProviderCursor walks the providers in ID order one Next at a time, over
// the version's kept list when there is one (see ProvidersInOrder).
func (s *Store) ProviderCursor() *ProviderCursor {
	if list := s.order.list(s.Providers.byID.m); list != nil {
		return &ProviderCursor{list: list}
	}
	return s.Providers.Cursor()
}

// orderCache holds a version's providers in ID order once a walk has
// listed them all. It belongs to one version (Edit gives the next version
// its own), and a list is used only while the ID map it was taken from
// (root) is the version's: a test applying commands to one store
// directly changes that map.
type orderCache struct {
	p atomic.Pointer[providerOrder]
}

type providerOrder struct {
	root *immutable.SortedMap[int64, *Provider]
	list []*Provider
}

func (c *orderCache) list(root *immutable.SortedMap[int64, *Provider]) []*Provider {
	if c == nil || root == nil {
		return nil
	}
	if o := c.p.Load(); o != nil && o.root == root {
		return o.list
	}
	return nil
}

func (c *orderCache) keep(root *immutable.SortedMap[int64, *Provider], list []*Provider) {
	if c != nil && root != nil {
		c.p.Store(&providerOrder{root: root, list: list})
	}
}

// standardTraitRank numbers the standard traits in file order.
var standardTraitRank = func() map[string]int {
	m := make(map[string]int, len(StandardTraits))
	for i, t := range StandardTraits {
		m[t] = i
	}
	return m
}()

// AppendTraitsInIDOrder appends a provider's traits to out in the order
// upstream's database returns them (by trait id): standard traits first,
// then custom traits in creation order.
func (s *Store) AppendTraitsInIDOrder(out []string, p *Provider) []string {
	start := len(out)
	for t := range p.Traits {
		out = append(out, t)
	}
	// Providers have few traits: insertion sort keeps this allocation-free.
	for i := start + 1; i < len(out); i++ {
		for j := i; j > start && s.traitIDLess(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// SortTraitsInIDOrder puts traits in upstream's trait id order (see
// AppendTraitsInIDOrder).
func (s *Store) SortTraitsInIDOrder(ts []Trait) {
	sort.SliceStable(ts, func(i, j int) bool { return s.traitIDLess(ts[i].Name, ts[j].Name) })
}

// traitIDLess orders trait names as upstream's trait ids: standard traits
// first (its are in a random order; here in file order), then custom
// traits in creation order.
func (s *Store) traitIDLess(a, b string) bool {
	ra, sa := standardTraitRank[a]
	rb, sb := standardTraitRank[b]
	switch {
	case sa && sb:
		return ra < rb
	case sa != sb:
		return sa
	}
	ta, tb := s.Traits.Get(a), s.Traits.Get(b)
	if ta != nil && tb != nil && !ta.Created.Equal(tb.Created) {
		return ta.Created.Before(tb.Created)
	}
	return a < b
}
