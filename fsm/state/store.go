package state

import (
	_ "embed"
	"maps"
	"sort"
	"strings"
	"time"
	"unique"

	"github.com/benbjohnson/immutable"
)

// MinCustomClassID is the first identifier given to a CUSTOM_ resource
// class; standard classes are numbered from 0 in file order, as upstream.
const MinCustomClassID = 10000

//go:embed standard_resource_classes.txt
var standardClassesText string

//go:embed standard_traits.txt
var standardTraitsText string

// StandardResourceClasses is the os-resource-classes list placementd knows.
var StandardResourceClasses = lines(standardClassesText)

// StandardTraits is the os-traits list placementd knows.
var StandardTraits = lines(standardTraitsText)

func lines(text string) []string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// Provider is a resource provider.
type Provider struct {
	ID         int64 // creation order: listings are in this order, as upstream's id
	UUID       string
	Name       string
	Generation int64
	ParentUUID string // "" for a root
	RootUUID   string
	Created    time.Time
	Updated    time.Time

	Inventories map[string]*Inventory // by resource class name
	Traits      map[string]bool
	Aggregates  map[string]bool
	// Usages is the sum of allocations against this provider per class, an
	// index kept by every allocation change.
	Usages map[string]int64
}

// Inventory is one resource class's inventory on a provider.
type Inventory struct {
	Total           int64     `json:"Total"`
	Reserved        int64     `json:"Reserved"`
	MinUnit         int64     `json:"MinUnit"`
	MaxUnit         int64     `json:"MaxUnit"`
	StepSize        int64     `json:"StepSize"`
	AllocationRatio float64   `json:"AllocationRatio"`
	Created         time.Time `json:"Created"`
	Updated         time.Time `json:"Updated"`
}

// Capacity is what may be allocated in all: (total - reserved) * ratio,
// truncated as upstream's SQL does.
func (inv *Inventory) Capacity() int64 {
	return int64(float64(inv.Total-inv.Reserved) * inv.AllocationRatio)
}

// ResourceClass is a standard or CUSTOM_ class.
type ResourceClass struct {
	ID      int       `json:"ID"`
	Name    string    `json:"Name"`
	Created time.Time `json:"Created"`
	Updated time.Time `json:"Updated"`
}

// Standard reports whether the class is one of os-resource-classes.
func (rc *ResourceClass) Standard() bool { return rc.ID < MinCustomClassID }

// Trait is a standard or CUSTOM_ trait.
type Trait struct {
	Name     string    `json:"Name"`
	Standard bool      `json:"Standard"`
	Created  time.Time `json:"Created"`
	Updated  time.Time `json:"Updated"`
}

// ConsumerType names a kind of consumer (INSTANCE, MIGRATION, ...).
type ConsumerType struct {
	ID      int       `json:"ID"`
	Name    string    `json:"Name"`
	Created time.Time `json:"Created"`
	Updated time.Time `json:"Updated"`
}

// UnknownConsumerType is how a consumer without a type is reported.
const UnknownConsumerType = "unknown"

// Consumer owns allocations.
type Consumer struct {
	UUID       string    `json:"UUID"`
	ProjectID  string    `json:"ProjectID"`
	UserID     string    `json:"UserID"`
	Type       string    `json:"Type"` // "" when the consumer has no type (reported as unknown)
	Generation int64     `json:"Generation"`
	Created    time.Time `json:"Created"`
	// Updated is when the consumer's allocations were last written: every
	// write replaces all of them, as upstream's, so it is also each
	// allocation's creation time (what Last-Modified reports).
	Updated time.Time `json:"Updated"`
	// Allocations in the order of the write that set them (upstream's
	// row order, what GET /allocations/{consumer} shows). Consumers
	// written by builds before that order was kept, or imported, hold them
	// by provider creation order, then class.
	Allocations []Allocation `json:"Allocations"`
}

// Allocation is an amount of one class a consumer holds on one provider.
// It has no timestamps of its own: a million consumers' allocations are
// most of a large cloud's memory, and their time is the consumer's Updated.
type Allocation struct {
	ProviderUUID string `json:"ProviderUUID"`
	Class        string `json:"Class"`
	Used         int64  `json:"Used"`
}

// UsageKey addresses one entry of the project usage index. User "" holds a
// whole project's totals; Type "" is the unknown consumer type.
type UsageKey struct {
	Project string
	User    string
	Type    string
}

// UsageTotals sums the allocations of the consumers under one UsageKey.
type UsageTotals struct {
	Consumers int
	Used      map[string]int64
}

