package httpapi

import (
	"reflect"
	"strings"
	"testing"
)

const (
	acRoot  = "0d2f7a5e-8a3f-4c1e-9a39-3b0f3f6a1c01"
	acChild = "0d2f7a5e-8a3f-4c1e-9a39-3b0f3f6a1c02"
)

// acFixture makes a compute node (VCPU, traits) with a child (VFs).
func acFixture(t *testing.T) *testAPI {
	a := newTestAPI(t, Config{})
	must := func(status int, want int, what string) {
		t.Helper()
		if status != want {
			t.Fatalf("%s: status %d, want %d", what, status, want)
		}
	}
	st, _, _ := a.do("POST", "/resource_providers", "1.20", map[string]any{"name": "cn", "uuid": acRoot})
	must(st, 200, "create root")
	st, _, _ = a.do("POST", "/resource_providers", "1.20", map[string]any{"name": "pf", "uuid": acChild, "parent_provider_uuid": acRoot})
	must(st, 200, "create child")
	st, _, _ = a.do("PUT", "/resource_providers/"+acRoot+"/inventories", "1.26", map[string]any{
		"resource_provider_generation": 0,
		"inventories":                  map[string]any{"VCPU": map[string]any{"total": 8}, "MEMORY_MB": map[string]any{"total": 1024}},
	})
	must(st, 200, "root inventory")
	st, _, _ = a.do("PUT", "/resource_providers/"+acChild+"/inventories", "1.26", map[string]any{
		"resource_provider_generation": 0,
		"inventories":                  map[string]any{"SRIOV_NET_VF": map[string]any{"total": 4}},
	})
	must(st, 200, "child inventory")
	st, _, _ = a.do("PUT", "/traits/CUSTOM_X", "1.6", nil)
	must(st, 201, "create trait")
	st, _, _ = a.do("PUT", "/resource_providers/"+acRoot+"/traits", "1.6", map[string]any{
		"resource_provider_generation": 1, "traits": []string{"CUSTOM_X"},
	})
	must(st, 200, "set traits")
	return a
}

func TestAllocationCandidatesFormats(t *testing.T) {
	a := acFixture(t)
	get := func(version, query string) map[string]any {
		t.Helper()
		st, h, body := a.do("GET", "/allocation_candidates?"+query, version, nil)
		if st != 200 {
			t.Fatalf("%s %s: status %d: %v", version, query, st, body)
		}
		if version >= "1.15" && h.Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: no cache headers", version)
		}
		return body.(map[string]any)
	}

	// 1.10: allocations as a list, summaries of requested classes only.
	body := get("1.10", "resources=VCPU:2")
	want := map[string]any{
		"allocation_requests": []any{map[string]any{"allocations": []any{map[string]any{
			"resource_provider": map[string]any{"uuid": acRoot},
			"resources":         map[string]any{"VCPU": 2.0},
		}}}},
		"provider_summaries": map[string]any{
			acRoot: map[string]any{"resources": map[string]any{"VCPU": map[string]any{"capacity": 8.0, "used": 0.0}}},
		},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("1.10:\n got %v\nwant %v", body, want)
	}

	// 1.34: dict allocations, mappings, all classes, traits, tree fields
	// and the whole tree in the summaries.
	body = get("1.34", "resources=VCPU:2,SRIOV_NET_VF:1")
	want = map[string]any{
		"allocation_requests": []any{map[string]any{
			"allocations": map[string]any{
				acRoot:  map[string]any{"resources": map[string]any{"VCPU": 2.0}},
				acChild: map[string]any{"resources": map[string]any{"SRIOV_NET_VF": 1.0}},
			},
			"mappings": map[string]any{"": []any{acRoot, acChild}},
		}},
		"provider_summaries": map[string]any{
			acRoot: map[string]any{
				"resources": map[string]any{
					"VCPU":      map[string]any{"capacity": 8.0, "used": 0.0},
					"MEMORY_MB": map[string]any{"capacity": 1024.0, "used": 0.0},
				},
				"traits":               []any{"CUSTOM_X"},
				"parent_provider_uuid": nil,
				"root_provider_uuid":   acRoot,
			},
			acChild: map[string]any{
				"resources":            map[string]any{"SRIOV_NET_VF": map[string]any{"capacity": 4.0, "used": 0.0}},
				"traits":               []any{},
				"parent_provider_uuid": acRoot,
				"root_provider_uuid":   acRoot,
			},
		},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("1.34:\n got %v\nwant %v", body, want)
	}

	// 1.28 cannot express two providers of one tree.
	body = get("1.28", "resources=VCPU:2,SRIOV_NET_VF:1")
	if n := len(body["allocation_requests"].([]any)); n != 0 {
		t.Errorf("1.28: %d candidates, want none", n)
	}
}

