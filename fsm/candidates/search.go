package candidates

import (
	"cmp"
	"context"
	"iter"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"weak"

	"github.com/placementd/placementd/fsm/state"
)

// group is a request group with what the search derives from it.
type group struct {
	*Group
	idx int
	// granular groups are served by one provider; the unsuffixed group may
	// take each class from a different provider.
	granular bool
	// classes are the group's resources in the order its allocation
	// requests list them: query order for a granular group, class id order
	// for the unsuffixed one (upstream sorts its product by class id)
	// unless the deployment has neither trees nor sharing providers (then
	// upstream takes its one-provider path, in query order).
	classes []state.ResourceAmount
	// inTreeRoot is the root of InTree's tree when it restricts the
	// group (only groups with resources: upstream ignores in_tree in a
	// resourceless group once the provider exists).
	inTreeRoot  string
	unknownTree bool
	// subtreeChecks are the same_subtree constraints (as group indexes)
	// whose last group is this one: they are checked once it is chosen.
	subtreeChecks [][]int
}

// search is one Search call.
type search struct {
	st     *state.Store
	req    *Request
	opt    Options
	groups []*group
	// hasTrees: some provider has a parent (upstream's _has_provider_trees).
	hasTrees bool
	// sharingByAgg lists, per aggregate, the providers with the sharing
	// trait in it, in ID order.
	sharingByAgg map[string][]*state.Provider
	rootFilter   bool
	// sharingAll lists the providers with the sharing trait.
	sharingAll []*state.Provider
	// groupEmpty memoizes whether a group alone has no candidate.
	groupEmpty map[int]bool
	sc         scratch
	// slab is where snapshot cuts combinations from; slabRows counts the
	// rows allocated, expect the combinations the answer will keep when
	// known (a limit or the cap), so that the first slab is no larger.
	slab             []*state.Provider
	slabRows, expect int
	// mem is where the answer is built (answermem.go).
	mem *answerMem

	// ctx ends the search when the request is cancelled or times out.
	ctx context.Context
	// steps counts the work done (see tick); nextCheck is when ctx is
	// looked at next.
	steps, nextCheck int64
	// held estimates the bytes the answer being built holds (see hold).
	held int64
	// err is why the search stopped early (the context's error or a
	// *LimitError); once set, every loop winds down and Search returns it.
	err error
}

// checkEvery is how many steps go by between two looks at the context: a
// step costs tens to a hundred and fifty nanoseconds (the packing search
// of the tests: 50 to 170 µs per 1024 steps, the first on a quiet
// machine, the second on a loaded one), so a cancelled search stops
// within a fraction of a millisecond.
const checkEvery = 1024

// yield is called at every look at the context but the first (every
// checkEvery steps, so that the many searches shorter than that never
// yield): it lets the
// goroutines waiting for a processor run before the search goes on
// (tests count the calls). Go preempts a running goroutine only after
// about 10 ms, so without it a long search on a small machine would hold
// a whole processor that long at a time, and the handlers, Raft and
// Apply of the writes beside it would queue for the rest.
var yield = runtime.Gosched

// tick records n steps of work and reports whether the search may go on.
func (s *search) tick(n int) bool {
	s.steps += int64(n)
	if s.steps >= s.nextCheck && s.err == nil {
		if s.nextCheck > 0 {
			yield()
		}
		s.nextCheck = s.steps + checkEvery
		s.err = s.ctx.Err()
	}
	return s.err == nil
}

// cellBytes estimates what one level of one candidate costs until the
// answer is sent: its slot in the combination and its share of the
// Candidate's allocations and mappings (about 220 bytes allocated, see
// TestMemoryEstimate), and of the JSON body (about 120, see httpapi's
// TestReportedRequestsAreBounded), with room for the body's buffer growth.
const cellBytes = 400

// hold adds n bytes to what the search holds and reports whether it stays
// within Options.MaxBytes.
func (s *search) hold(n int64) bool {
	s.held += n
	if m := s.opt.MaxBytes; m > 0 && s.held > m && s.err == nil {
		s.err = &LimitError{MaxBytes: m}
	}
	return s.err == nil
}

