package httpapi

import (
	"reflect"
	"testing"
)

func TestProviderAggregates(t *testing.T) {
	api := newTestAPI(t, Config{})
	api.do("POST", "/resource_providers", "1.20", map[string]any{"name": "a", "uuid": rpTestA})
	path := "/resource_providers/" + rpTestA + "/aggregates"

	if st, _, _ := api.do("GET", path, "1.0", nil); st != 404 {
		t.Errorf("GET at 1.0: %d", st)
	}
	// Before 1.19: a bare list, no generation, and the provider
	// generation stays.
	st, h, body := api.do("PUT", path, "1.18", []string{rpAgg2, rpAgg1})
	if st != 200 || !reflect.DeepEqual(body, map[string]any{"aggregates": []any{rpAgg2, rpAgg1}}) ||
		h.Get("Last-Modified") == "" || h.Get("Cache-Control") != "no-cache" {
		t.Errorf("PUT 1.18: %d %v %v", st, h, body)
	}
	st, h, body = api.do("GET", path, "1.14", nil)
	if st != 200 || !reflect.DeepEqual(body, map[string]any{"aggregates": []any{rpAgg1, rpAgg2}}) || h.Get("Last-Modified") != "" {
		t.Errorf("GET 1.14: %d %v %v", st, h, body)
	}
	_, _, rp := api.do("GET", "/resource_providers/"+rpTestA, "", nil)
	if rp.(map[string]any)["generation"] != float64(0) {
		t.Errorf("old PUT changed the generation: %v", rp)
	}

	// From 1.19: generation compared and bumped.
	st, _, body = api.do("GET", path, "1.19", nil)
	if st != 200 || body.(map[string]any)["resource_provider_generation"] != float64(0) {
		t.Errorf("GET 1.19: %d %v", st, body)
	}
	st, _, body = api.do("PUT", path, "1.19", map[string]any{"aggregates": []string{rpAgg1}, "resource_provider_generation": 0})
	if st != 200 || !reflect.DeepEqual(body, map[string]any{"aggregates": []any{rpAgg1}, "resource_provider_generation": float64(1)}) {
		t.Errorf("PUT 1.19: %d %v", st, body)
	}
	st, _, body = api.do("PUT", path, "1.23", map[string]any{"aggregates": []string{}, "resource_provider_generation": 0})
	rpExpectError(t, st, body, 409, "Resource provider's generation already changed. Please update the generation and try again.")
	if rpErrorCode(body) != "placement.concurrent_update" {
		t.Errorf("code %q", rpErrorCode(body))
	}
	st, _, body = api.do("PUT", path, "1.19", []string{rpAgg1})
	rpExpectError(t, st, body, 400, "JSON does not validate")
	st, _, body = api.do("PUT", path, "1.19", map[string]any{"aggregates": []string{rpAgg1}})
	rpExpectError(t, st, body, 400, "'resource_provider_generation' is a required property")
	st, _, body = api.do("PUT", path, "1.1", []string{rpAgg1, rpAgg1})
	rpExpectError(t, st, body, 400, "has non-unique elements")
	st, _, body = api.do("PUT", path, "1.1", []string{"not-a-uuid"})
	rpExpectError(t, st, body, 400, "'not-a-uuid' is not a 'uuid'")
	// Body uuids are checked as oslo's is_uuid_like: no dashes is fine.
	if st, _, _ := api.do("PUT", path, "1.1", []string{"11111111000040008000000000000001"}); st != 200 {
		t.Errorf("dashless aggregate: %d", st)
	}

	missing := "/resource_providers/" + rpTestC + "/aggregates"
	st, _, body = api.do("GET", missing, "1.1", nil)
	rpExpectError(t, st, body, 404, "No resource provider with uuid "+rpTestC+" found")
	st, _, body = api.do("PUT", missing, "1.1", []string{"bad"})
	rpExpectError(t, st, body, 404, "No resource provider with uuid "+rpTestC+" found")
}
