package state

import (
	"sync/atomic"
)

// SharingTrait marks a provider whose inventory the providers of its
// aggregates may use.
const SharingTrait = "MISC_SHARES_VIA_AGGREGATE"

// providerOrder is every provider in ID order, as it was when the store
// had nextID as NextProviderID and n providers.
type providerOrder struct {
	nextID int64
	n      int
	list   []*Provider
}

// orderCache holds the current providerOrder. Readers (which may run
// concurrently under the read lock) rebuild it when it is stale; writes
// never touch it, so they pay nothing for it.
type orderCache struct{ p atomic.Pointer[providerOrder] }

// ProvidersInOrder returns every provider in ID (creation) order. The slice
// is shared: callers must not modify it, and must not keep it beyond the
// read lock.
//
// Provider IDs are never reused and providers are changed in place, so the
// set of providers is the same exactly when NextProviderID and the number
// of providers are: a creation moves the first, a deletion alone the
// second. The list is rebuilt only after providers were created or
// deleted, in time linear in the number of providers.
func (s *Store) ProvidersInOrder() []*Provider {
	if o := s.order.p.Load(); o != nil && o.nextID == s.NextProviderID && o.n == len(s.Providers) {
		return o.list
	}
	// IDs are below NextProviderID and mostly dense: place each provider
	// at its ID, then squeeze out the holes, instead of sorting.
	var list []*Provider
	if s.NextProviderID <= int64(4*len(s.Providers)+64) {
		slots := make([]*Provider, s.NextProviderID+1)
		for _, p := range s.Providers {
			if p.ID >= 0 && p.ID < int64(len(slots)) && slots[p.ID] == nil {
				slots[p.ID] = p
			} else {
				slots = nil
				break
			}
		}
		if slots != nil {
			list = make([]*Provider, 0, len(s.Providers))
			for _, p := range slots {
				if p != nil {
					list = append(list, p)
				}
			}
		}
	}
	if list == nil {
		list = s.ProvidersByID()
	}
	s.order.p.Store(&providerOrder{nextID: s.NextProviderID, n: len(s.Providers), list: list})
	return list
}

// standardTraitRank numbers the standard traits in file order.
var standardTraitRank = func() map[string]int {
	m := make(map[string]int, len(StandardTraits))
	for i, t := range StandardTraits {
		m[t] = i
	}
	return m
}()

// TraitsInIDOrder lists a provider's traits in the order upstream's
// database returns them (by trait id): standard traits first, then custom
// traits in creation order.
func (s *Store) TraitsInIDOrder(p *Provider) []string {
	out := make([]string, 0, len(p.Traits))
	for t := range p.Traits {
		out = append(out, t)
	}
	less := func(a, b string) bool {
		ra, sa := standardTraitRank[a]
		rb, sb := standardTraitRank[b]
		switch {
		case sa && sb:
			return ra < rb
		case sa != sb:
			return sa
		}
		ta, tb := s.Traits[a], s.Traits[b]
		if ta != nil && tb != nil && !ta.Created.Equal(tb.Created) {
			return ta.Created.Before(tb.Created)
		}
		return a < b
	}
	// Providers have few traits: insertion sort keeps this allocation-free.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && less(out[j], out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}
