package candidates_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
)

var (
	propClasses = []string{"VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_GPU"}
	propTraits  = []string{"CUSTOM_T1", "CUSTOM_T2", "CUSTOM_T3"}
	propAggs    = []string{"agg-a", "agg-b", "agg-c"}
)

// randomForest builds a few provider trees with random nesting,
// inventories, partial usage, traits, aggregates and sharing providers.
func randomForest(t testing.TB, r *rand.Rand) (*builder, []string) {
	b := newBuilder(t)
	for _, tr := range propTraits {
		b.trait(tr)
	}
	b.class("CUSTOM_GPU")
	var names []string
	n := 0
	var add func(parent string, depth int)
	add = func(parent string, depth int) {
		name := fmt.Sprintf("rp%d", n)
		n++
		b.provider(name, parent)
		names = append(names, name)
		for _, c := range propClasses {
			if r.IntN(3) == 0 {
				total := int64(1 + r.IntN(8))
				inv := func(i *state.Inventory) {
					i.Reserved = int64(r.IntN(2))
					i.MaxUnit = int64(1 + r.IntN(int(total)))
					if r.IntN(4) == 0 {
						i.MinUnit = 2
					}
					if r.IntN(5) == 0 {
						i.StepSize = 2
					}
					if r.IntN(3) == 0 {
						i.AllocationRatio = 1.5
					}
				}
				b.inv(name, c, total, inv)
				if r.IntN(3) == 0 {
					b.use(name, c, int64(r.IntN(int(total))))
				}
			}
		}
		for _, tr := range propTraits {
			if r.IntN(4) == 0 {
				b.traits(name, tr)
			}
		}
		for _, a := range propAggs {
			if r.IntN(3) == 0 {
				b.aggs(name, a)
			}
		}
		if r.IntN(4) == 0 {
			b.traits(name, state.SharingTrait)
		}
		if depth < 2 {
			for k := r.IntN(3); k > 0; k-- {
				add(name, depth+1)
			}
		}
	}
	roots := 1 + r.IntN(5)
	for i := 0; i < roots; i++ {
		add("", 0)
	}
	return b, names
}

func randomRequest(r *rand.Rand, names []string, b *builder) *candidates.Request {
	req := &candidates.Request{NestedAware: r.IntN(5) != 0, Isolate: r.IntN(2) == 0}
	pick := func(list []string, max int) []string {
		var out []string
		for _, x := range list {
			if len(out) < max && r.IntN(3) == 0 {
				out = append(out, x)
			}
		}
		return out
	}
	resources := func(min int) []state.ResourceAmount {
		var out []state.ResourceAmount
		for _, c := range propClasses {
			if r.IntN(3) == 0 {
				out = append(out, state.ResourceAmount{Class: c, Amount: int64(1 + r.IntN(3))})
			}
		}
		for len(out) < min {
			out = append(out, state.ResourceAmount{Class: propClasses[r.IntN(len(propClasses))], Amount: int64(1 + r.IntN(2))})
			if len(out) == 2 && out[0].Class == out[1].Class {
				out = out[:1]
			}
		}
		return out
	}
	filters := func(g *candidates.Group) {
		if r.IntN(3) == 0 {
			if anyOf := pick(propTraits, 2); len(anyOf) > 0 {
				g.Required = append(g.Required, anyOf)
			}
		}
		if r.IntN(4) == 0 {
			g.Forbidden = pick(propTraits, 1)
		}
		if r.IntN(4) == 0 {
			if anyOf := pick(propAggs, 2); len(anyOf) > 0 {
				g.MemberOf = append(g.MemberOf, anyOf)
			}
		}
		if r.IntN(6) == 0 {
			g.ForbiddenAggs = pick(propAggs, 1)
		}
		if r.IntN(8) == 0 {
			g.InTree = uuidOf(names[r.IntN(len(names))])
		}
	}
	if r.IntN(4) != 0 {
		g := candidates.Group{Resources: resources(1)}
		filters(&g)
		req.Groups = append(req.Groups, g)
	}
	var suffixes []string
	for i := r.IntN(4); i > 0 || len(req.Groups) == 0; i-- {
		g := candidates.Group{Suffix: fmt.Sprintf("_G%d", len(req.Groups))}
		min := 1
		if r.IntN(4) == 0 {
			min = 0
		}
		g.Resources = resources(min)
		if len(g.Resources) > 2 {
			g.Resources = g.Resources[:2]
		}
		filters(&g)
		req.Groups = append(req.Groups, g)
		suffixes = append(suffixes, g.Suffix)
	}
	if len(suffixes) > 1 && r.IntN(3) == 0 {
		req.SameSubtrees = append(req.SameSubtrees, pick(suffixes, 3))
	}
	if r.IntN(6) == 0 {
		req.RootRequired = pick(propTraits, 1)
	}
	if r.IntN(6) == 0 {
		req.RootForbidden = pick(propTraits, 1)
	}
	// Let some requests name unknown things, as clients do.
	_ = b
	return req
}

