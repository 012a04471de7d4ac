package state

import (
	"fmt"
	"math"
	"regexp"
	"time"
)

// Imports (`placementd import`) load a whole state, read from an export
// document or from a running upstream Placement, in a bounded number of
// log entries: each entry is an ImportChunk carrying many objects at once,
// with their uuids, names, identifiers and generations as the source had
// them.

// ImportChunk adds part of an imported state. The first chunk of an import
// (First) requires a store holding nothing but the standard classes and
// traits, or, with Replace, discards what the store holds. A chunk may refer
// to what earlier chunks, or itself, bring (a provider's parent, an
// inventory's class, an allocation's provider), in any order within it.
//
// Identifiers (provider, class and consumer type IDs) are kept when given
// and assigned in list order when zero. A zero creation time becomes the
// import's time; a provider's or consumer's zero update time becomes its
// creation time (what creating it would have set). The Next* counters,
// when given, raise the store's counters, so that a state exported from
// placementd keeps the identifiers its deleted objects used up.
type ImportChunk struct {
	First   bool `json:"First,omitempty"`
	Replace bool `json:"Replace,omitempty"`

	CustomClasses []ResourceClass `json:"CustomClasses,omitempty"`
	CustomTraits  []Trait         `json:"CustomTraits,omitempty"`
	ConsumerTypes []ConsumerType  `json:"ConsumerTypes,omitempty"`
	Providers     []ProviderImage `json:"Providers,omitempty"`
	Consumers     []ConsumerImage `json:"Consumers,omitempty"`

	NextProviderID     int64 `json:"NextProviderID,omitempty"`
	NextClassID        int   `json:"NextClassID,omitempty"`
	NextConsumerTypeID int   `json:"NextConsumerTypeID,omitempty"`
}

func (c *ImportChunk) Kind() string { return "import.chunk" }

// ImportResult counts what a chunk added.
type ImportResult struct {
	CustomClasses int `json:"custom_classes"`
	CustomTraits  int `json:"custom_traits"`
	ConsumerTypes int `json:"consumer_types"`
	Providers     int `json:"providers"`
	Consumers     int `json:"consumers"`
	Allocations   int `json:"allocations"`
}

// Contents counts what a store holds besides the standard classes and
// traits.
type Contents struct {
	Providers     int `json:"providers"`
	CustomClasses int `json:"custom_classes"`
	CustomTraits  int `json:"custom_traits"`
	ConsumerTypes int `json:"consumer_types"`
	Consumers     int `json:"consumers"`
}

// Empty reports whether there is nothing but the standard classes and
// traits.
func (c Contents) Empty() bool { return c == Contents{} }

func (c Contents) String() string {
	return fmt.Sprintf("%d resource providers, %d custom resource classes, %d custom traits, %d consumer types, %d consumers",
		c.Providers, c.CustomClasses, c.CustomTraits, c.ConsumerTypes, c.Consumers)
}

// Contents counts the store's objects.
func (s *Store) Contents() Contents {
	c := Contents{Providers: s.Providers.Len(), ConsumerTypes: s.ConsumerTypes.Len(), Consumers: s.Consumers.Len()}
	for rc := range s.Classes.Values() {
		if !rc.Standard() {
			c.CustomClasses++
		}
	}
	for t := range s.Traits.Values() {
		if !t.Standard {
			c.CustomTraits++
		}
	}
	return c
}

var (
	customNamePattern   = regexp.MustCompile(`^CUSTOM_[A-Z0-9_]+$`)
	consumerTypePattern = regexp.MustCompile(`^[A-Z0-9_]+$`)
	uuidPattern         = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)
)

func (c *ImportChunk) Apply(s *Store, m Meta) (any, error) {
	base := s
	if c.First && c.Replace {
		// Validate and build against an empty store, swapped in at the
		// end: a rejected chunk leaves the old state in place.
		base = New()
	} else if c.First {
		if got := s.Contents(); !got.Empty() {
			return nil, Conflictf(CodeDefault, "The state is not empty (%s): import into an empty cluster, or replace its state.", got)
		}
	}
	plan, err := c.plan(base)
	if err != nil {
		return nil, err
	}
	res := plan.apply(base, c, m)
	if base != s {
		s.replaceWith(base)
	}
	return res, nil
}

// replaceWith makes s hold fresh's state (LastIndex is the log's, kept).
func (s *Store) replaceWith(fresh *Store) {
	last := s.LastIndex
	*s = *fresh
	s.LastIndex = last
}

// importPlan is a validated chunk with every identifier decided.
type importPlan struct {
	classIDs    []int
	typeIDs     []int
	providerIDs []int64
	roots       map[string]string // provider uuid -> root uuid
	nextProv    int64
	nextClass   int
	nextType    int
}

