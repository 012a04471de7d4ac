package candidates

import (
	"github.com/placementd/placementd/fsm/state"
)

// The levels of a combination (one per requested class of each group)
// and, for one anchor, the providers of its tree and the sharing
// providers it reaches that could serve each level.

// layout is the shape of the product walked for every anchor: one level
// per granular group, one level per resource class of the unsuffixed
// group, in group order.
type layout struct {
	groups []*group
	levels []level
	// full applies the cross-group rules (isolate, same_subtree); off when
	// looking at one group alone.
	full bool
	// first is the first level of each group, by group index (-1 when
	// the group is not in the layout).
	first []int
	// needsShared tells, per level, whether some sharing provider could
	// serve it at all (else sharing providers need not be looked up).
	needsShared []bool
	// cost weighs listing one provider's options for every level, in
	// steps (the filters it is checked against).
	cost int
	// What the pruning (prune.go) looks at: the granular levels when
	// group_policy=isolate applies, the levels of each same_subtree
	// constraint, and the classes more than one level asks for.
	isolated []int
	subtrees [][]int
	demands  []classDemand
}

type level struct {
	g *group
	// contrib is what the level's provider gives: all the group's
	// resources for a granular group, one class for the unsuffixed one.
	contrib []state.ResourceAmount
	// last is the group's last level.
	last bool
}

func (s *search) newLayout(groups []*group, full bool) *layout {
	lay := &layout{groups: groups, full: full, first: make([]int, len(s.groups))}
	for i := range lay.first {
		lay.first[i] = -1
	}
	for _, g := range groups {
		lay.first[g.idx] = len(lay.levels)
		if g.granular || len(g.classes) == 0 {
			lay.levels = append(lay.levels, level{g: g, contrib: g.classes, last: true})
			continue
		}
		for i := range g.classes {
			lay.levels = append(lay.levels, level{g: g, contrib: g.classes[i : i+1], last: i == len(g.classes)-1})
		}
	}
	lay.cost = 1
	for _, g := range groups {
		lay.cost += 1 + len(g.Resources) + len(g.Forbidden) + len(g.ForbiddenAggs)
		for _, anyOf := range g.Required {
			lay.cost += len(anyOf)
		}
		for _, anyOf := range g.MemberOf {
			lay.cost += len(anyOf)
		}
	}
	lay.plan(s.req.Isolate)
	lay.needsShared = make([]bool, len(lay.levels))
	for i, lv := range lay.levels {
		for _, sp := range s.sharingAll {
			if !lay.needsShared[i] && s.mayShare(&lv, sp) {
				lay.needsShared[i] = true
			}
		}
	}
	return lay
}

// mayShare reports whether sp, a sharing provider, could serve level lv
// of some anchor outside its tree.
func (s *search) mayShare(lv *level, sp *state.Provider) bool {
	if lv.g.granular || len(lv.g.classes) == 0 {
		return s.servesGranular(lv.g, sp)
	}
	r := lv.contrib[0]
	return lv.g.InTree == "" && sp.HasCapacity(r.Class, r.Amount)
}

// appendTree appends a's tree, in ID order, to buf.
func (s *search) appendTree(buf []*state.Provider, a *state.Provider) []*state.Provider {
	buf = append(buf, a)
	if !s.hasTrees || !hasChildren(s.st, a) {
		return buf
	}
	start := len(buf) - 1
	for i := start; i < len(buf); i++ {
		buf = appendChildren(s.st, buf, buf[i])
	}
	sortByID(buf[start:])
	return buf
}

// treeOf lists a's tree in ID order.
func (s *search) treeOf(a *state.Provider) []*state.Provider { return s.appendTree(nil, a) }

// sharedWith lists, in ID order, the sharing providers outside a's tree
// (in the scratch tree) that share an aggregate with a provider of the
// tree. It is computed at most once per anchor, and only when a level
// could use a sharing provider at all.
func (s *search) sharedWith(a *state.Provider) []*state.Provider {
	sc := &s.sc
	if sc.sharedDone {
		return sc.shared
	}
	sc.sharedDone = true
	sc.shared, _ = s.sharingProviders(sc.shared[:0], sc.tree, a.UUID)
	return sc.shared
}

