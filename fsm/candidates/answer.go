package candidates

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/placementd/placementd/fsm/state"
)

// Answer shaping: the chosen combinations as candidates (allocation
// requests and mappings) and the provider summaries.

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
