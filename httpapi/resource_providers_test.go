package httpapi

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

const (
	rpTestA = "aaaaaaaa-0000-4000-8000-000000000001"
	rpTestB = "bbbbbbbb-0000-4000-8000-000000000002"
	rpTestC = "cccccccc-0000-4000-8000-000000000003"
	rpAgg1  = "11111111-0000-4000-8000-000000000001"
	rpAgg2  = "22222222-0000-4000-8000-000000000002"
)

// rpErrorDetail returns the first error's detail of a Placement error body.
func rpErrorDetail(body any) string {
	m, _ := body.(map[string]any)
	errs, _ := m["errors"].([]any)
	if len(errs) == 0 {
		return ""
	}
	e, _ := errs[0].(map[string]any)
	d, _ := e["detail"].(string)
	return d
}

func rpErrorCode(body any) string {
	e := body.(map[string]any)["errors"].([]any)[0].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// rpExpectError requires status and a detail containing want.
func rpExpectError(t *testing.T, status int, body any, wantStatus int, want string) {
	t.Helper()
	if status != wantStatus || !strings.Contains(rpErrorDetail(body), want) {
		t.Errorf("got %d %q, want %d containing %q", status, rpErrorDetail(body), wantStatus, want)
	}
}

func rpListUUIDs(t *testing.T, body any) []string {
	t.Helper()
	out := []string{}
	for _, p := range body.(map[string]any)["resource_providers"].([]any) {
		out = append(out, p.(map[string]any)["uuid"].(string))
	}
	return out
}

func TestCreateAndGetProvider(t *testing.T) {
	api := newTestAPI(t, Config{})

	// Before 1.20: 201, Location, no body.
	st, h, body := api.do("POST", "/resource_providers", "1.19", map[string]any{"name": "old", "uuid": rpTestA})
	if st != http.StatusCreated || h.Get("Location") != "/resource_providers/"+rpTestA || body != nil || h.Get("Content-Type") != "" {
		t.Fatalf("POST 1.19: %d %v %v", st, h, body)
	}
	// From 1.20: 200 with the provider; a uuid without dashes is
	// canonicalised; the root and parent show from 1.14.
	st, h, body = api.do("POST", "/resource_providers", "1.20", map[string]any{
		"name": "child", "uuid": strings.ReplaceAll(strings.ToUpper(rpTestB), "-", ""), "parent_provider_uuid": rpTestA})
	if st != http.StatusOK || h.Get("Location") != "/resource_providers/"+rpTestB || h.Get("Last-Modified") == "" {
		t.Fatalf("POST 1.20: %d %v %v", st, h, body)
	}
	want := map[string]any{
		"uuid": rpTestB, "name": "child", "generation": float64(0),
		"parent_provider_uuid": rpTestA, "root_provider_uuid": rpTestA,
		"links": []any{
			map[string]any{"rel": "self", "href": "/resource_providers/" + rpTestB},
			map[string]any{"rel": "inventories", "href": "/resource_providers/" + rpTestB + "/inventories"},
			map[string]any{"rel": "usages", "href": "/resource_providers/" + rpTestB + "/usages"},
			map[string]any{"rel": "aggregates", "href": "/resource_providers/" + rpTestB + "/aggregates"},
			map[string]any{"rel": "traits", "href": "/resource_providers/" + rpTestB + "/traits"},
			map[string]any{"rel": "allocations", "href": "/resource_providers/" + rpTestB + "/allocations"},
		},
	}
	if !reflect.DeepEqual(body, want) {
		t.Errorf("POST body %v\nwant %v", body, want)
	}
	st, _, got := api.do("GET", "/resource_providers/"+rpTestB, "1.20", nil)
	if st != http.StatusOK || !reflect.DeepEqual(got, want) {
		t.Errorf("GET: %d %v", st, got)
	}

	// Field set and links by version.
	for _, tc := range []struct {
		version string
		fields  int
		links   int
	}{{"1.0", 4, 3}, {"1.1", 4, 4}, {"1.6", 4, 5}, {"1.11", 4, 6}, {"1.14", 6, 6}} {
		_, h, got := api.do("GET", "/resource_providers/"+rpTestA, tc.version, nil)
		m := got.(map[string]any)
		if len(m) != tc.fields || len(m["links"].([]any)) != tc.links {
			t.Errorf("%s: %v", tc.version, m)
		}
		if tc.version == "1.14" && (m["parent_provider_uuid"] != nil || m["root_provider_uuid"] != rpTestA) {
			t.Errorf("root provider shown as %v", m)
		}
		if h.Get("Last-Modified") != "" || h.Get("Cache-Control") != "" {
			t.Errorf("%s: cache headers before 1.15", tc.version)
		}
	}

	st, _, body = api.do("GET", "/resource_providers/"+rpTestC, "", nil)
	rpExpectError(t, st, body, 404, "No resource provider with uuid "+rpTestC+" found")
	// Lookups are by the exact uuid string.
	st, _, _ = api.do("GET", "/resource_providers/"+strings.ReplaceAll(rpTestA, "-", ""), "", nil)
	if st != 404 {
		t.Errorf("dashless lookup: %d", st)
	}
}

func TestCreateProviderErrors(t *testing.T) {
	api := newTestAPI(t, Config{})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "a", "uuid": rpTestA})

	st, _, body := api.do("POST", "/resource_providers", "1.23", map[string]any{"name": "a", "uuid": rpTestB})
	rpExpectError(t, st, body, 409, "Conflicting resource provider name: a already exists.")
	if rpErrorCode(body) != "placement.duplicate_name" {
		t.Errorf("code %q", rpErrorCode(body))
	}
	st, _, body = api.do("POST", "/resource_providers", "", map[string]any{"name": "b", "uuid": strings.ReplaceAll(rpTestA, "-", "")})
	rpExpectError(t, st, body, 409, "Conflicting resource provider uuid: "+rpTestA+" already exists.")
	st, _, body = api.do("POST", "/resource_providers", "1.13", map[string]any{"name": "b", "parent_provider_uuid": rpTestA})
	rpExpectError(t, st, body, 400, "Additional properties are not allowed ('parent_provider_uuid' was unexpected)")
	st, _, body = api.do("POST", "/resource_providers", "1.14", map[string]any{"name": "b", "uuid": rpTestB, "parent_provider_uuid": rpTestB})
	rpExpectError(t, st, body, 400, `Unable to create resource provider "b", `+rpTestB+`: Object action create failed because: parent provider UUID cannot be same as UUID.`)
	st, _, body = api.do("POST", "/resource_providers", "1.14", map[string]any{"name": "b", "parent_provider_uuid": rpTestC})
	rpExpectError(t, st, body, 400, "parent provider UUID does not exist.")
	st, _, body = api.do("POST", "/resource_providers", "", map[string]any{"name": "b", "uuid": "not a uuid"})
	rpExpectError(t, st, body, 400, "JSON does not validate: 'not a uuid' is not a 'uuid'")
	st, _, body = api.do("POST", "/resource_providers", "", map[string]any{"name": strings.Repeat("x", 201)})
	rpExpectError(t, st, body, 400, "Failed validating 'maxLength'")
	st, _, body = api.do("POST", "/resource_providers", "", map[string]any{"name": ""})
	rpExpectError(t, st, body, 400, "name is required")

	// Without a uuid one is generated.
	st, h, body := api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "gen"})
	u, _ := body.(map[string]any)["uuid"].(string)
	if st != 200 || normalizeUUID(u) != u || u == "" || h.Get("Location") != "/resource_providers/"+u {
		t.Errorf("generated: %d %v", st, body)
	}
}

