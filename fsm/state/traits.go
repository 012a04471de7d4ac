package state

// CreateTrait creates a CUSTOM_ trait if it does not exist; the result says
// whether it was created.
type CreateTrait struct {
	Name string `json:"Name"`
}

func (c *CreateTrait) Kind() string { return "trait.create" }

// CreateTraitResult is the outcome of CreateTrait.
type CreateTraitResult struct {
	Trait   Trait
	Created bool
}

func (c *CreateTrait) Apply(s *Store, m Meta) (any, error) {
	if t := s.Traits.Get(c.Name); t != nil {
		return CreateTraitResult{Trait: *t}, nil
	}
	t := &Trait{Name: c.Name, Created: m.Time}
	s.Traits = s.Traits.set(c.Name, t)
	return CreateTraitResult{Trait: *t, Created: true}, nil
}

// DeleteTrait deletes a CUSTOM_ trait no provider has.
type DeleteTrait struct {
	Name string `json:"Name"`
}

func (c *DeleteTrait) Kind() string { return "trait.delete" }

func (c *DeleteTrait) Apply(s *Store, m Meta) (any, error) {
	t := s.Traits.Get(c.Name)
	if t == nil {
		return nil, NotFoundf("No such trait(s): %s.", c.Name)
	}
	if t.Standard {
		return nil, Errorf("Cannot delete standard trait %s.", c.Name)
	}
	if s.TraitIndex.Get(c.Name).Len() > 0 {
		return nil, Conflictf(CodeDefault, "The trait %s is in use by a resource provider.", c.Name)
	}
	s.Traits = s.Traits.delete(c.Name)
	return nil, nil
}
