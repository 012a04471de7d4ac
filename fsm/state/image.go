package state

import (
	"fmt"
	"maps"
	"reflect"
	"sort"
	"time"

	"github.com/benbjohnson/immutable"
)

// Image is the whole state as plain, deterministically ordered data: what a
// snapshot stores and what a state digest is computed over. Indexes are not
// in it; Load rebuilds them.
type Image struct {
	LastIndex          uint64          `json:"LastIndex"`
	NextProviderID     int64           `json:"NextProviderID"`
	NextClassID        int             `json:"NextClassID"`
	NextConsumerTypeID int             `json:"NextConsumerTypeID"`
	Providers          []ProviderImage `json:"Providers"`     // by ID
	CustomClasses      []ResourceClass `json:"CustomClasses"` // by ID
	CustomTraits       []Trait         `json:"CustomTraits"`  // by name
	ConsumerTypes      []ConsumerType  `json:"ConsumerTypes"` // by ID
	Consumers          []*Consumer     `json:"Consumers"`     // by UUID
}

// ProviderImage is a provider without its derived usage index.
type ProviderImage struct {
	ID          int64            `json:"ID"`
	UUID        string           `json:"UUID"`
	Name        string           `json:"Name"`
	Generation  int64            `json:"Generation"`
	ParentUUID  string           `json:"ParentUUID,omitempty"`
	RootUUID    string           `json:"RootUUID"`
	Created     time.Time        `json:"Created"`
	Updated     time.Time        `json:"Updated"`
	Inventories []InventoryImage `json:"Inventories"` // by class name
	Traits      []string         `json:"Traits,omitempty"`
	Aggregates  []string         `json:"Aggregates,omitempty"`
}

// InventoryImage is one inventory record with its class.
type InventoryImage struct {
	Class string `json:"Class"`
	Inventory
}

// ConsumerImage is a consumer with its allocations.
type ConsumerImage struct {
	Consumer
}

// Image captures the store. It only reads the version, so it may run
// while later versions are being made.
func (s *Store) Image() *Image {
	img := &Image{
		LastIndex:          s.LastIndex,
		NextProviderID:     s.NextProviderID,
		NextClassID:        s.NextClassID,
		NextConsumerTypeID: s.NextConsumerTypeID,
	}
	// Providers with the same traits share one trait map (traitCache):
	// they share its sorted list here too, which nothing changes. A
	// fleet's hosts with the same 40 traits would otherwise hold a list
	// each, 64 MB at 100,000 of them, for as long as a snapshot is written.
	sortedTraits := map[*bool][]string{}
	if s.Providers.Len() > 0 {
		img.Providers = make([]ProviderImage, 0, s.Providers.Len())
	}
	for p := range s.Providers.InOrder() {
		pi := ProviderImage{
			ID: p.ID, UUID: p.UUID, Name: p.Name, Generation: p.Generation,
			ParentUUID: p.ParentUUID, RootUUID: p.RootUUID,
			Created: p.Created, Updated: p.Updated,
			Aggregates: SortedKeys(p.Aggregates),
		}
		if len(p.Traits) > 0 {
			id := traitMapID(p.Traits)
			if pi.Traits = sortedTraits[id]; pi.Traits == nil {
				pi.Traits = SortedKeys(p.Traits)
				sortedTraits[id] = pi.Traits
			}
		}
		for _, class := range SortedKeys(p.Inventories) {
			pi.Inventories = append(pi.Inventories, InventoryImage{Class: class, Inventory: *p.Inventories[class]})
		}
		img.Providers = append(img.Providers, pi)
	}
	for rc := range s.Classes.Values() {
		if !rc.Standard() {
			img.CustomClasses = append(img.CustomClasses, *rc)
		}
	}
	sort.Slice(img.CustomClasses, func(i, j int) bool { return img.CustomClasses[i].ID < img.CustomClasses[j].ID })
	for t := range s.Traits.Values() { // by name
		if !t.Standard {
			img.CustomTraits = append(img.CustomTraits, *t)
		}
	}
	for ct := range s.ConsumerTypes.Values() {
		img.ConsumerTypes = append(img.ConsumerTypes, *ct)
	}
	sort.Slice(img.ConsumerTypes, func(i, j int) bool { return img.ConsumerTypes[i].ID < img.ConsumerTypes[j].ID })
	// Consumers are shared, not copied: a version's consumers never
	// change. At a million consumers a copy would be a large part of a
	// second state in memory while a snapshot is written.
	if n := s.Consumers.Len(); n > 0 { // nil otherwise: "null" in the JSON, as always
		img.Consumers = make([]*Consumer, 0, n)
	}
	for c := range s.Consumers.Values() { // by uuid
		img.Consumers = append(img.Consumers, c)
	}
	return img
}