func describe(req *candidates.Request, names map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "isolate=%v nested=%v root=%v!%v same=%v\n", req.Isolate, req.NestedAware, req.RootRequired, req.RootForbidden, req.SameSubtrees)
	for _, g := range req.Groups {
		fmt.Fprintf(&b, "  %q res=%v req=%v forb=%v member=%v !member=%v in_tree=%s\n",
			g.Suffix, g.Resources, g.Required, g.Forbidden, g.MemberOf, g.ForbiddenAggs, names[g.InTree])
	}
	return b.String()
}

func dumpForest(st *state.Store) string {
	var b strings.Builder
	for p := range st.ProvidersInOrder() {
		fmt.Fprintf(&b, "  %s parent=%s traits=%v aggs=%v", p.Name, p.ParentUUID, state.SortedKeys(p.Traits), state.SortedKeys(p.Aggregates))
		for _, c := range state.SortedKeys(p.Inventories) {
			inv := p.Inventories[c]
			fmt.Fprintf(&b, " %s{t=%d r=%d min=%d max=%d step=%d ratio=%g used=%d}", c, inv.Total, inv.Reserved, inv.MinUnit, inv.MaxUnit, inv.StepSize, inv.AllocationRatio, p.Usages[c])
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// TestSearchMatchesBruteForce compares the indexed search with the brute
// force transcription of upstream on random forests and requests.
func TestSearchMatchesBruteForce(t *testing.T) {
	t.Run("scan", func(t *testing.T) { checkAgainstBruteForce(t) })
	// Tiny forests never make seeding worth it: force it.
	t.Run("seeded", func(t *testing.T) {
		defer candidates.SetSeedFactor(0)()
		checkAgainstBruteForce(t)
	})
}

func checkAgainstBruteForce(t *testing.T) {
	iterations := 3000
	if testing.Short() {
		iterations = 300
	}
	nonEmpty := 0
	for seed := 0; seed < iterations; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		b, names := randomForest(t, r)
		st := b.st
		req := randomRequest(r, names, b)
		nm := b.names()

		wantC, wantS := bruteForce(st, req)
		got, err := candidates.Search(context.Background(), st, req, candidates.Options{})
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		gotC, gotS := renderAll(got.Candidates, nm), renderSummaries(got.Summaries, nm)
		wc, ws := renderAll(wantC, nm), renderSummaries(wantS, nm)
		if !reflect.DeepEqual(gotC, wc) || !reflect.DeepEqual(gotS, ws) {
			t.Fatalf("seed %d: request\n%sforest\n%scandidates got\n  %s\nwant\n  %s\nsummaries got\n  %s\nwant\n  %s",
				seed, describe(req, nm), dumpForest(st),
				strings.Join(gotC, "\n  "), strings.Join(wc, "\n  "),
				strings.Join(gotS, "\n  "), strings.Join(ws, "\n  "))
		}
		if len(gotC) > 0 {
			nonEmpty++
		}

		// Breadth-first generates the same set.
		bf, _ := candidates.Search(context.Background(), st, req, candidates.Options{Strategy: candidates.BreadthFirst})
		if !reflect.DeepEqual(renderAll(bf.Candidates, nm), gotC) {
			t.Fatalf("seed %d: breadth-first differs", seed)
		}
		// A limit returns a prefix of the unlimited answer, with the
		// summaries of the trees it uses.
		if len(got.Candidates) > 1 {
			lreq := *req
			lreq.Limit = 1 + r.IntN(len(got.Candidates)-1)
			lim, _ := candidates.Search(context.Background(), st, &lreq, candidates.Options{})
			if len(lim.Candidates) != lreq.Limit {
				t.Fatalf("seed %d: limit %d gave %d", seed, lreq.Limit, len(lim.Candidates))
			}
			for i := range lim.Candidates {
				if render(lim.Candidates[i], nm) != render(got.Candidates[i], nm) {
					t.Fatalf("seed %d: limited answer is not a prefix", seed)
				}
			}
			// And max_allocation_candidates bounds what is generated.
			mx, _ := candidates.Search(context.Background(), st, req, candidates.Options{MaxCandidates: lreq.Limit})
			if len(mx.Candidates) > lreq.Limit {
				t.Fatalf("seed %d: max %d gave %d", seed, lreq.Limit, len(mx.Candidates))
			}
		}
	}
	if nonEmpty < iterations/10 {
		t.Fatalf("only %d of %d random cases had candidates: the generator is too strict", nonEmpty, iterations)
	}
	t.Logf("%d of %d cases had candidates", nonEmpty, iterations)
}
