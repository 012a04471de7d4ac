package state

import (
	"fmt"
	"slices"
	"testing"
)

// plainMap copies a persistent map into a Go map, for comparisons that
// must not depend on the trees' shapes.
func plainMap[K comparable, V any](m Map[K, V]) map[K]V {
	out := map[K]V{}
	for k, v := range m.All() {
		out[k] = v
	}
	return out
}

// plainHash copies a persistent hash map into a Go map.
func plainHash[K comparable, V any](m HashMap[K, V]) map[K]V {
	out := map[K]V{}
	for k, v := range m.All() {
		out[k] = v
	}
	return out
}

// plainIndex copies an index into Go maps.
func plainIndex(ix Index) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for k, set := range ix.All() {
		out[k] = map[string]bool{}
		for u := range set.All() {
			out[k][u] = true
		}
	}
	return out
}

func TestMapChangesLeaveTheOldMapAsItWas(t *testing.T) {
	var m Map[string, int]
	var versions []Map[string, int]
	for i := range 200 {
		versions = append(versions, m)
		m = m.set(fmt.Sprintf("k%03d", i), i)
	}
	for i, v := range versions {
		if v.Len() != i {
			t.Fatalf("version %d holds %d entries", i, v.Len())
		}
		if i > 0 && v.Get(fmt.Sprintf("k%03d", i-1)) != i-1 || v.Has(fmt.Sprintf("k%03d", i)) {
			t.Fatalf("version %d sees a later change", i)
		}
	}
	d := m.delete("k100")
	if !m.Has("k100") || d.Has("k100") || d.Len() != 199 {
		t.Fatal("delete changed the map it was made on")
	}
	if keys := slices.Collect(m.Keys()); !slices.IsSorted(keys) || len(keys) != 200 {
		t.Fatalf("keys not in order: %v", keys[:5])
	}
	if e := (Map[string, int]{}).set("a", 1).delete("a"); e.m != nil || e.Len() != 0 {
		t.Fatal("emptied map is not the zero map")
	}
}

func TestIndexDropsEmptySets(t *testing.T) {
	var ix Index
	ix = addToSet(ix, "t", "b")
	ix = addToSet(ix, "t", "a")
	before := ix
	ix = removeFromSet(ix, "t", "a")
	ix = removeFromSet(ix, "t", "b")
	if ix.Has("t") || ix.Len() != 0 {
		t.Fatal("an empty set kept its key")
	}
	if got := before.Get("t").Sorted(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("the earlier index changed: %v", got)
	}
}

func TestProviderMapKeepsIDOrderAndUUIDLookups(t *testing.T) {
	var m ProviderMap
	for _, id := range []int64{5, 1, 3} {
		m = m.put(&Provider{ID: id, UUID: fmt.Sprint("u", id)})
	}
	old := m
	m = m.put(&Provider{ID: 3, UUID: "u3", Name: "changed"})
	m = m.remove(m.Get("u1"))
	var ids []int64
	for p := range m.InOrder() {
		ids = append(ids, p.ID)
	}
	if !slices.Equal(ids, []int64{3, 5}) || m.Get("u3").Name != "changed" || m.Get("u1") != nil {
		t.Fatalf("ids %v", ids)
	}
	if old.Len() != 3 || old.Get("u3").Name != "" || old.Get("u1") == nil {
		t.Fatal("the earlier map changed")
	}
	c := old.Cursor()
	for _, want := range []int64{1, 3, 5} {
		if p := c.Next(); p == nil || p.ID != want {
			t.Fatalf("cursor at %v, want %d", p, want)
		}
	}
	if c.Next() != nil {
		t.Fatal("cursor went past the end")
	}
}

// changeThenFail changes the store being edited, then fails.
type changeThenFail struct{ provider string }

func (changeThenFail) Kind() string { return "test.change_then_fail" }

func (c changeThenFail) Apply(s *Store, m Meta) (any, error) {
	s.Traits = s.Traits.set("CUSTOM_LEFT_BEHIND", &Trait{Name: "CUSTOM_LEFT_BEHIND"})
	p := s.editProvider(s.Providers.Get(c.provider))
	p.Generation += 10
	s.indexConsumer(&Consumer{UUID: "ghost", Allocations: []Allocation{{ProviderUUID: p.UUID, Class: "VCPU", Used: 1}}}, +1)
	return nil, Errorf("refused after changing things")
}

// Store.Apply restores the version struct when a command fails, whatever
// the command changed before failing; the version it was edited from is
// untouched either way.
func TestApplyRestoresARejectedCommandsChanges(t *testing.T) {
	base := New()
	if _, err := base.Apply(&CreateProvider{UUID: rpA, Name: "a"}, Meta{}); err != nil {
		t.Fatal(err)
	}
	published := base.Edit() // stands for the version readers hold
	next := published.Edit()
	before := provSnapshot(t, next)
	if _, err := next.Apply(changeThenFail{rpA}, Meta{}); err == nil {
		t.Fatal("the command did not fail")
	}
	if after := provSnapshot(t, next); after != before {
		t.Fatalf("a rejected command left changes:\nbefore %s\nafter  %s", before, after)
	}
	if next.Usage.Len() != 0 || next.Providers.Get(rpA).Generation != 0 || provSnapshot(t, published) != before {
		t.Fatal("a rejected command left changes in the indexes or the published version")
	}
}
