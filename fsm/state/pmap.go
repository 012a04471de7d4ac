package state

import (
	"hash/maphash"
	"iter"
	"strings"
	"weak"

	"github.com/benbjohnson/immutable"
)

// The store's maps and index sets are persistent: a change returns a new
// map sharing all but the changed path with the old one, which stays as it
// was. That is what lets a version of the state be read while later
// commands build the next one (see doc.go). The structures are
// github.com/benbjohnson/immutable's: its B+tree SortedMap for everything
// iterated (deterministic, key order, ~30 bytes an entry), and its hash
// trie Map for the provider lookups by uuid that searches make by the
// thousand (several times faster than a B+tree of uuid strings) and for
// the project usage totals, whose keys are large (cheaper to change).

// Map is a persistent map in key order. The zero Map is empty. Only this
// package changes maps (set, delete), and a change never shows in the map
// it was made on.
type Map[K any, V any] struct{ m *immutable.SortedMap[K, V] }

// Len is the number of entries.
func (m Map[K, V]) Len() int {
	if m.m == nil {
		return 0
	}
	return m.m.Len()
}

// Get returns the value under k, or V's zero value.
func (m Map[K, V]) Get(k K) V {
	v, _ := m.Lookup(k)
	return v
}

// Lookup returns the value under k and whether there is one.
func (m Map[K, V]) Lookup(k K) (V, bool) {
	if m.m == nil {
		var zero V
		return zero, false
	}
	return m.m.Get(k)
}

// Has reports whether k has an entry.
func (m Map[K, V]) Has(k K) bool {
	_, ok := m.Lookup(k)
	return ok
}

// Identity is comparable, and equal for two maps only if they hold the
// same entries: a change makes a new map. It keeps the map's entries
// alive no longer than the map (a weak reference), for caches of facts
// derived from a map.
func (m Map[K, V]) Identity() any { return weak.Make(m.m) }

// All yields the entries in key order.
func (m Map[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.m == nil {
			return
		}
		for it := m.m.Iterator(); !it.Done(); {
			k, v, _ := it.Next()
			if !yield(k, v) {
				return
			}
		}
	}
}

// Keys yields the keys in order.
func (m Map[K, V]) Keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		if m.m == nil {
			return
		}
		for it := m.m.Iterator(); !it.Done(); {
			if k, _, _ := it.Next(); !yield(k) {
				return
			}
		}
	}
}

// Values yields the values in key order.
func (m Map[K, V]) Values() iter.Seq[V] {
	return func(yield func(V) bool) {
		if m.m == nil {
			return
		}
		for it := m.m.Iterator(); !it.Done(); {
			if _, v, _ := it.Next(); !yield(v) {
				return
			}
		}
	}
}

func (m Map[K, V]) set(k K, v V) Map[K, V] {
	if m.m == nil {
		m.m = immutable.NewSortedMap[K, V](comparerOf[K]())
	}
	return Map[K, V]{m.m.Set(k, v)}
}

func (m Map[K, V]) delete(k K) Map[K, V] {
	if m.m == nil {
		return m
	}
	if m.m.Len() == 1 {
		if _, ok := m.m.Get(k); ok {
			return Map[K, V]{}
		}
	}
	return Map[K, V]{m.m.Delete(k)}
}

// mapBuilder fills a new Map in place, for loading a whole state: no
// intermediate versions are made.
type mapBuilder[K any, V any] struct {
	b *immutable.SortedMapBuilder[K, V]
}

func newMapBuilder[K any, V any]() mapBuilder[K, V] {
	return mapBuilder[K, V]{immutable.NewSortedMapBuilder[K, V](comparerOf[K]())}
}

func (b mapBuilder[K, V]) set(k K, v V) { b.b.Set(k, v) }
func (b mapBuilder[K, V]) len() int     { return b.b.Len() }
func (b mapBuilder[K, V]) done() Map[K, V] {
	if b.b.Len() == 0 {
		return Map[K, V]{}
	}
	return Map[K, V]{b.b.Map()}
}

