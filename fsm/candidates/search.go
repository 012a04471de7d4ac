package candidates

import (
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

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
	// for the unsuffixed one (upstream sorts its product by class id).
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
	slab       []*state.Provider
}

func newSearch(st *state.Store, req *Request, opt Options) *search {
	s := &search{
		st: st, req: req, opt: opt,
		hasTrees:   len(st.Children) > 0,
		rootFilter: len(req.RootRequired) > 0 || len(req.RootForbidden) > 0,
		groupEmpty: map[int]bool{},
	}
	bySuffix := map[string]int{}
	for i := range req.Groups {
		g := &group{Group: &req.Groups[i], idx: i, granular: req.Groups[i].Suffix != ""}
		bySuffix[g.Suffix] = i
		g.classes = append([]state.ResourceAmount(nil), g.Resources...)
		if !g.granular {
			sort.SliceStable(g.classes, func(a, b int) bool {
				return classID(st, g.classes[a].Class) < classID(st, g.classes[b].Class)
			})
		}
		if g.InTree != "" {
			if p := st.Providers[g.InTree]; p == nil {
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
	for u := range st.TraitIndex[state.SharingTrait] {
		p := st.Providers[u]
		if p == nil {
			continue
		}
		s.sharingAll = append(s.sharingAll, p)
		if s.sharingByAgg == nil {
			s.sharingByAgg = map[string][]*state.Provider{}
		}
		for a := range p.Aggregates {
			s.sharingByAgg[a] = append(s.sharingByAgg[a], p)
		}
	}
	for _, list := range s.sharingByAgg {
		sortByID(list)
	}
	return s
}

func classID(st *state.Store, name string) int {
	if rc := st.Classes[name]; rc != nil {
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
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
}

// checkNames validates resource class and trait names in upstream's order
// (root_required, then each group: classes, member_of, traits) and reports
// whether the answer is empty before an unknown name would be reached.
func (s *search) checkNames() (empty bool, err error) {
	for _, t := range append(append([]string{}, s.req.RootRequired...), s.req.RootForbidden...) {
		if s.st.Traits[t] == nil {
			return false, &NameError{Name: t}
		}
	}
	if s.rootFilter && !s.anyRootPasses() {
		return true, nil
	}
	for i, g := range s.groups {
		for _, r := range g.Resources {
			if s.st.Classes[r.Class] == nil {
				return s.unreached(i, &NameError{Class: true, Name: r.Class})
			}
		}
		if len(g.MemberOf) > 0 && !s.anyInAggregates(g.MemberOf) {
			return true, nil
		}
		for _, anyOf := range g.Required {
			for _, t := range anyOf {
				if s.st.Traits[t] == nil {
					return s.unreached(i, &NameError{Name: t})
				}
			}
		}
		for _, t := range g.Forbidden {
			if s.st.Traits[t] == nil {
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
		if !p.Traits[t] {
			return false
		}
	}
	for _, t := range s.req.RootForbidden {
		if p.Traits[t] {
			return false
		}
	}
	return true
}

func (s *search) anyRootPasses() bool {
	for _, p := range s.st.ProvidersInOrder() {
		if p.ParentUUID == "" && s.rootPasses(p) {
			return true
		}
	}
	return false
}

// inAll reports whether set holds a key of every OR-group of groups.
func inAll(set map[string]bool, groups [][]string) bool {
	for _, anyOf := range groups {
		hit := false
		for _, k := range anyOf {
			if set[k] {
				hit = true
				break
			}
		}
		if !hit {
			return false
		}
	}
	return true
}

func hasAny(set map[string]bool, keys []string) bool {
	for _, k := range keys {
		if set[k] {
			return true
		}
	}
	return false
}

func (s *search) anyInAggregates(memberOf [][]string) bool {
	for _, a := range memberOf[0] {
		for u := range s.st.AggregateIndex[a] {
			if p := s.st.Providers[u]; p != nil && inAll(p.Aggregates, memberOf) {
				return true
			}
		}
	}
	return false
}

// anchorSource returns a function yielding, in ID order, the root
// providers that may anchor candidates for groups (and pass root_required),
// then nil. want is how many candidates are wanted (0: all). When a group
// has a selective constraint (a trait, an aggregate, in_tree), the roots
// can be derived from the providers meeting it through the indexes; that
// is done when it is cheaper than trying roots in order until enough
// candidates are found.
func (s *search) anchorSource(groups []*group, want int) func() *state.Provider {
	if seeds, ok := s.seedAnchors(groups, want); ok {
		i := 0
		return func() *state.Provider {
			for i < len(seeds) {
				p := seeds[i]
				i++
				if s.rootPasses(p) {
					return p
				}
			}
			return nil
		}
	}
	all := s.st.ProvidersInOrder()
	i := 0
	return func() *state.Provider {
		for i < len(all) {
			p := all[i]
			i++
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
	bestEst := -1
	var best func() []*state.Provider
	consider := func(est int, f func() []*state.Provider) {
		if bestEst < 0 || est < bestEst {
			bestEst, best = est, f
		}
	}
	fromIndex := func(index map[string]map[string]bool, keys []string) (int, func() []*state.Provider) {
		est := 0
		for _, k := range keys {
			est += len(index[k])
		}
		return est, func() []*state.Provider {
			var roots []*state.Provider
			done := map[string]bool{}
			for _, k := range keys {
				for u := range index[k] {
					roots = s.appendReachableRoots(roots, s.st.Providers[u], done)
				}
			}
			return roots
		}
	}
	for _, t := range s.req.RootRequired {
		idx := s.st.TraitIndex[t]
		consider(len(idx), func() []*state.Provider {
			var roots []*state.Provider
			for u := range idx {
				if p := s.st.Providers[u]; p != nil && p.ParentUUID == "" {
					roots = append(roots, p)
				}
			}
			return roots
		})
	}
	for _, g := range groups {
		if g.inTreeRoot != "" {
			root := s.st.Providers[g.inTreeRoot]
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
			consider(fromIndex(s.st.TraitIndex, anyOf))
		}
		for _, anyOf := range g.MemberOf {
			consider(fromIndex(s.st.AggregateIndex, anyOf))
		}
	}
	if best == nil {
		return nil, false
	}
	// Trying roots in order visits about want*N/est of them before enough
	// candidates turn up (all of them when everything is wanted).
	n := len(s.st.Providers)
	scan := n
	if want > 0 && bestEst > 0 && want*n/bestEst < scan {
		scan = want * n / bestEst
	}
	if bestEst*seedFactor >= scan {
		return nil, false
	}
	roots := best()
	sortByID(roots)
	out := roots[:0]
	for i, p := range roots {
		if i == 0 || p != roots[i-1] {
			out = append(out, p)
		}
	}
	return out, true
}

// appendReachableRoots appends the roots of the trees that can use p: its
// own, and for a sharing provider those of every provider sharing an
// aggregate with it (done records the aggregates already expanded).
func (s *search) appendReachableRoots(roots []*state.Provider, p *state.Provider, done map[string]bool) []*state.Provider {
	if p == nil {
		return roots
	}
	roots = append(roots, s.rootOf(p))
	if !p.Traits[state.SharingTrait] {
		return roots
	}
	for a := range p.Aggregates {
		if done[a] {
			continue
		}
		done[a] = true
		for q := range s.st.AggregateIndex[a] {
			if qp := s.st.Providers[q]; qp != nil {
				roots = append(roots, s.rootOf(qp))
			}
		}
	}
	return roots
}

func (s *search) rootOf(p *state.Provider) *state.Provider {
	if p.ParentUUID == "" {
		return p
	}
	return s.st.Providers[p.RootUUID]
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
	lay.needsShared = make([]bool, len(lay.levels))
	for i, lv := range lay.levels {
		for _, sp := range s.sharingAll {
			if lv.g.granular || len(lv.g.classes) == 0 {
				lay.needsShared[i] = lay.needsShared[i] || s.servesGranular(lv.g, sp)
			} else {
				r := lv.contrib[0]
				lay.needsShared[i] = lay.needsShared[i] || (lv.g.InTree == "" && sp.HasCapacity(r.Class, r.Amount))
			}
		}
	}
	return lay
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
}

// newIter lists the options of every level for anchor a, or returns nil
// when some level has none. Unless keep is set, the iterator uses the
// search's scratch buffers and is only valid until the next call.
func (s *search) newIter(lay *layout, a *state.Provider, keep bool) *anchorIter {
	sc := &s.sc
	sc.tree = s.appendTree(sc.tree[:0], a)
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
					if hasAny(p.Traits, anyOf) {
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
	if !keep {
		if cap(sc.choice) < n {
			sc.choice = make([]int, n)
		}
		sc.iter = anchorIter{s: s, lay: lay, anchor: a, opts: sc.opts[:n], choice: sc.choice[:n]}
		return &sc.iter
	}
	it := &anchorIter{s: s, lay: lay, anchor: a, opts: make([][]*state.Provider, n), choice: make([]int, n)}
	for i := range it.opts {
		it.opts[i] = append([]*state.Provider(nil), sc.opts[i]...)
	}
	return it
}

// appendTree appends a's tree, in ID order, to buf.
func (s *search) appendTree(buf []*state.Provider, a *state.Provider) []*state.Provider {
	buf = append(buf, a)
	if len(s.st.Children[a.UUID]) == 0 {
		return buf
	}
	start := len(buf) - 1
	for i := start; i < len(buf); i++ {
		for u := range s.st.Children[buf[i].UUID] {
			buf = append(buf, s.st.Providers[u])
		}
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
	out := sc.shared[:0]
	for _, p := range sc.tree {
		for agg := range p.Aggregates {
			for _, sp := range s.sharingByAgg[agg] {
				if sp.RootUUID != a.UUID && !containsProvider(out, sp) {
					out = append(out, sp)
				}
			}
		}
	}
	sortByID(out)
	sc.shared = out
	return out
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
	return inAll(p.Traits, g.Required) && !hasAny(p.Traits, g.Forbidden) &&
		inAll(p.Aggregates, g.MemberOf) && !hasAny(p.Aggregates, g.ForbiddenAggs)
}

// appendClass appends to out the providers that can give class r to the
// unsuffixed group g anchored at a, in ID order: providers of a's tree
// (when in_tree allows it), then sharing providers (unless in_tree is
// given). As upstream, an aggregate on the root counts for its whole tree,
// while a sharing provider must itself be in the aggregates.
func (s *search) appendClass(out []*state.Provider, g *group, r state.ResourceAmount, a *state.Provider, tree, shared []*state.Provider) []*state.Provider {
	if hasAny(a.Aggregates, g.ForbiddenAggs) {
		return out
	}
	anchorIn := len(g.MemberOf) > 0 && inAll(a.Aggregates, g.MemberOf)
	ok := func(p *state.Provider, inTree bool) bool {
		if !p.HasCapacity(r.Class, r.Amount) || hasAny(p.Traits, g.Forbidden) || hasAny(p.Aggregates, g.ForbiddenAggs) {
			return false
		}
		if len(g.MemberOf) == 0 || inAll(p.Aggregates, g.MemberOf) {
			return true
		}
		return inTree && anchorIn
	}
	useTree := g.InTree == "" || g.inTreeRoot == a.UUID
	useShared := g.InTree == ""
	i, j := 0, 0
	for (useTree && i < len(tree)) || (useShared && j < len(shared)) {
		if useShared && j < len(shared) && (!useTree || i >= len(tree) || shared[j].ID < tree[i].ID) {
			if ok(shared[j], false) {
				out = append(out, shared[j])
			}
			j++
			continue
		}
		if ok(tree[i], true) {
			out = append(out, tree[i])
		}
		i++
	}
	return out
}

func (it *anchorIter) at(level int) *state.Provider { return it.opts[level][it.choice[level]] }

// next advances to the next valid combination; false when there is none.
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
		d := it.depth
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
			inv := p.Inventories[r.Class]
			if p.Usages[r.Class]+total > inv.Capacity() || total > inv.MaxUnit {
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
				hit = hasAny(it.at(e).Traits, anyOf)
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
		p = s.st.Providers[p.ParentUUID]
	}
	return false
}

// snapshot copies the current combination: one provider per level. The
// copies are cut from a shared slab to spare an allocation per candidate.
func (it *anchorIter) snapshot() []*state.Provider {
	n := len(it.choice)
	s := it.s
	if len(s.slab) < n {
		s.slab = make([]*state.Provider, n*256)
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
	ps := s.st.ProvidersInOrder()
	if g.inTreeRoot != "" {
		ps = s.treeOf(s.st.Providers[g.inTreeRoot])
	}
	for _, p := range ps {
		if p.HasCapacity(r.Class, r.Amount) {
			return true
		}
	}
	return false
}

// run generates the candidates and their summaries.
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
	next := s.anchorSource(s.groups, want)

	var all [][]*state.Provider
	generated := 0
	var seen map[string]bool
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
		}
		if s.opt.MaxCandidates > 0 && generated >= s.opt.MaxCandidates {
			return true
		}
		return lazy && limit > 0 && len(all) >= limit
	}
	if s.opt.Strategy == BreadthFirst {
		var active []*anchorIter
		done := false
		for a := next(); a != nil && !done; a = next() {
			it := s.newIter(lay, a, true)
			if it == nil || !it.next() {
				continue
			}
			done = emit(it.snapshot())
			active = append(active, it)
		}
		for len(active) > 0 && !done {
			kept := active[:0]
			for _, it := range active {
				if done {
					break
				}
				if it.next() {
					done = emit(it.snapshot())
					kept = append(kept, it)
				}
			}
			active = kept
		}
	} else {
	anchors:
		for a := next(); a != nil; a = next() {
			it := s.newIter(lay, a, false)
			if it == nil {
				continue
			}
			for it.next() {
				if emit(it.snapshot()) {
					break anchors
				}
			}
		}
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
	res := &Result{Candidates: make([]Candidate, len(chosen))}
	for i, c := range chosen {
		res.Candidates[i] = lay.candidate(c)
	}
	res.Summaries = s.summaries(lay, chosen, all, limited, excludeNested)
	return res
}

// sharingKey identifies a combination of sharing providers only.
func sharingKey(c []*state.Provider) (string, bool) {
	var b strings.Builder
	for _, p := range c {
		if !p.Traits[state.SharingTrait] {
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

// candidate turns a combination into an allocation request: amounts of a
// class from a provider summed over groups, providers in first-use order.
func (lay *layout) candidate(c []*state.Provider) Candidate {
	var out Candidate
	for i, p := range c {
		for _, r := range lay.levels[i].contrib {
			k := -1
			for j := range out.Allocations {
				if out.Allocations[j].Provider == p.UUID {
					k = j
					break
				}
			}
			if k < 0 {
				k = len(out.Allocations)
				out.Allocations = append(out.Allocations, Allocation{Provider: p.UUID})
			}
			a := &out.Allocations[k]
			found := false
			for j := range a.Resources {
				if a.Resources[j].Class == r.Class {
					a.Resources[j].Amount += r.Amount
					found = true
				}
			}
			if !found {
				a.Resources = append(a.Resources, r)
			}
		}
	}
	for _, g := range lay.groups {
		m := Mapping{Suffix: g.Suffix}
		for i := lay.first[g.idx]; i < len(c) && lay.levels[i].g == g; i++ {
			if !containsString(m.Providers, c[i].UUID) {
				m.Providers = append(m.Providers, c[i].UUID)
			}
		}
		out.Mappings = append(out.Mappings, m)
	}
	return out
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
	roots := map[string]bool{}
	for _, c := range chosen {
		for i, p := range c {
			if lay.levels[i].resourceful() {
				roots[p.RootUUID] = true
			}
		}
	}
	var provs []*state.Provider
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
		for u := range roots {
			if root := s.st.Providers[u]; root != nil {
				provs = append(provs, s.treeOf(root)...)
			}
		}
	}
	sortByID(provs)
	out := make([]Summary, len(provs))
	for i, p := range provs {
		sum := Summary{UUID: p.UUID, ParentUUID: p.ParentUUID, RootUUID: p.RootUUID, Traits: s.st.TraitsInIDOrder(p)}
		for _, class := range state.SortedKeys(p.Inventories) {
			sum.Resources = append(sum.Resources, SummaryResource{
				Class: class, Capacity: p.Inventories[class].Capacity(), Used: p.Usages[class],
			})
		}
		out[i] = sum
	}
	return out
}
