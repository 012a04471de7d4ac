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
	q, none, err := s.narrowProviders(f)
	if err != nil || none {
		return nil, err
	}
	q.indexForbidden(s, f)
	var out []*Provider
	if q.cand == nil {
		for p := range s.ProvidersInOrder() {
			if q.passes(p) {
				out = append(out, p)
			}
		}
	} else {
		for u := range q.cand {
			if p := s.Providers.Get(u); q.passes(p) {
				out = append(out, p)
			}
		}
		sortByID(out)
	}
	res := make([]ProviderSummary, len(out))
	for i, p := range out {
		res[i] = p.Summary()
	}
	return res, nil
}

// providerQuery is a ProviderFilter checked against the store: the
// providers its indexes leave, and what each of them must still pass.
type providerQuery struct {
	// cand is nil while every provider is still a candidate.
	cand map[string]bool
	// root, when set, is the root of the only tree wanted.
	root string
	// excluded holds the providers with a forbidden trait or aggregate,
	// when there are many of those (indexForbidden); else each provider is
	// checked for them.
	excluded                       map[string]bool
	forbiddenTraits, forbiddenAggs []string
	resources                      []ResourceAmount
}

// narrow keeps as candidates only those in set.
func (q *providerQuery) narrow(set map[string]bool) {
	if q.cand == nil {
		q.cand = set
		return
	}
	for u := range q.cand {
		if !set[u] {
			delete(q.cand, u)
		}
	}
}

// narrowProviders checks f's names in upstream's order and narrows the
// candidates through the indexes; none reports a filter that matches
// nothing (upstream answers it before checking the filters after it).
func (s *Store) narrowProviders(f ProviderFilter) (q *providerQuery, none bool, err error) {
	q = &providerQuery{forbiddenTraits: f.ForbiddenTraits, forbiddenAggs: f.ForbiddenAggregates, resources: f.Resources}
	if f.UUID != "" {
		set := map[string]bool{}
		if s.Providers.Get(f.UUID) != nil {
			set[f.UUID] = true
		}
		q.narrow(set)
	}
	if f.Name != "" {
		set := map[string]bool{}
		if u, ok := s.ProviderByName.Lookup(f.Name); ok {
			set[u] = true
		}
		q.narrow(set)
	}
	if f.InTree != "" {
		p := s.Providers.Get(f.InTree)
		if p == nil {
			return nil, true, nil
		}
		q.root = p.RootUUID
	}
	if len(f.RequiredTraits) > 0 {
		for _, group := range f.RequiredTraits {
			for _, t := range group {
				if s.Traits.Get(t) == nil {
					return nil, false, Errorf("No such trait(s): %s.", t)
				}
			}
		}
		set := s.matchAll(s.TraitIndex, f.RequiredTraits)
		if len(set) == 0 {
			return nil, true, nil
		}
		q.narrow(set)
	}
	for _, t := range f.ForbiddenTraits {
		if s.Traits.Get(t) == nil {
			return nil, false, Errorf("No such trait(s): %s.", t)
		}
	}
	if len(f.MemberOf) > 0 {
		set := s.matchAll(s.AggregateIndex, f.MemberOf)
		if len(set) == 0 {
			return nil, true, nil
		}
		q.narrow(set)
	}
	for _, r := range f.Resources {
		if s.Classes.Get(r.Class) == nil {
			return nil, false, Errorf("No such resource class %s.", r.Class)
		}
	}
	return q, false, nil
}

// indexForbidden looks many forbidden traits or aggregates up in their
// indexes once, rather than on every provider.
func (q *providerQuery) indexForbidden(s *Store, f ProviderFilter) {
	if len(f.ForbiddenTraits)+len(f.ForbiddenAggregates) <= 8 {
		return
	}
	q.excluded = map[string]bool{}
	for _, t := range f.ForbiddenTraits {
		for u := range s.TraitIndex.Get(t).All() {
			q.excluded[u] = true
		}
	}
	for _, a := range f.ForbiddenAggregates {
		for u := range s.AggregateIndex.Get(a).All() {
			q.excluded[u] = true
		}
	}
	q.forbiddenTraits, q.forbiddenAggs = nil, nil
}

// passes reports whether candidate p passes the rest of the filter.
func (q *providerQuery) passes(p *Provider) bool {
	if q.root != "" && p.RootUUID != q.root || q.excluded[p.UUID] {
		return false
	}
	for _, t := range q.forbiddenTraits {
		if p.Traits[t] {
			return false
		}
	}
	for _, a := range q.forbiddenAggs {
		if p.Aggregates[a] {
			return false
		}
	}
	for _, r := range q.resources {
		if !p.HasCapacity(r.Class, r.Amount) {
			return false
		}
	}
	return true
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
