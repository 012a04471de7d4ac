package candidates

import (
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/placementd/placementd/fsm/state"
)

// Random samples in time that follows the limit.
//
// With randomize_allocation_candidates, upstream builds every candidate
// and answers random.sample(candidates, limit): limit distinct candidates,
// every subset equally likely, in random order. Building them all costs
// time in proportion to the cloud, most of it for candidates nobody sees.
// randomCombinations draws the same sample without building them.
//
// It looks at a space of slots: an anchor slot (a slot of the provider
// index, or of the roots an index constraint leads to) and, per level, a
// digit naming a provider. A digit below the level's T, the most
// providers holding inventory of the level's classes any tree has, names
// the digit-th such provider of the anchor's tree (in ID order); from T
// on (at levels a sharing provider can serve), one of the sharing
// providers outside the tree that the tree reaches through its aggregates
// (in ID order), up to R, the most any tree reaches. A slot is real when
// its anchor slot holds a root able to anchor candidates, every digit
// names a provider that is one of the anchor's options at its level, and
// together they make a candidate. Every candidate is exactly one real
// slot: its providers give the digits, and a level no sharing provider can
// serve (required, see below) has a provider of the anchor's own tree,
// which names the anchor. Visiting the slots in a uniformly random order
// (a Fisher-Yates shuffle done lazily, one draw at a time) and keeping the
// first limit real ones is therefore a uniform sample in a uniform order:
// what random.sample gives.
//
// The Ts and R (the shape) take a walk of every provider to know, when
// providers have children (a flat cloud's Ts are 1, and its R needs only
// the members of the aggregates with sharing providers, when there are
// several: a few milliseconds per 10,000). They change
// when providers, parents, inventories or the aggregates of sharing
// providers do, which is rare next to allocations, so the last shapes
// walked are kept with a key that most such changes move (shapeKeyOf).
// Those it misses (an inventory of a new class, re-parenting) are caught
// when a draw meets a tree that does not fit the shape: the search walks
// the trees again and starts its draws over. Until a draw meets it, a
// tree grown unseen has its extra candidates left out of samples.
//
// A draw costs a few checks of the providers it names. About
// limit × slots/candidates draws are needed: one per candidate in a flat
// cloud with no more than one sharing provider per aggregate, more the
// more trees (or sharing providers) differ from the largest. When the
// real slots turn out too sparse for the draws to beat building every
// candidate (most anchors unable to serve the request, or fewer candidates
// than the limit in a space larger than a few draws per anchor slot), it
// gives up after that budget, and the search builds every candidate and
// samples those: the same distribution (the decision depends only on how
// many real slots were met, not on which), at most about twice the work.
// A limit near the number of candidates is drawn too: the shuffle never
// draws a slot twice, and a space gone through holds every candidate.
//
// Combinations made of sharing providers alone are the exception: one can
// come from several anchors, and upstream keeps it once. The sampling is
// used only when some level no sharing provider can serve, which rules
// them out.

// Draws spent before the sampling judges, from the real slots met so far,
// whether it would finish within its budget of drawsPerSlot per anchor
// slot.
const (
	samplingMinDraws = 64
	drawsPerSlot     = 8
	// movedBytes is what a draw adds to the shuffle's map (at most).
	movedBytes = 48
)

// shape bounds what an anchor offers: per level, the most providers of
// one tree holding inventory of the level's classes, and the most sharing
// providers a tree reaches (counted once per aggregate of a provider of
// the tree that leads to them).
type shape struct {
	held  []int
	reach int
}

// lastShapes are the shapes last walked, by the classes of their levels,
// with the key they were walked at (whose store they do not keep alive);
// shapeWalk is held while one is walked.
var (
	lastShapes atomic.Pointer[shapes]
	shapeWalk  sync.Mutex
)

type shapes struct {
	key     shapeKey
	byLevel map[string]shape
}