// Store is one version of the whole placement state with its indexes.
//
// A published version never changes: every map in it is persistent
// (pmap.go) and every record reachable from it (providers, inventories,
// trait and aggregate sets, consumers, usage totals) is replaced, not
// changed, by a write. The writer applies commands to a copy of the
// version struct (Edit, Apply) and publishes the result as the next
// version; readers may hold a version as long as they like.
type Store struct {
	Providers      ProviderMap
	ProviderByName Map[string, string] // name -> uuid
	Children       Index               // provider -> child uuids
	AggregateIndex Index               // aggregate -> provider uuids
	TraitIndex     Index               // trait -> provider uuids
	// ProviderConsumers lists the consumers holding allocations on each
	// provider.
	ProviderConsumers Index

	Classes       Map[string, *ResourceClass]
	Traits        Map[string, *Trait]
	ConsumerTypes Map[string, *ConsumerType]
	Consumers     Map[string, *Consumer]
	Usage         HashMap[UsageKey, *UsageTotals] // in no particular order

	NextProviderID     int64
	NextClassID        int
	NextConsumerTypeID int
	// LastIndex is the Raft index of the last command applied.
	LastIndex uint64

	// traitSets holds the trait sets providers share (see setTraits). It
	// is the writer's cache, shared by the versions of one lineage and
	// never read by readers.
	traitSets *traitCache

	// order keeps the version's providers in ID order once a search has
	// listed them all (ProvidersInOrder).
	order *orderCache

	// edits holds the records the command being applied has copied and
	// may still change in place; nil outside Apply (always in a published
	// version).
	edits *edits
}

// edits are the copies one command made: no reader has seen them yet.
type edits struct {
	providers map[string]*Provider
	usage     map[UsageKey]*UsageTotals
	sets      map[setChange]Set // see changeTraitSet
}

// New returns a store holding only the standard resource classes and traits.
// Their timestamps are the zero time: they exist from the beginning.
func New() *Store {
	return &Store{
		Classes:            standardClasses,
		Traits:             standardTraits,
		NextProviderID:     1,
		NextClassID:        MinCustomClassID,
		NextConsumerTypeID: 1,
		traitSets:          &traitCache{},
		order:              &orderCache{},
	}
}

// The standard classes and traits, built once: maps are persistent, so
// every new store can start from the same ones.
var standardClasses, standardTraits = func() (Map[string, *ResourceClass], Map[string, *Trait]) {
	classes := newMapBuilder[string, *ResourceClass]()
	for i, name := range StandardResourceClasses {
		classes.set(name, &ResourceClass{ID: i, Name: name})
	}
	traits := newMapBuilder[string, *Trait]()
	for _, name := range StandardTraits {
		traits.set(name, &Trait{Name: name, Standard: true})
	}
	return classes.done(), traits.done()
}()

// Edit returns a copy of the version for a writer to apply commands to
// (Apply); s is left as it is and may still be read.
func (s *Store) Edit() *Store {
	e := *s
	e.edits = nil
	e.order = &orderCache{}
	return &e
}

// Apply applies cmd to a store being edited. A rejected command leaves the
// store exactly as it was: the version struct is restored from a copy
// taken before (the maps it points to are persistent, so the copy is the
// whole state), whatever the command did before it failed.
func (s *Store) Apply(cmd Command, m Meta) (any, error) {
	saved := *s
	s.edits = &edits{}
	v, err := cmd.Apply(s, m)
	s.edits = nil
	if err != nil {
		*s = saved
	}
	return v, err
}

// editProvider returns a copy of p that the current command may change in
// place, stored in the providers in p's stead: the first call of a command
// copies p (its own fields and its inventory, aggregate and usage maps;
// the trait set is shared and only ever replaced), later calls of the same
// command return that copy.
func (s *Store) editProvider(p *Provider) *Provider {
	e := s.edit()
	if q := e.providers[p.UUID]; q != nil {
		return q
	}
	q := *p
	q.Inventories = maps.Clone(p.Inventories)
	q.Aggregates = maps.Clone(p.Aggregates)
	q.Usages = maps.Clone(p.Usages)
	s.putProvider(&q)
	return &q
}

// putProvider stores a provider the current command made or copied.
func (s *Store) putProvider(p *Provider) {
	s.Providers = s.Providers.put(p)
	e := s.edit()
	if e.providers == nil {
		e.providers = map[string]*Provider{}
	}
	e.providers[p.UUID] = p
}

// edit returns the current command's copies. A command applied other
// than through Apply (a test's) starts them here; they then last until
// the next Apply, as if the commands were one.
func (s *Store) edit() *edits {
	if s.edits == nil {
		s.edits = &edits{}
	}
	return s.edits
}

// Meta is what the proposing node fixed for a command: the time it counts
// as happening at. Index is the Raft log index it was applied at.
type Meta struct {
	Index uint64
	Time  time.Time
}

// Command is one replicated change. Apply runs inside the state machine and
// must be deterministic; it returns a result value or an *Error, and changes
// nothing when it returns an error.
type Command interface {
	Kind() string
	Apply(s *Store, m Meta) (any, error)
}

