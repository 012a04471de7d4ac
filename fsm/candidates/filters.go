package candidates

import (
	"slices"

	"github.com/placementd/placementd/fsm/state"
)

// The request's filters before any combination: names resolved, groups
// no provider can serve, root_required and member_of on the roots, and
// capacity for each requested amount.

// checkNames validates resource class and trait names in upstream's order
// (root_required, then each group: classes, member_of, traits) and reports
// whether the answer is empty before an unknown name would be reached.
func (s *search) checkNames() (empty bool, err error) {
	for _, t := range append(append([]string{}, s.req.RootRequired...), s.req.RootForbidden...) {
		if !traitExists(s.st, t) {
			return false, &NameError{Name: t}
		}
	}
	if s.rootFilter && !s.anyRootPasses() {
		return true, nil
	}
	for i, g := range s.groups {
		for _, r := range g.Resources {
			if classByName(s.st, r.Class) == nil {
				return s.unreached(i, &NameError{Class: true, Name: r.Class})
			}
		}
		if len(g.MemberOf) > 0 && !s.anyInAggregates(g.MemberOf) {
			return true, nil
		}
		for _, anyOf := range g.Required {
			for _, t := range anyOf {
				if !traitExists(s.st, t) {
					return s.unreached(i, &NameError{Name: t})
				}
			}
		}
		for _, t := range g.Forbidden {
			if !traitExists(s.st, t) {
				return s.unreached(i, &NameError{Name: t})
			}
		}
	}
	for _, g := range s.groups {
		if g.unknownTree {
			return true, nil
		}
	}
	return false, nil
}

// unreached returns err unless a group before i has no candidate at all:
// upstream stops at the first such group and never looks at group i.
func (s *search) unreached(i int, err error) (bool, error) {
	for j := 0; j < i; j++ {
		if s.groupHasNoCandidate(j) {
			return true, nil
		}
	}
	return false, err
}

func (s *search) groupHasNoCandidate(j int) bool {
	if v, ok := s.groupEmpty[j]; ok {
		return v
	}
	g := s.groups[j]
	empty := true
	if !g.unknownTree {
		lay := s.newLayout([]*group{g}, false)
		next := s.anchorSource(lay.groups, 1)
		for a := next(); a != nil; a = next() {
			if it := s.newIter(lay, a, false); it != nil && it.next() {
				empty = false
				break
			}
		}
	}
	s.groupEmpty[j] = empty
	return empty
}

func (s *search) rootPasses(p *state.Provider) bool {
	for _, t := range s.req.RootRequired {
		if !hasTrait(p, t) {
			return false
		}
	}
	for _, t := range s.req.RootForbidden {
		if hasTrait(p, t) {
			return false
		}
	}
	return true
}

func (s *search) anyRootPasses() bool {
	for p := range providersInOrder(s.st) {
		if !s.tick(1) {
			return false
		}
		if p.ParentUUID == "" && s.rootPasses(p) {
			return true
		}
	}
	return false
}

func (s *search) anyInAggregates(memberOf [][]string) bool {
	for _, a := range memberOf[0] {
		for p := range providersInAggregate(s.st, a) {
			if !s.tick(len(memberOf)) {
				return false
			}
			if inAllAggregates(p, memberOf) {
				return true
			}
		}
	}
	return false
}

// anyCapacity reports whether some provider (of in_tree's tree, if set)
// could take r: upstream gives up early when none can, and so does this,
// which spares a fruitless walk over every root.
func (s *search) anyCapacity(g *group, r state.ResourceAmount) bool {
	ps := providersInOrder(s.st)
	if g.inTreeRoot != "" {
		ps = slices.Values(s.treeOf(providerByUUID(s.st, g.inTreeRoot)))
	}
	for p := range ps {
		if !s.tick(1) {
			return false
		}
		if p.HasCapacity(r.Class, r.Amount) {
			return true
		}
	}
	return false
}
