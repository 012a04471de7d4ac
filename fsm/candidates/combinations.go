package candidates

import (
	"github.com/placementd/placementd/fsm/state"
)

// The combinations of one anchor: a depth-first walk of the product of
// its levels' options, pruned as soon as a branch breaks capacity,
// group_policy=isolate or same_subtree (see also prune.go).

// anchorIter walks, depth-first, the product of the options of every level
// for one anchor, yielding the combinations that make candidates.
type anchorIter struct {
	s      *search
	lay    *layout
	anchor *state.Provider
	opts   [][]*state.Provider
	choice []int
	depth  int
	// started is false until the first call of next.
	started bool
	// prune cuts the branches that cannot be completed (nil when the
	// request gives it nothing to look at).
	prune *pruner
}

// scratch holds buffers reused from one anchor to the next, so that an
// anchor that cannot serve the request costs no allocation.
type scratch struct {
	tree       []*state.Provider
	shared     []*state.Provider
	sharedDone bool
	opts       [][]*state.Provider
	choice     []int
	iter       anchorIter
	prune      pruner
	union      []*state.Provider
}

// newIter lists the options of every level for anchor a, or returns nil
// when some level has none. Unless keep is set, the iterator uses the
// search's scratch buffers and is only valid until the next call.
func (s *search) newIter(lay *layout, a *state.Provider, keep bool) *anchorIter {
	sc := &s.sc
	sc.tree = s.appendTree(sc.tree[:0], a)
	if !s.tick(lay.cost * len(sc.tree)) {
		return nil
	}
	sc.sharedDone = false
	n := len(lay.levels)
	for len(sc.opts) < n {
		sc.opts = append(sc.opts, nil)
	}
	for i, lv := range lay.levels {
		var shared []*state.Provider
		if lay.needsShared[i] {
			shared = s.sharedWith(a)
		}
		o := sc.opts[i][:0]
		if lv.g.granular || len(lv.g.classes) == 0 {
			o = s.appendGranular(o, lv.g, sc.tree, shared)
		} else {
			o = s.appendClass(o, lv.g, lv.contrib[0], a, sc.tree, shared)
		}
		sc.opts[i] = o
		if len(o) == 0 {
			return nil
		}
	}
	// The unsuffixed group's providers must have its required traits
	// between them: if all its options together lack one, nothing can.
	for _, g := range lay.groups {
		if g.granular || len(g.Required) == 0 {
			continue
		}
		first := lay.first[g.idx]
		for _, anyOf := range g.Required {
			hit := false
			for l := first; l < n && lay.levels[l].g == g && !hit; l++ {
				for _, p := range sc.opts[l] {
					if hasAnyTrait(p, anyOf) {
						hit = true
						break
					}
				}
			}
			if !hit {
				return nil
			}
		}
	}
	if pruning && !s.capacityFits(lay, sc.opts[:n]) {
		return nil
	}
	var it *anchorIter
	if !keep {
		if cap(sc.choice) < n {
			sc.choice = make([]int, n)
		}
		sc.iter = anchorIter{s: s, lay: lay, anchor: a, opts: sc.opts[:n], choice: sc.choice[:n]}
		it = &sc.iter
		if pruning && lay.prunes() {
			it.prune = &sc.prune
		}
	} else {
		it = &anchorIter{s: s, lay: lay, anchor: a, opts: make([][]*state.Provider, n), choice: make([]int, n)}
		size := 0
		for i := range it.opts {
			it.opts[i] = append([]*state.Provider(nil), sc.opts[i]...)
			size += len(it.opts[i])
		}
		if pruning && lay.prunes() {
			it.prune = &pruner{}
		}
		// A kept iterator lives until its anchor is exhausted.
		if !s.hold(int64(8*size + 64*n)) {
			return nil
		}
	}
	if it.prune != nil && !it.prune.start(it) {
		return nil
	}
	return it
}

