package candidates

import (
	"cmp"
	"context"
	"runtime"
	"slices"
	"sort"
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
	// held estimates the bytes the answer being built holds (see hold);
	// taken is what the search took from Options.Budget for it (at
	// least held: held may go back down, taken does not).
	held, taken int64
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
	if b := s.opt.Budget; b != nil && s.held > s.taken && s.err == nil {
		chunk := max(s.held-s.taken, BudgetChunk)
		if m := s.opt.MaxBytes; m > 0 {
			chunk = min(chunk, m-s.taken) // held <= m: still enough
		}
		if !b.TryTake(chunk) {
			s.err = ErrBusy
		} else {
			s.taken += chunk
		}
	}
	return s.err == nil
}

// giveBack ends a search that returns no result: its memory goes back to
// the next searches and what it took to Options.Budget.
func (s *search) giveBack() {
	s.mem.release()
	if s.taken > 0 {
		s.opt.Budget.Give(s.taken)
		s.taken = 0
	}
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
		taken:      opt.Taken,
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
