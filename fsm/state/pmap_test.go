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
