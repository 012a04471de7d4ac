package state

import (
	_ "embed"
	"sort"
	"strings"
	"time"
	"unique"
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
	Total           int64
	Reserved        int64
	MinUnit         int64
	MaxUnit         int64
	StepSize        int64
	AllocationRatio float64
	Created         time.Time
	Updated         time.Time
}

// Capacity is what may be allocated in all: (total - reserved) * ratio,
// truncated as upstream's SQL does.
func (inv *Inventory) Capacity() int64 {
	return int64(float64(inv.Total-inv.Reserved) * inv.AllocationRatio)
}

// ResourceClass is a standard or CUSTOM_ class.
type ResourceClass struct {
	ID      int
	Name    string
	Created time.Time
	Updated time.Time
}

// Standard reports whether the class is one of os-resource-classes.
func (rc *ResourceClass) Standard() bool { return rc.ID < MinCustomClassID }

// Trait is a standard or CUSTOM_ trait.
type Trait struct {
	Name     string
	Standard bool
	Created  time.Time
	Updated  time.Time
}

// ConsumerType names a kind of consumer (INSTANCE, MIGRATION, ...).
type ConsumerType struct {
	ID      int
	Name    string
	Created time.Time
	Updated time.Time
}

// UnknownConsumerType is how a consumer without a type is reported.
const UnknownConsumerType = "unknown"

// Consumer owns allocations.
type Consumer struct {
	UUID       string
	ProjectID  string
	UserID     string
	Type       string // "" when the consumer has no type (reported as unknown)
	Generation int64
	Created    time.Time
	// Updated is when the consumer's allocations were last written: every
	// write replaces all of them, as upstream's, so it is also each
	// allocation's creation time (what Last-Modified reports).
	Updated time.Time
	// Allocations in a deterministic order (provider ID, then class).
	Allocations []Allocation
}

