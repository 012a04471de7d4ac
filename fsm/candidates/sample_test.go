package candidates_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
)

// sampleForest is a small cloud whose roots anchor different numbers of
// candidates for VCPU:1,DISK_GB:1 (0 to 4: own disk or a sharing one,
// VCPU on the root or a child, a full host, sharing providers anchoring
// none) and for two isolated CUSTOM_PCI:1 groups (2, 6 and 12 ordered
// pairs on hosts of 2, 3 and 4 devices).
func sampleForest(t testing.TB) *builder {
	b := newBuilder(t)
	for _, s := range []string{"share1", "share2"} {
		b.provider(s, "")
		b.inv(s, "DISK_GB", 100)
		b.traits(s, state.SharingTrait)
	}
	b.aggs("share1", "agg1")
	b.aggs("share2", "agg2")
	for i := 0; i < 6; i++ {
		cn := fmt.Sprintf("cn%d", i)
		b.provider(cn, "")
		b.inv(cn, "VCPU", 4)
		b.inv(cn, "DISK_GB", 4)
	}
	b.aggs("cn0", "agg1")
	b.aggs("cn1", "agg1")
	b.aggs("cn2", "agg1", "agg2")
	b.provider("numa-host", "") // disk on the root, VCPU on two children
	b.inv("numa-host", "DISK_GB", 4)
	for _, n := range []string{"numa-host-0", "numa-host-1"} {
		b.provider(n, "numa-host")
		b.inv(n, "VCPU", 2)
	}
	b.provider("split-host", "") // VCPU on root or child, disk on root or child
	b.inv("split-host", "VCPU", 2)
	b.inv("split-host", "DISK_GB", 2)
	b.provider("split-host-cpu", "split-host")
	b.inv("split-host-cpu", "VCPU", 2)
	b.provider("split-host-disk", "split-host")
	b.inv("split-host-disk", "DISK_GB", 2)
	b.provider("diskless", "")
	b.inv("diskless", "VCPU", 4)
	b.aggs("diskless", "agg2")
	b.provider("full", "")
	b.inv("full", "VCPU", 4)
	b.inv("full", "DISK_GB", 4)
	b.use("full", "VCPU", 4)
	for n := 2; n <= 4; n++ {
		deviceHost(t, b, fmt.Sprintf("pci%d", n), n, "CUSTOM_PCI")
	}
	// CUSTOM_FAST only on hosts, CUSTOM_SHARED on a sharing provider too.
	for _, h := range []string{"cn0", "cn2", "split-host"} {
		b.traits(h, "CUSTOM_FAST")
	}
	b.traits("share2", state.SharingTrait, "CUSTOM_SHARED")
	b.traits("cn1", "CUSTOM_SHARED")
	return b
}

// chiSquareLimit is the chi-square statistic that a uniform sample exceeds
// with probability 0.001 (Wilson-Hilferty's approximation).
func chiSquareLimit(df int) float64 {
	k := float64(df)
	c := 1 - 2/(9*k) + 3.09*math.Sqrt(2/(9*k))
	return k * c * c * c
}

func chiSquare(counts map[string]int, expected float64) float64 {
	x := 0.0
	for _, n := range counts {
		d := float64(n) - expected
		x += d * d / expected
	}
	return x
}

