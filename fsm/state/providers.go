package state

import (
	"slices"
	"sort"
	"time"
)

// ProviderSummary is a provider's own fields without its inventories,
// traits, aggregates and usages: what the provider representation shows.
type ProviderSummary struct {
	ID         int64
	UUID       string
	Name       string
	Generation int64
	ParentUUID string
	RootUUID   string
	Created    time.Time
	Updated    time.Time
}

// Summary copies p's own fields.
func (p *Provider) Summary() ProviderSummary {
	return ProviderSummary{
		ID: p.ID, UUID: p.UUID, Name: p.Name, Generation: p.Generation,
		ParentUUID: p.ParentUUID, RootUUID: p.RootUUID,
		Created: p.Created, Updated: p.Updated,
	}
}

// LastModified is the later of the provider's creation and update times.
func (p ProviderSummary) LastModified() time.Time {
	if p.Updated.After(p.Created) {
		return p.Updated
	}
	return p.Created
}

// ProviderNotFound is upstream's NotFound for a provider looked up by uuid.
func ProviderNotFound(uuid string) *Error {
	e := NotFoundf("No resource provider with uuid %s found", uuid)
	e.Uncaught = true
	return e
}

// ProvidersByID lists every provider in creation order (upstream's id
// order, the order listings use).
func (s *Store) ProvidersByID() []*Provider {
	return slices.Collect(s.Providers.InOrder())
}

func sortByID(ps []*Provider) {
	sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
}

// Subtree returns the uuids of the provider and all its descendants.
func (s *Store) Subtree(uuid string) []string {
	out := []string{uuid}
	for i := 0; i < len(out); i++ {
		out = append(out, s.Children.Get(out[i]).Sorted()...)
	}
	return out
}

// CreateProvider creates a resource provider. The HTTP handler fills UUID
// (generating one when the body has none); ParentUUID "" makes a root.
type CreateProvider struct {
	UUID       string `json:"UUID"`
	Name       string `json:"Name"`
	ParentUUID string `json:"ParentUUID,omitempty"`
}

func (c *CreateProvider) Kind() string { return "provider.create" }

func (c *CreateProvider) Apply(s *Store, m Meta) (any, error) {
	if c.UUID == "" || c.Name == "" {
		return nil, c.actionError("uuid and name are required")
	}
	root := c.UUID
	if c.ParentUUID != "" {
		if c.ParentUUID == c.UUID {
			return nil, c.actionError("parent provider UUID cannot be same as UUID. " +
				"Please set parent provider UUID to None if there is no parent.")
		}
		parent := s.Providers.Get(c.ParentUUID)
		if parent == nil {
			return nil, c.actionError("parent provider UUID does not exist.")
		}
		root = parent.RootUUID
	}
	// Upstream names the column of the unique constraint its database
	// reports: the first one violated, uuid before name.
	var dup string
	if s.Providers.Get(c.UUID) != nil {
		dup = "uuid: " + c.UUID
	} else if s.ProviderByName.Has(c.Name) {
		dup = "name: " + c.Name
	}
	if dup != "" {
		return nil, Conflictf(CodeDuplicateName, "Conflicting resource provider %s already exists.", dup)
	}
	p := &Provider{
		ID: s.NextProviderID, UUID: c.UUID, Name: c.Name,
		ParentUUID: c.ParentUUID, RootUUID: root,
		Created: m.Time, Updated: m.Time,
		Inventories: map[string]*Inventory{}, Traits: map[string]bool{},
		Aggregates: map[string]bool{}, Usages: map[string]int64{},
	}
	s.NextProviderID++
	s.putProvider(p)
	s.ProviderByName = s.ProviderByName.set(p.Name, p.UUID)
	if p.ParentUUID != "" {
		s.Children = addToSet(s.Children, p.ParentUUID, p.UUID)
	}
	return p.Summary(), nil
}

func (c *CreateProvider) actionError(reason string) *Error {
	// Python's %s of a str with the quotes upstream puts around it.
	return Errorf("Unable to create resource provider \"%s\", %s: Object action create failed because: %s",
		c.Name, c.UUID, reason)
}