func (it *anchorIter) at(level int) *state.Provider { return it.opts[level][it.choice[level]] }

// next advances to the next valid combination; false when there is none
// (or the search was stopped).
func (it *anchorIter) next() bool {
	n := len(it.lay.levels)
	if !it.started {
		it.started = true
		it.depth = 0
		it.choice[0] = -1
	} else {
		it.depth = n - 1
	}
	for it.depth >= 0 {
		if !it.s.tick(1) {
			return false
		}
		d := it.depth
		if it.prune != nil && it.choice[d] >= 0 {
			it.prune.release(it, d)
		}
		it.choice[d]++
		if it.choice[d] >= len(it.opts[d]) {
			it.depth--
			continue
		}
		if !it.accept(d) {
			continue
		}
		if d == n-1 {
			return true
		}
		// Go down only if the levels below can still all be served.
		if it.prune != nil && !it.prune.hold(it, d) {
			continue
		}
		it.depth++
		it.choice[it.depth] = -1
	}
	return false
}

// accept checks the choice at level d against the choices above it: the
// rules that can fail only because of several levels together.
func (it *anchorIter) accept(d int) bool {
	lay := it.lay
	lv := &lay.levels[d]
	p := it.at(d)
	if lay.full && it.s.req.Isolate && lv.g.granular {
		for e := 0; e < d; e++ {
			if lay.levels[e].g.granular && it.at(e) == p {
				return false
			}
		}
	}
	// Amounts of one class from one provider add up across groups: the sum
	// must fit (upstream's exceeds_capacity on the merged request).
	for _, r := range lv.contrib {
		total := r.Amount
		for e := 0; e < d; e++ {
			if it.at(e) != p {
				continue
			}
			for _, q := range lay.levels[e].contrib {
				if q.Class == r.Class {
					total += q.Amount
				}
			}
		}
		if total != r.Amount {
			inv := inventoryOf(p, r.Class)
			if usageOf(p, r.Class)+total > inv.Capacity() || total > inv.MaxUnit {
				return false
			}
		}
	}
	if !lv.last {
		return true
	}
	g := lv.g
	if !g.granular && len(g.Required) > 0 {
		first := lay.first[g.idx]
		for _, anyOf := range g.Required {
			hit := false
			for e := first; e <= d && !hit; e++ {
				hit = hasAnyTrait(it.at(e), anyOf)
			}
			if !hit {
				return false
			}
		}
	}
	if lay.full {
		for _, check := range g.subtreeChecks {
			if !it.sameSubtree(check) {
				return false
			}
		}
	}
	return true
}

// sameSubtree reports whether one of the providers chosen for the groups
// is an ancestor of (or is) all the others.
func (it *anchorIter) sameSubtree(groups []int) bool {
	var ps []*state.Provider
	for _, gi := range groups {
		p := it.at(it.lay.first[gi])
		if !containsProvider(ps, p) {
			ps = append(ps, p)
		}
	}
	if len(ps) == 1 {
		return true
	}
	for _, top := range ps {
		all := true
		for _, p := range ps {
			if !it.s.isAncestorOrSelf(top, p) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

func (s *search) isAncestorOrSelf(top, p *state.Provider) bool {
	for p != nil {
		if p == top {
			return true
		}
		if p.ParentUUID == "" {
			return false
		}
		p = parentOf(s.st, p)
	}
	return false
}

// snapshot copies the current combination: one provider per level. The
// copies are cut from a shared slab to spare an allocation per candidate.
func (it *anchorIter) snapshot() []*state.Provider {
	n := len(it.choice)
	s := it.s
	if len(s.slab) < n {
		rows := 256
		if left := s.expect - s.slabRows; left > 0 && left < rows {
			rows = left
		}
		s.slabRows += rows
		s.slab = s.mem.combos.take(n * rows)
	}
	out := s.slab[:n:n]
	s.slab = s.slab[n:]
	for i := range out {
		out[i] = it.at(i)
	}
	return out
}