func TestAllocationCandidatesErrors(t *testing.T) {
	a := acFixture(t)
	agg := "5f0b1a52-63f5-4a51-a8f6-3f3c2d7c9e10"
	cases := []struct {
		version, query string
		status         int
		detail, code   string
	}{
		{"1.36", "resources_A=VCPU:1&required_B=CUSTOM_X&group_policy=none", 400,
			"Resourceless suffixed group request should be specified in `same_subtree` query param: bad group(s) - ['_B'].", "placement.query.bad_value"},
		{"1.36", "resources_A=VCPU:1&same_subtree=_A,_C&group_policy=none", 400,
			"Real suffixes should be specified in `same_subtree`: ['_C'] not found in ['_A'].", "placement.query.bad_value"},
		{"1.36", "required_A=CUSTOM_X&same_subtree=_A", 400,
			"There must be at least one resources or resources[$S] parameter.", "placement.query.missing_value"},
		{"1.39", "resources=VCPU:1&required=CUSTOM_X,!CUSTOM_X", 400,
			"Conflicting required and forbidden traits found in the following traits keys: required: (CUSTOM_X)", ""},
		{"1.39", "resources=VCPU:1&root_required=in:CUSTOM_X", 400,
			"The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: in:CUSTOM_X", ""},
		{"1.39", "resources=VCPU:1&required=CUSTOM_NOPE", 400, "No such trait(s): CUSTOM_NOPE.", ""},
		{"1.39", "resources=VCPU:1&root_required=!CUSTOM_NOPE", 400, "No such trait(s): CUSTOM_NOPE.", ""},
		{"1.39", "resources1=VCPU:1&resources2=CUSTOM_NOPE:1&group_policy=none", 400,
			"Invalid resource class in resources parameter: No such resource class CUSTOM_NOPE.", ""},
		// Upstream never looks at the second group when the first matches
		// nothing: no error then.
		{"1.39", "resources1=VCPU:100&resources2=CUSTOM_NOPE:1&group_policy=none", 200, "", ""},
		{"1.39", "resources=VCPU:1&member_of=" + agg + "&required=CUSTOM_NOPE", 200, "", ""},
		{"1.25", "resources1=VCPU:1&resources2=VCPU:1", 400,
			`The "group_policy" parameter is required when specifying more than one "resources{N}" parameter.`, ""},
		{"1.25", "resources=VCPU:1&resources=VCPU:x", 400, "Requested resource VCPU expected positive integer amount. Got: x.", ""},
		{"1.31", "resources=VCPU:1&in_tree=nope", 400,
			"Invalid query string parameters: Expected 'in_tree' parameter to be a format of uuid. Got: nope", ""},
		{"1.25", "resources=VCPU:1&required1=CUSTOM_X", 400,
			"All traits parameters must be associated with resources.  Found the following orphaned traits keys: required1", ""},
		{"1.16", "resources=VCPU:1&limit=1&limit=2", 200, "", ""},
		{"1.9", "resources=VCPU:1", 404, "", ""},
	}
	for _, c := range cases {
		st, _, body := a.do("GET", "/allocation_candidates?"+c.query, c.version, nil)
		if st != c.status {
			t.Errorf("%s %s: status %d, want %d: %v", c.version, c.query, st, c.status, body)
			continue
		}
		if c.detail == "" {
			continue
		}
		e := body.(map[string]any)["errors"].([]any)[0].(map[string]any)
		if !strings.Contains(e["detail"].(string), c.detail) {
			t.Errorf("%s %s: detail %q, want %q", c.version, c.query, e["detail"], c.detail)
		}
		if c.code != "" && e["code"] != c.code {
			t.Errorf("%s %s: code %v, want %s", c.version, c.query, e["code"], c.code)
		}
	}
}