func TestListProviders(t *testing.T) {
	api := newTestAPI(t, Config{})
	// B is created first but A parents it; creation order is the listing
	// order.
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "b", "uuid": rpTestB})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "a", "uuid": rpTestA})
	api.do("PUT", "/resource_providers/"+rpTestB, "1.14", map[string]any{"name": "b", "parent_provider_uuid": rpTestA})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "c", "uuid": rpTestC})
	api.do("PUT", "/resource_providers/"+rpTestA+"/aggregates", "1.1", []string{rpAgg1, rpAgg2})
	api.do("PUT", "/resource_providers/"+rpTestC+"/aggregates", "1.1", []string{rpAgg2})

	for _, tc := range []struct {
		version, query string
		want           []string
	}{
		{"1.0", "", []string{rpTestB, rpTestA, rpTestC}},
		{"1.0", "?name=a", []string{rpTestA}},
		{"1.0", "?name=", []string{rpTestB, rpTestA, rpTestC}},
		{"1.0", "?uuid=" + rpTestC, []string{rpTestC}},
		{"1.3", "?member_of=" + rpAgg2, []string{rpTestA, rpTestC}},
		{"1.3", "?member_of=in:" + rpAgg1 + "," + rpTestC, []string{rpTestA}},
		{"1.24", "?member_of=" + rpAgg2 + "&member_of=" + rpAgg1, []string{rpTestA}},
		{"1.32", "?member_of=!" + rpAgg1, []string{rpTestB, rpTestC}},
		{"1.32", "?member_of=!in:" + rpAgg1 + "," + rpAgg2, []string{rpTestB}},
		{"1.14", "?in_tree=" + rpTestB, []string{rpTestB, rpTestA}},
		{"1.14", "?in_tree=" + rpTestB + "&member_of=" + rpAgg2, []string{rpTestA}},
		{"1.4", "?resources=VCPU:1", []string{}},
		{"1.18", "?required=HW_CPU_X86_SGX", []string{}},
		{"1.22", "?required=!HW_CPU_X86_SGX", []string{rpTestB, rpTestA, rpTestC}},
		{"1.39", "?required=in:HW_CPU_X86_SGX,HW_CPU_X86_VMX", []string{}},
	} {
		st, _, body := api.do("GET", "/resource_providers"+tc.query, tc.version, nil)
		if st != 200 {
			t.Errorf("%s %s: %d %v", tc.version, tc.query, st, body)
			continue
		}
		if got := rpListUUIDs(t, body); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: got %v, want %v", tc.version, tc.query, got, tc.want)
		}
	}

	_, h, _ := api.do("GET", "/resource_providers", "1.15", nil)
	if h.Get("Cache-Control") != "no-cache" || h.Get("Last-Modified") == "" {
		t.Errorf("1.15 headers %v", h)
	}
}

