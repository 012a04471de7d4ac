package candidates_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
)

// deviceHost makes the tree of the reported explosion: a root without
// inventory and n children with one unit of class each.
func deviceHost(t testing.TB, b *builder, root string, n int, class string) {
	b.provider(root, "")
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("%s-dev%d", root, i)
		b.provider(name, root)
		b.inv(name, class, 1)
	}
}

func unitGroups(n int, class string) []candidates.Group {
	var gs []candidates.Group
	for i := 0; i < n; i++ {
		gs = append(gs, candidates.Group{Suffix: fmt.Sprint(i + 1), Resources: res(class, 1)})
	}
	return gs
}

// The reported requests: 13 isolated groups cannot land on 12 devices. The
// search answers an empty list after a handful of steps (the whole walk
// would try 12! arrangements before finding out). Without isolation, the
// devices' capacity (one unit each) makes the same request unsatisfiable,
// and the capacity bound sees it as early.
func TestUnsatisfiableIsCheap(t *testing.T) {
	b := newBuilder(t)
	deviceHost(t, b, "cn", 12, "VCPU")
	for _, isolate := range []bool{true, false} {
		req := &candidates.Request{Groups: unitGroups(13, "VCPU"), Isolate: isolate, NestedAware: true, Limit: 1}
		r := search(t, b.st, req, candidates.Options{MaxCandidates: 1000})
		if len(r.Candidates) != 0 {
			t.Fatalf("isolate=%v: %d candidates", isolate, len(r.Candidates))
		}
		if r.Steps > 1000 {
			t.Errorf("isolate=%v: %d steps for an unsatisfiable request", isolate, r.Steps)
		}
	}
	// 12 groups fit exactly: the first candidate comes without backtracking.
	r := search(t, b.st, &candidates.Request{Groups: unitGroups(12, "VCPU"), Isolate: true, NestedAware: true, Limit: 1}, candidates.Options{})
	if len(r.Candidates) != 1 || r.Steps > 1000 {
		t.Errorf("12 groups: %d candidates in %d steps", len(r.Candidates), r.Steps)
	}
}

// 8 of 12 devices, isolated, no limit: the default cap of the service
// bounds what is built, and the first thousand cost steps in proportion.
func TestEightOfTwelveBounded(t *testing.T) {
	b := newBuilder(t)
	deviceHost(t, b, "cn", 12, "VCPU")
	req := &candidates.Request{Groups: unitGroups(8, "VCPU"), Isolate: true, NestedAware: true}
	r := search(t, b.st, req, candidates.Options{MaxCandidates: 10000})
	if len(r.Candidates) != 10000 {
		t.Fatalf("%d candidates, want the cap", len(r.Candidates))
	}
	if r.Steps > 30*10000 {
		t.Errorf("%d steps for 10000 candidates", r.Steps)
	}
	req.Limit = 1000
	r = search(t, b.st, req, candidates.Options{})
	if len(r.Candidates) != 1000 || r.Steps > 30*1000 {
		t.Errorf("limit 1000: %d candidates in %d steps", len(r.Candidates), r.Steps)
	}
}

// Upstream's case: 8 PCI devices, 8 isolated groups: all 8! candidates,
// each found in a bounded number of steps (the walk tries every device
// at every level: about 15 tries a candidate).
func TestEightPCIEightGroups(t *testing.T) {
	b := newBuilder(t)
	deviceHost(t, b, "cn", 8, "CUSTOM_PCI")
	req := &candidates.Request{Groups: unitGroups(8, "CUSTOM_PCI"), Isolate: true, NestedAware: true}
	r := search(t, b.st, req, candidates.Options{})
	if len(r.Candidates) != 40320 {
		t.Fatalf("%d candidates, want 8! = 40320", len(r.Candidates))
	}
	if r.Steps > 20*40320 {
		t.Errorf("%d steps", r.Steps)
	}
}

