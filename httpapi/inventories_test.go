package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// invCheck fails unless the response has the status and, for errors, a
// detail containing want (and the code when given).
func invCheck(t *testing.T, what string, status int, body any, wantStatus int, want ...string) {
	t.Helper()
	if status != wantStatus {
		t.Fatalf("%s: status %d, want %d: %v", what, status, wantStatus, body)
	}
	if len(want) == 0 {
		return
	}
	errs, _ := body.(map[string]any)["errors"].([]any)
	if len(errs) != 1 {
		t.Fatalf("%s: no error body: %v", what, body)
	}
	e := errs[0].(map[string]any)
	if !strings.Contains(e["detail"].(string), want[0]) {
		t.Fatalf("%s: detail %q does not contain %q", what, e["detail"], want[0])
	}
	if len(want) > 1 && e["code"] != want[1] {
		t.Fatalf("%s: code %v, want %s", what, e["code"], want[1])
	}
}

func invField(body any, path ...string) any {
	v := body
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// invProvider creates a provider through the API and returns its uuid.
func invProvider(t *testing.T, a *testAPI, name string) string {
	t.Helper()
	st, _, body := a.do("POST", "/resource_providers", "1.20", map[string]any{"name": name})
	if st != 200 {
		t.Fatalf("create provider: %d %v", st, body)
	}
	return body.(map[string]any)["uuid"].(string)
}

// invRaw sends a raw body with the given content type.
func invRaw(t *testing.T, a *testAPI, method, path, version, ctype, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, a.URL+path, bytes.NewBufferString(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement "+version)
	req.Header.Set("Content-Type", ctype)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestInventoryLifecycle(t *testing.T) {
	a := newTestAPI(t, Config{})
	rp := invProvider(t, a, "inv-rp")
	base := "/resource_providers/" + rp + "/inventories"

	st, h, body := a.do("GET", base, "1.15", nil)
	invCheck(t, "get empty", st, body, 200)
	if h.Get("Last-Modified") != "" || h.Get("Cache-Control") != "no-cache" {
		t.Fatalf("empty list headers: %v", h)
	}
	if invField(body, "resource_provider_generation") != 0.0 || len(invField(body, "inventories").(map[string]any)) != 0 {
		t.Fatalf("empty list: %v", body)
	}

	st, h, body = a.do("POST", base, "1.15", map[string]any{
		"resource_class": "DISK_GB", "total": 2048, "reserved": 512, "min_unit": 10, "step_size": 10,
	})
	invCheck(t, "post", st, body, 201)
	if loc := h.Get("Location"); loc != a.URL+base+"/DISK_GB" {
		t.Fatalf("location %q", loc)
	}
	if h.Get("Last-Modified") == "" {
		t.Fatal("no Last-Modified at 1.15")
	}
	if invField(body, "resource_provider_generation") != 1.0 || invField(body, "max_unit") != 2147483647.0 ||
		invField(body, "allocation_ratio") != 1.0 || invField(body, "min_unit") != 10.0 {
		t.Fatalf("post body %v", body)
	}

	st, h, body = a.do("GET", base+"/DISK_GB", "1.14", nil)
	invCheck(t, "get one", st, body, 200)
	if h.Get("Last-Modified") != "" || h.Get("Cache-Control") != "" {
		t.Fatalf("1.14 cache headers: %v", h)
	}
	if invField(body, "reserved") != 512.0 {
		t.Fatalf("get one: %v", body)
	}

	st, _, body = a.do("PUT", base+"/DISK_GB", "", map[string]any{"resource_provider_generation": 5, "total": 10})
	invCheck(t, "put stale", st, body, 409, "resource provider generation conflict")
	st, _, body = a.do("PUT", base+"/DISK_GB", "1.23", map[string]any{"resource_provider_generation": 1, "total": 10, "reserved": 10})
	invCheck(t, "put full reserve", st, body, 400, "The reserved value is greater than or equal to total.")
	st, _, body = a.do("PUT", base+"/DISK_GB", "1.26", map[string]any{"resource_provider_generation": 1, "total": 10, "reserved": 10})
	invCheck(t, "put full reserve 1.26", st, body, 200)
	if invField(body, "resource_provider_generation") != 2.0 {
		t.Fatalf("put one: %v", body)
	}
	st, _, body = a.do("PUT", base+"/MEMORY_MB", "", map[string]any{"resource_provider_generation": 2, "total": 10})
	invCheck(t, "put missing class", st, body, 400, "No inventory record with resource class for resource provider")

	st, _, body = a.do("POST", base, "", map[string]any{"resource_class": "DISK_GB", "total": 1})
	invCheck(t, "post again", st, body, 409, "Update conflict")
	st, _, body = a.do("POST", base, "", map[string]any{"resource_class": "NO_CLASS_14", "total": 1})
	invCheck(t, "post unknown class", st, body, 400, "No such resource class NO_CLASS_14")
	st, _, body = a.do("POST", base, "", map[string]any{"resource_class": "DISK_GB", "total": 0})
	invCheck(t, "post total 0", st, body, 400, "0 is less than the minimum of 1")

	st, _, body = a.do("PUT", base, "1.23", map[string]any{
		"resource_provider_generation": 2,
		"inventories":                  map[string]any{"VCPU": map[string]any{"total": 8, "allocation_ratio": 16.0}},
	})
	invCheck(t, "put all", st, body, 200)
	if invField(body, "resource_provider_generation") != 3.0 || invField(body, "inventories", "VCPU", "allocation_ratio") != 16.0 ||
		invField(body, "inventories", "DISK_GB") != nil {
		t.Fatalf("put all: %v", body)
	}
	st, _, body = a.do("PUT", base, "1.23", map[string]any{
		"resource_provider_generation": 3, "inventories": map[string]any{"HOUSE": map[string]any{"total": 1}},
	})
	invCheck(t, "put all unknown", st, body, 400, "Unknown resource class in inventory for resource provider")
	st, _, body = a.do("PUT", base, "1.23", map[string]any{"resource_provider_generation": 0, "inventories": map[string]any{}})
	invCheck(t, "put all stale", st, body, 409, "resource provider generation conflict", "placement.concurrent_update")

	st, _, body = a.do("DELETE", base+"/DISK_GB", "", nil)
	invCheck(t, "delete missing", st, body, 404, "No inventory of class DISK_GB found for delete")
	st, _, body = a.do("DELETE", base+"/VCPU", "", nil)
	invCheck(t, "delete", st, body, 204)
	st, _, body = a.do("DELETE", base, "1.4", nil)
	invCheck(t, "delete all 1.4", st, body, 405)
	st, _, body = a.do("DELETE", base, "1.5", nil)
	invCheck(t, "delete all", st, body, 204)
	st, _, body = a.do("GET", base, "", nil)
	if st != 200 || invField(body, "resource_provider_generation") != 5.0 {
		t.Fatalf("final: %d %v", st, body)
	}
}

func TestInventoryMissingProvider(t *testing.T) {
	a := newTestAPI(t, Config{})
	const missing = "/resource_providers/7260669a-e3d4-4867-aaa7-683e2ab6958c/inventories"
	st, _, body := a.do("GET", missing, "", nil)
	invCheck(t, "list", st, body, 404,
		"No resource provider with uuid 7260669a-e3d4-4867-aaa7-683e2ab6958c found : No resource provider")
	st, _, body = a.do("GET", missing+"/VCPU", "", nil)
	invCheck(t, "show", st, body, 404, "No resource provider with uuid 7260669a-e3d4-4867-aaa7-683e2ab6958c found")
	// The provider is looked up before the body is validated.
	st, _, body = a.do("POST", missing, "", map[string]any{"bogus": 1})
	invCheck(t, "post", st, body, 404, "No resource provider with uuid 7260669a-e3d4-4867-aaa7-683e2ab6958c found")
	st, _, body = a.do("DELETE", missing, "1.5", nil)
	invCheck(t, "delete all", st, body, 404)
	st, _, body = a.do("DELETE", missing+"/VCPU", "", nil)
	invCheck(t, "delete one", st, body, 404)
}

func TestInventoryBodies(t *testing.T) {
	a := newTestAPI(t, Config{})
	rp := invProvider(t, a, "inv-bodies")
	base := "/resource_providers/" + rp + "/inventories"
	st, out := invRaw(t, a, "POST", base, "1.0", "text/plain", "x")
	if st != 415 {
		t.Fatalf("wrong content type: %d %s", st, out)
	}
	st, out = invRaw(t, a, "POST", base, "1.0", "application/json", `{"foo": }`)
	if st != 400 || !strings.Contains(out, "Malformed JSON") {
		t.Fatalf("malformed: %d %s", st, out)
	}
	// A write's answer shows the values as the request wrote them (Python
	// echoes what json.loads read); reads show allocation_ratio as the
	// float it is stored as.
	st, out = invRaw(t, a, "POST", base, "1.0", "application/json", `{"resource_class": "VCPU", "total": 4.0, "allocation_ratio": 2}`)
	if st != 201 || !strings.Contains(out, `{"total": 4.0, "reserved": 0, `) || !strings.Contains(out, `"allocation_ratio": 2, `) {
		t.Fatalf("ratio: %d %s", st, out)
	}
	if st, out = invRaw(t, a, "GET", base+"/VCPU", "1.0", "", ""); st != 200 || !strings.Contains(out, `{"total": 4, `) || !strings.Contains(out, `"allocation_ratio": 2.0`) {
		t.Fatalf("ratio read back: %d %s", st, out)
	}
	// The first bad record in the document is reported.
	st, out = invRaw(t, a, "PUT", base, "1.0", "application/json",
		`{"resource_provider_generation": 1, "inventories": {"MEMORY_MB": {"total": 2, "reserved": 3}, "DISK_GB": {"total": 1, "reserved": 1}}}`)
	if st != 400 || !strings.Contains(out, "Invalid inventory for 'MEMORY_MB'") {
		t.Fatalf("order: %d %s", st, out)
	}
	st, out = invRaw(t, a, "PUT", base, "1.0", "application/json",
		`{"resource_provider_generation": 1, "inventories": {"DISK_GB": {"total": 1, "reserved": 1}, "MEMORY_MB": {"total": 2, "reserved": 3}}}`)
	if st != 400 || !strings.Contains(out, "Invalid inventory for 'DISK_GB'") {
		t.Fatalf("order: %d %s", st, out)
	}
}

func TestPyFloat(t *testing.T) {
	for f, want := range map[float64]string{
		1: "1.0", 16: "16.0", 0.5: "0.5", 0: "0.0", 1.5e-5: "1.5e-05", 1e16: "1e+16", 123456789012345.6: "123456789012345.6",
	} {
		b, _ := pyFloat(f).MarshalJSON()
		if string(b) != want {
			t.Errorf("%v: got %s want %s", f, b, want)
		}
	}
}