func newSearch(ctx context.Context, st *state.Store, req *Request, opt Options) *search {
	if ctx == nil {
		ctx = context.Background()
	}
	s := &search{
		ctx: ctx, st: st, req: req, opt: opt,
		hasTrees:   hasProviderTrees(st),
		rootFilter: len(req.RootRequired) > 0 || len(req.RootForbidden) > 0,
		groupEmpty: map[int]bool{},
		mem:        newAnswerMem(),
	}
	bySuffix := map[string]int{}
	for i := range req.Groups {
		g := &group{Group: &req.Groups[i], idx: i, granular: req.Groups[i].Suffix != ""}
		bySuffix[g.Suffix] = i
		g.classes = append([]state.ResourceAmount(nil), g.Resources...)
		if !g.granular && (s.hasTrees || countWithTrait(st, state.SharingTrait) > 0) {
			sort.SliceStable(g.classes, func(a, b int) bool {
				return classID(st, g.classes[a].Class) < classID(st, g.classes[b].Class)
			})
		}
		if g.InTree != "" {
			if p := providerByUUID(st, g.InTree); p == nil {
				g.unknownTree = true
			} else if len(g.Resources) > 0 {
				g.inTreeRoot = p.RootUUID
			}
		}
		s.groups = append(s.groups, g)
	}
	for _, sub := range req.SameSubtrees {
		var idxs []int
		last := -1
		for _, suffix := range sub {
			i, ok := bySuffix[suffix]
			if !ok || containsInt(idxs, i) {
				continue
			}
			idxs = append(idxs, i)
			last = max(last, i)
		}
		if len(idxs) > 1 {
			s.groups[last].subtreeChecks = append(s.groups[last].subtreeChecks, idxs)
		}
	}
	sh := sharingOf(st)
	s.sharingAll, s.sharingByAgg = sh.all, sh.byAgg
	return s
}

// sharing lists the providers with the sharing trait of one version of
// the state, and them per aggregate (in ID order). The searches of one
// version share it (read only): the state changes at every write, but
// several searches usually read each version.
type sharing struct {
	version weak.Pointer[state.Store] // does not keep the version alive
	all     []*state.Provider
	byAgg   map[string][]*state.Provider
}

var lastSharing atomic.Pointer[sharing]

func sharingOf(st *state.Store) *sharing {
	if sh := lastSharing.Load(); sh != nil && sh.version.Value() == st {
		return sh
	}
	sh := &sharing{version: weak.Make(st)}
	for p := range providersWithTrait(st, state.SharingTrait) {
		sh.all = append(sh.all, p)
		if sh.byAgg == nil {
			sh.byAgg = map[string][]*state.Provider{}
		}
		for a := range aggregatesOf(p) {
			sh.byAgg[a] = append(sh.byAgg[a], p)
		}
	}
	for _, list := range sh.byAgg {
		sortByID(list)
	}
	lastSharing.Store(sh)
	return sh
}

func classID(st *state.Store, name string) int {
	if rc := classByName(st, name); rc != nil {
		return rc.ID
	}
	return int(^uint(0) >> 1)
}

func containsInt(list []int, v int) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func sortByID(ps []*state.Provider) {
	slices.SortFunc(ps, func(a, b *state.Provider) int { return cmp.Compare(a.ID, b.ID) })
}

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

// resourceful reports whether a level allocates anything.
func (lv *level) resourceful() bool { return len(lv.contrib) > 0 }

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

// run generates the candidates and their summaries (nil when the search
// was stopped: s.err says why).
func (s *search) run() *Result {
	for _, g := range s.groups {
		for _, r := range g.Resources {
			if !s.anyCapacity(g, r) {
				return &Result{}
			}
		}
	}
	lay := s.newLayout(s.groups, true)
	limit := s.req.Limit
	excludeNested := !s.req.NestedAware && s.hasTrees
	// A random sample of limit candidates is drawn without building the
	// others (sample.go), unless the summaries need them all (see
	// summaries) or the cap leaves fewer than limit to sample from.
	if s.opt.Randomize && limit > 0 && !excludeNested && (s.opt.MaxCandidates <= 0 || s.opt.MaxCandidates >= limit) {
		held := s.held
		s.expect = limit
		if chosen, ok := s.randomCombinations(lay, limit); ok {
			return s.result(lay, chosen, chosen, false, false)
		}
		if s.err != nil {
			return nil
		}
		s.held = held
	}
	// Without randomization, the first `limit` candidates are the answer
	// and generation can stop there. Before 1.29 the summaries of a limited
	// answer depend on all candidates (see summaries), so all are needed.
	lazy := !s.opt.Randomize && !(excludeNested && limit > 0)
	want := 0
	if lazy && limit > 0 {
		want = limit
	}
	if m := s.opt.MaxCandidates; m > 0 && (want == 0 || m < want) {
		want = m
	}
	gen := s.combinations(lay, s.anchorSource(s.groups, want))

	s.expect = want
	all := s.mem.all[:0]
	if want > 0 && cap(all) < min(want, 1024) {
		all = make([][]*state.Provider, 0, min(want, 1024))
	}
	defer func() { s.mem.all = all }()
	generated := 0
	var seen map[string]bool
	width := int64(len(lay.levels))
	// emit takes one combination; it reports whether generation is over.
	emit := func(c []*state.Provider) bool {
		// Only a combination made of sharing providers alone can come from
		// several anchors: upstream's set keeps one of them.
		if key, ok := sharingKey(c); ok {
			if seen == nil {
				seen = map[string]bool{}
			}
			if seen[key] {
				return false
			}
			seen[key] = true
		}
		generated++
		if !excludeNested || !lay.nestedCombination(c) {
			all = append(all, c)
			// The first `limit` (or all) become candidates in the answer;
			// the others are only sampled from.
			if limit == 0 || len(all) <= limit {
				s.hold(width * cellBytes)
			} else {
				s.hold(8*width + 24)
			}
		}
		if s.opt.MaxCandidates > 0 && generated >= s.opt.MaxCandidates {
			return true
		}
		return s.err != nil || lazy && limit > 0 && len(all) >= limit
	}
	for c := gen.next(); c != nil; c = gen.next() {
		if emit(c) {
			break
		}
	}
	if s.err != nil {
		return nil
	}

	chosen := all
	limited := limit > 0 && limit < len(all)
	if limited {
		if s.opt.Randomize {
			chosen = s.sample(all, limit)
		} else {
			chosen = all[:limit]
		}
	} else if s.opt.Randomize {
		chosen = s.sample(all, len(all))
	}
	return s.result(lay, chosen, all, limited, excludeNested)
}

