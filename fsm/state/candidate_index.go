package state

import "iter"

// SharingTrait marks a provider whose inventory the providers of its
// aggregates may use.
const SharingTrait = "MISC_SHARES_VIA_AGGREGATE"

// ProvidersInOrder yields every provider in ID (creation) order. It walks
// the version's ID-ordered provider map: nothing is built per call or per
// version.
func (s *Store) ProvidersInOrder() iter.Seq[*Provider] { return s.Providers.InOrder() }

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
		ta, tb := s.Traits.Get(a), s.Traits.Get(b)
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
