package candidates_test

import (
	"sort"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
)

// bruteForce is a deliberately simple transcription of upstream's
// algorithm (AllocationCandidates._get_by_requests and the research
// context): per group, the set of (provider, anchor) pairs and allocation
// requests over every provider; then, per anchor, the product of the
// groups' requests filtered by group policy, same_subtree and capacity;
// summaries of the trees involved. No indexes, no pruning, no order: the
// result is compared as a set with the real search.
func bruteForce(st *state.Store, req *candidates.Request) ([]candidates.Candidate, []candidates.Summary) {
	type arr struct {
		p      *state.Provider
		class  string
		amount int64
	}
	type areq struct {
		anchor   string
		arrs     []arr
		mappings map[string]map[string]bool
		granular bool
	}
	all := []*state.Provider{}
	for p := range st.Providers.InOrder() {
		all = append(all, p)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].ID < all[j].ID })
	root := func(p *state.Provider) string { return p.RootUUID }
	hasCap := func(p *state.Provider, class string, amount int64) bool {
		inv := p.Inventories[class]
		if inv == nil || amount < inv.MinUnit || amount > inv.MaxUnit || amount%inv.StepSize != 0 {
			return false
		}
		return float64(p.Usages[class]+amount) <= float64(inv.Total-inv.Reserved)*inv.AllocationRatio
	}
	inAll := func(set map[string]bool, groups [][]string) bool {
		for _, g := range groups {
			ok := false
			for _, k := range g {
				ok = ok || set[k]
			}
			if !ok {
				return false
			}
		}
		return true
	}
	anyOf := func(set map[string]bool, keys []string) bool {
		for _, k := range keys {
			if set[k] {
				return true
			}
		}
		return false
	}
	var sharing []*state.Provider
	hasTrees := false
	for _, p := range all {
		if p.Traits[state.SharingTrait] {
			sharing = append(sharing, p)
		}
		hasTrees = hasTrees || p.ParentUUID != ""
	}
	// anchorsOf: roots of every provider sharing an aggregate with p.
	anchorsOf := func(p *state.Provider) map[string]bool {
		out := map[string]bool{}
		for _, q := range all {
			for a := range p.Aggregates {
				if q.Aggregates[a] {
					out[root(q)] = true
				}
			}
		}
		return out
	}
	var anchorOK map[string]bool
	if len(req.RootRequired)+len(req.RootForbidden) > 0 {
		anchorOK = map[string]bool{}
		for _, p := range all {
			if p.ParentUUID != "" {
				continue
			}
			ok := true
			for _, t := range req.RootRequired {
				ok = ok && p.Traits[t]
			}
			if ok && !anyOf(p.Traits, req.RootForbidden) {
				anchorOK[p.UUID] = true
			}
		}
		if len(anchorOK) == 0 {
			return nil, nil
		}
	}
	inAnchors := func(a string) bool { return anchorOK == nil || anchorOK[a] }

	perGroup := make([][]areq, len(req.Groups))
	for gi := range req.Groups {
		g := &req.Groups[gi]
		granular := g.Suffix != ""
		var aggsOK map[*state.Provider]bool
		if len(g.MemberOf) > 0 {
			aggsOK = map[*state.Provider]bool{}
			for _, p := range all {
				if inAll(p.Aggregates, g.MemberOf) {
					aggsOK[p] = true
				}
			}
			if len(aggsOK) == 0 {
				return nil, nil
			}
		}
		treeRoot := ""
		if g.InTree != "" {
			p := st.Providers.Get(g.InTree)
			if p == nil {
				return nil, nil
			}
			treeRoot = root(p)
		}
		withRes := map[string][]*state.Provider{}
		for _, r := range g.Resources {
			for _, p := range all {
				if hasCap(p, r.Class, r.Amount) && (treeRoot == "" || root(p) == treeRoot) {
					withRes[r.Class] = append(withRes[r.Class], p)
				}
			}
			if len(withRes[r.Class]) == 0 {
				return nil, nil
			}
		}
		bad := func(p *state.Provider) bool { return anyOf(p.Aggregates, g.ForbiddenAggs) }
		var reqs []areq
		if !granular && (len(sharing) > 0 || hasTrees) {
			type tuple struct {
				p      *state.Provider
				anchor string
			}
			// upstream's RPCandidateList per class, then merge_common_trees:
			// only anchors present for every class survive.
			byClass := map[string]map[tuple]bool{}
			anchorCount := map[string]int{}
			for _, r := range g.Resources {
				tuples := map[tuple]bool{}
				for _, p := range withRes[r.Class] {
					tuples[tuple{p, root(p)}] = true
				}
				if treeRoot == "" {
					for _, sp := range sharing {
						if aggsOK != nil && !aggsOK[sp] {
							continue
						}
						if !hasCap(sp, r.Class, r.Amount) {
							continue
						}
						for a := range anchorsOf(sp) {
							tuples[tuple{sp, a}] = true
						}
					}
				}
				for t := range tuples {
					if !inAnchors(t.anchor) {
						delete(tuples, t)
						continue
					}
					if aggsOK != nil && !aggsOK[t.p] && !aggsOK[st.Providers.Get(t.anchor)] {
						delete(tuples, t)
						continue
					}
					if bad(t.p) || bad(st.Providers.Get(t.anchor)) {
						delete(tuples, t)
					}
				}
				if len(tuples) == 0 {
					return nil, nil
				}
				byClass[r.Class] = tuples
				seenA := map[string]bool{}
				for t := range tuples {
					if !seenA[t.anchor] {
						seenA[t.anchor] = true
						anchorCount[t.anchor]++
					}
				}
			}
			classes := append([]state.ResourceAmount(nil), g.Resources...)
			sort.SliceStable(classes, func(i, j int) bool {
				return st.Classes.Get(classes[i].Class).ID < st.Classes.Get(classes[j].Class).ID
			})
			for a, n := range anchorCount {
				if n != len(g.Resources) {
					continue
				}
				var lists [][]*state.Provider
				for _, r := range classes {
					var l []*state.Provider
					for t := range byClass[r.Class] {
						if t.anchor == a {
							l = append(l, t.p)
						}
					}
					lists = append(lists, l)
				}
				var walk func(i int, chosen []*state.Provider)
				walk = func(i int, chosen []*state.Provider) {
					if i == len(lists) {
						traits := map[string]bool{}
						for _, p := range chosen {
							if anyOf(p.Traits, g.Forbidden) {
								return
							}
							for t := range p.Traits {
								traits[t] = true
							}
						}
						if !inAll(traits, g.Required) {
							return
						}
						q := areq{anchor: a, mappings: map[string]map[string]bool{"": {}}}
						for k, p := range chosen {
							q.arrs = append(q.arrs, arr{p, classes[k].Class, classes[k].Amount})
							q.mappings[""][p.UUID] = true
						}
						reqs = append(reqs, q)
						return
					}
					for _, p := range lists[i] {
						walk(i+1, append(chosen, p))
					}
				}
				walk(0, nil)
			}
		} else {
			for _, p := range all {
				ok := inAll(p.Traits, g.Required) && !anyOf(p.Traits, g.Forbidden) &&
					(aggsOK == nil || aggsOK[p]) && !bad(p)
				for _, r := range g.Resources {
					found := false
					for _, q := range withRes[r.Class] {
						found = found || q == p
					}
					ok = ok && found
				}
				if !ok {
					continue
				}
				mk := func(anchor string) areq {
					q := areq{anchor: anchor, granular: granular, mappings: map[string]map[string]bool{g.Suffix: {p.UUID: true}}}
					for _, r := range g.Resources {
						q.arrs = append(q.arrs, arr{p, r.Class, r.Amount})
					}
					return q
				}
				if inAnchors(root(p)) {
					reqs = append(reqs, mk(root(p)))
				}
				if p.Traits[state.SharingTrait] {
					for a := range anchorsOf(p) {
						if a != root(p) && inAnchors(a) {
							reqs = append(reqs, mk(a))
						}
					}
				}
			}
		}
		if len(reqs) == 0 {
			return nil, nil
		}
		for i := range reqs {
			reqs[i].granular = granular
		}
		perGroup[gi] = reqs
	}

	numGranular := 0
	for _, g := range req.Groups {
		if g.Suffix != "" {
			numGranular++
		}
	}
	parentOf := func(p *state.Provider) *state.Provider { return st.Providers.Get(p.ParentUUID) }
	ancestors := func(p *state.Provider) map[string]bool {
		out := map[string]bool{}
		for ; p != nil; p = parentOf(p) {
			out[p.UUID] = true
		}
		return out
	}
	type merged struct {
		amounts  map[*state.Provider]map[string]int64
		mappings map[string]map[string]bool
	}
	results := map[string]merged{}
	anchors := map[string]bool{}
	for _, q := range perGroup[0] {
		anchors[q.anchor] = true
	}
	for a := range anchors {
		lists := make([][]areq, len(req.Groups))
		for gi := range req.Groups {
			for _, q := range perGroup[gi] {
				if q.anchor == a {
					lists[gi] = append(lists[gi], q)
				}
			}
		}
		var walk func(i int, chosen []areq)
		walk = func(i int, chosen []areq) {
			if i < len(lists) {
				for _, q := range lists[i] {
					walk(i+1, append(chosen, q))
				}
				return
			}
			if req.Isolate {
				used := map[string]bool{}
				for _, q := range chosen {
					if q.granular {
						for _, ps := range q.mappings {
							for u := range ps {
								used[u] = true
							}
						}
					}
				}
				if len(used) != numGranular {
					return
				}
			}
			for _, sub := range req.SameSubtrees {
				rps := map[string]bool{}
				for _, q := range chosen {
					for _, suffix := range sub {
						for u := range q.mappings[suffix] {
							rps[u] = true
						}
					}
				}
				if len(rps) > 1 {
					var common map[string]bool
					for u := range rps {
						anc := ancestors(st.Providers.Get(u))
						if common == nil {
							common = anc
							continue
						}
						for c := range common {
							if !anc[c] {
								delete(common, c)
							}
						}
					}
					hit := false
					for u := range rps {
						hit = hit || common[u]
					}
					if !hit {
						return
					}
				}
			}
			m := merged{amounts: map[*state.Provider]map[string]int64{}, mappings: map[string]map[string]bool{}}
			for _, q := range chosen {
				for _, r := range q.arrs {
					if m.amounts[r.p] == nil {
						m.amounts[r.p] = map[string]int64{}
					}
					m.amounts[r.p][r.class] += r.amount
				}
				for s, ps := range q.mappings {
					if m.mappings[s] == nil {
						m.mappings[s] = map[string]bool{}
					}
					for u := range ps {
						m.mappings[s][u] = true
					}
				}
			}
			for p, byClass := range m.amounts {
				for class, amount := range byClass {
					inv := p.Inventories[class]
					if p.Usages[class]+amount > int64(float64(inv.Total-inv.Reserved)*inv.AllocationRatio) || amount > inv.MaxUnit {
						return
					}
				}
			}
			c := toCandidate(m.amounts, m.mappings)
			results[render(c, uuidNames(st))] = m
		}
		walk(0, nil)
	}

	var out []candidates.Candidate
	for _, m := range results {
		if !req.NestedAware && hasTrees {
			roots := map[string]bool{}
			for p := range m.amounts {
				if roots[root(p)] {
					roots = nil
					break
				}
				roots[root(p)] = true
			}
			if roots == nil {
				continue
			}
		}
		out = append(out, toCandidate(m.amounts, m.mappings))
	}
	var sums []candidates.Summary
	if !req.NestedAware && hasTrees {
		used := map[string]bool{}
		for _, c := range out {
			for _, a := range c.Allocations {
				used[a.Provider] = true
			}
		}
		for _, p := range all {
			if used[p.UUID] {
				sums = append(sums, summaryOf(st, p))
			}
		}
	} else {
		roots := map[string]bool{}
		for _, c := range out {
			for _, a := range c.Allocations {
				roots[root(st.Providers.Get(a.Provider))] = true
			}
		}
		for _, p := range all {
			if roots[root(p)] {
				sums = append(sums, summaryOf(st, p))
			}
		}
	}
	return out, sums
}

