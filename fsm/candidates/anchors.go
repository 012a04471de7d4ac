package candidates

import (
	"iter"

	"github.com/placementd/placementd/fsm/state"
)

// The provider search: which root providers are anchors of candidates,
// in ID order, and how many to seed a limited search with.

// anchorSource returns a function yielding, in ID order, the root
// providers that may anchor candidates for groups (and pass root_required),
// then nil (also once the search is stopped). want is how many candidates
// are wanted (0: all). When a group has a selective constraint (a trait,
// an aggregate, in_tree), the roots can be derived from the providers
// meeting it through the indexes; that is done when it is cheaper than
// trying roots in order until enough candidates are found.
func (s *search) anchorSource(groups []*group, want int) func() *state.Provider {
	if seeds, ok := s.seedAnchors(groups, want); ok {
		i := 0
		return func() *state.Provider {
			for i < len(seeds) && s.tick(1) {
				p := seeds[i]
				i++
				if s.rootPasses(p) {
					return p
				}
			}
			return nil
		}
	}
	all := providerCursor(s.st)
	return func() *state.Provider {
		for p := all.Next(); p != nil && s.tick(1); p = all.Next() {
			if p.ParentUUID == "" && s.rootPasses(p) {
				return p
			}
		}
		return nil
	}
}

// seedFactor weighs deriving roots from an index (per provider: lookups
// and a sort) against trying a root in order (cheap when it fails).
var seedFactor = 4

// seedAnchors picks the most selective constraint every candidate must
// meet and returns the roots able to meet it, when that is worth it.
func (s *search) seedAnchors(groups []*group, want int) ([]*state.Provider, bool) {
	bestEst, best := s.seedPlan(groups)
	if best == nil {
		return nil, false
	}
	// Trying roots in order visits about want*N/est of them before enough
	// candidates turn up (all of them when everything is wanted).
	n := providerCount(s.st)
	scan := n
	if want > 0 && bestEst > 0 && want*n/bestEst < scan {
		scan = want * n / bestEst
	}
	if bestEst*seedFactor >= scan {
		return nil, false
	}
	return best(), true
}

// seedPlan finds the most selective constraint every candidate must meet:
// est is how many providers meet it (an estimate of the roots it leads
// to), and roots lists those roots in ID order. roots is nil when no
// constraint applies.
func (s *search) seedPlan(groups []*group) (est int, roots func() []*state.Provider) {
	bestEst := -1
	var best func() []*state.Provider
	consider := func(est int, f func() []*state.Provider) {
		if bestEst < 0 || est < bestEst {
			bestEst, best = est, f
		}
	}
	fromIndex := func(count func(*state.Store, string) int, members func(*state.Store, string) iter.Seq[*state.Provider], keys []string) (int, func() []*state.Provider) {
		est := 0
		for _, k := range keys {
			est += count(s.st, k)
		}
		return est, func() []*state.Provider {
			var roots []*state.Provider
			done := map[string]bool{}
			for _, k := range keys {
				for p := range members(s.st, k) {
					s.tick(1)
					roots = s.appendReachableRoots(roots, p, done)
				}
			}
			return roots
		}
	}
	for _, t := range s.req.RootRequired {
		consider(countWithTrait(s.st, t), func() []*state.Provider {
			var roots []*state.Provider
			for p := range providersWithTrait(s.st, t) {
				if p.ParentUUID == "" {
					roots = append(roots, p)
				}
			}
			return roots
		})
	}
	for _, g := range groups {
		if g.inTreeRoot != "" {
			root := providerByUUID(s.st, g.inTreeRoot)
			if !g.granular {
				consider(1, func() []*state.Provider { return []*state.Provider{root} })
			} else {
				tree := s.treeOf(root)
				consider(len(tree), func() []*state.Provider {
					var roots []*state.Provider
					done := map[string]bool{}
					for _, p := range tree {
						roots = s.appendReachableRoots(roots, p, done)
					}
					return roots
				})
			}
		}
		for _, anyOf := range g.Required {
			consider(fromIndex(countWithTrait, providersWithTrait, anyOf))
		}
		for _, anyOf := range g.MemberOf {
			consider(fromIndex(countInAggregate, providersInAggregate, anyOf))
		}
	}
	if best == nil {
		return 0, nil
	}
	return bestEst, func() []*state.Provider {
		roots := best()
		sortByID(roots)
		out := roots[:0]
		for i, p := range roots {
			if i == 0 || p != roots[i-1] {
				out = append(out, p)
			}
		}
		return out
	}
}

// appendReachableRoots appends the roots of the trees that can use p: its
// own, and for a sharing provider those of every provider sharing an
// aggregate with it (done records the aggregates already expanded).
func (s *search) appendReachableRoots(roots []*state.Provider, p *state.Provider, done map[string]bool) []*state.Provider {
	if p == nil {
		return roots
	}
	roots = append(roots, s.rootOf(p))
	if !hasTrait(p, state.SharingTrait) {
		return roots
	}
	for a := range aggregatesOf(p) {
		if done[a] {
			continue
		}
		done[a] = true
		for qp := range providersInAggregate(s.st, a) {
			roots = append(roots, s.rootOf(qp))
		}
	}
	return roots
}

func (s *search) rootOf(p *state.Provider) *state.Provider {
	if p.ParentUUID == "" {
		return p
	}
	return providerByUUID(s.st, p.RootUUID)
}
