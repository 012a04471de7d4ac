package state

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	imRoot1  = "00000000-0000-0000-0000-000000000001"
	imChild1 = "00000000-0000-0000-0000-000000000002"
	imRoot2  = "00000000-0000-0000-0000-000000000003"
	imShare  = "00000000-0000-0000-0000-000000000004"
	imGone   = "00000000-0000-0000-0000-000000000005"
	imAgg    = "aaaaaaaa-0000-0000-0000-000000000001"
	imCons1  = "cccccccc-0000-0000-0000-000000000001"
	imCons2  = "cccccccc-0000-0000-0000-000000000002"
)

// imSource builds, through the ordinary commands and at several times, a
// state with a tree, a sharing provider, custom classes and traits (one
// class renamed, one provider deleted so the counters run ahead), and
// consumers of two types and projects.
func imSource(t *testing.T) *Store {
	t.Helper()
	s := New()
	at := func(min int) Meta { return Meta{Time: alT0.Add(time.Duration(min) * time.Minute)} }
	must := func(m Meta, cmd Command) {
		t.Helper()
		if _, err := cmd.Apply(s, m); err != nil {
			t.Fatalf("%s: %v", cmd.Kind(), err)
		}
	}
	must(at(1), &CreateResourceClass{Name: "CUSTOM_OLD"})
	must(at(2), &RenameResourceClass{Name: "CUSTOM_OLD", NewName: "CUSTOM_GPU"})
	must(at(3), &CreateResourceClass{Name: "CUSTOM_FPGA"})
	must(at(4), &CreateTrait{Name: "CUSTOM_RACK_1"})
	must(at(5), &CreateTrait{Name: "CUSTOM_UNUSED"})
	must(at(6), &CreateProvider{UUID: imRoot1, Name: "cn1"})
	must(at(7), &CreateProvider{UUID: imGone, Name: "gone"})
	must(at(8), &CreateProvider{UUID: imRoot2, Name: "cn2"})
	must(at(9), &CreateProvider{UUID: imChild1, Name: "cn1-numa0", ParentUUID: imRoot1})
	must(at(10), &CreateProvider{UUID: imShare, Name: "shared-disk"})
	must(at(11), &DeleteProvider{UUID: imGone})
	must(at(12), &SetInventories{Provider: imChild1, Inventories: []InventoryValues{alInv("VCPU", 8), alInv("CUSTOM_GPU", 2)}})
	must(at(13), &SetInventories{Provider: imRoot2, Inventories: []InventoryValues{alInv("VCPU", 4), alInv("MEMORY_MB", 4096)}})
	must(at(14), &SetInventories{Provider: imShare, Inventories: []InventoryValues{alInv("DISK_GB", 1000)}})
	must(at(15), &SetProviderTraits{Provider: imShare, Generation: 1, Traits: []string{SharingTrait, "CUSTOM_RACK_1"}})
	must(at(16), &SetAggregates{UUID: imShare, Aggregates: []string{imAgg}, Generation: alGen(2)})
	// The API keeps aggregate uuids as written, dashes or not (as upstream).
	must(at(17), &SetAggregates{UUID: imRoot2, Aggregates: []string{imAgg, "AAAAAAAA000000000000000000000002"}})
	c1 := alClaim(imCons1, imChild1, "VCPU", 2, "CUSTOM_GPU", 1)
	c1.Allocations = append(c1.Allocations, AllocationRequest{Provider: imShare, Class: "DISK_GB", Used: 100})
	c1.ConsumerType = "INSTANCE"
	must(at(18), alPut(c1))
	c2 := alClaim(imCons2, imRoot2, "VCPU", 1, "MEMORY_MB", 512)
	c2.ProjectID, c2.UserID, c2.ConsumerType = "other", "someone", "MIGRATION"
	must(at(19), alPut(c2))
	c2.CheckGeneration, c2.Generation = true, alGen(1)
	c2.Allocations[1].Used = 1024
	must(at(20), alPut(c2))
	return s
}

// imConsumers copies an image's consumers as a chunk carries them.
func imConsumers(img *Image) []ConsumerImage {
	var out []ConsumerImage
	for _, c := range img.Consumers {
		out = append(out, ConsumerImage{Consumer: *c})
	}
	return out
}

// imChunk turns an image into one import chunk, as an export would.
func imChunk(img *Image) *ImportChunk {
	return &ImportChunk{
		First: true, CustomClasses: img.CustomClasses, CustomTraits: img.CustomTraits,
		ConsumerTypes: img.ConsumerTypes, Providers: img.Providers, Consumers: imConsumers(img),
		NextProviderID: img.NextProviderID, NextClassID: img.NextClassID, NextConsumerTypeID: img.NextConsumerTypeID,
	}
}