// same_subtree: five devices cannot sit under one NUMA node that has four.
// Pruning sees it once the NUMA node is chosen, not after every
// arrangement of the devices.
func TestSameSubtreePruned(t *testing.T) {
	b := newBuilder(t)
	b.provider("cn", "")
	for n := 0; n < 2; n++ {
		numa := fmt.Sprintf("numa%d", n)
		b.provider(numa, "cn")
		b.traits(numa, "HW_NUMA_ROOT")
		for i := 0; i < 4; i++ {
			dev := fmt.Sprintf("%s-pci%d", numa, i)
			b.provider(dev, numa)
			b.inv(dev, "CUSTOM_PCI", 1)
		}
	}
	for _, isolate := range []bool{true, false} {
		groups := []candidates.Group{{Suffix: "_NUMA", Required: [][]string{{"HW_NUMA_ROOT"}}}}
		subtree := []string{"_NUMA"}
		for i := 1; i <= 5; i++ {
			groups = append(groups, candidates.Group{Suffix: fmt.Sprint(i), Resources: res("CUSTOM_PCI", 1)})
			subtree = append(subtree, fmt.Sprint(i))
		}
		req := &candidates.Request{Groups: groups, Isolate: isolate, NestedAware: true, SameSubtrees: [][]string{subtree}}
		r := search(t, b.st, req, candidates.Options{})
		undo := candidates.SetPruning(false)
		whole := search(t, b.st, req, candidates.Options{})
		undo()
		if !reflect.DeepEqual(r.Candidates, whole.Candidates) {
			t.Fatalf("isolate=%v: pruned %d candidates, whole walk %d", isolate, len(r.Candidates), len(whole.Candidates))
		}
		if isolate && len(r.Candidates) != 0 {
			t.Fatalf("five isolated devices under a four-device NUMA node: %d candidates", len(r.Candidates))
		}
		if isolate && r.Steps*10 > whole.Steps {
			t.Errorf("isolate: %d steps pruned, %d whole", r.Steps, whole.Steps)
		}
	}
}

// deviceForest builds random hosts shaped like those with devices: roots
// with NUMA children and device grandchildren (or devices directly), a few
// classes with small totals and some usage, a trait on NUMA nodes, and now
// and then a sharing provider.
func deviceForest(t testing.TB, r *rand.Rand) *builder {
	b := newBuilder(t)
	classes := []string{"CUSTOM_PCI", "SRIOV_NET_VF", "VCPU"}
	b.class("CUSTOM_PCI")
	b.trait("CUSTOM_NUMA")
	device := func(name, parent string) {
		b.provider(name, parent)
		c := classes[r.IntN(len(classes))]
		total := int64(1 + r.IntN(3))
		b.inv(name, c, total)
		if r.IntN(4) == 0 {
			b.use(name, c, int64(r.IntN(int(total))))
		}
	}
	for h := 1 + r.IntN(2); h > 0; h-- {
		root := fmt.Sprintf("cn%d", h)
		b.provider(root, "")
		if r.IntN(2) == 0 {
			b.inv(root, "VCPU", int64(1+r.IntN(4)))
		}
		b.aggs(root, "agg")
		if r.IntN(2) == 0 {
			for n := 1 + r.IntN(3); n > 0; n-- {
				numa := fmt.Sprintf("%s-numa%d", root, n)
				b.provider(numa, root)
				b.traits(numa, "CUSTOM_NUMA")
				for d := r.IntN(4); d > 0; d-- {
					device(fmt.Sprintf("%s-dev%d", numa, d), numa)
				}
			}
		} else {
			for d := 1 + r.IntN(6); d > 0; d-- {
				device(fmt.Sprintf("%s-dev%d", root, d), root)
			}
		}
	}
	if r.IntN(4) == 0 {
		b.provider("share", "")
		b.inv("share", "SRIOV_NET_VF", int64(1+r.IntN(3)))
		b.traits("share", state.SharingTrait)
		b.aggs("share", "agg")
	}
	return b
}

