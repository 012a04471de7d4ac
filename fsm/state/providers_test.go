package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

var provT0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

const (
	rpA = "aaaaaaaa-0000-4000-8000-000000000001"
	rpB = "bbbbbbbb-0000-4000-8000-000000000002"
	rpC = "cccccccc-0000-4000-8000-000000000003"
	rpD = "dddddddd-0000-4000-8000-000000000004"
	rpE = "eeeeeeee-0000-4000-8000-000000000005"
)

func provApply(t *testing.T, s *Store, cmd Command) any {
	t.Helper()
	v, err := cmd.Apply(s, Meta{Time: provT0})
	if err != nil {
		t.Fatalf("%s: %v", cmd.Kind(), err)
	}
	return v
}

// provReject applies cmd, requires an *Error of the kind, code and detail,
// and requires the store to be unchanged (compared by image and indexes).
func provReject(t *testing.T, s *Store, cmd Command, kind Kind, code, detail string) {
	t.Helper()
	before := provSnapshot(t, s)
	_, err := cmd.Apply(s, Meta{Time: provT0.Add(time.Hour)})
	se, ok := err.(*Error)
	if !ok {
		t.Fatalf("%s: want *Error, got %v", cmd.Kind(), err)
	}
	if se.Kind != kind || se.Code != code || se.Detail != detail {
		t.Errorf("%s: got (%v, %q, %q), want (%v, %q, %q)", cmd.Kind(), se.Kind, se.Code, se.Detail, kind, code, detail)
	}
	if after := provSnapshot(t, s); after != before {
		t.Errorf("%s: rejected command changed the store:\nbefore %s\nafter  %s", cmd.Kind(), before, after)
	}
}

// provSnapshot renders the store's image and indexes for comparison.
func provSnapshot(t *testing.T, s *Store) string {
	t.Helper()
	b, err := json.Marshal(struct {
		Img                                      *Image
		ByName                                   map[string]string
		Children, AggregateIndex, TraitIndex, PC map[string]map[string]bool
	}{s.Image(), plainMap(s.ProviderByName), plainIndex(s.Children), plainIndex(s.AggregateIndex), plainIndex(s.TraitIndex), plainIndex(s.ProviderConsumers)})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// provCheckIndexes requires every index to be what Load rebuilds from the
// image, and every root uuid to be the top of the provider's parent chain.
func provCheckIndexes(t *testing.T, s *Store) {
	t.Helper()
	re, err := Load(s.Image())
	if err != nil {
		t.Fatal(err)
	}
	for name, pair := range map[string][2]any{
		"ProviderByName": {plainMap(s.ProviderByName), plainMap(re.ProviderByName)},
		"Children":       {plainIndex(s.Children), plainIndex(re.Children)},
		"AggregateIndex": {plainIndex(s.AggregateIndex), plainIndex(re.AggregateIndex)},
		"TraitIndex":     {plainIndex(s.TraitIndex), plainIndex(re.TraitIndex)},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s = %v, rebuilt %v", name, pair[0], pair[1])
		}
	}
	for p := range s.Providers.InOrder() {
		top := p
		for top.ParentUUID != "" {
			top = s.Providers.Get(top.ParentUUID)
		}
		if p.RootUUID != top.UUID {
			t.Errorf("provider %s root %s, want %s", p.UUID, p.RootUUID, top.UUID)
		}
	}
}

func provStr(s string) *string { return &s }

func TestCreateProvider(t *testing.T) {
	s := New()
	v := provApply(t, s, &CreateProvider{UUID: rpA, Name: "a"})
	p := v.(ProviderSummary)
	if p.UUID != rpA || p.Name != "a" || p.Generation != 0 || p.ParentUUID != "" || p.RootUUID != rpA || p.ID != 1 || !p.Created.Equal(provT0) {
		t.Fatalf("created %+v", p)
	}
	c := provApply(t, s, &CreateProvider{UUID: rpB, Name: "b", ParentUUID: rpA}).(ProviderSummary)
	if c.ParentUUID != rpA || c.RootUUID != rpA || c.ID != 2 {
		t.Fatalf("child %+v", c)
	}
	g := provApply(t, s, &CreateProvider{UUID: rpC, Name: "c", ParentUUID: rpB}).(ProviderSummary)
	if g.RootUUID != rpA {
		t.Fatalf("grandchild root %s", g.RootUUID)
	}
	if s.ProviderByName.Get("b") != rpB || !s.Children.Get(rpA).Has(rpB) || !s.Children.Get(rpB).Has(rpC) {
		t.Fatalf("indexes not kept: %v %v", s.ProviderByName, s.Children)
	}
	provCheckIndexes(t, s)
}