// Allocation is an amount of one class a consumer holds on one provider.
// It has no timestamps of its own: a million consumers' allocations are
// most of a large cloud's memory, and their time is the consumer's Updated.
type Allocation struct {
	ProviderUUID string
	Class        string
	Used         int64
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

// Store is the whole placement state with its indexes.
type Store struct {
	Providers      map[string]*Provider // by uuid
	ProviderByName map[string]string    // name -> uuid
	Children       map[string]map[string]bool
	AggregateIndex map[string]map[string]bool // aggregate -> provider uuids
	TraitIndex     map[string]map[string]bool // trait -> provider uuids
	// ProviderConsumers lists the consumers holding allocations on each
	// provider.
	ProviderConsumers map[string]map[string]bool

	Classes       map[string]*ResourceClass
	Traits        map[string]*Trait
	ConsumerTypes map[string]*ConsumerType
	Consumers     map[string]*Consumer
	Usage         map[UsageKey]*UsageTotals

	NextProviderID     int64
	NextClassID        int
	NextConsumerTypeID int
	// LastIndex is the Raft index of the last command applied.
	LastIndex uint64

	// traitSets holds the trait sets providers share, by their sorted
	// names (see setTraits).
	traitSets map[string]*sharedTraits

	// order caches the providers in ID order for searches (see
	// candidate_index.go); it is rebuilt by readers, never by writes.
	order orderCache
}

// New returns a store holding only the standard resource classes and traits.
// Their timestamps are the zero time: they exist from the beginning.
func New() *Store {
	s := &Store{
		Providers:          map[string]*Provider{},
		ProviderByName:     map[string]string{},
		Children:           map[string]map[string]bool{},
		AggregateIndex:     map[string]map[string]bool{},
		TraitIndex:         map[string]map[string]bool{},
		ProviderConsumers:  map[string]map[string]bool{},
		Classes:            map[string]*ResourceClass{},
		Traits:             map[string]*Trait{},
		ConsumerTypes:      map[string]*ConsumerType{},
		Consumers:          map[string]*Consumer{},
		Usage:              map[UsageKey]*UsageTotals{},
		NextProviderID:     1,
		NextClassID:        MinCustomClassID,
		NextConsumerTypeID: 1,
	}
	for i, name := range StandardResourceClasses {
		s.Classes[name] = &ResourceClass{ID: i, Name: name}
	}
	for _, name := range StandardTraits {
		s.Traits[name] = &Trait{Name: name, Standard: true}
	}
	return s
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

var commandKinds = map[string]func() Command{}

// RegisterCommand makes a command kind decodable from the log. Each command
// family registers its kinds from an init function in its own file.
func RegisterCommand(newCmd func() Command) {
	kind := newCmd().Kind()
	if _, dup := commandKinds[kind]; dup {
		panic("state: command kind registered twice: " + kind)
	}
	commandKinds[kind] = newCmd
}

// NewCommand returns an empty command of the given kind, or nil if the kind
// is unknown.
func NewCommand(kind string) Command {
	if f := commandKinds[kind]; f != nil {
		return f()
	}
	return nil
}

// CommandKinds lists every registered kind, sorted.
func CommandKinds() []string {
	out := make([]string, 0, len(commandKinds))
	for k := range commandKinds {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// setTraits gives p exactly the traits in want (names of known traits),
// keeping TraitIndex in step, and reports whether they changed.
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
			removeFromSet(s.TraitIndex, t, p.UUID)
			changed = true
		}
	}
	for t := range want {
		if !p.Traits[t] {
			addToSet(s.TraitIndex, s.traitName(t), p.UUID)
			changed = true
		}
	}
	if changed {
		s.releaseTraits(p.Traits)
		p.Traits = s.shareTraits(want)
	}
	return changed
}

// traitName is the trait's own copy of its name, so that indexes and
// sets do not each keep the copy decoded from a command or a snapshot.
func (s *Store) traitName(name string) string {
	if t := s.Traits[name]; t != nil {
		return t.Name
	}
	return name
}

// sharedTraits is one trait set and how many providers hold it.
type sharedTraits struct {
	traits    map[string]bool
	providers int
}

func traitSetKey(set map[string]bool) string {
	return strings.Join(SortedKeys(set), "\x00")
}

// shareTraits returns the shared map holding exactly the names in want.
func (s *Store) shareTraits(want map[string]bool) map[string]bool {
	if len(want) == 0 {
		return map[string]bool{}
	}
	key := traitSetKey(want)
	st := s.traitSets[key]
	if st == nil {
		st = &sharedTraits{traits: make(map[string]bool, len(want))}
		for t := range want {
			st.traits[s.traitName(t)] = true
		}
		if s.traitSets == nil {
			s.traitSets = map[string]*sharedTraits{}
		}
		s.traitSets[key] = st
	}
	st.providers++
	return st.traits
}

// releaseTraits counts one provider fewer holding set, forgetting the set
// when none does. The count only decides what is kept for sharing: a set
// is never changed, so a miscount could cost memory, never correctness.
func (s *Store) releaseTraits(set map[string]bool) {
	if len(set) == 0 {
		return
	}
	key := traitSetKey(set)
	if st := s.traitSets[key]; st != nil {
		if st.providers--; st.providers <= 0 {
			delete(s.traitSets, key)
		}
	}
}

// addProviderAggregate puts p in aggregate a, sharing one copy of the
// aggregate's uuid among its members (see traitName).
func (s *Store) addProviderAggregate(p *Provider, a string) {
	a = intern(a)
	p.Aggregates[a] = true
	addToSet(s.AggregateIndex, a, p.UUID)
}

// addToSet adds member to the set stored under key in index.
func addToSet(index map[string]map[string]bool, key, member string) {
	set := index[key]
	if set == nil {
		set = map[string]bool{}
		index[key] = set
	}
	set[member] = true
}

// removeFromSet removes member from the set under key, dropping empty sets.
func removeFromSet(index map[string]map[string]bool, key, member string) {
	if set := index[key]; set != nil {
		delete(set, member)
		if len(set) == 0 {
			delete(index, key)
		}
	}
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
		if p := s.Providers[a.ProviderUUID]; p != nil {
			a.ProviderUUID = p.UUID
		}
		if rc := s.Classes[a.Class]; rc != nil {
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
