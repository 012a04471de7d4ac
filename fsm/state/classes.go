package state

import (
	"slices"
	"sort"
)

func init() {
	RegisterCommand(func() Command { return &CreateResourceClass{} })
	RegisterCommand(func() Command { return &RenameResourceClass{} })
	RegisterCommand(func() Command { return &DeleteResourceClass{} })
}

// ClassesByID lists every resource class, standard then custom, in
// identifier order (upstream's listing order).
func (s *Store) ClassesByID() []*ResourceClass {
	out := make([]*ResourceClass, 0, len(s.Classes))
	for _, rc := range s.Classes {
		out = append(out, rc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// classInUse reports whether any provider has inventory of the class.
func (s *Store) classInUse(name string) bool {
	for _, p := range s.Providers {
		if _, ok := p.Inventories[name]; ok {
			return true
		}
	}
	return false
}

// CreateResourceClass creates a CUSTOM_ class. With IfMissing (PUT at 1.7)
// an existing class is not an error; the result says whether it was
// created.
type CreateResourceClass struct {
	Name      string
	IfMissing bool `json:",omitempty"`
}

func (c *CreateResourceClass) Kind() string { return "resource_class.create" }

// CreateClassResult is the outcome of CreateResourceClass.
type CreateClassResult struct {
	Class   ResourceClass
	Created bool
}

func (c *CreateResourceClass) Apply(s *Store, m Meta) (any, error) {
	if rc, ok := s.Classes[c.Name]; ok {
		if c.IfMissing {
			return CreateClassResult{Class: *rc}, nil
		}
		return nil, Conflictf(CodeDefault, "Conflicting resource class already exists: %s", c.Name)
	}
	rc := &ResourceClass{ID: s.NextClassID, Name: c.Name, Created: m.Time}
	s.NextClassID++
	s.Classes[c.Name] = rc
	return CreateClassResult{Class: *rc, Created: true}, nil
}

// RenameResourceClass is PUT /resource_classes/{name} before 1.7.
type RenameResourceClass struct {
	Name    string
	NewName string
}

func (c *RenameResourceClass) Kind() string { return "resource_class.rename" }

func (c *RenameResourceClass) Apply(s *Store, m Meta) (any, error) {
	rc, ok := s.Classes[c.Name]
	if !ok {
		return nil, NotFoundf("No such resource class %s.", c.Name)
	}
	if rc.Standard() {
		return nil, Errorf("Cannot update standard resource class %s", c.Name)
	}
	if c.NewName == c.Name {
		return *rc, nil
	}
	if _, taken := s.Classes[c.NewName]; taken {
		return nil, Conflictf(CodeDefault, "Resource class already exists: %s", c.NewName)
	}
	// Renaming a class carries its inventories and allocations with it.
	for _, p := range s.Providers {
		if inv, ok := p.Inventories[c.Name]; ok {
			delete(p.Inventories, c.Name)
			p.Inventories[c.NewName] = inv
		}
		if used, ok := p.Usages[c.Name]; ok {
			delete(p.Usages, c.Name)
			p.Usages[c.NewName] = used
		}
	}
	for uuid, con := range s.Consumers {
		for i := range con.Allocations {
			if con.Allocations[i].Class == c.Name {
				// A new consumer and slice: stored consumers and their
				// allocations are shared with snapshot images and are
				// never changed in place.
				renamed := *con
				renamed.Allocations = slices.Clone(con.Allocations)
				for j := i; j < len(renamed.Allocations); j++ {
					if renamed.Allocations[j].Class == c.Name {
						renamed.Allocations[j].Class = c.NewName
					}
				}
				s.Consumers[uuid] = &renamed
				break
			}
		}
	}
	for _, t := range s.Usage {
		if used, ok := t.Used[c.Name]; ok {
			delete(t.Used, c.Name)
			t.Used[c.NewName] = used
		}
	}
	delete(s.Classes, c.Name)
	rc.Name = c.NewName
	rc.Updated = m.Time
	s.Classes[c.NewName] = rc
	return *rc, nil
}

// DeleteResourceClass deletes a CUSTOM_ class no inventory uses.
type DeleteResourceClass struct{ Name string }

func (c *DeleteResourceClass) Kind() string { return "resource_class.delete" }

func (c *DeleteResourceClass) Apply(s *Store, m Meta) (any, error) {
	rc, ok := s.Classes[c.Name]
	if !ok {
		return nil, NotFoundf("No such resource class %s.", c.Name)
	}
	if rc.Standard() {
		return nil, Errorf("Error in delete resource class: Cannot delete standard resource class %s.", c.Name)
	}
	if s.classInUse(c.Name) {
		return nil, Conflictf(CodeDefault, "Error in delete resource class: Cannot delete resource class %s. Class is in use in inventory.", c.Name)
	}
	delete(s.Classes, c.Name)
	return nil, nil
}