func uuidNames(st *state.Store) map[string]string {
	m := map[string]string{}
	for p := range st.Providers.InOrder() {
		m[p.UUID] = p.Name
	}
	return m
}

func toCandidate(amounts map[*state.Provider]map[string]int64, mappings map[string]map[string]bool) candidates.Candidate {
	var c candidates.Candidate
	for p, byClass := range amounts {
		a := candidates.Allocation{Provider: p.UUID}
		for class, n := range byClass {
			a.Resources = append(a.Resources, state.ResourceAmount{Class: class, Amount: n})
		}
		c.Allocations = append(c.Allocations, a)
	}
	for s, ps := range mappings {
		m := candidates.Mapping{Suffix: s}
		for u := range ps {
			m.Providers = append(m.Providers, u)
		}
		c.Mappings = append(c.Mappings, m)
	}
	return c
}

func summaryOf(st *state.Store, p *state.Provider) candidates.Summary {
	s := candidates.Summary{UUID: p.UUID, ParentUUID: p.ParentUUID, RootUUID: p.RootUUID}
	for class, inv := range p.Inventories {
		s.Resources = append(s.Resources, candidates.SummaryResource{
			Class: class, Capacity: int64(float64(inv.Total-inv.Reserved) * inv.AllocationRatio), Used: p.Usages[class],
		})
	}
	// In class id order, as upstream's usage query gives them.
	sort.Slice(s.Resources, func(i, j int) bool {
		return st.Classes.Get(s.Resources[i].Class).ID < st.Classes.Get(s.Resources[j].Class).ID
	})
	for t := range p.Traits {
		s.Traits = append(s.Traits, t)
	}
	return s
}