func TestListProvidersErrors(t *testing.T) {
	api := newTestAPI(t, Config{})
	for _, tc := range []struct {
		version, query string
		want           string
	}{
		{"1.0", "?spam=eggs", "Invalid query string parameters: Additional properties are not allowed ('spam' was unexpected)"},
		{"1.2", "?member_of=" + rpAgg1, "Invalid query string parameters: Additional properties are not allowed ('member_of' was unexpected)"},
		{"1.0", "?uuid=spameggs", "Invalid query string parameters: 'spameggs' is not a 'uuid'"},
		{"1.14", "?in_tree=spameggs", "Invalid query string parameters: 'spameggs' is not a 'uuid'"},
		{"1.17", "?required=HW_CPU_X86_SGX", "Additional properties are not allowed ('required' was unexpected)"},
		{"1.23", "?member_of=" + rpAgg1 + "&member_of=" + rpAgg2, "Multiple member_of parameters are not supported"},
		{"1.24", "?member_of=" + rpAgg1 + "," + rpAgg2, "Multiple values for 'member_of' must be prefixed with the 'in:' or '!in:' keyword using the valid microversion. Got: " + rpAgg1 + "," + rpAgg2},
		{"1.24", "?member_of=in:" + rpAgg1 + ",nope", "Invalid query string parameters: Expected 'member_of' parameter to contain valid UUID(s). Got: nope"},
		{"1.31", "?member_of=!" + rpAgg1, "Forbidden member_of parameters are not supported in the specified microversion"},
		{"1.21", "?required=!STORAGE_DISK_SSD", "Invalid query string parameters: Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got: !STORAGE_DISK_SSD"},
		{"1.22", "?required=", "Invalid query string parameters: Expected 'required' parameter value of the form: HW_CPU_X86_VMX,!CUSTOM_MAGIC. Got an empty trait in: "},
		{"1.21", "?required=A,,B", "Expected 'required' parameter value of the form: HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: A,,B"},
		{"1.22", "?required=!", "Got an empty trait in: !"},
		{"1.38", "?required=in:A,B", "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' only supported since microversion 1.39. Got: in:A,B"},
		{"1.39", "?required=in:A,,B", "Expected 'required' parameter value of the form: in:HW_CPU_X86_VMX,CUSTOM_MAGIC. Got an empty trait in: in:A,,B"},
		{"1.39", "?required=in:A,!B", "The format 'in:HW_CPU_X86_VMX,CUSTOM_MAGIC' does not support forbidden traits. Got: in:A,!B"},
		{"1.18", "?required=STORAGE_DISK_SSD,BOGUS_TRAIT", `Invalid trait(s) in "required" parameter: No such trait(s): BOGUS_TRAIT.`},
		{"1.22", "?required=!BOGUS_TRAIT", `Invalid trait(s) in "required" parameter: No such trait(s): BOGUS_TRAIT.`},
		{"1.4", "?resources=", "Badly formed resources parameter. Expected resources query string parameter in form: ?resources=VCPU:2,MEMORY_MB:1024. Got: empty string."},
		{"1.4", "?resources=VCPU", "Got: VCPU."},
		{"1.4", "?resources=DISK_GB:5,", "Got: ."},
		{"1.4", "?resources=VCPU:fred", "Requested resource VCPU expected positive integer amount. Got: fred."},
		{"1.4", "?resources=VCPU:-2", "Requested resource VCPU requires amount >= 1. Got: -2."},
		{"1.4", "?resources=CUSTOM_MISSING:1", "Invalid resource class in resources parameter: No such resource class CUSTOM_MISSING."},
	} {
		st, _, body := api.do("GET", "/resource_providers"+tc.query, tc.version, nil)
		if st != 400 || !strings.Contains(rpErrorDetail(body), tc.want) {
			t.Errorf("%s %s: got %d %q, want %q", tc.version, tc.query, st, rpErrorDetail(body), tc.want)
		}
	}
}

