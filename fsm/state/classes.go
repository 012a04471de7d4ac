package state

import (
	"slices"
	"sort"
)

// ClassesByID lists every resource class, standard then custom, in
// identifier order (upstream's listing order).
func (s *Store) ClassesByID() []*ResourceClass {
	out := slices.Collect(s.Classes.Values())
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// classInUse reports whether any provider has inventory of the class.
func (s *Store) classInUse(name string) bool {
	for p := range s.Providers.InOrder() {
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
	Name      string `json:"Name"`
	IfMissing bool   `json:"IfMissing,omitempty"`
	// MaxPlusOne numbers the class as upstream does: one above the
	// highest custom class there is (so the id of a deleted highest class
	// is given again), MinCustomClassID when there is none. Without it
	// (entries of older builds) the class gets NextClassID, as they did.
	MaxPlusOne bool `json:"MaxPlusOne,omitempty"`
}

func (c *CreateResourceClass) Kind() string { return "resource_class.create" }

// CreateClassResult is the outcome of CreateResourceClass.
type CreateClassResult struct {
	Class   ResourceClass
	Created bool
}

func (c *CreateResourceClass) Apply(s *Store, m Meta) (any, error) {
	if rc := s.Classes.Get(c.Name); rc != nil {
		if c.IfMissing {
			return CreateClassResult{Class: *rc}, nil
		}
		return nil, Conflictf(CodeDefault, "Conflicting resource class already exists: %s", c.Name)
	}
	id := s.NextClassID
	if c.MaxPlusOne {
		id = MinCustomClassID
		for rc := range s.Classes.Values() {
			id = max(id, rc.ID+1)
		}
	}
	rc := &ResourceClass{ID: id, Name: c.Name, Created: m.Time}
	s.NextClassID = max(s.NextClassID, id+1)
	s.Classes = s.Classes.set(c.Name, rc)
	return CreateClassResult{Class: *rc, Created: true}, nil
}

// SortByClassID orders class names by class id: upstream's order wherever
// its queries reach classes through their ids (inventories, usages,
// provider summaries).
func (s *Store) SortByClassID(classes []string) {
	// A provider has a few classes: their ids are looked up once each (not
	// twice per comparison) into a buffer on the stack, and an insertion
	// sort, stable, orders them without allocating.
	var buf [8]int
	ids := buf[:0]
	for _, c := range classes {
		ids = append(ids, s.classID(c))
	}
	for i := 1; i < len(classes); i++ {
		for j := i; j > 0 && ids[j] < ids[j-1]; j-- {
			ids[j], ids[j-1] = ids[j-1], ids[j]
			classes[j], classes[j-1] = classes[j-1], classes[j]
		}
	}
}

// ClassNotFound is upstream's NotFound for a resource class looked up by
// name.
func ClassNotFound(name string) *Error {
	e := NotFoundf("No such resource class %s.", name)
	e.Uncaught = true
	return e
}

// RenameResourceClass is PUT /resource_classes/{name} before 1.7.
type RenameResourceClass struct {
	Name    string `json:"Name"`
	NewName string `json:"NewName"`
}

func (c *RenameResourceClass) Kind() string { return "resource_class.rename" }

func (c *RenameResourceClass) Apply(s *Store, m Meta) (any, error) {
	rc := s.Classes.Get(c.Name)
	if rc == nil {
		return nil, ClassNotFound(c.Name)
	}
	if rc.Standard() {
		return nil, Errorf("Cannot update standard resource class %s", c.Name)
	}
	if c.NewName == c.Name {
		return *rc, nil
	}
	if s.Classes.Has(c.NewName) {
		return nil, Conflictf(CodeDefault, "Resource class already exists: %s", c.NewName)
	}
	// Renaming a class carries its inventories and allocations with it.
	for p := range s.Providers.InOrder() {
		_, hasInv := p.Inventories[c.Name]
		_, hasUse := p.Usages[c.Name]
		if !hasInv && !hasUse {
			continue
		}
		p = s.editProvider(p)
		if inv, ok := p.Inventories[c.Name]; ok {
			delete(p.Inventories, c.Name)
			p.Inventories[c.NewName] = inv
		}
		if used, ok := p.Usages[c.Name]; ok {
			delete(p.Usages, c.Name)
			p.Usages[c.NewName] = used
		}
	}
	for uuid, con := range s.Consumers.All() {
		for i := range con.Allocations {
			if con.Allocations[i].Class == c.Name {
				// A new consumer and slice: stored consumers and their
				// allocations are part of published versions and are
				// never changed in place.
				renamed := *con
				renamed.Allocations = slices.Clone(con.Allocations)
				for j := i; j < len(renamed.Allocations); j++ {
					if renamed.Allocations[j].Class == c.Name {
						renamed.Allocations[j].Class = c.NewName
					}
				}
				s.Consumers = s.Consumers.set(uuid, &renamed)
				break
			}
		}
	}
	for k, t := range s.Usage.All() { // each entry on its own: the order decides nothing
		if _, ok := t.Used[c.Name]; ok {
			t = s.editUsage(k)
			t.Used[c.NewName] = t.Used[c.Name]
			delete(t.Used, c.Name)
		}
	}
	renamed := *rc
	renamed.Name = c.NewName
	renamed.Updated = m.Time
	s.Classes = s.Classes.delete(c.Name).set(c.NewName, &renamed)
	return renamed, nil
}

// DeleteResourceClass deletes a CUSTOM_ class no inventory uses.
type DeleteResourceClass struct {
	Name string `json:"Name"`
}

func (c *DeleteResourceClass) Kind() string { return "resource_class.delete" }

func (c *DeleteResourceClass) Apply(s *Store, m Meta) (any, error) {
	rc := s.Classes.Get(c.Name)
	if rc == nil {
		return nil, ClassNotFound(c.Name)
	}
	if rc.Standard() {
		return nil, Errorf("Error in delete resource class: Cannot delete standard resource class %s.", c.Name)
	}
	if s.classInUse(c.Name) {
		return nil, Conflictf(CodeDefault, "Error in delete resource class: Cannot delete resource class %s. Class is in use in inventory.", c.Name)
	}
	s.Classes = s.Classes.delete(c.Name)
	return nil, nil
}