func importError(format string, args ...any) *Error {
	return Errorf("Invalid import: "+format, args...)
}

// plan checks the whole chunk against s without changing anything: its
// classes, traits and consumer types, then its providers (each alone,
// then their trees, whose parents may come later in the chunk), then its
// consumers, which may refer to any of them.
func (c *ImportChunk) plan(s *Store) (*importPlan, error) {
	k := &importCheck{s: s, c: c,
		pl: &importPlan{nextProv: s.NextProviderID, nextClass: s.NextClassID, nextType: s.NextConsumerTypeID}}
	for _, step := range []func() error{k.classes, k.traits, k.consumerTypes, k.providers, k.trees, k.consumers} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	pl := k.pl
	pl.nextProv = max(pl.nextProv, c.NextProviderID)
	pl.nextClass = max(pl.nextClass, c.NextClassID)
	pl.nextType = max(pl.nextType, c.NextConsumerTypeID)
	return pl, nil
}

// importCheck is plan's work: the chunk's names and objects seen so far,
// which later ones may refer to and must not repeat.
type importCheck struct {
	s  *Store
	c  *ImportChunk
	pl *importPlan

	newClasses, newTraits, newTypes map[string]bool
	newProvs                        map[string]*ProviderImage
}

func (k *importCheck) classes() error {
	classIDs := map[int]bool{}
	for rc := range k.s.Classes.Values() {
		classIDs[rc.ID] = true
	}
	k.newClasses = map[string]bool{}
	for _, rc := range k.c.CustomClasses {
		if !customNamePattern.MatchString(rc.Name) || len(rc.Name) > 255 {
			return importError("resource class %q is not a valid custom class name.", rc.Name)
		}
		if k.s.Classes.Has(rc.Name) || k.newClasses[rc.Name] {
			return importError("resource class %s already exists.", rc.Name)
		}
		id := rc.ID
		if id == 0 {
			id = k.pl.nextClass
		}
		if id < MinCustomClassID || classIDs[id] {
			return importError("resource class %s: identifier %d is taken or below %d.", rc.Name, id, MinCustomClassID)
		}
		classIDs[id], k.newClasses[rc.Name] = true, true
		k.pl.classIDs = append(k.pl.classIDs, id)
		k.pl.nextClass = max(k.pl.nextClass, id+1)
	}
	return nil
}

func (k *importCheck) traits() error {
	k.newTraits = map[string]bool{}
	for _, t := range k.c.CustomTraits {
		if !customNamePattern.MatchString(t.Name) || len(t.Name) > 255 {
			return importError("trait %q is not a valid custom trait name.", t.Name)
		}
		if k.s.Traits.Has(t.Name) || k.newTraits[t.Name] {
			return importError("trait %s already exists.", t.Name)
		}
		k.newTraits[t.Name] = true
	}
	return nil
}

func (k *importCheck) consumerTypes() error {
	typeIDs := map[int]bool{}
	for ct := range k.s.ConsumerTypes.Values() {
		typeIDs[ct.ID] = true
	}
	k.newTypes = map[string]bool{}
	for _, ct := range k.c.ConsumerTypes {
		if !consumerTypePattern.MatchString(ct.Name) || len(ct.Name) > 255 {
			return importError("consumer type %q is not a valid consumer type name.", ct.Name)
		}
		if k.s.ConsumerTypes.Has(ct.Name) || k.newTypes[ct.Name] {
			return importError("consumer type %s already exists.", ct.Name)
		}
		id := ct.ID
		if id == 0 {
			id = k.pl.nextType
		}
		if id < 1 || typeIDs[id] {
			return importError("consumer type %s: identifier %d is taken or invalid.", ct.Name, id)
		}
		typeIDs[id], k.newTypes[ct.Name] = true, true
		k.pl.typeIDs = append(k.pl.typeIDs, id)
		k.pl.nextType = max(k.pl.nextType, id+1)
	}
	return nil
}

// providers checks each provider but its place in a tree (trees).
func (k *importCheck) providers() error {
	provIDs := map[int64]bool{}
	for p := range k.s.Providers.InOrder() {
		provIDs[p.ID] = true
	}
	k.newProvs = make(map[string]*ProviderImage, len(k.c.Providers))
	newNames := map[string]bool{}
	for i := range k.c.Providers {
		p := &k.c.Providers[i]
		if !uuidPattern.MatchString(p.UUID) {
			return importError("resource provider uuid %q is not a canonical uuid.", p.UUID)
		}
		if k.s.Providers.Get(p.UUID) != nil || k.newProvs[p.UUID] != nil {
			return importError("resource provider %s already exists.", p.UUID)
		}
		if p.Name == "" || len(p.Name) > 200 {
			return importError("resource provider %s: a name of 1 to 200 characters is required.", p.UUID)
		}
		if k.s.ProviderByName.Has(p.Name) || newNames[p.Name] {
			return importError("resource provider name %q is taken.", p.Name)
		}
		if p.Generation < 0 {
			return importError("resource provider %s: negative generation.", p.UUID)
		}
		id := p.ID
		if id == 0 {
			id = k.pl.nextProv
		}
		if id < 1 || provIDs[id] {
			return importError("resource provider %s: identifier %d is taken or invalid.", p.UUID, id)
		}
		provIDs[id], newNames[p.Name], k.newProvs[p.UUID] = true, true, p
		k.pl.providerIDs = append(k.pl.providerIDs, id)
		k.pl.nextProv = max(k.pl.nextProv, id+1)
		if err := k.providerContents(p); err != nil {
			return err
		}
	}
	return nil
}