// UpdateProvider is PUT /resource_providers/{uuid}: it sets the name and,
// when ParentUUID is not nil, the parent ("" for none). AllowReparenting
// (1.37) permits changing or removing an existing parent.
type UpdateProvider struct {
	UUID             string  `json:"UUID"`
	Name             string  `json:"Name"`
	ParentUUID       *string `json:"ParentUUID,omitempty"`
	AllowReparenting bool    `json:"AllowReparenting,omitempty"`
}

func (c *UpdateProvider) Kind() string { return "provider.update" }

func (c *UpdateProvider) saveError(action, reason string) *Error {
	return Errorf("Unable to save resource provider %s: Object action %s failed because: %s", c.UUID, action, reason)
}

func (c *UpdateProvider) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.UUID)
	if p == nil {
		return nil, ProviderNotFound(c.UUID)
	}
	// As upstream, a body without parent_provider_uuid keeps the current
	// parent, which then goes through the same checks (and passes them).
	newParent := p.ParentUUID
	if c.ParentUUID != nil {
		newParent = *c.ParentUUID
	}
	newRoot := p.RootUUID
	if newParent != "" {
		parent := s.Providers.Get(newParent)
		if parent == nil {
			// Upstream reports this one as a "create" action.
			return nil, c.saveError("create", "parent provider UUID does not exist.")
		}
		if p.ParentUUID != "" && p.ParentUUID != newParent && !c.AllowReparenting {
			return nil, c.saveError("update", "re-parenting a provider is not currently allowed.")
		}
		for _, u := range s.Subtree(p.UUID) {
			if u == newParent {
				return nil, c.saveError("update", "creating loop in the provider tree is not allowed.")
			}
		}
		newRoot = parent.RootUUID
	} else if p.ParentUUID != "" {
		if !c.AllowReparenting {
			return nil, c.saveError("update", "un-parenting a provider is not currently allowed.")
		}
		newRoot = p.UUID
	}
	if owner, taken := s.ProviderByName.Lookup(c.Name); taken && owner != p.UUID {
		return nil, Conflictf(CodeDuplicateName, "Conflicting resource provider %s already exists.", c.Name)
	}

	if c.Name == p.Name && newParent == p.ParentUUID {
		return p.Summary(), nil
	}
	p = s.editProvider(p)
	s.ProviderByName = s.ProviderByName.delete(p.Name)
	p.Name = c.Name
	s.ProviderByName = s.ProviderByName.set(p.Name, p.UUID)
	if newParent != p.ParentUUID {
		if p.ParentUUID != "" {
			s.Children = removeFromSet(s.Children, p.ParentUUID, p.UUID)
		}
		if newParent != "" {
			s.Children = addToSet(s.Children, newParent, p.UUID)
		}
		p.ParentUUID = newParent
	}
	if newRoot != p.RootUUID {
		for _, u := range s.Subtree(p.UUID) {
			d := s.editProvider(s.Providers.Get(u))
			d.RootUUID = newRoot
			if u != p.UUID {
				d.Updated = m.Time
			}
		}
	}
	p.Updated = m.Time
	return p.Summary(), nil
}

// DeleteProvider deletes a provider without children or allocations,
// with its inventories, trait and aggregate associations.
type DeleteProvider struct {
	UUID string `json:"UUID"`
}

func (c *DeleteProvider) Kind() string { return "provider.delete" }

func (c *DeleteProvider) Apply(s *Store, m Meta) (any, error) {
	p := s.Providers.Get(c.UUID)
	if p == nil {
		return nil, NotFoundf("No resource provider with uuid %s found for delete", c.UUID)
	}
	if s.Children.Get(p.UUID).Len() > 0 {
		return nil, Conflictf(CodeProviderCannotDeleteParent,
			"Unable to delete parent resource provider %s: It has child resource providers.", p.UUID)
	}
	if s.ProviderConsumers.Get(p.UUID).Len() > 0 {
		return nil, Conflictf(CodeProviderInUse,
			"Unable to delete resource provider %s: Resource provider has allocations.", p.UUID)
	}
	p = s.editProvider(p)
	s.setTraits(p, nil)
	for a := range p.Aggregates {
		s.AggregateIndex = removeFromSet(s.AggregateIndex, a, p.UUID)
	}
	if p.ParentUUID != "" {
		s.Children = removeFromSet(s.Children, p.ParentUUID, p.UUID)
	}
	s.ProviderByName = s.ProviderByName.delete(p.Name)
	s.Providers = s.Providers.remove(p)
	return nil, nil
}