// shape returns the shape of lay's levels, walking the trees unless the
// key of the last shapes walked still holds (and fresh is not set).
func (s *search) shape(lay *layout, fresh bool) shape {
	var sig strings.Builder
	for _, lv := range lay.levels {
		for _, r := range lv.contrib {
			sig.WriteString(r.Class)
			sig.WriteByte(',')
		}
		sig.WriteByte(';')
	}
	n := len(lay.levels)
	if !s.hasTrees {
		// Every tree is one provider: a level's T is 1 whatever its
		// classes, and R is 0 without sharing providers.
		if len(s.sharingByAgg) == 0 {
			return shape{held: ones(n)}
		}
		sig.Reset()
	}
	key := shapeKeyOf(s.st)
	kept := func(last *shapes) (shape, bool) {
		if last == nil || last.key != key || fresh {
			return shape{}, false
		}
		sh, ok := last.byLevel[sig.String()]
		return sh, ok
	}
	// Concurrent searches read the kept shapes without a lock; one search
	// walks at a time, those arriving meanwhile wait for its shape rather
	// than walk too.
	if sh, ok := kept(lastShapes.Load()); ok {
		return sh
	}
	shapeWalk.Lock()
	defer shapeWalk.Unlock()
	last := lastShapes.Load()
	if sh, ok := kept(last); ok {
		return sh
	}
	var sh shape
	if s.hasTrees {
		sh = s.walkTrees(lay)
	} else {
		sh = shape{held: ones(n), reach: s.flatReach()}
	}
	if s.err != nil {
		return sh // the search is over; nothing is kept
	}
	next := &shapes{key: key, byLevel: map[string]shape{}}
	if last != nil && last.key == key && len(last.byLevel) < 16 {
		maps.Copy(next.byLevel, last.byLevel)
	}
	next.byLevel[sig.String()] = sh
	lastShapes.Store(next)
	return sh
}

func ones(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = 1
	}
	return out
}

// walkTrees counts, in one pass over the providers, each into its tree's
// tally, what every tree holds of each level and reaches.
func (s *search) walkTrees(lay *layout) shape {
	n := len(lay.levels)
	sh := shape{held: make([]int, n)}
	trees := map[string]int{} // root uuid -> offset of its tally (held per level, reach)
	var tallies []int
	for p := range providersInOrder(s.st) {
		if !s.tick(1) {
			break
		}
		at, ok := trees[p.RootUUID]
		if !ok {
			at = len(tallies)
			trees[p.RootUUID] = at
			tallies = append(tallies, make([]int, n+1)...)
		}
		t := tallies[at : at+n+1]
		for l := range lay.levels {
			if lay.levels[l].holds(p) {
				t[l]++
				sh.held[l] = max(sh.held[l], t[l])
			}
		}
		t[n] += s.reachOf(p)
		sh.reach = max(sh.reach, t[n])
	}
	return sh
}

// flatReach is the shape's reach when no provider has a parent: the most
// sharing providers one provider's aggregates lead to, found from the
// members of the aggregates that have sharing providers alone.
func (s *search) flatReach() int {
	if len(s.sharingByAgg) == 1 {
		for _, sps := range s.sharingByAgg {
			return len(sps)
		}
	}
	reach := map[string]int{}
	most := 0
	for agg, sps := range s.sharingByAgg {
		for u := range aggregateMembers(s.st, agg) {
			if !s.tick(1) {
				return most
			}
			reach[u] += len(sps)
			most = max(most, reach[u])
		}
	}
	return most
}

// holds reports whether p has inventory of every class lv asks for.
func (lv *level) holds(p *state.Provider) bool {
	for _, r := range lv.contrib {
		if inventoryOf(p, r.Class) == nil {
			return false
		}
	}
	return true
}

// countHeld counts the providers of tree that hold lv's classes.
func countHeld(lv *level, tree []*state.Provider) int {
	n := 0
	for _, p := range tree {
		if lv.holds(p) {
			n++
		}
	}
	return n
}

// reachOf counts the sharing providers of every aggregate of p (a
// provider as often as it is reached): what p adds to its tree's reach.
func (s *search) reachOf(p *state.Provider) int {
	n := 0
	if len(s.sharingByAgg) > 0 {
		for agg := range aggregatesOf(p) {
			n += len(s.sharingByAgg[agg])
		}
	}
	return n
}

// sampler is the state of one drawCombinations.
type sampler struct {
	s     *search
	lay   *layout
	shape shape
	// bounds are the digits per level and perAnchor their product.
	bounds    []uint64
	perAnchor uint64
	// tree and shared are the providers the digits of the anchor being
	// looked at name (shared once a digit needs them).
	tree, shared []*state.Provider
	sharedDone   bool
	// it checks a combination with the walk's own rules; its options are
	// one provider per level (picked).
	it     anchorIter
	picked []*state.Provider
	// stale is set when an anchor does not fit the shape.
	stale bool
	// treeTraits are the required OR-groups of traits no sharing provider
	// has: a slot is real only if a provider of its anchor's tree has one
	// of each, which real checks first (most anchors of a cloud where a
	// trait is rare fail it).
	treeTraits [][]string
}