// deviceRequest asks for several devices, one granular group each, with
// isolate, same_subtree (and its resourceless NUMA group) now and then.
func deviceRequest(r *rand.Rand, maxGroups int) *candidates.Request {
	classes := []string{"CUSTOM_PCI", "SRIOV_NET_VF", "VCPU"}
	req := &candidates.Request{NestedAware: true, Isolate: r.IntN(3) != 0}
	if r.IntN(3) == 0 {
		req.Groups = append(req.Groups, candidates.Group{Resources: res(classes[r.IntN(3)], 1)})
	}
	var suffixes []string
	for i := 2 + r.IntN(maxGroups-1); i > 0; i-- {
		g := candidates.Group{Suffix: fmt.Sprint(len(req.Groups) + 1), Resources: res(classes[r.IntN(3)], 1+r.IntN(2)/2)}
		if r.IntN(5) == 0 {
			g.Resources = append(g.Resources, res(classes[r.IntN(3)], 1)...)
			if g.Resources[0].Class == g.Resources[1].Class {
				g.Resources = g.Resources[:1]
			}
		}
		req.Groups = append(req.Groups, g)
		suffixes = append(suffixes, g.Suffix)
	}
	if r.IntN(3) == 0 {
		set := []string{"_NUMA"}
		req.Groups = append(req.Groups, candidates.Group{Suffix: "_NUMA", Required: [][]string{{"CUSTOM_NUMA"}}})
		for _, s := range suffixes {
			if r.IntN(2) == 0 {
				set = append(set, s)
			}
		}
		req.SameSubtrees = append(req.SameSubtrees, set)
	} else if r.IntN(4) == 0 && len(suffixes) > 2 {
		req.SameSubtrees = append(req.SameSubtrees, suffixes[:2+r.IntN(len(suffixes)-2)])
	}
	return req
}

// renderOrdered writes candidates and summaries in their order.
func renderOrdered(res *candidates.Result, names map[string]string) string {
	var b strings.Builder
	for _, c := range res.Candidates {
		b.WriteString(render(c, names))
		b.WriteByte('\n')
	}
	for _, s := range res.Summaries {
		b.WriteString(renderSummary(s, names))
		b.WriteByte('\n')
	}
	return b.String()
}

// Pruning only drops branches without candidates: on requests for many
// devices (where it works hardest), the pruned search answers exactly
// what the whole walk answers, in the same order, in both strategies and
// under a limit; on the small ones, what upstream's algorithm answers.
func TestPruningKeepsAnswers(t *testing.T) {
	iterations := 1500
	if testing.Short() {
		iterations = 200
	}
	pruned, checked := 0, 0
	for seed := 0; seed < iterations; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		b := deviceForest(t, r)
		req := deviceRequest(r, 7)
		nm := b.names()
		for _, opt := range []candidates.Options{{}, {Strategy: candidates.BreadthFirst}, {MaxCandidates: 1 + r.IntN(20)}} {
			got := search(t, b.st, req, opt)
			undo := candidates.SetPruning(false)
			whole := search(t, b.st, req, opt)
			undo()
			if g, w := renderOrdered(got, nm), renderOrdered(whole, nm); g != w {
				t.Fatalf("seed %d %+v: request\n%sforest\n%spruned\n%s\nwhole walk\n%s", seed, opt, describe(req, nm), dumpForest(b.st), g, w)
			}
			if got.Steps < whole.Steps {
				pruned++
			}
			lreq := *req
			lreq.Limit = 1 + r.IntN(5)
			got = search(t, b.st, &lreq, opt)
			undo = candidates.SetPruning(false)
			whole = search(t, b.st, &lreq, opt)
			undo()
			if g, w := renderOrdered(got, nm), renderOrdered(whole, nm); g != w {
				t.Fatalf("seed %d %+v limit %d: pruned\n%s\nwhole walk\n%s", seed, opt, lreq.Limit, g, w)
			}
		}
		if len(req.Groups) <= 5 && b.st.Providers.Len() <= 12 {
			checked++
			wantC, wantS := bruteForce(b.st, req)
			got := search(t, b.st, req, candidates.Options{})
			if !reflect.DeepEqual(renderAll(got.Candidates, nm), renderAll(wantC, nm)) ||
				!reflect.DeepEqual(renderSummaries(got.Summaries, nm), renderSummaries(wantS, nm)) {
				t.Fatalf("seed %d: differs from upstream's algorithm: request\n%sforest\n%s", seed, describe(req, nm), dumpForest(b.st))
			}
		}
	}
	if pruned < iterations/10 || checked < iterations/10 {
		t.Fatalf("pruning cut work in %d cases, brute force checked %d, of %d: the generator misses the point", pruned, checked, iterations)
	}
	t.Logf("pruning cut work in %d searches; %d cases checked against brute force", pruned, checked)
}

