package state

// ProviderFilter is what GET /resource_providers filters on, already
// parsed from the query string. Empty fields do not filter.
type ProviderFilter struct {
	Name   string
	UUID   string
	InTree string // a provider uuid: only providers of its tree
	// MemberOf is an AND of ORs: a provider must be in at least one
	// aggregate of every group.
	MemberOf [][]string
	// ForbiddenAggregates: a provider in any of them is excluded.
	ForbiddenAggregates []string
	// RequiredTraits is an AND of ORs, as MemberOf.
	RequiredTraits [][]string
	// ForbiddenTraits: a provider with any of them is excluded.
	ForbiddenTraits []string
	// Resources asks for providers that could each take these amounts.
	Resources []ResourceAmount
}

// ResourceAmount is an amount of one resource class.
type ResourceAmount struct {
	Class  string
	Amount int64
}

// FindProviders returns the providers matching f, in creation order. As
// upstream, a filter that can match nothing (an unknown in_tree provider,
// traits no provider has, unknown aggregates) answers an empty list before
// later filters are validated; an unknown trait or resource class otherwise
// is a BadRequest carrying upstream's inner message ("No such trait(s): X."
// or "No such resource class X."), which callers prefix.
func (s *Store) FindProviders(f ProviderFilter) ([]ProviderSummary, error) {
	// cand is nil while every provider is still a candidate.
	var cand map[string]bool
	narrow := func(set map[string]bool) {
		if cand == nil {
			cand = set
			return
		}
		for u := range cand {
			if !set[u] {
				delete(cand, u)
			}
		}
	}
	if f.UUID != "" {
		set := map[string]bool{}
		if s.Providers.Get(f.UUID) != nil {
			set[f.UUID] = true
		}
		narrow(set)
	}
	if f.Name != "" {
		set := map[string]bool{}
		if u, ok := s.ProviderByName.Lookup(f.Name); ok {
			set[u] = true
		}
		narrow(set)
	}
	root := ""
	if f.InTree != "" {
		p := s.Providers.Get(f.InTree)
		if p == nil {
			return nil, nil
		}
		root = p.RootUUID
	}
	if len(f.RequiredTraits) > 0 {
		for _, group := range f.RequiredTraits {
			for _, t := range group {
				if s.Traits.Get(t) == nil {
					return nil, Errorf("No such trait(s): %s.", t)
				}
			}
		}
		set := s.matchAll(s.TraitIndex, f.RequiredTraits)
		if len(set) == 0 {
			return nil, nil
		}
		narrow(set)
	}
	for _, t := range f.ForbiddenTraits {
		if s.Traits.Get(t) == nil {
			return nil, Errorf("No such trait(s): %s.", t)
		}
	}
	if len(f.MemberOf) > 0 {
		set := s.matchAll(s.AggregateIndex, f.MemberOf)
		if len(set) == 0 {
			return nil, nil
		}
		narrow(set)
	}
	for _, r := range f.Resources {
		if s.Classes.Get(r.Class) == nil {
			return nil, Errorf("No such resource class %s.", r.Class)
		}
	}

	// Many forbidden traits or aggregates are looked up in their indexes
	// once, rather than on every provider.
	var excluded map[string]bool
	forbiddenTraits, forbiddenAggs := f.ForbiddenTraits, f.ForbiddenAggregates
	if len(forbiddenTraits)+len(forbiddenAggs) > 8 {
		excluded = map[string]bool{}
		for _, t := range forbiddenTraits {
			for u := range s.TraitIndex.Get(t).All() {
				excluded[u] = true
			}
		}
		for _, a := range forbiddenAggs {
			for u := range s.AggregateIndex.Get(a).All() {
				excluded[u] = true
			}
		}
		forbiddenTraits, forbiddenAggs = nil, nil
	}
	var out []*Provider
	consider := func(p *Provider) {
		if root != "" && p.RootUUID != root || excluded[p.UUID] {
			return
		}
		for _, t := range forbiddenTraits {
			if p.Traits[t] {
				return
			}
		}
		for _, a := range forbiddenAggs {
			if p.Aggregates[a] {
				return
			}
		}
		for _, r := range f.Resources {
			if !p.HasCapacity(r.Class, r.Amount) {
				return
			}
		}
		out = append(out, p)
	}
	if cand == nil {
		for p := range s.ProvidersInOrder() {
			consider(p)
		}
	} else {
		for u := range cand {
			consider(s.Providers.Get(u))
		}
		sortByID(out)
	}
	res := make([]ProviderSummary, len(out))
	for i, p := range out {
		res[i] = p.Summary()
	}
	return res, nil
}

// matchAll returns the providers that, in index (trait or aggregate ->
// providers), are under at least one key of every group.
func (s *Store) matchAll(index Index, groups [][]string) map[string]bool {
	var result map[string]bool
	for _, group := range groups {
		hit := map[string]bool{}
		for _, key := range group {
			for u := range index.Get(key).All() {
				if result == nil || result[u] {
					hit[u] = true
				}
			}
		}
		result = hit
		if len(result) == 0 {
			break
		}
	}
	return result
}

// HasCapacity reports whether the provider could take one more allocation
// of amount of the class, as upstream's capacity check for
// GET /resource_providers?resources= and allocation candidates:
// used + amount <= (total - reserved) * ratio, min_unit <= amount <=
// max_unit, and amount a multiple of step_size.
func (p *Provider) HasCapacity(class string, amount int64) bool {
	inv := p.Inventories[class]
	if inv == nil {
		return false
	}
	if amount < inv.MinUnit || amount > inv.MaxUnit {
		return false
	}
	if inv.StepSize > 0 && amount%inv.StepSize != 0 {
		return false
	}
	return float64(p.Usages[class]+amount) <= float64(inv.Total-inv.Reserved)*inv.AllocationRatio
}
