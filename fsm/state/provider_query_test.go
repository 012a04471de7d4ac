package state

import (
	"fmt"
	"reflect"
	"testing"
)

const (
	provAgg1 = "11111111-0000-4000-8000-000000000001"
	provAgg2 = "22222222-0000-4000-8000-000000000002"
	provAgg3 = "33333333-0000-4000-8000-000000000003"
)

// provQueryStore: A (root) with child B; C and D roots. Traits, aggregates,
// inventories and usages are set directly (their commands belong to
// other files).
//
//	A: aggs 1,2  traits SSD,SGX  VCPU total 8 reserved 2 ratio 2, used 10
//	B: aggs 2    traits SSD      DISK_GB total 100 min 10 max 50 step 5
//	C: aggs 3    traits -        VCPU total 4
//	D: -         traits SGX     -
func provQueryStore(t *testing.T) *Store {
	s := New()
	for _, c := range []CreateProvider{
		{UUID: rpA, Name: "a"}, {UUID: rpB, Name: "b", ParentUUID: rpA},
		{UUID: rpC, Name: "c"}, {UUID: rpD, Name: "d"},
	} {
		provApply(t, s, &c)
	}
	setTraits := func(u string, traits ...string) {
		for _, tr := range traits {
			s.Providers.Get(u).Traits[tr] = true
			s.TraitIndex = addToSet(s.TraitIndex, tr, u)
		}
	}
	setTraits(rpA, "STORAGE_DISK_SSD", "HW_CPU_X86_SGX")
	setTraits(rpB, "STORAGE_DISK_SSD")
	setTraits(rpD, "HW_CPU_X86_SGX")
	provApply(t, s, &SetAggregates{UUID: rpA, Aggregates: []string{provAgg1, provAgg2}})
	provApply(t, s, &SetAggregates{UUID: rpB, Aggregates: []string{provAgg2}})
	provApply(t, s, &SetAggregates{UUID: rpC, Aggregates: []string{provAgg3}})
	inv := func(total, reserved, min, max, step int64, ratio float64) *Inventory {
		return &Inventory{Total: total, Reserved: reserved, MinUnit: min, MaxUnit: max, StepSize: step, AllocationRatio: ratio}
	}
	s.Providers.Get(rpA).Inventories["VCPU"] = inv(8, 2, 1, 8, 1, 2)
	s.Providers.Get(rpA).Usages["VCPU"] = 10
	s.Providers.Get(rpB).Inventories["DISK_GB"] = inv(100, 0, 10, 50, 5, 1)
	s.Providers.Get(rpC).Inventories["VCPU"] = inv(4, 0, 1, 4, 1, 1)
	return s
}

func provUUIDs(ps []ProviderSummary) []string {
	out := []string{}
	for _, p := range ps {
		out = append(out, p.UUID)
	}
	return out
}

