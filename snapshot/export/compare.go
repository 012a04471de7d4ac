package export

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"time"
)

// Compare lists how got differs from want, object by object and field by
// field, in a stable order. Identifiers and times want leaves zero (an
// upstream Placement does not show them) and counters it leaves out are
// not compared.
func Compare(want, got *Document) []string {
	var out []string
	out = append(out, compareSet("resource class", want.ResourceClasses, got.ResourceClasses,
		func(x ResourceClass) string { return x.Name },
		func(w ResourceClass, g *ResourceClass) {
			maskInt(w.ID, &g.ID)
			maskTime(w.CreatedAt, &g.CreatedAt)
			maskTime(w.UpdatedAt, &g.UpdatedAt)
		})...)
	out = append(out, compareSet("trait", want.Traits, got.Traits,
		func(x Trait) string { return x.Name },
		func(w Trait, g *Trait) {
			maskTime(w.CreatedAt, &g.CreatedAt)
			maskTime(w.UpdatedAt, &g.UpdatedAt)
		})...)
	out = append(out, compareSet("consumer type", want.ConsumerTypes, got.ConsumerTypes,
		func(x ConsumerType) string { return x.Name },
		func(w ConsumerType, g *ConsumerType) {
			maskInt(w.ID, &g.ID)
			maskTime(w.CreatedAt, &g.CreatedAt)
			maskTime(w.UpdatedAt, &g.UpdatedAt)
		})...)
	out = append(out, compareSet("resource provider", want.ResourceProviders, got.ResourceProviders,
		func(x ResourceProvider) string { return x.UUID },
		func(w ResourceProvider, g *ResourceProvider) {
			maskInt(w.ID, &g.ID)
			maskTime(w.CreatedAt, &g.CreatedAt)
			maskTime(w.UpdatedAt, &g.UpdatedAt)
			invs := make(map[string]Inventory, len(g.Inventories))
			for class, gi := range g.Inventories {
				if wi, ok := w.Inventories[class]; ok {
					maskTime(wi.CreatedAt, &gi.CreatedAt)
					maskTime(wi.UpdatedAt, &gi.UpdatedAt)
				}
				invs[class] = gi
			}
			g.Inventories = invs
			g.Traits, g.Aggregates = sortedCopy(g.Traits), sortedCopy(g.Aggregates)
		})...)
	out = append(out, compareSet("consumer", want.Consumers, got.Consumers,
		func(x Consumer) string { return x.UUID },
		func(w Consumer, g *Consumer) {
			maskTime(w.CreatedAt, &g.CreatedAt)
			maskTime(w.UpdatedAt, &g.UpdatedAt)
			// placementd keeps one allocation time per consumer (its
			// updated_at, compared above), not one per allocation row:
			// allocation times are not compared.
			allocs := make([]Allocation, len(g.Allocations))
			for i, a := range g.Allocations {
				a.CreatedAt, a.UpdatedAt = time.Time{}, time.Time{}
				allocs[i] = a
			}
			g.Allocations = sortAllocations(allocs)
		})...)
	if want.Counters != nil && (got.Counters == nil || *want.Counters != *got.Counters) {
		out = append(out, fmt.Sprintf("counters: want %s, got %s", jsonText(want.Counters), jsonText(got.Counters)))
	}
	return out
}

func sortAllocations(in []Allocation) []Allocation {
	out := append([]Allocation(nil), in...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].ResourceProviderUUID != out[j].ResourceProviderUUID {
			return out[i].ResourceProviderUUID < out[j].ResourceProviderUUID
		}
		return out[i].ResourceClass < out[j].ResourceClass
	})
	return out
}

func maskInt[T int | int64](want T, got *T) {
	if want == 0 {
		*got = 0
	}
}

func maskTime(want time.Time, got *time.Time) {
	if want.IsZero() {
		*got = time.Time{}
	}
}

// compareSet matches the objects of two lists by key; mask blanks in got
// what want does not say, and puts lists in a canonical order.
func compareSet[T any](kind string, want, got []T, key func(T) string, mask func(T, *T)) []string {
	gotByKey := make(map[string]T, len(got))
	for _, g := range got {
		gotByKey[key(g)] = g
	}
	wantKeys := map[string]bool{}
	var out []string
	for _, w := range want {
		k := key(w)
		wantKeys[k] = true
		g, ok := gotByKey[k]
		if !ok {
			out = append(out, fmt.Sprintf("%s %s: missing", kind, k))
			continue
		}
		wn := w
		mask(w, &wn) // the same canonical order on both sides
		mask(w, &g)
		for _, field := range diffFields(wn, g) {
			out = append(out, fmt.Sprintf("%s %s: %s", kind, k, field))
		}
	}
	var extra []string
	for _, g := range got {
		if !wantKeys[key(g)] {
			extra = append(extra, fmt.Sprintf("%s %s: not expected (only in the copy)", kind, key(g)))
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

// diffFields compares two objects by their JSON fields.
func diffFields(want, got any) []string {
	var w, g map[string]any
	json.Unmarshal([]byte(jsonText(want)), &w)
	json.Unmarshal([]byte(jsonText(got)), &g)
	keys := map[string]bool{}
	for k := range w {
		keys[k] = true
	}
	for k := range g {
		keys[k] = true
	}
	var out []string
	for _, k := range sortedKeys(keys) {
		if !reflect.DeepEqual(w[k], g[k]) {
			out = append(out, fmt.Sprintf("%s is %s, want %s", k, jsonText(g[k]), jsonText(w[k])))
		}
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func jsonText(v any) string {
	if v == nil {
		return "absent"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