// countdownCtx is a context whose Err turns to Canceled after a number of
// looks: a client going away in the middle of a search, deterministically.
type countdownCtx struct {
	context.Context
	looks atomic.Int64
}

func (c *countdownCtx) Err() error {
	if c.looks.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// packingRequest is a request that no pruning bound sees as unsatisfiable
// (a bin packing: 6 pieces of 4 and 13 of 3 on 12 providers with 6 each,
// where a 4 leaves no room for a 3): the walk would try millions of
// arrangements. It stands for any search too long to finish.
func packingRequest(t testing.TB) (*builder, *candidates.Request) {
	b := newBuilder(t)
	b.provider("cn", "")
	for i := 0; i < 12; i++ {
		name := fmt.Sprintf("bin%d", i)
		b.provider(name, "cn")
		b.inv(name, "VCPU", 6)
	}
	req := &candidates.Request{NestedAware: true, Limit: 1}
	for i := 0; i < 19; i++ {
		amount := 3
		if i < 6 {
			amount = 4
		}
		req.Groups = append(req.Groups, candidates.Group{Suffix: fmt.Sprint(i + 1), Resources: res("VCPU", amount)})
	}
	return b, req
}

// A cancelled context stops the search at its next look, with the
// context's error; so does a deadline.
func TestSearchStopsWhenCancelled(t *testing.T) {
	b, req := packingRequest(t)
	ctx := &countdownCtx{Context: context.Background()}
	ctx.looks.Store(20)
	_, err := candidates.Search(ctx, b.st, req, candidates.Options{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	dead, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	if _, err := candidates.Search(dead, b.st, req, candidates.Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("error %v, want context.DeadlineExceeded", err)
	}
}

// A long search lets other goroutines run at every look at its context
// but the first (at least once every CheckEvery steps), so that on a
// small machine it does not hold a processor for the scheduler's whole
// time slice; a search shorter than that never yields.
func TestLongSearchYields(t *testing.T) {
	var yields atomic.Int64
	defer candidates.OnYield(func() { yields.Add(1) })()
	b, req := packingRequest(t)
	ctx := &countdownCtx{Context: context.Background()}
	const looks = 50
	ctx.looks.Store(looks)
	if _, err := candidates.Search(ctx, b.st, req, candidates.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if n := yields.Load(); n != looks {
		t.Fatalf("%d yields in %d looks at the context after the first", n, looks)
	}
	yields.Store(0)
	r := search(t, b.st, &candidates.Request{NestedAware: true, Groups: []candidates.Group{{Resources: res("VCPU", 1)}}}, candidates.Options{})
	if len(r.Candidates) == 0 || r.Steps >= candidates.CheckEvery {
		t.Fatalf("%d candidates in %d steps: not a short search", len(r.Candidates), r.Steps)
	}
	if n := yields.Load(); n != 0 {
		t.Fatalf("a search of %d steps yielded %d times", r.Steps, n)
	}
}

// The memory bound stops a search whose answer would be too large.
func TestMemoryBound(t *testing.T) {
	b := newBuilder(t)
	deviceHost(t, b, "cn", 12, "VCPU")
	req := &candidates.Request{Groups: unitGroups(8, "VCPU"), Isolate: true, NestedAware: true}
	_, err := candidates.Search(context.Background(), b.st, req, candidates.Options{MaxCandidates: 10000, MaxBytes: 1 << 20})
	var le *candidates.LimitError
	if !errors.As(err, &le) || le.MaxBytes != 1<<20 {
		t.Fatalf("error %v, want a LimitError of 1 MiB", err)
	}
	if r := search(t, b.st, req, candidates.Options{MaxCandidates: 10000, MaxBytes: 64 << 20}); len(r.Candidates) != 10000 {
		t.Fatalf("%d candidates within 64 MiB", len(r.Candidates))
	}
}

// testBudget is a candidates.Budget of a fixed size that records its
// largest use.
type testBudget struct {
	size, used, peak int64
}

func (b *testBudget) TryTake(n int64) bool {
	if b.used+n > b.size {
		return false
	}
	b.used += n
	b.peak = max(b.peak, b.used)
	return true
}

func (b *testBudget) Give(n int64) {
	b.used -= n
	if b.used < 0 {
		panic("more given back than taken")
	}
}

// A search takes its memory from the budget it shares with the searches
// beside it as it grows: when the budget runs out it stops with ErrBusy
// and gives everything back (the caller's first share too); when it
// succeeds, what it took covers its estimate and is the caller's to give
// back.
func TestSharedBudget(t *testing.T) {
	b := newBuilder(t)
	deviceHost(t, b, "cn", 12, "VCPU")
	req := &candidates.Request{Groups: unitGroups(8, "VCPU"), Isolate: true, NestedAware: true}
	opt := candidates.Options{MaxCandidates: 10000, MaxBytes: 64 << 20}

	// Others hold all but 2 MiB of a 16 MiB budget: the search (about
	// 32 MiB alone) stops, and gives back its first share as well.
	shared := &testBudget{size: 16 << 20, used: 14 << 20}
	shared.used += candidates.BudgetChunk
	opt.Budget, opt.Taken = shared, candidates.BudgetChunk
	if _, err := candidates.Search(context.Background(), b.st, req, opt); !errors.Is(err, candidates.ErrBusy) {
		t.Fatalf("error %v, want ErrBusy", err)
	}
	if shared.used != 14<<20 || shared.peak != 16<<20 {
		t.Fatalf("after the busy search: %d bytes in use (want the others' %d), peak %d (want the whole budget)",
			shared.used, 14<<20, shared.peak)
	}

	// Alone in a budget as large as its bound, it succeeds and hands over
	// what it took: at least its estimate, within a chunk of it.
	shared = &testBudget{size: 64 << 20}
	opt.Budget, opt.Taken = shared, 0
	r := search(t, b.st, req, opt)
	estimate := int64(len(r.Candidates) * 8 * candidates.CellBytes)
	if len(r.Candidates) != 10000 || r.Taken != shared.used || r.Taken < estimate || r.Taken > estimate+candidates.BudgetChunk {
		t.Fatalf("%d candidates: took %d bytes, %d in use, estimate %d", len(r.Candidates), r.Taken, shared.used, estimate)
	}

	// A budget smaller than the search's own bound: the bound is the
	// caller's to lower (httpapi does); an empty answer takes nothing.
	shared = &testBudget{size: 1 << 20}
	opt.Budget = shared
	empty := &candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1000)}}, NestedAware: true}
	if r := search(t, b.st, empty, opt); len(r.Candidates) != 0 || r.Taken != 0 || shared.used != 0 {
		t.Fatalf("an empty answer: %d candidates, took %d, %d in use", len(r.Candidates), r.Taken, shared.used)
	}
}

// The estimate the memory bound counts with covers what the search
// allocates for its answer, with 150 bytes a level left for the JSON body
// (httpapi checks that it fits).
func TestMemoryEstimate(t *testing.T) {
	b := newBuilder(t)
	deviceHost(t, b, "cn", 12, "VCPU")
	req := &candidates.Request{Groups: unitGroups(8, "VCPU"), Isolate: true, NestedAware: true, Limit: 10000}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := search(t, b.st, req, candidates.Options{})
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	cells := uint64(len(r.Candidates) * 8)
	t.Logf("%d bytes allocated for %d candidate levels: %d per level", allocated, cells, allocated/cells)
	if allocated > cells*(candidates.CellBytes-150) {
		t.Errorf("%d bytes per level, more than the estimate of %d", allocated/cells, candidates.CellBytes)
	}
}