// result turns the chosen combinations into the answer (see summaries for
// the other arguments).
func (s *search) result(lay *layout, chosen, all [][]*state.Provider, limited, excludeNested bool) *Result {
	res := &Result{Candidates: s.mem.candidates.take(len(chosen))}
	b := newAnswerBuilder(lay, len(chosen), s.mem)
	for i, c := range chosen {
		res.Candidates[i] = b.candidate(lay, c)
	}
	res.Summaries = s.summaries(lay, chosen, all, limited, excludeNested)
	return res
}

// answerBuilder builds the candidates of an answer, cutting their slices
// from slabs (a few small slices per candidate would be as many
// allocations).
type answerBuilder struct {
	allocs   []Allocation
	amounts  []state.ResourceAmount
	mappings []Mapping
	uuids    []string
	// Scratch: the providers of a candidate, what one gets, the uuids of
	// one mapping.
	provs []*state.Provider
	res   []state.ResourceAmount
	us    []string
}

// newAnswerBuilder cuts from mem the slabs for n candidates of lay: a
// candidate uses at most a provider and a provider uuid per level, and an
// amount per class of a level.
func newAnswerBuilder(lay *layout, n int, mem *answerMem) *answerBuilder {
	amounts := 0
	for _, lv := range lay.levels {
		amounts += len(lv.contrib)
	}
	levels := len(lay.levels)
	return &answerBuilder{
		allocs: mem.allocs.take(n * levels), amounts: mem.amounts.take(n * amounts),
		mappings: mem.mappings.take(n * len(lay.groups)), uuids: mem.uuids.take(n * levels),
	}
}

// cut returns n elements of *slab (a fresh slab when it runs short), with
// no room to grow into the next ones.
func cut[T any](slab *[]T, n int) []T {
	if len(*slab) < n {
		*slab = make([]T, max(n, 256))
	}
	out := (*slab)[:n:n]
	*slab = (*slab)[n:]
	return out
}

// candidate turns a combination into an allocation request: amounts of a
// class from a provider summed over groups, providers in first-use order.
func (b *answerBuilder) candidate(lay *layout, c []*state.Provider) Candidate {
	provs := b.provs[:0]
	for i, p := range c {
		if lay.levels[i].resourceful() && !containsProvider(provs, p) {
			provs = append(provs, p)
		}
	}
	b.provs = provs
	out := Candidate{Allocations: cut(&b.allocs, len(provs)), Mappings: cut(&b.mappings, len(lay.groups))}
	for k, p := range provs {
		rs := b.res[:0]
		for i, q := range c {
			if q != p {
				continue
			}
			for _, r := range lay.levels[i].contrib {
				j := slices.IndexFunc(rs, func(x state.ResourceAmount) bool { return x.Class == r.Class })
				if j < 0 {
					rs = append(rs, r)
				} else {
					rs[j].Amount += r.Amount
				}
			}
		}
		b.res = rs
		out.Allocations[k] = Allocation{Provider: p.UUID, Resources: append(cut(&b.amounts, len(rs))[:0], rs...)}
	}
	for gi, g := range lay.groups {
		us := b.us[:0]
		for i := lay.first[g.idx]; i < len(c) && lay.levels[i].g == g; i++ {
			if !containsString(us, c[i].UUID) {
				us = append(us, c[i].UUID)
			}
		}
		b.us = us
		out.Mappings[gi] = Mapping{Suffix: g.Suffix, Providers: append(cut(&b.uuids, len(us))[:0], us...)}
	}
	return out
}