// The drawn sample is uniform: over many searches of a small cloud whose
// roots anchor from 0 to 12 candidates, the first candidate of each
// answer is every candidate equally often (chi-square), and so is
// membership in answers of 3. The same test catches a sample that picks
// a root first and one of its candidates then.
func TestSampleIsUniform(t *testing.T) {
	b := sampleForest(t)
	nm := b.names()
	drawn, built := 0, 0
	defer candidates.OnSample(func(ok bool) {
		if ok {
			drawn++
		} else {
			built++
		}
	})()
	rnd := rand.New(rand.NewPCG(22, 1))
	requests := map[string]*candidates.Request{
		"vcpu+disk": {Groups: []candidates.Group{{Resources: res("VCPU", 1, "DISK_GB", 1)}}, NestedAware: true},
		"pci pairs": {Groups: unitGroups(2, "CUSTOM_PCI"), Isolate: true, NestedAware: true},
		// A trait of hosts alone (checked on the anchor's tree before
		// anything else), and one a sharing provider has too.
		"host trait": {Groups: []candidates.Group{{Resources: res("VCPU", 1, "DISK_GB", 1),
			Required: [][]string{{"CUSTOM_FAST"}}}}, NestedAware: true},
		"shared trait": {Groups: []candidates.Group{{Resources: res("VCPU", 1, "DISK_GB", 1),
			Required: [][]string{{"CUSTOM_SHARED"}}}}, NestedAware: true},
	}
	for name, req := range requests {
		t.Run(name, func(t *testing.T) {
			all := renderAll(search(t, b.st, req, candidates.Options{}).Candidates, nm)
			n := len(all)
			const perCandidate = 400
			for _, limit := range []int{1, 3} {
				req := *req
				req.Limit = limit
				first, member := map[string]int{}, map[string]int{}
				for _, c := range all {
					first[c], member[c] = 0, 0
				}
				for i := 0; i < perCandidate*n; i++ {
					res := search(t, b.st, &req, candidates.Options{Randomize: true, Rand: rnd})
					got := make([]string, len(res.Candidates))
					for j, c := range res.Candidates {
						got[j] = render(c, nm)
						if _, ok := member[got[j]]; !ok {
							t.Fatalf("%s is not a candidate", got[j])
						}
						member[got[j]]++
					}
					if len(got) != limit || len(slices.Compact(slices.Sorted(slices.Values(got)))) != limit {
						t.Fatalf("limit %d: %v", limit, got)
					}
					first[got[0]]++
				}
				if x := chiSquare(first, perCandidate); x > chiSquareLimit(n-1) {
					t.Errorf("limit %d: first candidates are not uniform: chi-square %.1f > %.1f: %v", limit, x, chiSquareLimit(n-1), first)
				}
				// Members of one answer are not independent (they are
				// distinct), which makes the spread of the counts
				// smaller than the test allows for, not larger.
				if x := chiSquare(member, float64(perCandidate*limit)); x > chiSquareLimit(n-1) {
					t.Errorf("limit %d: members are not uniform: chi-square %.1f > %.1f: %v", limit, x, chiSquareLimit(n-1), member)
				}
			}
			// Picking a root, then one of its candidates, is not uniform
			// here, and the test says so.
			byRoot := map[string][]string{}
			for _, c := range search(t, b.st, req, candidates.Options{}).Candidates {
				root := b.st.Providers.Get(c.Allocations[0].Provider).RootUUID
				byRoot[root] = append(byRoot[root], render(c, nm))
			}
			roots := slices.Sorted(func(yield func(string) bool) {
				for r := range byRoot {
					if !yield(r) {
						return
					}
				}
			})
			biased := map[string]int{}
			for i := 0; i < perCandidate*n; i++ {
				cs := byRoot[roots[rnd.IntN(len(roots))]]
				biased[cs[rnd.IntN(len(cs))]]++
			}
			if x := chiSquare(biased, perCandidate); x <= chiSquareLimit(n-1) {
				t.Errorf("a root-first sample passes: chi-square %.1f", x)
			}
		})
	}
	// A few searches give up drawing (small clouds have a small budget):
	// the test is of the draws.
	if drawn == 0 || built*10 > drawn {
		t.Errorf("%d samples drawn, %d built from every candidate", drawn, built)
	}
}

// A drawn sample holds distinct candidates of the whole answer, as many as
// the limit allows, with the summaries of their trees, on random clouds
// and requests (device trees with isolate and same_subtree too).
func TestSampleIsOfTheCandidates(t *testing.T) {
	drawn := 0
	defer candidates.OnSample(func(ok bool) {
		if ok {
			drawn++
		}
	})()
	for seed := uint64(0); seed < 400; seed++ {
		r := rand.New(rand.NewPCG(seed, 22))
		var b *builder
		var req *candidates.Request
		if seed%2 == 0 {
			var names []string
			b, names = randomForest(t, r)
			req = randomRequest(r, names, b)
		} else {
			b = deviceForest(t, r)
			req = deviceRequest(r, 4)
		}
		nm := b.names()
		whole := *req
		whole.Limit = 0
		full, err := candidates.Search(context.Background(), b.st, &whole, candidates.Options{})
		if err != nil {
			continue // an unknown name: nothing to sample
		}
		all := map[string]bool{}
		for _, c := range full.Candidates {
			all[render(c, nm)] = true
		}
		for _, limit := range []int{1, 2, 5} {
			req.Limit = limit
			res := search(t, b.st, req, candidates.Options{Randomize: true, Rand: r})
			got := map[string]bool{}
			roots := map[string]bool{}
			for _, c := range res.Candidates {
				s := render(c, nm)
				if !all[s] || got[s] {
					t.Fatalf("seed %d limit %d: %s is not a candidate or came twice\n%s%s", seed, limit, s,
						describe(req, nm), dumpForest(b.st))
				}
				got[s] = true
				for _, a := range c.Allocations {
					roots[b.st.Providers.Get(a.Provider).RootUUID] = true
				}
			}
			if len(got) != min(limit, len(all)) {
				t.Fatalf("seed %d limit %d: %d candidates of %d", seed, limit, len(got), len(all))
			}
			if !req.NestedAware {
				continue
			}
			var want []candidates.Summary
			for _, s := range full.Summaries {
				if roots[s.RootUUID] {
					want = append(want, s)
				}
			}
			if g, w := renderSummaries(res.Summaries, nm), renderSummaries(want, nm); !slices.Equal(g, w) {
				t.Fatalf("seed %d limit %d: summaries\n%v\nwant\n%v", seed, limit, g, w)
			}
		}
	}
	if drawn < 100 {
		t.Errorf("only %d searches drew their sample", drawn)
	}
}

