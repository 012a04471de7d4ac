package candidates

import (
	"sort"

	"github.com/placementd/placementd/fsm/state"
)

// Pruning. The walk of an anchor's product goes down to a level only if
// the levels below can still all be served; otherwise a request that no
// provider tree can satisfy (13 isolated groups on 12 devices) would try
// every arrangement of the levels above before it found out, which is
// factorial in the number of groups. Each check below is a necessary
// condition of a candidate below the branch, so pruning never drops a
// candidate and never changes their order; what it cannot see (packing
// amounts of different sizes, for one) is left to the accept checks of the
// walk, and the search's deadline.
//
//   - group_policy=isolate: the granular levels left must be matched to
//     distinct providers among their options that no granular level above
//     took. avail counts, per level, those options; when every level left
//     has at least as many as there are levels left, a matching exists
//     (pick greedily), else a bipartite matching decides (Kuhn's
//     augmenting paths, small: levels times options).
//   - same_subtree: the provider that will be the top of a constraint's
//     providers must be an ancestor (or one) of those chosen so far, be an
//     option of a level left (or chosen already), and have an option of
//     every level left under it. The anchor's tree is numbered depth-first
//     so "under" is a range test. With isolate too, the matching restricts
//     the constraint's levels to the highest such top.
//   - capacity, once per anchor: for a class several levels ask for, the
//     providers able to serve them must have room for all of them together
//     (total amount, and how many of the larger amounts fit).

// pruning is off only in the tests that compare the pruned walk with the
// whole one.
var pruning = true

// classDemand is a class that several levels of a layout ask for.
type classDemand struct {
	class   string
	levels  []int
	amounts []int64
}

// plan notes what the pruning of this layout looks at.
func (lay *layout) plan(isolate bool) {
	if lay.full && isolate {
		for i, lv := range lay.levels {
			if lv.g.granular {
				lay.isolated = append(lay.isolated, i)
			}
		}
		if len(lay.isolated) < 2 {
			lay.isolated = nil
		}
	}
	if lay.full {
		for _, g := range lay.groups {
			for _, check := range g.subtreeChecks {
				levels := make([]int, 0, len(check))
				for _, gi := range check {
					levels = append(levels, lay.first[gi])
				}
				sort.Ints(levels)
				lay.subtrees = append(lay.subtrees, levels)
			}
		}
	}
	byClass := map[string]int{}
	var all []classDemand
	for i, lv := range lay.levels {
		for _, r := range lv.contrib {
			k, ok := byClass[r.Class]
			if !ok {
				k = len(all)
				byClass[r.Class] = k
				all = append(all, classDemand{class: r.Class})
			}
			all[k].levels = append(all[k].levels, i)
			all[k].amounts = append(all[k].amounts, r.Amount)
		}
	}
	for _, cd := range all {
		if len(cd.levels) > 1 {
			lay.demands = append(lay.demands, cd)
		}
	}
}

// prunes reports whether the walk needs a pruner.
func (lay *layout) prunes() bool { return len(lay.isolated) > 0 || len(lay.subtrees) > 0 }

// capacityFits checks, for each class several levels ask for, that the
// providers able to serve those levels (each counted once) have room for
// all of them: in total, and for every amount asked, room for as many
// pieces of at least that amount as levels ask for.
func (s *search) capacityFits(lay *layout, opts [][]*state.Provider) bool {
	for _, cd := range lay.demands {
		union := s.sc.union[:0]
		for _, l := range cd.levels {
			union = append(union, opts[l]...)
		}
		sortByID(union)
		s.sc.union = union
		if !s.tick(len(union)) {
			return false
		}
		var free []int64
		var room, demand int64
		for i, p := range union {
			if i > 0 && union[i-1] == p {
				continue
			}
			inv := inventoryOf(p, cd.class)
			f := min(inv.Capacity()-usageOf(p, cd.class), inv.MaxUnit)
			if f > 0 {
				free = append(free, f)
				room += f
			}
		}
		for _, a := range cd.amounts {
			demand += a
		}
		if demand > room {
			return false
		}
		for _, a := range cd.amounts {
			need := int64(0)
			for _, b := range cd.amounts {
				if b >= a {
					need++
				}
			}
			slots := int64(0)
			for _, f := range free {
				slots += min(f/a, need)
			}
			if slots < need {
				return false
			}
		}
	}
	return true
}

// pruner is the pruning state of one anchor's walk.
type pruner struct {
	// avail counts, per isolated level, its options that no isolated
	// level above has taken; held says that a level's choice is counted
	// out of the avail of the levels below.
	avail []int
	held  []bool
	// pos numbers the anchor's tree depth-first (only with same_subtree);
	// inTree lists, per level of a constraint, the numbers of its options
	// in the tree, sorted. noSubtree is set when an option outside the
	// tree has a parent: the numbering cannot place it, so the
	// same_subtree pruning stands aside for this anchor.
	pos       map[*state.Provider]span
	inTree    [][]int32
	noSubtree bool
	order     []*state.Provider
	stack     []*state.Provider
	// Matching scratch.
	owner map[*state.Provider]int
	seen  map[*state.Provider]int
	taken map[*state.Provider]bool
	epoch int
}

