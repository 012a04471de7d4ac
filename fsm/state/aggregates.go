package state

// SetAggregates replaces a provider's aggregate associations. Generation
// is nil before microversion 1.19: then nothing is compared and the
// provider generation is left alone (clients and fixtures rely on that);
// otherwise it must match and the generation is bumped.
type SetAggregates struct {
	UUID       string   `json:"UUID"`
	Aggregates []string `json:"Aggregates"`
	Generation *int64   `json:"Generation,omitempty"`
}

func (c *SetAggregates) Kind() string { return "provider.set_aggregates" }

// AggregatesResult is the outcome of SetAggregates: the aggregates as
// given and the provider generation after the change.
type AggregatesResult struct {
	Aggregates []string
	Generation int64
}

func (c *SetAggregates) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.UUID)
	if p == nil {
		return nil, ProviderNotFound(c.UUID)
	}
	if c.Generation != nil && *c.Generation != p.Generation {
		return nil, Conflictf(CodeConcurrentUpdate,
			"Resource provider's generation already changed. Please update the generation and try again.")
	}
	want := make(map[string]bool, len(c.Aggregates))
	for _, a := range c.Aggregates {
		want[a] = true
	}
	p = s.editProvider(p)
	for a := range p.Aggregates {
		if !want[a] {
			delete(p.Aggregates, a)
			s.AggregateIndex = removeFromSet(s.AggregateIndex, a, p.UUID)
		}
	}
	for a := range want {
		if !p.Aggregates[a] {
			s.addProviderAggregate(p, a)
		}
	}
	if c.Generation != nil {
		p.Generation++
		p.Updated = m.Time
	}
	return AggregatesResult{Aggregates: append([]string{}, c.Aggregates...), Generation: p.Generation}, nil
}