type stringOrder struct{}

func (stringOrder) Compare(a, b string) int { return strings.Compare(a, b) }

type int64Order struct{}

func (int64Order) Compare(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// comparerOf is the order of the key types the store uses.
func comparerOf[K any]() immutable.Comparer[K] {
	var c any
	switch any(*new(K)).(type) {
	case string:
		c = stringOrder{}
	case int64:
		c = int64Order{}
	default:
		panic("state: no order for this key type")
	}
	return c.(immutable.Comparer[K])
}

// Set is a persistent set of strings (uuids, names) in order.
type Set struct{ m Map[string, struct{}] }

// Len is the number of members.
func (s Set) Len() int { return s.m.Len() }

// Has reports whether k is a member.
func (s Set) Has(k string) bool { return s.m.Has(k) }

// All yields the members in order.
func (s Set) All() iter.Seq[string] { return s.m.Keys() }

// Sorted lists the members in order.
func (s Set) Sorted() []string {
	out := make([]string, 0, s.Len())
	for k := range s.All() {
		out = append(out, k)
	}
	return out
}

func (s Set) add(k string) Set    { return Set{s.m.set(k, struct{}{})} }
func (s Set) remove(k string) Set { return Set{s.m.delete(k)} }

// Index maps a key (a trait, an aggregate, a provider) to a set of
// provider or consumer uuids. A key with an empty set has no entry.
type Index = Map[string, Set]

// addToSet returns index with member added to the set under key.
func addToSet(index Index, key, member string) Index {
	set := index.Get(key)
	if set.Has(member) {
		return index
	}
	return index.set(key, set.add(member))
}

// removeFromSet returns index without member in the set under key,
// dropping the key when its set becomes empty.
func removeFromSet(index Index, key, member string) Index {
	set, ok := index.Lookup(key)
	if !ok || !set.Has(member) {
		return index
	}
	if set.Len() == 1 {
		return index.delete(key)
	}
	return index.set(key, set.remove(member))
}

// indexBuilder collects an Index's sets in place while a state is loaded.
type indexBuilder map[string]*immutable.SortedMapBuilder[string, struct{}]

func (b indexBuilder) add(key, member string) {
	set := b[key]
	if set == nil {
		set = immutable.NewSortedMapBuilder[string, struct{}](stringOrder{})
		b[key] = set
	}
	set.Set(member, struct{}{})
}

// done builds the Index; the keys go in sorted, so the result does not
// depend on the builder map's order.
func (b indexBuilder) done() Index {
	out := newMapBuilder[string, Set]()
	for _, key := range SortedKeys(b) {
		out.set(key, Set{Map[string, struct{}]{b[key].Map()}})
	}
	return out.done()
}

// HashMap is a persistent hash map: lookups and changes cost less than a
// Map's for large keys, and it is iterated in no particular order (the
// hash seed is the process's), so nothing whose outcome depends on order
// may iterate it. The zero HashMap is empty.
type HashMap[K comparable, V any] struct{ m *immutable.Map[K, V] }

// seedHasher hashes keys with this process's seed: clients choose uuids,
// projects and users, and a fixed hash would let them collide on purpose.
type seedHasher[K comparable] struct{}

var hashSeed = maphash.MakeSeed()

func (seedHasher[K]) Hash(k K) uint32 {
	h := maphash.Comparable(hashSeed, k)
	return uint32(h) ^ uint32(h>>32)
}

func (seedHasher[K]) Equal(a, b K) bool { return a == b }

// Len is the number of entries.
func (m HashMap[K, V]) Len() int {
	if m.m == nil {
		return 0
	}
	return m.m.Len()
}

// Get returns the value under k, or V's zero value.
func (m HashMap[K, V]) Get(k K) V {
	if m.m == nil {
		var zero V
		return zero
	}
	v, _ := m.m.Get(k)
	return v
}

// All yields the entries in no particular order.
func (m HashMap[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.m == nil {
			return
		}
		for it := m.m.Iterator(); !it.Done(); {
			if k, v, _ := it.Next(); !yield(k, v) {
				return
			}
		}
	}
}

func (m HashMap[K, V]) set(k K, v V) HashMap[K, V] {
	if m.m == nil {
		m.m = immutable.NewMap[K, V](seedHasher[K]{})
	}
	return HashMap[K, V]{m.m.Set(k, v)}
}

func (m HashMap[K, V]) delete(k K) HashMap[K, V] {
	if m.m == nil {
		return m
	}
	return HashMap[K, V]{m.m.Delete(k)}
}

// ProviderMap holds the providers by uuid, for lookups, and by ID, for
// scans and listings in creation order. Both hold the same records.
type ProviderMap struct {
	byUUID *immutable.Map[string, *Provider]
	byID   Map[int64, *Provider]
}

// Get returns the provider with the uuid, or nil.
func (m ProviderMap) Get(uuid string) *Provider {
	if m.byUUID == nil {
		return nil
	}
	p, _ := m.byUUID.Get(uuid)
	return p
}

// Len is the number of providers.
func (m ProviderMap) Len() int { return m.byID.Len() }

// ByID returns the provider with the ID, or nil.
func (m ProviderMap) ByID(id int64) *Provider { return m.byID.Get(id) }

// InOrder yields the providers in ID (creation) order.
func (m ProviderMap) InOrder() iter.Seq[*Provider] { return m.byID.Values() }

// Cursor walks the providers in ID order, one Next at a time.
func (m ProviderMap) Cursor() *ProviderCursor {
	c := &ProviderCursor{}
	if m.byID.m != nil {
		c.it = m.byID.m.Iterator()
	}
	return c
}

// ProviderCursor is a position in the providers' ID order: in the tree,
// or in a list of them (Store.ProviderCursor).
type ProviderCursor struct {
	it   *immutable.SortedMapIterator[int64, *Provider]
	list []*Provider
}

// Next returns the next provider, or nil after the last.
func (c *ProviderCursor) Next() *Provider {
	if c.list != nil {
		if len(c.list) == 0 {
			return nil
		}
		p := c.list[0]
		c.list = c.list[1:]
		return p
	}
	if c.it == nil || c.it.Done() {
		return nil
	}
	_, p, _ := c.it.Next()
	return p
}

// put stores p, replacing the record with its uuid.
func (m ProviderMap) put(p *Provider) ProviderMap {
	if m.byUUID == nil {
		m.byUUID = immutable.NewMap[string, *Provider](seedHasher[string]{})
	}
	return ProviderMap{byUUID: m.byUUID.Set(p.UUID, p), byID: m.byID.set(p.ID, p)}
}

// remove drops p.
func (m ProviderMap) remove(p *Provider) ProviderMap {
	return ProviderMap{byUUID: m.byUUID.Delete(p.UUID), byID: m.byID.delete(p.ID)}
}

// providerBuilder fills a new ProviderMap in place.
type providerBuilder struct {
	byUUID *immutable.MapBuilder[string, *Provider]
	byID   mapBuilder[int64, *Provider]
}

func newProviderBuilder() providerBuilder {
	return providerBuilder{immutable.NewMapBuilder[string, *Provider](seedHasher[string]{}), newMapBuilder[int64, *Provider]()}
}

func (b providerBuilder) put(p *Provider) {
	b.byUUID.Set(p.UUID, p)
	b.byID.set(p.ID, p)
}

func (b providerBuilder) get(uuid string) *Provider {
	p, _ := b.byUUID.Get(uuid)
	return p
}

func (b providerBuilder) done() ProviderMap {
	return ProviderMap{byUUID: b.byUUID.Map(), byID: b.byID.done()}
}