// treeOnlyTraits lists the required OR-groups of the layout's groups
// that no sharing provider meets.
func (s *search) treeOnlyTraits(lay *layout) [][]string {
	var out [][]string
	for _, g := range lay.groups {
		for _, anyOf := range g.Required {
			if !slices.ContainsFunc(s.sharingAll, func(sp *state.Provider) bool { return hasAnyTrait(sp, anyOf) }) {
				out = append(out, anyOf)
			}
		}
	}
	return out
}

// randomCombinations returns k combinations drawn uniformly without
// replacement (all of them, shuffled, when there are k or fewer and the
// space was small enough to go through), or false when the caller must
// build every candidate and sample them (or the search was stopped).
func (s *search) randomCombinations(lay *layout, k int) ([][]*state.Provider, bool) {
	fixed := false
	for _, shared := range lay.needsShared {
		fixed = fixed || !shared
	}
	if !fixed || len(lay.levels) == 0 || k <= 0 {
		return nil, false
	}
	held := s.held
	out, ok, stale := s.drawCombinations(lay, k, s.shape(lay, false))
	if stale {
		// Start over on the shape as it is, so that the draws all come
		// from one space.
		s.held = held
		out, ok, _ = s.drawCombinations(lay, k, s.shape(lay, true))
	}
	if sampled != nil {
		sampled(ok)
	}
	return out, ok
}

// sampled, when set (by tests), learns whether each search that could
// draw its sample did.
var sampled func(ok bool)

// drawCombinations is randomCombinations over the space of shape sh;
// stale says that an anchor did not fit it.
func (s *search) drawCombinations(lay *layout, k int, sh shape) (out [][]*state.Provider, ok, stale bool) {
	n := len(lay.levels)
	sm := &sampler{s: s, lay: lay, shape: sh, bounds: make([]uint64, n), perAnchor: 1,
		picked: make([]*state.Provider, n)}
	for l := range sm.bounds {
		sm.bounds[l] = uint64(max(sh.held[l], 1))
		if lay.needsShared[l] {
			sm.bounds[l] += uint64(sh.reach)
		}
		if sm.perAnchor > math.MaxInt64/sm.bounds[l] {
			return nil, false, false
		}
		sm.perAnchor *= sm.bounds[l]
	}
	slots, at := providerSlots(s.st)
	// An index constraint met by few providers leads to few anchors: list
	// them when that costs less than the draws spent on slots without one
	// (about k·perAnchor·slots/est more of them).
	if est, roots := s.seedPlan(lay.groups); roots != nil &&
		float64(est)*float64(est)*float64(seedFactor) < float64(k)*float64(sm.perAnchor)*float64(slots) {
		seeds := roots()
		slots, at = len(seeds), func(i int) *state.Provider { return seeds[i] }
	}
	if slots == 0 || sm.perAnchor > math.MaxInt64/uint64(slots) {
		return nil, false, false
	}
	sm.treeTraits = s.treeOnlyTraits(lay)
	sm.it = anchorIter{s: s, lay: lay, opts: make([][]*state.Provider, n), choice: make([]int, n)}
	for l := range sm.it.opts {
		sm.it.opts[l] = sm.picked[l : l+1]
	}

	space := uint64(slots) * sm.perAnchor
	budget := drawsPerSlot*uint64(slots) + samplingMinDraws
	judge := max(samplingMinDraws, budget/8)
	moved := newShuffle(space, min(budget, 2*uint64(k)))
	out = make([][]*state.Provider, 0, min(k, 256))
	width := int64(n)
	for draw := uint64(0); draw < space && len(out) < k; draw++ {
		if !s.tick(1) || draw >= budget || draw >= judge && uint64(len(out))*budget < draw*uint64(k) {
			return nil, false, false
		}
		r := draw + s.randN(space-draw)
		v := moved.at(r)
		moved.set(r, moved.at(draw))
		s.hold(movedBytes)
		if sm.real(at(int(v/sm.perAnchor)), v%sm.perAnchor) {
			out = append(out, sm.it.snapshot())
			s.hold(width * cellBytes)
		}
		if sm.stale {
			return nil, false, true
		}
	}
	if s.err != nil {
		return nil, false, false
	}
	return out, true, false
}

// shuffle holds the swaps of a Fisher-Yates shuffle of [0, n) done
// lazily: the slot moved to each position swapped so far. A small space
// is an array (a draw is an index, not a hash insertion), a larger one a
// map of the positions drawn.
type shuffle struct {
	dense  []uint32 // slot+1, 0 for a position not moved
	sparse map[uint64]uint64
}