// providerContents checks a provider's inventories, traits and
// aggregates.
func (k *importCheck) providerContents(p *ProviderImage) error {
	seen := map[string]bool{}
	for _, inv := range p.Inventories {
		if !k.s.Classes.Has(inv.Class) && !k.newClasses[inv.Class] {
			return importError("resource provider %s: inventory of unknown resource class %s.", p.UUID, inv.Class)
		}
		if seen[inv.Class] {
			return importError("resource provider %s: two inventories of %s.", p.UUID, inv.Class)
		}
		seen[inv.Class] = true
		if msg := checkImportedInventory(&inv.Inventory); msg != "" {
			return importError("resource provider %s: inventory of %s: %s.", p.UUID, inv.Class, msg)
		}
	}
	for _, t := range p.Traits {
		if !k.s.Traits.Has(t) && !k.newTraits[t] {
			return importError("resource provider %s: unknown trait %s.", p.UUID, t)
		}
	}
	// Aggregates are kept as the API accepted them (upstream's format
	// "uuid" lets through upper case and missing dashes), so only what
	// upstream's 36-character column could hold is checked.
	for _, a := range p.Aggregates {
		if a == "" || len(a) > 36 {
			return importError("resource provider %s: aggregate %q is not a uuid.", p.UUID, a)
		}
	}
	return nil
}

// trees finds each provider's root, through parents in the chunk or the
// store.
func (k *importCheck) trees() error {
	k.pl.roots = make(map[string]string, len(k.c.Providers))
	for i := range k.c.Providers {
		p := &k.c.Providers[i]
		root, msg := importRoot(k.s, k.newProvs, p.UUID)
		if msg != "" {
			return importError("resource provider %s: %s.", p.UUID, msg)
		}
		if p.RootUUID != "" && p.RootUUID != root {
			return importError("resource provider %s: root provider is %s, not %s.", p.UUID, root, p.RootUUID)
		}
		k.pl.roots[p.UUID] = root
	}
	return nil
}

func (k *importCheck) consumers() error {
	newConsumers := map[string]bool{}
	for i := range k.c.Consumers {
		con := &k.c.Consumers[i]
		if !uuidPattern.MatchString(con.UUID) {
			return importError("consumer uuid %q is not a canonical uuid.", con.UUID)
		}
		if k.s.Consumers.Has(con.UUID) || newConsumers[con.UUID] {
			return importError("consumer %s already exists.", con.UUID)
		}
		newConsumers[con.UUID] = true
		if con.ProjectID == "" || con.UserID == "" || len(con.ProjectID) > 255 || len(con.UserID) > 255 {
			return importError("consumer %s: a project and a user of 1 to 255 characters are required.", con.UUID)
		}
		if con.Type != "" && !k.s.ConsumerTypes.Has(con.Type) && !k.newTypes[con.Type] {
			return importError("consumer %s: unknown consumer type %s.", con.UUID, con.Type)
		}
		if con.Generation < 0 {
			return importError("consumer %s: negative generation.", con.UUID)
		}
		seen := map[usageSlot]bool{}
		for _, a := range con.Allocations {
			slot := usageSlot{a.ProviderUUID, a.Class}
			if seen[slot] {
				return importError("consumer %s: two allocations of %s on %s.", con.UUID, a.Class, a.ProviderUUID)
			}
			seen[slot] = true
			if a.Used < 1 || a.Used > MaxInt {
				return importError("consumer %s: allocation of %d %s.", con.UUID, a.Used, a.Class)
			}
			if !k.hasInventory(a.ProviderUUID, a.Class) {
				return importError("consumer %s: allocation of %s on %s, which has no such inventory.", con.UUID, a.Class, a.ProviderUUID)
			}
		}
	}
	return nil
}

// hasInventory reports whether a provider of the store or the chunk has
// an inventory of class.
func (k *importCheck) hasInventory(provider, class string) bool {
	if p := k.s.Providers.Get(provider); p != nil {
		return p.Inventories[class] != nil
	}
	if p := k.newProvs[provider]; p != nil {
		for _, inv := range p.Inventories {
			if inv.Class == class {
				return true
			}
		}
	}
	return false
}