func TestFindProviders(t *testing.T) {
	s := provQueryStore(t)
	var manyAggs []string
	for i := 0; i < 20; i++ {
		manyAggs = append(manyAggs, fmt.Sprintf("44444444-0000-4000-8000-%012d", i))
	}
	for _, tc := range []struct {
		name string
		f    ProviderFilter
		want []string
	}{
		{"all, creation order", ProviderFilter{}, []string{rpA, rpB, rpC, rpD}},
		{"name", ProviderFilter{Name: "c"}, []string{rpC}},
		{"unknown name", ProviderFilter{Name: "zz"}, []string{}},
		{"uuid", ProviderFilter{UUID: rpB}, []string{rpB}},
		{"uuid and other name", ProviderFilter{UUID: rpB, Name: "a"}, []string{}},
		{"in_tree child", ProviderFilter{InTree: rpB}, []string{rpA, rpB}},
		{"in_tree unknown", ProviderFilter{InTree: rpE}, []string{}},
		{"member_of one", ProviderFilter{MemberOf: [][]string{{provAgg2}}}, []string{rpA, rpB}},
		{"member_of any", ProviderFilter{MemberOf: [][]string{{provAgg1, provAgg3}}}, []string{rpA, rpC}},
		{"member_of all", ProviderFilter{MemberOf: [][]string{{provAgg1}, {provAgg2}}}, []string{rpA}},
		{"member_of unknown", ProviderFilter{MemberOf: [][]string{{rpE}}}, []string{}},
		{"forbidden agg", ProviderFilter{ForbiddenAggregates: []string{provAgg2}}, []string{rpC, rpD}},
		{"member_of and forbidden", ProviderFilter{MemberOf: [][]string{{provAgg2}}, ForbiddenAggregates: []string{provAgg1}}, []string{rpB}},
		{"required", ProviderFilter{RequiredTraits: [][]string{{"STORAGE_DISK_SSD"}}}, []string{rpA, rpB}},
		{"required all", ProviderFilter{RequiredTraits: [][]string{{"STORAGE_DISK_SSD"}, {"HW_CPU_X86_SGX"}}}, []string{rpA}},
		{"required any", ProviderFilter{RequiredTraits: [][]string{{"HW_CPU_X86_SGX", "STORAGE_DISK_SSD"}}}, []string{rpA, rpB, rpD}},
		{"required none has", ProviderFilter{RequiredTraits: [][]string{{"HW_CPU_X86_VMX"}}}, []string{}},
		{"forbidden trait", ProviderFilter{ForbiddenTraits: []string{"STORAGE_DISK_SSD"}}, []string{rpC, rpD}},
		{"required and forbidden", ProviderFilter{RequiredTraits: [][]string{{"HW_CPU_X86_SGX"}}, ForbiddenTraits: []string{"STORAGE_DISK_SSD"}}, []string{rpD}},
		{"required with in_tree", ProviderFilter{RequiredTraits: [][]string{{"STORAGE_DISK_SSD"}}, InTree: rpA, ForbiddenTraits: []string{"HW_CPU_X86_SGX"}}, []string{rpB}},
		// A: (8-2)*2 = 12 capacity, 10 used: room for 2.
		{"resources fit", ProviderFilter{Resources: []ResourceAmount{{"VCPU", 2}}}, []string{rpA, rpC}},
		{"resources over used capacity", ProviderFilter{Resources: []ResourceAmount{{"VCPU", 3}}}, []string{rpC}},
		{"resources over max_unit", ProviderFilter{Resources: []ResourceAmount{{"VCPU", 5}}}, []string{}},
		{"resources below min_unit", ProviderFilter{Resources: []ResourceAmount{{"DISK_GB", 5}}}, []string{}},
		{"resources off step", ProviderFilter{Resources: []ResourceAmount{{"DISK_GB", 12}}}, []string{}},
		{"resources on step", ProviderFilter{Resources: []ResourceAmount{{"DISK_GB", 15}}}, []string{rpB}},
		{"resources of two classes", ProviderFilter{Resources: []ResourceAmount{{"DISK_GB", 15}, {"VCPU", 1}}}, []string{}},
		{"resources no inventory", ProviderFilter{Resources: []ResourceAmount{{"MEMORY_MB", 1}}}, []string{}},
		{"everything", ProviderFilter{Resources: []ResourceAmount{{"VCPU", 1}}, MemberOf: [][]string{{provAgg1, provAgg3}}, ForbiddenTraits: []string{"HW_CPU_X86_SGX"}}, []string{rpC}},
		// Many forbidden keys go through the indexes instead.
		{"many forbidden", ProviderFilter{ForbiddenAggregates: append(manyAggs, provAgg3), ForbiddenTraits: []string{"HW_CPU_X86_SGX"}}, []string{rpB}},
	} {
		got, err := s.FindProviders(tc.f)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !reflect.DeepEqual(provUUIDs(got), tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, provUUIDs(got), tc.want)
		}
	}
}

func TestFindProvidersErrors(t *testing.T) {
	s := provQueryStore(t)
	for _, tc := range []struct {
		name   string
		f      ProviderFilter
		detail string // "" for no error (and an empty result)
	}{
		{"unknown required trait", ProviderFilter{RequiredTraits: [][]string{{"STORAGE_DISK_SSD"}, {"BOGUS"}}}, "No such trait(s): BOGUS."},
		{"unknown forbidden trait", ProviderFilter{ForbiddenTraits: []string{"BOGUS"}}, "No such trait(s): BOGUS."},
		{"unknown class", ProviderFilter{Resources: []ResourceAmount{{"VCPU", 1}, {"CUSTOM_NOPE", 1}}}, "No such resource class CUSTOM_NOPE."},
		// Upstream answers an empty list before validating later filters
		// when an earlier one matches nothing.
		{"unknown tree first", ProviderFilter{InTree: rpE, ForbiddenTraits: []string{"BOGUS"}}, ""},
		{"no trait match first", ProviderFilter{RequiredTraits: [][]string{{"HW_CPU_X86_VMX"}}, Resources: []ResourceAmount{{"CUSTOM_NOPE", 1}}}, ""},
		{"no aggregate match first", ProviderFilter{MemberOf: [][]string{{rpE}}, Resources: []ResourceAmount{{"CUSTOM_NOPE", 1}}}, ""},
	} {
		got, err := s.FindProviders(tc.f)
		if tc.detail == "" {
			if err != nil || len(got) != 0 {
				t.Errorf("%s: got %v, %v; want empty", tc.name, provUUIDs(got), err)
			}
			continue
		}
		se, ok := err.(*Error)
		if !ok || se.Kind != BadRequest || se.Detail != tc.detail {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.detail)
		}
	}
}

func TestHasCapacityFractionalRatio(t *testing.T) {
	p := &Provider{
		Inventories: map[string]*Inventory{"VCPU": {Total: 3, MinUnit: 1, MaxUnit: 10, StepSize: 1, AllocationRatio: 1.5}},
		Usages:      map[string]int64{"VCPU": 2},
	}
	// (3-0)*1.5 = 4.5: 2 used + 2 fits, 2 + 3 does not.
	if !p.HasCapacity("VCPU", 2) || p.HasCapacity("VCPU", 3) {
		t.Errorf("fractional capacity wrong")
	}
}