// Load builds a store from an image, rebuilding every index. It fills the
// maps in place (builders), not through a version per record. It takes
// the image's consumers as its own and may change them (their strings are
// interned): the image must be the caller's, as a decoded snapshot is, not
// one that shares its consumers with a version (Image's).
func Load(img *Image) (*Store, error) {
	s := New()
	s.LastIndex = img.LastIndex
	s.NextProviderID = img.NextProviderID
	s.NextClassID = img.NextClassID
	s.NextConsumerTypeID = img.NextConsumerTypeID
	for i := range img.CustomClasses {
		rc := img.CustomClasses[i]
		s.Classes = s.Classes.set(rc.Name, &rc)
	}
	for i := range img.CustomTraits {
		t := img.CustomTraits[i]
		s.Traits = s.Traits.set(t.Name, &t)
	}
	for i := range img.ConsumerTypes {
		ct := img.ConsumerTypes[i]
		s.ConsumerTypes = s.ConsumerTypes.set(ct.Name, &ct)
	}
	providers, err := s.loadProviders(img.Providers)
	if err != nil {
		return nil, err
	}
	if err := s.loadConsumers(img.Consumers, providers); err != nil {
		return nil, err
	}
	s.Providers = providers.done()
	return s, nil
}

// loadProviders builds the providers and their indexes (names, traits,
// aggregates, children). It returns the providers still being built:
// loadConsumers adds their usages.
func (s *Store) loadProviders(images []ProviderImage) (providerBuilder, error) {
	providers := newProviderBuilder()
	names := newMapBuilder[string, string]()
	aggIndex, children := indexBuilder{}, indexBuilder{}
	traitGroups := traitGroupBuilder{}
	for _, pi := range images {
		p := &Provider{
			ID: pi.ID, UUID: pi.UUID, Name: pi.Name, Generation: pi.Generation,
			ParentUUID: pi.ParentUUID, RootUUID: pi.RootUUID,
			Created: pi.Created, Updated: pi.Updated,
			Inventories: make(map[string]*Inventory, len(pi.Inventories)), Traits: map[string]bool{},
			Aggregates: make(map[string]bool, len(pi.Aggregates)), Usages: map[string]int64{},
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
			p.Traits = s.traitSets.share(want, s.traitName)
			traitGroups.add(p)
		}
		for _, a := range pi.Aggregates {
			a = intern(a)
			p.Aggregates[a] = true
			aggIndex.add(a, p.UUID)
		}
		providers.put(p)
		names.set(p.Name, p.UUID)
	}
	if providers.byID.len() != len(images) || providers.byUUID.Len() != len(images) {
		return providers, fmt.Errorf("state image: two providers share a uuid or an id")
	}
	for _, pi := range images {
		if pi.ParentUUID != "" {
			if providers.get(pi.ParentUUID) == nil {
				return providers, fmt.Errorf("state image: provider %s has unknown parent %s", pi.UUID, pi.ParentUUID)
			}
			children.add(pi.ParentUUID, pi.UUID)
		}
	}
	s.ProviderByName = names.done()
	s.TraitIndex, s.AggregateIndex, s.Children = traitGroups.done(), aggIndex.done(), children.done()
	return providers, nil
}

