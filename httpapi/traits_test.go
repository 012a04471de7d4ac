package httpapi

import (
	"reflect"
	"sort"
	"testing"
)

func invTraitList(t *testing.T, body any) []string {
	t.Helper()
	raw, ok := invField(body, "traits").([]any)
	if !ok {
		t.Fatalf("no traits in %v", body)
	}
	out := []string{}
	for _, v := range raw {
		out = append(out, v.(string))
	}
	sort.Strings(out)
	return out
}

func TestTraitsAPI(t *testing.T) {
	a := newTestAPI(t, Config{})
	st, _, body := a.do("PUT", "/traits/CUSTOM_T1", "1.5", nil)
	invCheck(t, "put 1.5", st, body, 404)
	st, _, body = a.do("PUT", "/traits/TRAIT_X", "1.6", nil)
	invCheck(t, "put standard-looking", st, body, 400, `The trait is invalid. A valid trait must be no longer than 255 characters, start with the prefix "CUSTOM_"`)
	st, h, body := a.do("PUT", "/traits/CUSTOM_T1", "1.6", nil)
	invCheck(t, "create", st, body, 201)
	if h.Get("Location") != a.URL+"/traits/CUSTOM_T1" || h.Get("Content-Type") != "" || h.Get("Last-Modified") != "" {
		t.Fatalf("create headers: %v", h)
	}
	st, h, body = a.do("PUT", "/traits/CUSTOM_T1", "1.15", nil)
	invCheck(t, "exists", st, body, 204)
	if h.Get("Last-Modified") == "" || h.Get("Cache-Control") != "no-cache" {
		t.Fatalf("1.15 headers: %v", h)
	}
	a.do("PUT", "/traits/CUSTOM_T2", "1.6", nil)
	a.do("PUT", "/traits/CUSTOM_OTHER", "1.6", nil)

	st, _, body = a.do("GET", "/traits/CUSTOM_T1", "1.6", nil)
	invCheck(t, "get", st, body, 204)
	st, _, body = a.do("GET", "/traits/CUSTOM_NONE", "1.6", nil)
	invCheck(t, "get missing", st, body, 404, "No such trait(s): CUSTOM_NONE.")

	st, _, body = a.do("GET", "/traits?name=startswith:CUSTOM_T", "1.6", nil)
	invCheck(t, "list prefix", st, body, 200)
	if got := invTraitList(t, body); !reflect.DeepEqual(got, []string{"CUSTOM_T1", "CUSTOM_T2"}) {
		t.Fatalf("prefix: %v", got)
	}
	st, _, body = a.do("GET", "/traits?name=in:CUSTOM_OTHER,HW_CPU_X86_SSE,NOPE", "1.6", nil)
	invCheck(t, "list in", st, body, 200)
	if got := invTraitList(t, body); !reflect.DeepEqual(got, []string{"CUSTOM_OTHER", "HW_CPU_X86_SSE"}) {
		t.Fatalf("in: %v", got)
	}
	st, _, body = a.do("GET", "/traits?name=in_abc", "1.6", nil)
	invCheck(t, "bad name", st, body, 400, `Badly formatted name parameter. Expected name query string parameter in form: ?name=[in|startswith]:[name1,name2|prefix]. Got: "in_abc"`)
	st, _, body = a.do("GET", "/traits?associated=xyz", "1.6", nil)
	invCheck(t, "bad associated", st, body, 400, `The query parameter "associated" only accepts "true" or "false"`)
	st, _, body = a.do("GET", "/traits?invalid=abc", "1.6", nil)
	invCheck(t, "bad param", st, body, 400, "Invalid query string parameters: Additional properties are not allowed")

	rp := invProvider(t, a, "trait-rp")
	path := "/resource_providers/" + rp + "/traits"
	st, _, body = a.do("PUT", path, "1.6", map[string]any{"traits": []string{"CUSTOM_T1", "NOPE_B", "NOPE_A"}, "resource_provider_generation": 0})
	invCheck(t, "unknown traits", st, body, 400, "No such trait NOPE_A, NOPE_B")
	st, _, body = a.do("PUT", path, "1.23", map[string]any{"traits": []string{"CUSTOM_T1"}, "resource_provider_generation": 4})
	invCheck(t, "stale", st, body, 409, "Resource provider's generation already changed.", "placement.concurrent_update")
	st, _, body = a.do("PUT", path, "1.6", map[string]any{"traits": "x", "resource_provider_generation": 0})
	invCheck(t, "bad body", st, body, 400, "'x' is not of type 'array'")
	st, h, body = a.do("PUT", path, "1.15", map[string]any{"traits": []string{"CUSTOM_T1", "HW_CPU_X86_SSE"}, "resource_provider_generation": 0})
	invCheck(t, "set", st, body, 200)
	if invField(body, "resource_provider_generation") != 1.0 || h.Get("Last-Modified") == "" {
		t.Fatalf("set: %v %v", body, h)
	}
	if got := invTraitList(t, body); !reflect.DeepEqual(got, []string{"CUSTOM_T1", "HW_CPU_X86_SSE"}) {
		t.Fatalf("set traits: %v", got)
	}
	st, _, body = a.do("GET", path, "1.6", nil)
	if st != 200 || invField(body, "resource_provider_generation") != 1.0 || len(invTraitList(t, body)) != 2 {
		t.Fatalf("list rp traits: %d %v", st, body)
	}
	st, _, body = a.do("GET", "/traits?associated=true", "1.6", nil)
	if got := invTraitList(t, body); !reflect.DeepEqual(got, []string{"CUSTOM_T1", "HW_CPU_X86_SSE"}) {
		t.Fatalf("associated: %v", got)
	}
	st, _, body = a.do("DELETE", "/traits/CUSTOM_T1", "1.6", nil)
	invCheck(t, "delete in use", st, body, 409, "The trait CUSTOM_T1 is in use by a resource provider.")
	st, _, body = a.do("DELETE", "/traits/HW_CPU_X86_SSE", "1.6", nil)
	invCheck(t, "delete standard", st, body, 400, "Cannot delete standard trait HW_CPU_X86_SSE.")

	st, _, body = a.do("GET", "/resource_providers/non_existed/traits", "1.6", nil)
	invCheck(t, "missing rp", st, body, 404, "No resource provider with uuid non_existed found: No resource provider with uuid non_existed found")
	st, _, body = a.do("DELETE", "/resource_providers/non_existed/traits", "1.6", nil)
	invCheck(t, "delete missing rp", st, body, 404, "No resource provider with uuid non_existed found")

	st, _, body = a.do("DELETE", path, "1.6", nil)
	invCheck(t, "delete rp traits", st, body, 204)
	st, _, body = a.do("DELETE", "/traits/CUSTOM_T1", "1.6", nil)
	invCheck(t, "delete trait", st, body, 204)
	st, _, body = a.do("GET", path, "1.6", nil)
	if st != 200 || invField(body, "resource_provider_generation") != 2.0 || len(invTraitList(t, body)) != 0 {
		t.Fatalf("after delete: %d %v", st, body)
	}
}