// span is a provider's number in the depth-first order of the anchor's
// tree and the size of its subtree, which occupies the next numbers.
type span struct{ pre, size int32 }

// start prepares the pruning of it's walk and reports whether the anchor
// can serve the request at all.
func (pr *pruner) start(it *anchorIter) bool {
	n := len(it.lay.levels)
	pr.avail = resize(pr.avail, n)
	pr.held = resize(pr.held, n)
	clear(pr.held)
	for _, l := range it.lay.isolated {
		pr.avail[l] = len(it.opts[l])
	}
	pr.noSubtree = false
	if len(it.lay.subtrees) > 0 {
		pr.number(it)
	}
	return pr.feasible(it, -1)
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// number fills pos and inTree for it's anchor.
func (pr *pruner) number(it *anchorIter) {
	st := it.s.st
	if pr.pos == nil {
		pr.pos = map[*state.Provider]span{}
	}
	clear(pr.pos)
	order := pr.order[:0]
	stack := append(pr.stack[:0], it.anchor)
	for len(stack) > 0 {
		p := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		pr.pos[p] = span{pre: int32(len(order)), size: 1}
		order = append(order, p)
		stack = appendChildren(st, stack, p)
	}
	pr.stack, pr.order = stack, order
	for i := len(order) - 1; i > 0; i-- {
		p := order[i]
		parent := parentOf(st, p)
		ps := pr.pos[parent]
		ps.size += pr.pos[p].size
		pr.pos[parent] = ps
	}
	it.s.tick(len(order))
	pr.inTree = resize(pr.inTree, len(it.lay.levels))
	for _, check := range it.lay.subtrees {
		for _, l := range check {
			nums := pr.inTree[l][:0]
			for _, o := range it.opts[l] {
				if sp, ok := pr.pos[o]; ok {
					nums = append(nums, sp.pre)
				} else if o.ParentUUID != "" {
					pr.noSubtree = true
				}
			}
			sort.Slice(nums, func(i, j int) bool { return nums[i] < nums[j] })
			pr.inTree[l] = nums
		}
	}
}

// hold counts level d's choice out (when it is isolated) and reports
// whether the levels below d can still be served; if not, the count is
// undone.
func (pr *pruner) hold(it *anchorIter, d int) bool {
	if len(it.lay.isolated) > 0 && it.lay.levels[d].g.granular {
		p := it.at(d)
		for _, l := range it.lay.isolated {
			if l > d && containsByID(it.opts[l], p) {
				pr.avail[l]--
			}
		}
		pr.held[d] = true
	}
	if !pr.feasible(it, d) {
		pr.release(it, d)
		return false
	}
	return true
}

// release undoes hold for level d, before its choice changes.
func (pr *pruner) release(it *anchorIter, d int) {
	if !pr.held[d] {
		return
	}
	p := it.at(d)
	for _, l := range it.lay.isolated {
		if l > d && containsByID(it.opts[l], p) {
			pr.avail[l]++
		}
	}
	pr.held[d] = false
}

// feasible reports whether, with the levels down to d chosen (-1: none),
// the levels below can still be served as far as the checks can tell.
func (pr *pruner) feasible(it *anchorIter, d int) bool {
	if len(it.lay.isolated) > 0 && !pr.matchable(it, d, nil, nil) {
		return false
	}
	for _, check := range it.lay.subtrees {
		if !pr.subtreeFeasible(it, d, check) {
			return false
		}
	}
	return true
}

// matchable reports whether the isolated levels below d can be given
// distinct providers that no isolated level down to d took; the levels of
// restricted only providers under top.
func (pr *pruner) matchable(it *anchorIter, d int, restricted []int, top *state.Provider) bool {
	left := 0
	for _, l := range it.lay.isolated {
		if l > d {
			left++
		}
	}
	if left == 0 {
		return true
	}
	for _, l := range it.lay.isolated {
		if l <= d {
			continue
		}
		n := pr.avail[l]
		if top != nil && containsInt(restricted, l) {
			n = pr.countUnder(it, l, top, d)
		}
		if n < left {
			return pr.match(it, d, restricted, top)
		}
	}
	return true
}

// countUnder counts level l's options under top that no isolated level
// down to d took.
func (pr *pruner) countUnder(it *anchorIter, l int, top *state.Provider, d int) int {
	n := 0
	if sp, ok := pr.pos[top]; ok {
		nums := pr.inTree[l]
		lo := sort.Search(len(nums), func(i int) bool { return nums[i] >= sp.pre })
		hi := sort.Search(len(nums), func(i int) bool { return nums[i] >= sp.pre+sp.size })
		n = hi - lo
	} else if containsByID(it.opts[l], top) {
		n = 1
	}
	for _, e := range it.lay.isolated {
		if e > d {
			break
		}
		if u := it.at(e); pr.under(u, top) && containsByID(it.opts[l], u) {
			n--
		}
	}
	return n
}

// match runs the bipartite matching of matchable.
func (pr *pruner) match(it *anchorIter, d int, restricted []int, top *state.Provider) bool {
	if pr.owner == nil {
		pr.owner, pr.seen, pr.taken = map[*state.Provider]int{}, map[*state.Provider]int{}, map[*state.Provider]bool{}
	}
	clear(pr.owner)
	clear(pr.seen)
	clear(pr.taken)
	for _, e := range it.lay.isolated {
		if e <= d {
			pr.taken[it.at(e)] = true
		}
	}
	allowed := func(l int, o *state.Provider) bool {
		return !pr.taken[o] && (top == nil || !containsInt(restricted, l) || pr.under(o, top))
	}
	for _, l := range it.lay.isolated {
		if l <= d {
			continue
		}
		pr.epoch++
		if !pr.augment(it, l, allowed) {
			return false
		}
	}
	return true
}

// augment finds a provider for level l, moving the levels holding the
// ones it could take to others (an augmenting path).
func (pr *pruner) augment(it *anchorIter, l int, allowed func(int, *state.Provider) bool) bool {
	for _, o := range it.opts[l] {
		if pr.seen[o] == pr.epoch || !allowed(l, o) {
			continue
		}
		pr.seen[o] = pr.epoch
		if !it.s.tick(1) {
			return false
		}
		if owner, ok := pr.owner[o]; !ok || pr.augment(it, owner, allowed) {
			pr.owner[o] = l
			return true
		}
	}
	return false
}

// subtreeFeasible is the same_subtree check of one constraint (its levels,
// sorted) with the levels down to d chosen.
func (pr *pruner) subtreeFeasible(it *anchorIter, d int, check []int) bool {
	if pr.noSubtree {
		return true
	}
	k := 0
	for k < len(check) && check[k] <= d {
		k++
	}
	if k == 0 || k == len(check) {
		return true
	}
	chosen, rest := check[:k], check[k:]
	var low *state.Provider // the lowest common ancestor of the chosen
	for _, l := range chosen {
		p := it.at(l)
		if low == nil {
			low = p
		} else if low = pr.common(it, low, p); low == nil {
			return false
		}
	}
	lowChosen := false
	for _, l := range chosen {
		lowChosen = lowChosen || it.at(l) == low
	}
	var top *state.Provider
	for t := low; t != nil; t = pr.up(it, t) {
		usable := t == low && lowChosen
		for _, r := range rest {
			if usable {
				break
			}
			usable = containsByID(it.opts[r], t)
		}
		if !usable {
			continue
		}
		all := true
		for _, r := range rest {
			if !pr.anyUnder(it, r, t) {
				all = false
				break
			}
		}
		if all {
			top = t
		}
	}
	if top == nil {
		return false
	}
	if len(it.lay.isolated) > 0 {
		return pr.matchable(it, d, rest, top)
	}
	return true
}

// under reports whether x is t or a descendant of t.
func (pr *pruner) under(x, t *state.Provider) bool {
	if x == t {
		return true
	}
	sx, okx := pr.pos[x]
	sp, okt := pr.pos[t]
	return okx && okt && sp.pre <= sx.pre && sx.pre < sp.pre+sp.size
}

// up is t's parent within the anchor's tree (nil for the anchor and for a
// provider outside the tree).
func (pr *pruner) up(it *anchorIter, t *state.Provider) *state.Provider {
	if _, ok := pr.pos[t]; !ok || t == it.anchor {
		return nil
	}
	return parentOf(it.s.st, t)
}

// common is the lowest provider that is a or an ancestor of a and has b
// under it; nil when none does.
func (pr *pruner) common(it *anchorIter, a, b *state.Provider) *state.Provider {
	for t := a; t != nil; t = pr.up(it, t) {
		if pr.under(b, t) {
			return t
		}
	}
	return nil
}

// anyUnder reports whether level l has an option under t.
func (pr *pruner) anyUnder(it *anchorIter, l int, t *state.Provider) bool {
	sp, ok := pr.pos[t]
	if !ok {
		return containsByID(it.opts[l], t)
	}
	nums := pr.inTree[l]
	i := sort.Search(len(nums), func(i int) bool { return nums[i] >= sp.pre })
	return i < len(nums) && nums[i] < sp.pre+sp.size
}

// containsByID reports whether list, in ID order, holds p.
func containsByID(list []*state.Provider, p *state.Provider) bool {
	i := sort.Search(len(list), func(i int) bool { return list[i].ID >= p.ID })
	return i < len(list) && list[i] == p
}