// sharingKey identifies a combination of sharing providers only.
func sharingKey(c []*state.Provider) (string, bool) {
	var b strings.Builder
	for _, p := range c {
		if !hasTrait(p, state.SharingTrait) {
			return "", false
		}
		b.WriteString(strconv.FormatInt(p.ID, 10))
		b.WriteByte(',')
	}
	return b.String(), true
}

// nestedCombination reports whether a combination allocates from two
// providers of one tree (what microversions before 1.29 cannot express).
func (lay *layout) nestedCombination(c []*state.Provider) bool {
	for i, p := range c {
		if !lay.levels[i].resourceful() {
			continue
		}
		for j := 0; j < i; j++ {
			if lay.levels[j].resourceful() && c[j] != p && c[j].RootUUID == p.RootUUID {
				return true
			}
		}
	}
	return false
}

// sample returns k of the candidates in random order, as random.sample.
func (s *search) sample(all [][]*state.Provider, k int) [][]*state.Provider {
	out := append([][]*state.Provider(nil), all...)
	for i := 0; i < k; i++ {
		var j int
		if s.opt.Rand != nil {
			j = i + s.opt.Rand.IntN(len(out)-i)
		} else {
			j = i + rand.IntN(len(out)-i)
		}
		out[i], out[j] = out[j], out[i]
	}
	return out[:k]
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// summaries describes the providers of the trees the chosen candidates
// allocate from (upstream keys trees by the roots of the providers in the
// allocations, not by anchors). Before 1.29, with nested providers in the
// deployment, upstream keeps only the providers some candidate (of all
// generated, not only the chosen) allocates from, then, when limiting,
// those whose root is a root of a chosen candidate.
func (s *search) summaries(lay *layout, chosen, all [][]*state.Provider, limited, excludeNested bool) []Summary {
	roots := s.mem.roots
	rootList := s.mem.rootList[:0]
	defer func() { s.mem.rootList = rootList }()
	for _, c := range chosen {
		for i, p := range c {
			if lay.levels[i].resourceful() && !roots[p.RootUUID] {
				roots[p.RootUUID] = true
				rootList = append(rootList, s.rootOf(p))
			}
		}
	}
	provs := s.mem.provs[:0]
	defer func() { s.mem.provs = provs }()
	if excludeNested {
		seen := map[*state.Provider]bool{}
		for _, c := range all {
			for i, p := range c {
				if lay.levels[i].resourceful() && !seen[p] && (!limited || roots[p.RootUUID]) {
					seen[p] = true
					provs = append(provs, p)
				}
			}
		}
	} else {
		for _, root := range rootList {
			if root != nil {
				provs = s.appendTree(provs, root)
			}
		}
	}
	s.tick(len(provs))
	// Upstream reads the trees' providers by root id (its index), then
	// provider id.
	slices.SortFunc(provs, func(p, q *state.Provider) int {
		return cmp.Or(cmp.Compare(s.rootOf(p).ID, s.rootOf(q).ID), cmp.Compare(p.ID, q.ID))
	})
	out := s.mem.summaries.take(len(provs))
	inventories, traitTotal := 0, 0
	for _, p := range provs {
		inventories += inventoryCount(p)
		traitTotal += traitCount(p)
	}
	resources, traits := s.mem.resources.take(inventories), s.mem.traits.take(traitTotal)
	classes := s.mem.classes
	for i, p := range provs {
		classes = appendInventoryClassesByID(s.st, s.mem.classIDs, classes[:0], p) // upstream's usage query gives them so
		rs := cut(&resources, len(classes))
		for j, class := range classes {
			rs[j] = SummaryResource{Class: class, Capacity: inventoryOf(p, class).Capacity(), Used: usageOf(p, class)}
		}
		ts := appendTraitsInIDOrder(s.st, cut(&traits, traitCount(p))[:0], p)
		out[i] = Summary{UUID: p.UUID, ParentUUID: p.ParentUUID, RootUUID: p.RootUUID, Traits: ts, Resources: rs}
	}
	s.mem.classes = classes
	return out
}