func TestCreateProviderRejections(t *testing.T) {
	s := New()
	provApply(t, s, &CreateProvider{UUID: rpA, Name: "a"})
	provReject(t, s, &CreateProvider{UUID: rpA, Name: "x"}, Conflict, CodeDuplicateName,
		"Conflicting resource provider uuid: "+rpA+" already exists.")
	provReject(t, s, &CreateProvider{UUID: rpB, Name: "a"}, Conflict, CodeDuplicateName,
		"Conflicting resource provider name: a already exists.")
	provReject(t, s, &CreateProvider{UUID: rpA, Name: "a"}, Conflict, CodeDuplicateName,
		"Conflicting resource provider uuid: "+rpA+" already exists.")
	provReject(t, s, &CreateProvider{UUID: rpB, Name: "b", ParentUUID: rpB}, BadRequest, CodeDefault,
		`Unable to create resource provider "b", `+rpB+`: Object action create failed because: parent provider UUID cannot be same as UUID. Please set parent provider UUID to None if there is no parent.`)
	provReject(t, s, &CreateProvider{UUID: rpB, Name: "b", ParentUUID: rpC}, BadRequest, CodeDefault,
		`Unable to create resource provider "b", `+rpB+`: Object action create failed because: parent provider UUID does not exist.`)
	// A bad parent is reported before a duplicate, as upstream checks it
	// before inserting.
	provReject(t, s, &CreateProvider{UUID: rpA, Name: "a", ParentUUID: rpC}, BadRequest, CodeDefault,
		`Unable to create resource provider "a", `+rpA+`: Object action create failed because: parent provider UUID does not exist.`)
	provReject(t, s, &CreateProvider{UUID: rpB, Name: ""}, BadRequest, CodeDefault,
		`Unable to create resource provider "", `+rpB+`: Object action create failed because: uuid and name are required`)
	if s.NextProviderID != 2 {
		t.Errorf("NextProviderID = %d after rejections", s.NextProviderID)
	}
}

// tree builds A -> B -> C and a separate root D.
func provTree(t *testing.T) *Store {
	s := New()
	provApply(t, s, &CreateProvider{UUID: rpA, Name: "a"})
	provApply(t, s, &CreateProvider{UUID: rpB, Name: "b", ParentUUID: rpA})
	provApply(t, s, &CreateProvider{UUID: rpC, Name: "c", ParentUUID: rpB})
	provApply(t, s, &CreateProvider{UUID: rpD, Name: "d"})
	return s
}

func TestUpdateProviderName(t *testing.T) {
	s := provTree(t)
	later := Meta{Time: provT0.Add(time.Minute)}
	v, err := (&UpdateProvider{UUID: rpB, Name: "bee"}).Apply(s, later)
	if err != nil {
		t.Fatal(err)
	}
	p := v.(ProviderSummary)
	if p.Name != "bee" || p.ParentUUID != rpA || p.Generation != 0 || !p.Updated.Equal(later.Time) {
		t.Fatalf("updated %+v", p)
	}
	if old := s.ProviderByName.Has("b"); old || s.ProviderByName.Get("bee") != rpB {
		t.Fatalf("ProviderByName %v", s.ProviderByName)
	}
	// Keeping one's own name is not a conflict; an unchanged provider keeps
	// its update time.
	v = provApply(t, s, &UpdateProvider{UUID: rpB, Name: "bee"})
	if !v.(ProviderSummary).Updated.Equal(later.Time) {
		t.Errorf("no-op update changed Updated")
	}
	provCheckIndexes(t, s)
}

func TestUpdateProviderParenting(t *testing.T) {
	s := provTree(t)
	// Giving a root a parent is allowed before 1.37; its subtree follows.
	provApply(t, s, &UpdateProvider{UUID: rpA, Name: "a", ParentUUID: provStr(rpD)})
	for _, u := range []string{rpA, rpB, rpC, rpD} {
		if s.Providers.Get(u).RootUUID != rpD {
			t.Errorf("%s root %s after parenting A under D", u, s.Providers.Get(u).RootUUID)
		}
	}
	provCheckIndexes(t, s)
	// Re-parent B (with C) under D, then un-parent it.
	provApply(t, s, &UpdateProvider{UUID: rpB, Name: "b", ParentUUID: provStr(rpD), AllowReparenting: true})
	if s.Children.Has(rpA) || !s.Children.Get(rpD).Has(rpB) {
		t.Errorf("children after re-parent: %v", s.Children)
	}
	provCheckIndexes(t, s)
	provApply(t, s, &UpdateProvider{UUID: rpB, Name: "b", ParentUUID: provStr(""), AllowReparenting: true})
	if s.Providers.Get(rpB).RootUUID != rpB || s.Providers.Get(rpC).RootUUID != rpB || s.Providers.Get(rpB).ParentUUID != "" {
		t.Errorf("un-parented B: %+v, C root %s", s.Providers.Get(rpB).Summary(), s.Providers.Get(rpC).RootUUID)
	}
	provCheckIndexes(t, s)
	// A body without parent keeps the parent.
	provApply(t, s, &UpdateProvider{UUID: rpC, Name: "c2"})
	if s.Providers.Get(rpC).ParentUUID != rpB {
		t.Errorf("parent lost")
	}
	provCheckIndexes(t, s)
}