// The work of a drawn sample follows the limit: over 10,000 hosts sharing
// a disk provider, ten candidates take a few dozen steps, where building
// them all takes tens of thousands. (With provider trees, or sharing
// providers in several aggregates, the first search after the cloud
// changed shape walks it once: see TestSampleNoticesGrownTree.)
func TestSampleWorkFollowsLimit(t *testing.T) {
	// The store is assembled once (the builder assembles at every change).
	var ps []*state.Provider
	add := func(name string, inv map[string]int64, traits ...string) {
		p := &state.Provider{ID: int64(len(ps) + 1), UUID: uuidOf(name), Name: name,
			Inventories: map[string]*state.Inventory{}, Traits: map[string]bool{},
			Aggregates: map[string]bool{"agg": true}, Usages: map[string]int64{}}
		p.RootUUID = p.UUID
		for class, total := range inv {
			p.Inventories[class] = &state.Inventory{Total: total, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: 1}
		}
		for _, tr := range traits {
			p.Traits[tr] = true
		}
		ps = append(ps, p)
	}
	add("share", map[string]int64{"DISK_GB": 1000}, state.SharingTrait)
	for i := 0; i < 10000; i++ {
		add(fmt.Sprintf("cn%d", i), map[string]int64{"VCPU": 8, "DISK_GB": 100})
	}
	st := state.Assemble(nil, nil, ps)
	req := &candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1, "DISK_GB", 10)}}, NestedAware: true, Limit: 10}
	rnd := rand.New(rand.NewPCG(1, 2))
	opt := candidates.Options{Randomize: true, Rand: rnd}
	sampled := search(t, st, req, opt)
	if len(sampled.Candidates) != 10 || sampled.Steps > 1000 {
		t.Errorf("drawn: %d candidates in %d steps", len(sampled.Candidates), sampled.Steps)
	}
	all := *req
	all.Limit = 0
	if whole := search(t, st, &all, opt); whole.Steps < 10000 {
		t.Errorf("building every candidate took %d steps", whole.Steps)
	}
}

// The shape the draws rely on is kept while providers, parents, traits and
// aggregates stay as they are; a tree that a new inventory made larger is
// noticed when a draw meets it, and its new candidates are drawn from
// then on.
func TestSampleNoticesGrownTree(t *testing.T) {
	b := newBuilder(t)
	for i := 0; i < 12; i++ {
		root := fmt.Sprintf("cn%d", i)
		b.provider(root, "")
		for k := 0; k < 2; k++ {
			b.provider(fmt.Sprintf("%s-gpu%d", root, k), root)
		}
		b.inv(root+"-gpu0", "CUSTOM_GPU", 1)
	}
	req := &candidates.Request{Groups: []candidates.Group{{Resources: res("CUSTOM_GPU", 1)}}, NestedAware: true, Limit: 1}
	rnd := rand.New(rand.NewPCG(3, 4))
	nm := b.names()
	drawn := 0
	defer candidates.OnSample(func(ok bool) {
		if ok {
			drawn++
		}
	})()
	search(t, b.st, req, candidates.Options{Randomize: true, Rand: rnd})
	b.inv("cn0-gpu1", "CUSTOM_GPU", 1) // in place: the store's indexes stay
	for i := 0; i < 2000; i++ {
		res := search(t, b.st, req, candidates.Options{Randomize: true, Rand: rnd})
		if nm[res.Candidates[0].Allocations[0].Provider] == "cn0-gpu1" {
			if drawn < i {
				t.Errorf("%d of %d searches drew their sample", drawn, i+2)
			}
			return
		}
	}
	t.Error("the new inventory's candidate was never drawn")
}
