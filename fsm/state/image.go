package state

import (
	"fmt"
	"sort"
	"time"
)

// Image is the whole state as plain, deterministically ordered data: what a
// snapshot stores and what a state digest is computed over. Indexes are not
// in it; Load rebuilds them.
type Image struct {
	LastIndex          uint64
	NextProviderID     int64
	NextClassID        int
	NextConsumerTypeID int
	Providers          []ProviderImage // by ID
	CustomClasses      []ResourceClass // by ID
	CustomTraits       []Trait         // by name
	ConsumerTypes      []ConsumerType  // by ID
	Consumers          []*Consumer     // by UUID
}

// ProviderImage is a provider without its derived usage index.
type ProviderImage struct {
	ID          int64
	UUID        string
	Name        string
	Generation  int64
	ParentUUID  string `json:",omitempty"`
	RootUUID    string
	Created     time.Time
	Updated     time.Time
	Inventories []InventoryImage // by class name
	Traits      []string         `json:",omitempty"`
	Aggregates  []string         `json:",omitempty"`
}

// InventoryImage is one inventory record with its class.
type InventoryImage struct {
	Class string
	Inventory
}

// ConsumerImage is a consumer with its allocations.
type ConsumerImage struct {
	Consumer
}

// Image captures the store.
func (s *Store) Image() *Image {
	img := &Image{
		LastIndex:          s.LastIndex,
		NextProviderID:     s.NextProviderID,
		NextClassID:        s.NextClassID,
		NextConsumerTypeID: s.NextConsumerTypeID,
	}
	for _, p := range s.Providers {
		pi := ProviderImage{
			ID: p.ID, UUID: p.UUID, Name: p.Name, Generation: p.Generation,
			ParentUUID: p.ParentUUID, RootUUID: p.RootUUID,
			Created: p.Created, Updated: p.Updated,
			Traits: SortedKeys(p.Traits), Aggregates: SortedKeys(p.Aggregates),
		}
		for _, class := range SortedKeys(p.Inventories) {
			pi.Inventories = append(pi.Inventories, InventoryImage{Class: class, Inventory: *p.Inventories[class]})
		}
		img.Providers = append(img.Providers, pi)
	}
	sort.Slice(img.Providers, func(i, j int) bool { return img.Providers[i].ID < img.Providers[j].ID })
	for _, rc := range s.Classes {
		if !rc.Standard() {
			img.CustomClasses = append(img.CustomClasses, *rc)
		}
	}
	sort.Slice(img.CustomClasses, func(i, j int) bool { return img.CustomClasses[i].ID < img.CustomClasses[j].ID })
	for _, t := range s.Traits {
		if !t.Standard {
			img.CustomTraits = append(img.CustomTraits, *t)
		}
	}
	sort.Slice(img.CustomTraits, func(i, j int) bool { return img.CustomTraits[i].Name < img.CustomTraits[j].Name })
	for _, ct := range s.ConsumerTypes {
		img.ConsumerTypes = append(img.ConsumerTypes, *ct)
	}
	sort.Slice(img.ConsumerTypes, func(i, j int) bool { return img.ConsumerTypes[i].ID < img.ConsumerTypes[j].ID })
	// Consumers are shared, not copied: the store never changes a stored
	// consumer or its allocation slice in place (a write replaces them),
	// and an image is only read. At a million consumers the copy would be
	// a large part of a second state in memory while a snapshot is
	// written, and would hold the FSM's lock longer.
	if len(s.Consumers) > 0 { // nil otherwise: "null" in the JSON, as always
		img.Consumers = make([]*Consumer, 0, len(s.Consumers))
	}
	for _, uuid := range SortedKeys(s.Consumers) {
		img.Consumers = append(img.Consumers, s.Consumers[uuid])
	}
	return img
}