// denseShuffle is the largest space held in an array (32 KiB).
const denseShuffle = 1 << 13

func newShuffle(n, draws uint64) *shuffle {
	if n <= denseShuffle {
		return &shuffle{dense: make([]uint32, n)}
	}
	return &shuffle{sparse: make(map[uint64]uint64, draws)}
}

// at is the slot at position i.
func (sh *shuffle) at(i uint64) uint64 {
	if sh.dense != nil {
		if v := sh.dense[i]; v != 0 {
			return uint64(v - 1)
		}
		return i
	}
	if v, ok := sh.sparse[i]; ok {
		return v
	}
	return i
}

// set moves slot v to position i.
func (sh *shuffle) set(i, v uint64) {
	if sh.dense != nil {
		sh.dense[i] = uint32(v + 1)
		return
	}
	sh.sparse[i] = v
}

// real reports whether the slot of anchor a with digits (in mixed radix)
// is a candidate, and leaves its providers in picked.
func (sm *sampler) real(a *state.Provider, digits uint64) bool {
	s := sm.s
	if a == nil || a.ParentUUID != "" || !s.rootPasses(a) {
		return false
	}
	sm.tree = s.appendTree(sm.tree[:0], a)
	sm.sharedDone = false
	for l := range sm.lay.levels {
		// (A lone root fits any level some tree holds.)
		if (len(sm.tree) > 1 || sm.shape.held[l] == 0) && countHeld(&sm.lay.levels[l], sm.tree) > sm.shape.held[l] {
			sm.stale = true
			return false
		}
	}
	for _, anyOf := range sm.treeTraits {
		if !slices.ContainsFunc(sm.tree, func(p *state.Provider) bool { return hasAnyTrait(p, anyOf) }) {
			return false
		}
	}
	for l := len(sm.bounds) - 1; l >= 0; l-- {
		lv := &sm.lay.levels[l]
		d := digits % sm.bounds[l]
		digits /= sm.bounds[l]
		held := uint64(max(sm.shape.held[l], 1))
		if d < held {
			p := nthHeld(lv, sm.tree, int(d))
			if p == nil {
				return false
			}
			sm.picked[l] = p
			continue
		}
		shared := sm.sharedWith(a)
		if sm.stale || d-held >= uint64(len(shared)) {
			return false
		}
		sm.picked[l] = shared[d-held]
	}
	for l := range sm.lay.levels {
		lv := &sm.lay.levels[l]
		p := sm.picked[l]
		if lv.g.granular || len(lv.g.classes) == 0 {
			if !s.servesGranular(lv.g, p) {
				return false
			}
			continue
		}
		g := lv.g
		inTree := p.RootUUID == a.UUID
		if inAnyAggregate(a, g.ForbiddenAggs) || g.InTree != "" && (!inTree || g.inTreeRoot != a.UUID) ||
			!givesClass(g, lv.contrib[0], p, inTree, len(g.MemberOf) > 0 && inAllAggregates(a, g.MemberOf)) {
			return false
		}
	}
	for d := range sm.lay.levels {
		if !sm.it.accept(d) {
			return false
		}
	}
	return true
}

// nthHeld is the n-th provider of tree holding lv's classes, or nil. Of
// a lone root it may return one that does not (which is then no option).
func nthHeld(lv *level, tree []*state.Provider, n int) *state.Provider {
	if len(tree) == 1 {
		if n == 0 {
			return tree[0]
		}
		return nil
	}
	for _, p := range tree {
		if lv.holds(p) {
			if n == 0 {
				return p
			}
			n--
		}
	}
	return nil
}

// sharedWith lists, in ID order, the sharing providers outside a's tree
// (in sm.tree) that share an aggregate with a provider of the tree, and
// checks the tree against the shape.
func (sm *sampler) sharedWith(a *state.Provider) []*state.Provider {
	if sm.sharedDone {
		return sm.shared
	}
	sm.sharedDone = true
	var reach int
	sm.shared, reach = sm.s.sharingProviders(sm.shared[:0], sm.tree, a.UUID)
	if reach > sm.shape.reach {
		sm.stale = true
	}
	return sm.shared
}

// randN is a uniform number in [0, n) from the search's source.
func (s *search) randN(n uint64) uint64 {
	if s.opt.Rand != nil {
		return s.opt.Rand.Uint64N(n)
	}
	return rand.Uint64N(n)
}