func TestAcceptHeader(t *testing.T) {
	api := newTestAPI(t, Config{})
	for accept, want := range map[string]int{
		"text/plain":                          406,
		"text/html,application/xml;q=0.9":     406,
		"application/json;q=0, */*":           406,
		"text/html,application/xml;q=0.9,*/*": 200,
		"application/*":                       200,
		"application/json":                    200,
	} {
		req, _ := http.NewRequest("GET", api.URL+"/resource_providers", nil)
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Accept", accept)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Accept %q: %d, want %d", accept, resp.StatusCode, want)
		}
	}
}

func TestUpdateProvider(t *testing.T) {
	api := newTestAPI(t, Config{})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "a", "uuid": rpTestA})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "b", "uuid": rpTestB})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "c", "uuid": rpTestC, "parent_provider_uuid": rpTestB})

	st, h, body := api.do("PUT", "/resource_providers/"+rpTestA, "1.15", map[string]any{"name": "new"})
	if st != 200 || body.(map[string]any)["name"] != "new" || body.(map[string]any)["generation"] != float64(0) ||
		h.Get("Cache-Control") != "no-cache" || h.Get("Location") != "" {
		t.Errorf("rename: %d %v %v", st, h, body)
	}
	// Parent B under A: C's root follows.
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "1.14", map[string]any{"name": "b", "parent_provider_uuid": rpTestA})
	if st != 200 || body.(map[string]any)["root_provider_uuid"] != rpTestA {
		t.Errorf("parent: %d %v", st, body)
	}
	_, _, body = api.do("GET", "/resource_providers/"+rpTestC, "1.14", nil)
	if body.(map[string]any)["root_provider_uuid"] != rpTestA {
		t.Errorf("grandchild root %v", body)
	}
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "1.36", map[string]any{"name": "b", "parent_provider_uuid": nil})
	rpExpectError(t, st, body, 400, "Unable to save resource provider "+rpTestB+": Object action update failed because: un-parenting a provider is not currently allowed.")
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "1.37", map[string]any{"name": "b", "parent_provider_uuid": nil})
	if st != 200 || body.(map[string]any)["root_provider_uuid"] != rpTestB || body.(map[string]any)["parent_provider_uuid"] != nil {
		t.Errorf("un-parent: %d %v", st, body)
	}
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "1.37", map[string]any{"name": "b", "parent_provider_uuid": rpTestC})
	rpExpectError(t, st, body, 400, "creating loop in the provider tree is not allowed.")
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "1.23", map[string]any{"name": "new"})
	rpExpectError(t, st, body, 409, "Conflicting resource provider new already exists.")
	if rpErrorCode(body) != "placement.duplicate_name" {
		t.Errorf("code %q", rpErrorCode(body))
	}
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "1.13", map[string]any{"name": "b", "parent_provider_uuid": rpTestA})
	rpExpectError(t, st, body, 400, "JSON does not validate")
	st, _, body = api.do("PUT", "/resource_providers/"+rpTestB, "", map[string]any{"name": "b", "uuid": rpTestA})
	rpExpectError(t, st, body, 400, "Additional properties are not allowed")
	// A missing provider is 404 even with a bad body, as upstream looks it
	// up first.
	st, _, body = api.do("PUT", "/resource_providers/"+rpAgg1, "", map[string]any{"bad": 1})
	rpExpectError(t, st, body, 404, "No resource provider with uuid "+rpAgg1+" found")
}