// Load builds a store from an image, rebuilding every index.
func Load(img *Image) (*Store, error) {
	s := New()
	s.LastIndex = img.LastIndex
	s.NextProviderID = img.NextProviderID
	s.NextClassID = img.NextClassID
	s.NextConsumerTypeID = img.NextConsumerTypeID
	for i := range img.CustomClasses {
		rc := img.CustomClasses[i]
		s.Classes[rc.Name] = &rc
	}
	for i := range img.CustomTraits {
		t := img.CustomTraits[i]
		s.Traits[t.Name] = &t
	}
	for i := range img.ConsumerTypes {
		ct := img.ConsumerTypes[i]
		s.ConsumerTypes[ct.Name] = &ct
	}
	for _, pi := range img.Providers {
		p := &Provider{
			ID: pi.ID, UUID: pi.UUID, Name: pi.Name, Generation: pi.Generation,
			ParentUUID: pi.ParentUUID, RootUUID: pi.RootUUID,
			Created: pi.Created, Updated: pi.Updated,
			Inventories: map[string]*Inventory{}, Traits: map[string]bool{},
			Aggregates: map[string]bool{}, Usages: map[string]int64{},
		}
		for _, ii := range pi.Inventories {
			inv := ii.Inventory
			p.Inventories[ii.Class] = &inv
		}
		if len(pi.Traits) > 0 {
			want := make(map[string]bool, len(pi.Traits))
			for _, t := range pi.Traits {
				want[t] = true
			}
			s.setTraits(p, want)
		}
		for _, a := range pi.Aggregates {
			s.addProviderAggregate(p, a)
		}
		s.Providers[p.UUID] = p
		s.ProviderByName[p.Name] = p.UUID
	}
	for _, p := range s.Providers {
		if p.ParentUUID != "" {
			if s.Providers[p.ParentUUID] == nil {
				return nil, fmt.Errorf("state image: provider %s has unknown parent %s", p.UUID, p.ParentUUID)
			}
			addToSet(s.Children, p.ParentUUID, p.UUID)
		}
	}
	// The store takes the image's consumers as they are, not copies: a
	// restore's image is its own, and copying a million consumers would
	// add half as much again to the memory a restore peaks at. Interning
	// only replaces their strings with equal ones.
	for _, c := range img.Consumers {
		if c == nil {
			return nil, fmt.Errorf("state image: a consumer is null")
		}
		for _, a := range c.Allocations {
			if s.Providers[a.ProviderUUID] == nil {
				return nil, fmt.Errorf("state image: consumer %s allocates from unknown provider %s", c.UUID, a.ProviderUUID)
			}
		}
		if cap(c.Allocations) != len(c.Allocations) {
			c.Allocations = append([]Allocation(nil), c.Allocations...)
		}
		s.internConsumer(c)
		s.Consumers[c.UUID] = c
		s.indexConsumer(c, +1)
	}
	return s, nil
}

// indexConsumer adds (sign +1) or removes (sign -1) a consumer's
// allocations from the provider usage, provider-consumer and project usage
// indexes. Every change to a consumer's allocations goes through it: remove
// with the old allocations, change, add with the new.
func (s *Store) indexConsumer(c *Consumer, sign int64) {
	if len(c.Allocations) == 0 {
		return
	}
	for _, a := range c.Allocations {
		p := s.Providers[a.ProviderUUID]
		p.Usages[a.Class] += sign * a.Used
		if p.Usages[a.Class] == 0 {
			delete(p.Usages, a.Class)
		}
		if sign > 0 {
			addToSet(s.ProviderConsumers, a.ProviderUUID, c.UUID)
		} else {
			removeFromSet(s.ProviderConsumers, a.ProviderUUID, c.UUID)
		}
	}
	for _, key := range []UsageKey{
		{Project: c.ProjectID, Type: c.Type},
		{Project: c.ProjectID, User: c.UserID, Type: c.Type},
	} {
		t := s.Usage[key]
		if t == nil {
			t = &UsageTotals{Used: map[string]int64{}}
			s.Usage[key] = t
		}
		t.Consumers += int(sign)
		for _, a := range c.Allocations {
			t.Used[a.Class] += sign * a.Used
			if t.Used[a.Class] == 0 {
				delete(t.Used, a.Class)
			}
		}
		if t.Consumers == 0 {
			delete(s.Usage, key)
		}
	}
}