// sharingProviders appends to out, in ID order, the sharing providers
// outside the tree rooted at root that share an aggregate with a provider
// of tree. reach counts the sharing providers of every aggregate of a
// provider of tree, a provider as often as it is reached (at least how
// many the tree reaches; the sampling's shape bounds it).
func (s *search) sharingProviders(out, tree []*state.Provider, root string) (_ []*state.Provider, reach int) {
	if len(s.sharingByAgg) == 0 {
		return out, 0
	}
	for _, p := range tree {
		for agg := range aggregatesOf(p) {
			sps := s.sharingByAgg[agg]
			reach += len(sps)
			for _, sp := range sps {
				if sp.RootUUID != root && !containsProvider(out, sp) {
					out = append(out, sp)
				}
			}
		}
	}
	sortByID(out)
	return out, reach
}

func containsProvider(list []*state.Provider, p *state.Provider) bool {
	for _, q := range list {
		if q == p {
			return true
		}
	}
	return false
}

// appendGranular appends to out the providers, of the tree or shared with
// it, that alone satisfy a granular group, in ID order.
func (s *search) appendGranular(out []*state.Provider, g *group, tree, shared []*state.Provider) []*state.Provider {
	i, j := 0, 0
	for i < len(tree) || j < len(shared) {
		var p *state.Provider
		if j >= len(shared) || (i < len(tree) && tree[i].ID < shared[j].ID) {
			p = tree[i]
			i++
		} else {
			p = shared[j]
			j++
		}
		if s.servesGranular(g, p) {
			out = append(out, p)
		}
	}
	return out
}

func (s *search) servesGranular(g *group, p *state.Provider) bool {
	if g.inTreeRoot != "" && p.RootUUID != g.inTreeRoot {
		return false
	}
	for _, r := range g.Resources {
		if !p.HasCapacity(r.Class, r.Amount) {
			return false
		}
	}
	return hasAllTraits(p, g.Required) && !hasAnyTrait(p, g.Forbidden) &&
		inAllAggregates(p, g.MemberOf) && !inAnyAggregate(p, g.ForbiddenAggs)
}

// appendClass appends to out the providers that can give class r to the
// unsuffixed group g anchored at a, in ID order: providers of a's tree
// (when in_tree allows it), then sharing providers (unless in_tree is
// given). As upstream, an aggregate on the root counts for its whole tree,
// while a sharing provider must itself be in the aggregates.
func (s *search) appendClass(out []*state.Provider, g *group, r state.ResourceAmount, a *state.Provider, tree, shared []*state.Provider) []*state.Provider {
	if inAnyAggregate(a, g.ForbiddenAggs) {
		return out
	}
	anchorIn := len(g.MemberOf) > 0 && inAllAggregates(a, g.MemberOf)
	useTree := g.InTree == "" || g.inTreeRoot == a.UUID
	useShared := g.InTree == ""
	i, j := 0, 0
	for (useTree && i < len(tree)) || (useShared && j < len(shared)) {
		if useShared && j < len(shared) && (!useTree || i >= len(tree) || shared[j].ID < tree[i].ID) {
			if givesClass(g, r, shared[j], false, anchorIn) {
				out = append(out, shared[j])
			}
			j++
			continue
		}
		if givesClass(g, r, tree[i], true, anchorIn) {
			out = append(out, tree[i])
		}
		i++
	}
	return out
}

// givesClass reports whether p, of the anchor's tree (inTree) or a
// sharing provider outside it, may give class r to the unsuffixed group g
// (in_tree and the anchor's forbidden aggregates aside). anchorIn says
// whether the anchor is in all of g's member_of aggregates.
func givesClass(g *group, r state.ResourceAmount, p *state.Provider, inTree, anchorIn bool) bool {
	if !p.HasCapacity(r.Class, r.Amount) || hasAnyTrait(p, g.Forbidden) || inAnyAggregate(p, g.ForbiddenAggs) {
		return false
	}
	if len(g.MemberOf) == 0 || inAllAggregates(p, g.MemberOf) {
		return true
	}
	return inTree && anchorIn
}

// resourceful reports whether a level allocates anything.
func (lv *level) resourceful() bool { return len(lv.contrib) > 0 }
