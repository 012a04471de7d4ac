package state

import (
	"reflect"
	"testing"
	"time"
)

func provGen(n int64) *int64 { return &n }

func TestSetAggregatesWithoutGeneration(t *testing.T) {
	s := New()
	provApply(t, s, &CreateProvider{UUID: rpA, Name: "a"})
	res := provApply(t, s, &SetAggregates{UUID: rpA, Aggregates: []string{rpC, rpB}}).(AggregatesResult)
	if !reflect.DeepEqual(res.Aggregates, []string{rpC, rpB}) || res.Generation != 0 {
		t.Fatalf("result %+v", res)
	}
	p := s.Providers.Get(rpA)
	// Before 1.19 the generation must not move (fixtures rely on it).
	if p.Generation != 0 || !p.Updated.Equal(provT0) {
		t.Errorf("generation %d updated %v", p.Generation, p.Updated)
	}
	if !reflect.DeepEqual(SortedKeys(p.Aggregates), []string{rpB, rpC}) || !s.AggregateIndex.Get(rpB).Has(rpA) {
		t.Errorf("aggregates %v index %v", p.Aggregates, s.AggregateIndex)
	}
	provApply(t, s, &SetAggregates{UUID: rpA, Aggregates: []string{rpB}})
	if s.AggregateIndex.Has(rpC) || len(p.Aggregates) != 1 {
		t.Errorf("removal not indexed: %v", s.AggregateIndex)
	}
	provApply(t, s, &SetAggregates{UUID: rpA, Aggregates: []string{}})
	if s.AggregateIndex.Len() != 0 || len(p.Aggregates) != 0 {
		t.Errorf("clearing left %v", s.AggregateIndex)
	}
	provCheckIndexes(t, s)
}

func TestSetAggregatesWithGeneration(t *testing.T) {
	s := New()
	provApply(t, s, &CreateProvider{UUID: rpA, Name: "a"})
	later := Meta{Time: provT0.Add(time.Minute)}
	v, err := (&SetAggregates{UUID: rpA, Aggregates: []string{rpB}, Generation: provGen(0)}).Apply(s, later)
	if err != nil {
		t.Fatal(err)
	}
	if res := v.(AggregatesResult); res.Generation != 1 || s.Providers.Get(rpA).Generation != 1 || !s.Providers.Get(rpA).Updated.Equal(later.Time) {
		t.Fatalf("result %+v provider %+v", res, s.Providers.Get(rpA).Summary())
	}
	// The same set again still bumps the generation, as upstream.
	res := provApply(t, s, &SetAggregates{UUID: rpA, Aggregates: []string{rpB}, Generation: provGen(1)}).(AggregatesResult)
	if res.Generation != 2 {
		t.Errorf("generation %d", res.Generation)
	}
	provReject(t, s, &SetAggregates{UUID: rpA, Aggregates: []string{rpC}, Generation: provGen(1)}, Conflict, CodeConcurrentUpdate,
		"Resource provider's generation already changed. Please update the generation and try again.")
	provReject(t, s, &SetAggregates{UUID: rpE, Aggregates: []string{rpC}, Generation: provGen(0)}, NotFound, CodeDefault,
		"No resource provider with uuid "+rpE+" found")
	provReject(t, s, &SetAggregates{UUID: rpE, Aggregates: []string{rpC}}, NotFound, CodeDefault,
		"No resource provider with uuid "+rpE+" found")
	provCheckIndexes(t, s)
}