// loadConsumers takes the image's consumers, adds their allocations to
// their providers' usages and builds the consumer indexes and usage
// totals.
func (s *Store) loadConsumers(images []*Consumer, providers providerBuilder) error {
	// The store takes the image's consumers as they are, not copies: a
	// restore's image is its own, and copying a million consumers would
	// add half as much again to the memory a restore peaks at. Interning
	// only replaces their strings with equal ones. The indexes are summed
	// here as indexConsumer would, in place.
	consumers := newMapBuilder[string, *Consumer]()
	provConsumers := indexBuilder{}
	usage := map[UsageKey]*UsageTotals{}
	// Each allocation's provider is looked up once (the last one is kept:
	// a consumer's allocations are mostly on one provider) and its class
	// name through a map of the few classes in use, not the class tree.
	var last *Provider
	classNames := map[string]string{}
	for _, c := range images {
		if c == nil {
			return fmt.Errorf("state image: a consumer is null")
		}
		if cap(c.Allocations) != len(c.Allocations) {
			c.Allocations = append([]Allocation(nil), c.Allocations...)
		}
		c.ProjectID, c.UserID, c.Type = intern(c.ProjectID), intern(c.UserID), intern(c.Type)
		for i := range c.Allocations {
			a := &c.Allocations[i]
			if last == nil || last.UUID != a.ProviderUUID {
				if last = providers.get(a.ProviderUUID); last == nil {
					return fmt.Errorf("state image: consumer %s allocates from unknown provider %s", c.UUID, a.ProviderUUID)
				}
			}
			a.ProviderUUID = last.UUID
			name, ok := classNames[a.Class]
			if !ok {
				name = a.Class
				if rc := s.Classes.Get(a.Class); rc != nil {
					name = rc.Name
				}
				classNames[a.Class] = name
			}
			a.Class = name
			addUsage(last.Usages, a.Class, a.Used)
			if i == 0 || c.Allocations[i-1].ProviderUUID != last.UUID {
				provConsumers.add(last.UUID, c.UUID)
			}
		}
		consumers.set(c.UUID, c)
		if len(c.Allocations) == 0 {
			continue
		}
		for _, key := range usageKeys(c) {
			t := usage[key]
			if t == nil {
				t = &UsageTotals{Used: map[string]int64{}}
				usage[key] = t
			}
			t.Consumers++
			for _, a := range c.Allocations {
				addUsage(t.Used, a.Class, a.Used)
			}
		}
	}
	usageMap := immutable.NewMapBuilder[UsageKey, *UsageTotals](seedHasher[UsageKey]{})
	for k, t := range usage {
		usageMap.Set(k, t) // the order of insertion decides nothing
	}
	s.Consumers, s.ProviderConsumers, s.Usage = consumers.done(), provConsumers.done(), HashMap[UsageKey, *UsageTotals]{usageMap.Map()}
	return nil
}

// traitGroupBuilder builds the trait index from the providers grouped by
// their trait set. Providers with the same traits share one trait map
// (traitCache), so traits held by exactly the same groups have equal
// provider sets: they get one Set between them. A rack of identical hosts
// with 40 traits then costs one set of hosts, not 40.
type traitGroupBuilder struct {
	groups []*traitGroup
	byMap  map[*bool]*traitGroup // by the shared trait map's identity
}

type traitGroup struct {
	traits  map[string]bool
	members []string
}

func (b *traitGroupBuilder) add(p *Provider) {
	// Maps are not comparable; the shared map's identity is that of one
	// of its values.
	id := traitMapID(p.Traits)
	g := b.byMap[id]
	if g == nil {
		g = &traitGroup{traits: p.Traits}
		b.groups = append(b.groups, g)
		if b.byMap == nil {
			b.byMap = map[*bool]*traitGroup{}
		}
		b.byMap[id] = g
	}
	g.members = append(g.members, p.UUID)
}

// traitMapID identifies a shared trait map (see traitGroupBuilder).
func traitMapID(m map[string]bool) *bool {
	return (*bool)(reflect.ValueOf(m).UnsafePointer())
}