// setTraits gives p exactly the traits in want (names of known traits),
// keeping TraitIndex in step, and reports whether they changed. p must be
// the current command's copy (editProvider) or a new provider.
//
// A provider's Traits map is never changed in place: it is replaced, and
// providers with the same traits share one map. A large cloud's providers
// carry dozens of traits each, and racks of identical hosts carry the same
// ones; a map each was a fifth of the state's memory at 100k providers.
// An empty set is each provider's own, as CreateProvider makes it.
func (s *Store) setTraits(p *Provider, want map[string]bool) bool {
	changed := false
	for t := range p.Traits {
		if !want[t] {
			s.TraitIndex = s.changeTraitSet(t, p.UUID, false)
			changed = true
		}
	}
	for t := range want {
		if !p.Traits[t] {
			s.TraitIndex = s.changeTraitSet(s.traitName(t), p.UUID, true)
			changed = true
		}
	}
	if changed {
		s.traitSets.release(p.Traits)
		p.Traits = s.traitSets.share(want, s.traitName)
	}
	return changed
}

// setChange is a change of one set: a member added to or removed from the
// set with that root.
type setChange struct {
	from   *immutable.SortedMap[string, struct{}]
	member string
	add    bool
}

// changeTraitSet returns the trait index with provider added to (or
// removed from) the trait's set. Traits held by the same providers have
// one set between them (Load makes them so), and a provider gains or
// loses its traits in one command: the command remembers what each change
// gave and hands the same result to every trait whose set was the same,
// so that they go on sharing one set instead of a copy each.
func (s *Store) changeTraitSet(trait, provider string, add bool) Index {
	set := s.TraitIndex.Get(trait)
	if set.Has(provider) == add {
		return s.TraitIndex
	}
	e := s.edit()
	ch := setChange{set.m.m, provider, add}
	next, ok := e.sets[ch]
	if !ok {
		if add {
			next = set.add(provider)
		} else {
			next = set.remove(provider)
		}
		if e.sets == nil {
			e.sets = map[setChange]Set{}
		}
		e.sets[ch] = next
	}
	if next.Len() == 0 {
		return s.TraitIndex.delete(trait)
	}
	return s.TraitIndex.set(trait, next)
}

// traitName is the trait's own copy of its name, so that indexes and
// sets do not each keep the copy decoded from a command or a snapshot.
func (s *Store) traitName(name string) string {
	if t := s.Traits.Get(name); t != nil {
		return t.Name
	}
	return name
}

// traitCache holds the trait sets providers share, by their sorted names,
// with how many providers hold each. Only the writer uses it.
type traitCache struct {
	sets map[string]*sharedTraits
}

// sharedTraits is one trait set and how many providers hold it.
type sharedTraits struct {
	traits    map[string]bool
	providers int
}

func traitSetKey(set map[string]bool) string {
	return strings.Join(SortedKeys(set), "\x00")
}

// share returns the shared map holding exactly the names in want; name
// gives the canonical copy of a name.
func (c *traitCache) share(want map[string]bool, name func(string) string) map[string]bool {
	if len(want) == 0 {
		return map[string]bool{}
	}
	key := traitSetKey(want)
	st := c.sets[key]
	if st == nil {
		st = &sharedTraits{traits: make(map[string]bool, len(want))}
		for t := range want {
			st.traits[name(t)] = true
		}
		if c.sets == nil {
			c.sets = map[string]*sharedTraits{}
		}
		c.sets[key] = st
	}
	st.providers++
	return st.traits
}

// release counts one provider fewer holding set, forgetting the set when
// none does. The count only decides what is kept for sharing: a set is
// never changed, so a miscount (a rejected command's, say) could cost
// memory, never correctness.
func (c *traitCache) release(set map[string]bool) {
	if len(set) == 0 {
		return
	}
	key := traitSetKey(set)
	if st := c.sets[key]; st != nil {
		if st.providers--; st.providers <= 0 {
			delete(c.sets, key)
		}
	}
}

// addProviderAggregate puts p (the current command's copy, or a new
// provider) in aggregate a, sharing one copy of the aggregate's uuid
// among its members (see traitName).
func (s *Store) addProviderAggregate(p *Provider, a string) {
	a = intern(a)
	p.Aggregates[a] = true
	s.AggregateIndex = addToSet(s.AggregateIndex, a, p.UUID)
}

// intern returns the canonical copy of s. A million consumers name a few
// thousand projects and users; each consumer would otherwise hold its own
// copy of the strings, as decoded from its log entry. unique keeps one copy
// per value for as long as it is in use.
func intern(s string) string {
	if s == "" {
		return ""
	}
	return unique.Make(s).Value()
}

// internConsumer makes c's strings the canonical copies: its project,
// user and type interned, its allocations' provider uuids and classes the
// providers' and classes' own strings. c.Allocations must be c's own (not
// yet stored) slice.
func (s *Store) internConsumer(c *Consumer) {
	c.ProjectID, c.UserID, c.Type = intern(c.ProjectID), intern(c.UserID), intern(c.Type)
	for i := range c.Allocations {
		a := &c.Allocations[i]
		if p := s.Providers.Get(a.ProviderUUID); p != nil {
			a.ProviderUUID = p.UUID
		}
		if rc := s.Classes.Get(a.Class); rc != nil {
			a.Class = rc.Name
		}
	}
}

// SortedKeys returns a set's or map's keys in sorted order.
func SortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