func imJSON(t *testing.T, s *Store) string {
	t.Helper()
	img := s.Image()
	img.LastIndex = 0
	b, err := json.Marshal(img)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// imIndexes are the derived structures the import must rebuild.
func imIndexes(s *Store) map[string]any {
	usages := map[string]map[string]int64{}
	for p := range s.Providers.InOrder() {
		usages[p.UUID] = p.Usages
	}
	return map[string]any{
		"names": plainMap(s.ProviderByName), "children": plainIndex(s.Children), "aggregates": plainIndex(s.AggregateIndex),
		"traits": plainIndex(s.TraitIndex), "provider consumers": plainIndex(s.ProviderConsumers), "usage": plainHash(s.Usage),
		"provider usages": usages,
	}
}

func TestImportChunkRebuildsTheSameState(t *testing.T) {
	src := imSource(t)
	img := src.Image()
	// Split in two: the classes, traits and the first tree, then the rest,
	// each with children listed before their parents.
	first, rest := imChunk(img), &ImportChunk{}
	first.Providers, first.Consumers = nil, nil
	first.NextProviderID, first.NextClassID, first.NextConsumerTypeID = 0, 0, 0
	for _, p := range img.Providers {
		if p.RootUUID == imRoot1 {
			first.Providers = append([]ProviderImage{p}, first.Providers...)
		} else {
			rest.Providers = append([]ProviderImage{p}, rest.Providers...)
		}
	}
	rest.Consumers = imConsumers(img)
	rest.NextProviderID, rest.NextClassID, rest.NextConsumerTypeID = img.NextProviderID, img.NextClassID, img.NextConsumerTypeID

	dst := New()
	later := Meta{Time: alT0.Add(24 * time.Hour)}
	for _, c := range []*ImportChunk{first, rest} {
		// Through the log encoding, as the FSM would see it.
		raw, _ := json.Marshal(c)
		var decoded ImportChunk
		if err := json.Unmarshal(raw, &decoded); err != nil {
			t.Fatal(err)
		}
		if _, err := decoded.Apply(dst, later); err != nil {
			t.Fatalf("chunk: %v", err)
		}
	}
	if got, want := imJSON(t, dst), imJSON(t, src); got != want {
		t.Fatalf("imported state differs:\n got %s\nwant %s", got, want)
	}
	if got, want := imIndexes(dst), imIndexes(src); !reflect.DeepEqual(got, want) {
		t.Fatalf("indexes differ:\n got %v\nwant %v", got, want)
	}
	if dst.NextProviderID != 6 {
		t.Fatalf("NextProviderID %d, want 6 (a deleted provider used 2)", dst.NextProviderID)
	}
	// The imported state works like the original: the same claim fails
	// on both for lack of capacity, and succeeds on both within it.
	over := alPut(alClaim("cccccccc-0000-0000-0000-000000000009", imChild1, "VCPU", 7))
	for _, s := range []*Store{src, dst} {
		if _, err := alApply(s, over); err == nil {
			t.Fatal("over-capacity claim accepted")
		}
		if _, err := alApply(s, alPut(alClaim("cccccccc-0000-0000-0000-000000000009", imChild1, "VCPU", 6))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestImportChunkFillsTimesAndIdentifiers(t *testing.T) {
	s := New()
	m := Meta{Time: alT0}
	c := &ImportChunk{
		First:         true,
		CustomClasses: []ResourceClass{{Name: "CUSTOM_B"}, {Name: "CUSTOM_A"}},
		CustomTraits:  []Trait{{Name: "CUSTOM_T"}},
		ConsumerTypes: []ConsumerType{{Name: "INSTANCE"}},
		Providers: []ProviderImage{
			{UUID: imChild1, Name: "child", ParentUUID: imRoot1, Generation: 3},
			{UUID: imRoot1, Name: "root", Generation: 7, Inventories: []InventoryImage{{Class: "CUSTOM_A", Inventory: Inventory{Total: 4, MinUnit: 1, MaxUnit: 4, StepSize: 1, AllocationRatio: 1}}}},
		},
		Consumers: []ConsumerImage{{Consumer: Consumer{UUID: imCons1, ProjectID: "p", UserID: "u", Type: "INSTANCE", Generation: 5,
			Allocations: []Allocation{{ProviderUUID: imRoot1, Class: "CUSTOM_A", Used: 3}}}}},
	}
	v, err := c.Apply(s, m)
	if err != nil {
		t.Fatal(err)
	}
	if r := v.(ImportResult); r != (ImportResult{CustomClasses: 2, CustomTraits: 1, ConsumerTypes: 1, Providers: 2, Consumers: 1, Allocations: 1}) {
		t.Fatalf("result %+v", r)
	}
	if s.Classes.Get("CUSTOM_B").ID != MinCustomClassID || s.Classes.Get("CUSTOM_A").ID != MinCustomClassID+1 || s.NextClassID != MinCustomClassID+2 {
		t.Fatalf("class ids not in list order: B %d A %d next %d", s.Classes.Get("CUSTOM_B").ID, s.Classes.Get("CUSTOM_A").ID, s.NextClassID)
	}
	child, root := s.Providers.Get(imChild1), s.Providers.Get(imRoot1)
	if child.ID != 1 || root.ID != 2 || s.NextProviderID != 3 {
		t.Fatalf("provider ids %d %d next %d", child.ID, root.ID, s.NextProviderID)
	}
	if child.RootUUID != imRoot1 || !s.Children.Get(imRoot1).Has(imChild1) || child.Generation != 3 || root.Generation != 7 {
		t.Fatalf("tree or generations wrong: %+v", child.Summary())
	}
	if !child.Created.Equal(alT0) || !child.Updated.Equal(alT0) || !s.Traits.Get("CUSTOM_T").Created.Equal(alT0) ||
		!root.Inventories["CUSTOM_A"].Created.Equal(alT0) || !s.Consumers.Get(imCons1).Updated.Equal(alT0) {
		t.Fatal("zero times were not set to the import's time")
	}
	if root.Usages["CUSTOM_A"] != 3 || s.Usage.Get(UsageKey{Project: "p", Type: "INSTANCE"}).Used["CUSTOM_A"] != 3 ||
		s.Consumers.Get(imCons1).Generation != 5 || s.ConsumerTypes.Get("INSTANCE").ID != 1 {
		t.Fatal("usage indexes, consumer generation or type not set")
	}
}

func TestImportChunkRejectsWithoutChange(t *testing.T) {
	inv := func(class string) []InventoryImage {
		return []InventoryImage{{Class: class, Inventory: Inventory{Total: 4, MinUnit: 1, MaxUnit: 4, StepSize: 1, AllocationRatio: 1}}}
	}
	prov := func(uuid, name, parent string) ProviderImage {
		return ProviderImage{UUID: uuid, Name: name, ParentUUID: parent, Inventories: inv("VCPU")}
	}
	cons := func(provider, class string, used int64) ConsumerImage {
		return ConsumerImage{Consumer: Consumer{UUID: imCons2, ProjectID: "p", UserID: "u",
			Allocations: []Allocation{{ProviderUUID: provider, Class: class, Used: used}}}}
	}
	cases := map[string]struct {
		chunk ImportChunk
		want  string
	}{
		"not empty":         {ImportChunk{First: true}, "not empty"},
		"existing uuid":     {ImportChunk{Providers: []ProviderImage{prov(imRoot1, "x", "")}}, "already exists"},
		"existing name":     {ImportChunk{Providers: []ProviderImage{prov(imRoot2, "cn1", "")}}, "name \"cn1\" is taken"},
		"unknown parent":    {ImportChunk{Providers: []ProviderImage{prov(imRoot2, "x", imShare)}}, "does not exist"},
		"loop":              {ImportChunk{Providers: []ProviderImage{prov(imRoot2, "x", imShare), prov(imShare, "y", imRoot2)}}, "loop"},
		"wrong root":        {ImportChunk{Providers: []ProviderImage{{UUID: imRoot2, Name: "x", ParentUUID: imRoot1, RootUUID: imRoot2}}}, "root provider is"},
		"taken id":          {ImportChunk{Providers: []ProviderImage{{UUID: imRoot2, Name: "x", ID: 1}}}, "identifier 1 is taken"},
		"bad uuid":          {ImportChunk{Providers: []ProviderImage{prov("ABC", "x", "")}}, "canonical uuid"},
		"unknown class":     {ImportChunk{Providers: []ProviderImage{{UUID: imRoot2, Name: "x", Inventories: inv("CUSTOM_NOPE")}}}, "unknown resource class"},
		"unknown trait":     {ImportChunk{Providers: []ProviderImage{{UUID: imRoot2, Name: "x", Traits: []string{"CUSTOM_NOPE"}}}}, "unknown trait"},
		"zero step":         {ImportChunk{Providers: []ProviderImage{{UUID: imRoot2, Name: "x", Inventories: []InventoryImage{{Class: "VCPU", Inventory: Inventory{Total: 1, MinUnit: 1, MaxUnit: 1}}}}}}, "step_size"},
		"standard class":    {ImportChunk{CustomClasses: []ResourceClass{{Name: "VCPU"}}}, "not a valid custom class"},
		"existing trait":    {ImportChunk{CustomTraits: []Trait{{Name: "CUSTOM_T"}}}, "already exists"},
		"no inventory":      {ImportChunk{Consumers: []ConsumerImage{cons(imRoot1, "MEMORY_MB", 1)}}, "no such inventory"},
		"unknown provider":  {ImportChunk{Consumers: []ConsumerImage{cons(imShare, "VCPU", 1)}}, "no such inventory"},
		"zero used":         {ImportChunk{Consumers: []ConsumerImage{cons(imRoot1, "VCPU", 0)}}, "allocation of 0"},
		"existing consumer": {ImportChunk{Consumers: []ConsumerImage{{Consumer: Consumer{UUID: imCons1, ProjectID: "p", UserID: "u"}}}}, "already exists"},
		"unknown type":      {ImportChunk{Consumers: []ConsumerImage{{Consumer: Consumer{UUID: imCons2, ProjectID: "p", UserID: "u", Type: "NOPE"}}}}, "unknown consumer type"},
		// A valid provider before an invalid consumer: nothing is kept.
		"partly valid": {ImportChunk{Providers: []ProviderImage{prov(imRoot2, "ok", "")},
			Consumers: []ConsumerImage{cons(imRoot2, "VCPU", 99999999999)}}, "allocation of"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := New()
			base := &ImportChunk{First: true, CustomTraits: []Trait{{Name: "CUSTOM_T"}},
				Providers: []ProviderImage{prov(imRoot1, "cn1", "")},
				Consumers: []ConsumerImage{{Consumer: Consumer{UUID: imCons1, ProjectID: "p", UserID: "u",
					Allocations: []Allocation{{ProviderUUID: imRoot1, Class: "VCPU", Used: 1}}}}}}
			if _, err := base.Apply(s, Meta{Time: alT0}); err != nil {
				t.Fatal(err)
			}
			before := imJSON(t, s)
			_, err := tc.chunk.Apply(s, Meta{Time: alT0.Add(time.Hour)})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if after := imJSON(t, s); after != before {
				t.Fatalf("a rejected chunk changed the state:\n%s\n%s", before, after)
			}
		})
	}
}

func TestImportChunkReplace(t *testing.T) {
	s := imSource(t)
	s.LastIndex = 42
	replacement := &ImportChunk{First: true, Replace: true, Providers: []ProviderImage{{UUID: imRoot2, Name: "only"}}}
	bad := *replacement
	bad.Providers = []ProviderImage{{UUID: imRoot2, Name: "only", ParentUUID: imShare}}
	before := imJSON(t, s)
	if _, err := bad.Apply(s, Meta{Time: alT0}); err == nil || imJSON(t, s) != before {
		t.Fatalf("a bad replacement was accepted or changed the state (err %v)", err)
	}
	if _, err := replacement.Apply(s, Meta{Time: alT0}); err != nil {
		t.Fatal(err)
	}
	if got := s.Contents(); got != (Contents{Providers: 1}) || s.LastIndex != 42 || s.Providers.Get(imRoot2).ID != 1 {
		t.Fatalf("after replace: %s, last index %d", got, s.LastIndex)
	}
	if s.Usage.Len() != 0 || s.ProviderConsumers.Len() != 0 || s.TraitIndex.Len() != 0 || s.Classes.Get("CUSTOM_GPU") != nil {
		t.Fatal("replace kept indexes or classes of the old state")
	}
}

// A provider imported with an ID below NextProviderID, after a deletion
// left the provider count as it was, must still show in ID order
// listings.
func TestImportChunkRefreshesProviderOrder(t *testing.T) {
	s := New()
	alMust(t, s, &CreateProvider{UUID: imRoot1, Name: "a"})
	alMust(t, s, &CreateProvider{UUID: imRoot2, Name: "b"})
	if n := len(slices.Collect(s.ProvidersInOrder())); n != 2 {
		t.Fatalf("%d providers in order", n)
	}
	alMust(t, s, &DeleteProvider{UUID: imRoot2})
	if _, err := (&ImportChunk{Providers: []ProviderImage{{UUID: imShare, Name: "c", ID: 2}}}).Apply(s, Meta{Time: alT0}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for p := range s.ProvidersInOrder() {
		got = append(got, p.UUID)
	}
	if !reflect.DeepEqual(got, []string{imRoot1, imShare}) {
		t.Fatalf("providers in order: %v", got)
	}
}