// importRoot follows a provider's parents through the chunk and the store
// to its root; msg explains a missing parent or a loop.
func importRoot(s *Store, chunk map[string]*ProviderImage, uuid string) (root, msg string) {
	cur := uuid
	for steps := 0; steps <= len(chunk); steps++ {
		p := chunk[cur]
		if p == nil {
			// Reached the store, whose providers know their root.
			return s.Providers.Get(cur).RootUUID, ""
		}
		if p.ParentUUID == "" {
			return cur, ""
		}
		if chunk[p.ParentUUID] == nil && s.Providers.Get(p.ParentUUID) == nil {
			return "", fmt.Sprintf("parent provider %s does not exist", p.ParentUUID)
		}
		cur = p.ParentUUID
	}
	return "", "its parents form a loop"
}

// checkImportedInventory holds an inventory to upstream's schema bounds,
// which the rest of the state relies on (step_size divides, for one).
func checkImportedInventory(inv *Inventory) string {
	switch {
	case inv.Total < 0 || inv.Total > MaxInt || inv.Reserved < 0 || inv.Reserved > MaxInt:
		return "total or reserved out of range"
	case inv.MinUnit < 1 || inv.MinUnit > MaxInt || inv.MaxUnit < 1 || inv.MaxUnit > MaxInt:
		return "min_unit or max_unit out of range"
	case inv.StepSize < 1 || inv.StepSize > MaxInt:
		return "step_size out of range"
	case math.IsNaN(inv.AllocationRatio) || math.IsInf(inv.AllocationRatio, 0):
		return "allocation_ratio is not a number"
	}
	return ""
}

func orTime(t, dflt time.Time) time.Time {
	if t.IsZero() {
		return dflt
	}
	return t
}

// apply makes a validated chunk so.
func (pl *importPlan) apply(s *Store, c *ImportChunk, m Meta) ImportResult {
	var res ImportResult
	for i, rc := range c.CustomClasses {
		s.Classes = s.Classes.set(rc.Name, &ResourceClass{ID: pl.classIDs[i], Name: rc.Name, Created: orTime(rc.Created, m.Time), Updated: rc.Updated})
		res.CustomClasses++
	}
	for _, t := range c.CustomTraits {
		s.Traits = s.Traits.set(t.Name, &Trait{Name: t.Name, Created: orTime(t.Created, m.Time), Updated: t.Updated})
		res.CustomTraits++
	}
	for i, ct := range c.ConsumerTypes {
		s.ConsumerTypes = s.ConsumerTypes.set(ct.Name, &ConsumerType{ID: pl.typeIDs[i], Name: ct.Name, Created: orTime(ct.Created, m.Time), Updated: ct.Updated})
		res.ConsumerTypes++
	}
	for i := range c.Providers {
		pi := &c.Providers[i]
		created := orTime(pi.Created, m.Time)
		p := &Provider{
			ID: pl.providerIDs[i], UUID: pi.UUID, Name: pi.Name, Generation: pi.Generation,
			ParentUUID: pi.ParentUUID, RootUUID: pl.roots[pi.UUID],
			Created: created, Updated: orTime(pi.Updated, created),
			Inventories: make(map[string]*Inventory, len(pi.Inventories)),
			Traits:      map[string]bool{},
			Aggregates:  make(map[string]bool, len(pi.Aggregates)),
			Usages:      map[string]int64{},
		}
		for _, ii := range pi.Inventories {
			inv := ii.Inventory
			inv.Created = orTime(inv.Created, m.Time)
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
		s.putProvider(p)
		s.ProviderByName = s.ProviderByName.set(p.Name, p.UUID)
		res.Providers++
	}
	// Parents may have come after their children in the chunk: link the
	// tree once every provider is in.
	for i := range c.Providers {
		if pi := &c.Providers[i]; pi.ParentUUID != "" {
			s.Children = addToSet(s.Children, pi.ParentUUID, pi.UUID)
		}
	}
	for i := range c.Consumers {
		ci := &c.Consumers[i]
		con := ci.Consumer
		con.Created = orTime(con.Created, m.Time)
		con.Updated = orTime(con.Updated, con.Created)
		con.Allocations = append([]Allocation(nil), ci.Allocations...)
		s.sortAllocations(con.Allocations)
		s.internConsumer(&con)
		s.Consumers = s.Consumers.set(con.UUID, &con)
		s.indexConsumer(&con, +1)
		res.Consumers++
		res.Allocations += len(con.Allocations)
	}
	s.NextProviderID, s.NextClassID, s.NextConsumerTypeID = pl.nextProv, pl.nextClass, pl.nextType
	return res
}