func TestDeleteProviderHTTP(t *testing.T) {
	api := newTestAPI(t, Config{})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "a", "uuid": rpTestA})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "b", "uuid": rpTestB, "parent_provider_uuid": rpTestA})
	st, _, body := api.do("DELETE", "/resource_providers/"+rpTestA, "1.23", nil)
	rpExpectError(t, st, body, 409, "Unable to delete parent resource provider "+rpTestA+": It has child resource providers.")
	if rpErrorCode(body) != "placement.resource_provider.cannot_delete_parent" {
		t.Errorf("code %q", rpErrorCode(body))
	}
	if st, _, _ := api.do("DELETE", "/resource_providers/"+rpTestB, "", nil); st != 204 {
		t.Errorf("delete child: %d", st)
	}
	st, _, body = api.do("DELETE", "/resource_providers/"+rpTestB, "", nil)
	rpExpectError(t, st, body, 404, "No resource provider with uuid "+rpTestB+" found for delete")
	// The name is free again.
	if st, _, _ := api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "b"}); st != 200 {
		t.Errorf("name not freed: %d", st)
	}

	// A provider with allocations cannot go.
	if st, _, body := api.do("PUT", "/resource_providers/"+rpTestA+"/inventories", "1.26", map[string]any{
		"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": 4}}}); st != 200 {
		t.Fatalf("inventory: %d %v", st, body)
	}
	consumer := "/allocations/" + rpTestC
	if st, _, body := api.do("PUT", consumer, "1.28", map[string]any{
		"allocations": map[string]any{rpTestA: map[string]any{"resources": map[string]any{"VCPU": 1}}},
		"project_id":  "p", "user_id": "u", "consumer_generation": nil}); st != 204 {
		t.Fatalf("allocate: %d %v", st, body)
	}
	st, _, body = api.do("DELETE", "/resource_providers/"+rpTestA, "1.23", nil)
	rpExpectError(t, st, body, 409, "Unable to delete resource provider "+rpTestA+": Resource provider has allocations.")
	if rpErrorCode(body) != "placement.resource_provider.inuse" {
		t.Errorf("code %q", rpErrorCode(body))
	}
	api.do("DELETE", consumer, "", nil)
	if st, _, body := api.do("DELETE", "/resource_providers/"+rpTestA, "", nil); st != 204 {
		t.Errorf("delete after allocations removed: %d %v", st, body)
	}
}