func TestUpdateProviderRejections(t *testing.T) {
	s := provTree(t)
	prefix := "Unable to save resource provider "
	provReject(t, s, &UpdateProvider{UUID: rpE, Name: "x"}, NotFound, CodeDefault,
		"No resource provider with uuid "+rpE+" found")
	provReject(t, s, &UpdateProvider{UUID: rpB, Name: "b", ParentUUID: provStr(rpE)}, BadRequest, CodeDefault,
		prefix+rpB+": Object action create failed because: parent provider UUID does not exist.")
	provReject(t, s, &UpdateProvider{UUID: rpB, Name: "b", ParentUUID: provStr(rpD)}, BadRequest, CodeDefault,
		prefix+rpB+": Object action update failed because: re-parenting a provider is not currently allowed.")
	provReject(t, s, &UpdateProvider{UUID: rpB, Name: "b", ParentUUID: provStr("")}, BadRequest, CodeDefault,
		prefix+rpB+": Object action update failed because: un-parenting a provider is not currently allowed.")
	loop := ": Object action update failed because: creating loop in the provider tree is not allowed."
	provReject(t, s, &UpdateProvider{UUID: rpA, Name: "a", ParentUUID: provStr(rpA)}, BadRequest, CodeDefault, prefix+rpA+loop)
	provReject(t, s, &UpdateProvider{UUID: rpA, Name: "a", ParentUUID: provStr(rpC)}, BadRequest, CodeDefault, prefix+rpA+loop)
	provReject(t, s, &UpdateProvider{UUID: rpB, Name: "b", ParentUUID: provStr(rpC), AllowReparenting: true}, BadRequest, CodeDefault, prefix+rpB+loop)
	provReject(t, s, &UpdateProvider{UUID: rpB, Name: "d"}, Conflict, CodeDuplicateName,
		"Conflicting resource provider d already exists.")
}

func TestDeleteProvider(t *testing.T) {
	s := provTree(t)
	c := s.Providers.Get(rpC)
	c.Traits["CUSTOM_T"] = true
	s.TraitIndex = addToSet(s.TraitIndex, "CUSTOM_T", rpC)
	provApply(t, s, &SetAggregates{UUID: rpC, Aggregates: []string{rpE}})
	provApply(t, s, &SetAggregates{UUID: rpD, Aggregates: []string{rpE}})

	provReject(t, s, &DeleteProvider{UUID: rpE}, NotFound, CodeDefault,
		"No resource provider with uuid "+rpE+" found for delete")
	provReject(t, s, &DeleteProvider{UUID: rpB}, Conflict, CodeProviderCannotDeleteParent,
		"Unable to delete parent resource provider "+rpB+": It has child resource providers.")
	s.ProviderConsumers = addToSet(s.ProviderConsumers, rpC, "consumer")
	provReject(t, s, &DeleteProvider{UUID: rpC}, Conflict, CodeProviderInUse,
		"Unable to delete resource provider "+rpC+": Resource provider has allocations.")
	s.ProviderConsumers = removeFromSet(s.ProviderConsumers, rpC, "consumer")

	provApply(t, s, &DeleteProvider{UUID: rpC})
	if s.Providers.Get(rpC) != nil || s.ProviderByName.Get("c") != "" || s.Children.Has(rpB) ||
		s.TraitIndex.Has("CUSTOM_T") || s.AggregateIndex.Get(rpE).Has(rpC) || !s.AggregateIndex.Get(rpE).Has(rpD) {
		t.Fatalf("delete left traces: names %v children %v traits %v aggs %v",
			s.ProviderByName, s.Children, s.TraitIndex, s.AggregateIndex)
	}
	// Its name is free again and B, now childless, can go.
	provApply(t, s, &CreateProvider{UUID: rpE, Name: "c"})
	provApply(t, s, &DeleteProvider{UUID: rpB})
	provCheckIndexes(t, s)
	if got := s.ProvidersByID(); len(got) != 3 || got[0].UUID != rpA || got[1].UUID != rpD || got[2].UUID != rpE {
		t.Errorf("ProvidersByID order wrong")
	}
}

func TestProviderCommandsRoundTrip(t *testing.T) {
	// Commands travel through the Raft log as JSON.
	for _, cmd := range []Command{
		&CreateProvider{UUID: rpA, Name: "a", ParentUUID: rpB},
		&UpdateProvider{UUID: rpA, Name: "a", ParentUUID: provStr(""), AllowReparenting: true},
		&UpdateProvider{UUID: rpA, Name: "a"},
		&DeleteProvider{UUID: rpA},
		&SetAggregates{UUID: rpA, Aggregates: []string{rpB}, Generation: new(int64)},
		&SetAggregates{UUID: rpA, Aggregates: []string{}},
	} {
		b, err := json.Marshal(cmd)
		if err != nil {
			t.Fatal(err)
		}
		back := emptyOf(cmd)
		if err := json.Unmarshal(b, back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, cmd) {
			t.Errorf("%s: %s decoded as %+v", cmd.Kind(), b, back)
		}
	}
}