func (b *traitGroupBuilder) done() Index {
	// Each trait's signature: the groups holding it, in group order.
	sigs := map[string][]int{}
	for gi, g := range b.groups {
		for t := range g.traits {
			sigs[t] = append(sigs[t], gi)
		}
	}
	bySig := map[string]Set{}
	out := newMapBuilder[string, Set]()
	for _, t := range SortedKeys(sigs) {
		key := fmt.Sprint(sigs[t])
		set, ok := bySig[key]
		if !ok {
			members := immutable.NewSortedMapBuilder[string, struct{}](stringOrder{})
			for _, gi := range sigs[t] {
				for _, u := range b.groups[gi].members {
					members.Set(u, struct{}{})
				}
			}
			set = Set{Map[string, struct{}]{members.Map()}}
			bySig[key] = set
		}
		out.set(t, set)
	}
	return out.done()
}

// usageKeys are the project usage index entries a consumer counts in.
func usageKeys(c *Consumer) [2]UsageKey {
	return [2]UsageKey{
		{Project: c.ProjectID, Type: c.Type},
		{Project: c.ProjectID, User: c.UserID, Type: c.Type},
	}
}

// addUsage adds n to used[class], dropping the entry when it reaches 0.
func addUsage(used map[string]int64, class string, n int64) {
	if used[class] += n; used[class] == 0 {
		delete(used, class)
	}
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
		p := s.editProvider(s.Providers.Get(a.ProviderUUID))
		addUsage(p.Usages, a.Class, sign*a.Used)
		if sign > 0 {
			s.ProviderConsumers = addToSet(s.ProviderConsumers, a.ProviderUUID, c.UUID)
		} else {
			s.ProviderConsumers = removeFromSet(s.ProviderConsumers, a.ProviderUUID, c.UUID)
		}
	}
	for _, key := range usageKeys(c) {
		t := s.editUsage(key)
		t.Consumers += int(sign)
		for _, a := range c.Allocations {
			addUsage(t.Used, a.Class, sign*a.Used)
		}
		if t.Consumers == 0 {
			s.Usage = s.Usage.delete(key)
		}
	}
}

// editUsage returns the totals under k (new ones if there are none) as a
// copy the current command may change in place, as editProvider does for
// providers.
func (s *Store) editUsage(k UsageKey) *UsageTotals {
	e := s.edit()
	cur := s.Usage.Get(k)
	if q := e.usage[k]; q != nil && q == cur {
		return q
	}
	q := &UsageTotals{Used: map[string]int64{}}
	if cur != nil {
		q.Consumers, q.Used = cur.Consumers, maps.Clone(cur.Used)
	}
	s.Usage = s.Usage.set(k, q)
	if e.usage == nil {
		e.usage = map[UsageKey]*UsageTotals{}
	}
	e.usage[k] = q
	return q
}

// Assemble returns a version holding the standard classes and traits, the
// given custom classes and traits and exactly the given providers, their
// records taken as they are (usages included: there are no consumers) and
// indexed as Load indexes them. It is for tests and tools that lay out a
// state directly rather than through commands; the records must not be
// changed once the version is read.
func Assemble(classes []*ResourceClass, traits []*Trait, providers []*Provider) *Store {
	s := New()
	for _, rc := range classes {
		s.Classes = s.Classes.set(rc.Name, rc)
		s.NextClassID = max(s.NextClassID, rc.ID+1)
	}
	for _, t := range traits {
		s.Traits = s.Traits.set(t.Name, t)
	}
	b := newProviderBuilder()
	names := newMapBuilder[string, string]()
	traitIndex, aggIndex, children := indexBuilder{}, indexBuilder{}, indexBuilder{}
	for _, p := range providers {
		b.put(p)
		names.set(p.Name, p.UUID)
		for t := range p.Traits {
			traitIndex.add(t, p.UUID)
		}
		for a := range p.Aggregates {
			aggIndex.add(a, p.UUID)
		}
		if p.ParentUUID != "" {
			children.add(p.ParentUUID, p.UUID)
		}
		s.NextProviderID = max(s.NextProviderID, p.ID+1)
	}
	s.Providers, s.ProviderByName = b.done(), names.done()
	s.TraitIndex, s.AggregateIndex, s.Children = traitIndex.done(), aggIndex.done(), children.done()
	return s
}
