package httpapi

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Answers are json.dumps' bytes, as upstream's: ", " and ": " separators,
// ASCII only, no trailing newline. The expected bodies were written by
// Python 3.11's json.dumps.
func TestBodiesAreJSONDumpsBytes(t *testing.T) {
	api := newTestAPI(t, Config{})
	admin := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	r := send(t, api.URL, "POST", "/resource_providers", admin, `{"name": "r\u00e9seau \u2603 \ud83d\ude00 <&>", "uuid": "`+rpTestA+`"}`)
	if r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	wantStart := `{"uuid": "` + rpTestA + `", "name": "r\u00e9seau \u2603 \ud83d\ude00 <&>", "generation": 0, "links": [{"rel": "self", "href": "/resource_providers/` + rpTestA + `"}, `
	if !strings.HasPrefix(r.body, wantStart) || strings.HasSuffix(r.body, "\n") {
		t.Errorf("provider body %q\nwant it to start %q, without a trailing newline", r.body, wantStart)
	}
	r = send(t, api.URL, "GET", "/resource_providers/"+rpTestA+"/usages", admin, "")
	if want := `{"resource_provider_generation": 0, "usages": {}}`; r.body != want {
		t.Errorf("usages body %q, want %q", r.body, want)
	}
	r = send(t, api.URL, "GET", "/resource_classes/CUSTOM_NOPE", admin, "")
	want := `{"errors": [{"status": 404, "title": "Not Found", "detail": "The resource could not be found.\n\n No such resource class CUSTOM_NOPE.  ", "code": "placement.undefined_code", "request_id": "` + r.header.Get(requestIDHeader) + `"}]}`
	if r.body != want {
		t.Errorf("error body %q, want %q", r.body, want)
	}
}

func TestPythonize(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{map[string]any{"a": 1, "b": []any{1, 2, map[string]any{"c": nil}}, "d": "x"}, `{"a": 1, "b": [1, 2, {"c": null}], "d": "x"}`},
		{map[string]any{"ctl": "a\x01b\x7fc\n\t\"\\\u2028<>&,:"}, `{"ctl": "a\u0001b\u007fc\n\t\"\\\u2028<>&,:"}`},
		{[]any{"r\u00e9seau", "\U0001F600"}, `["r\u00e9seau", "\ud83d\ude00"]`},
		{[]any{}, `[]`},
		{map[string]any{}, `{}`},
		{map[string]any{"f": pyFloat(1)}, `{"f": 1.0}`},
		{[]any{json.RawMessage(`"\u003c\\u003c"`), "<&>"}, `["<\\u003c", "<&>"]`},
		{newDictOf("b", 1, "a", newDictOf("<z>", 2, "y", nil)), `{"b": 1, "a": {"<z>": 2, "y": null}}`},
	} {
		got, err := pyJSON(c.in)
		if err != nil || string(got) != c.want {
			t.Errorf("pyJSON(%#v) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if b := appendPyString(nil, "r\u00e9seau\x7f<"); string(b) != `"r\u00e9seau\u007f<"` {
		t.Errorf("appendPyString: %s", b)
	}
}

// A provider or class that upstream's handler looks up without catching
// the NotFound gets a 404 raised out of the handler: the microversion
// middleware adds its version header but not Vary. Handlers that catch it
// answer their own 404, which carries Vary.
func TestUncaughtNotFoundHasNoVary(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	const missing = "00000000-0000-4000-8000-000000000404"
	rp := "/resource_providers/" + missing
	if r := send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`); r.status != 200 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	inv := `{"resource_provider_generation": 0, "total": 1}`
	for _, c := range []struct {
		method, path, body string
		vary               bool
	}{
		{"GET", rp, "", false},
		{"PUT", rp, `{"name": "x"}`, false},
		{"GET", rp + "/aggregates", "", false},
		{"PUT", rp + "/aggregates", `{"aggregates": [], "resource_provider_generation": 0}`, false},
		{"POST", rp + "/inventories", `{"resource_class": "VCPU", "total": 1, "resource_provider_generation": 0}`, false},
		{"PUT", rp + "/inventories", `{"resource_provider_generation": 0, "inventories": {}}`, false},
		{"DELETE", rp + "/inventories", "", false},
		{"PUT", rp + "/inventories/VCPU", inv, false},
		{"DELETE", rp + "/inventories/VCPU", "", false},
		{"PUT", rp + "/traits", `{"traits": [], "resource_provider_generation": 0}`, false},
		{"DELETE", rp + "/traits", "", false},
		{"GET", "/resource_classes/CUSTOM_NOPE", "", false},
		{"DELETE", "/resource_classes/CUSTOM_NOPE", "", false},
		{"PUT", "/resource_providers/" + rpTestA + "/inventories/CUSTOM_NOPE", inv, false},
		// Caught and reworded by the handler.
		{"DELETE", rp, "", true},
		{"GET", rp + "/inventories", "", true},
		{"GET", rp + "/usages", "", true},
		{"GET", rp + "/allocations", "", true},
		{"GET", rp + "/traits", "", true},
		{"DELETE", "/resource_providers/" + rpTestA + "/inventories/VCPU", "", true},
		{"DELETE", "/allocations/" + missing, "", true},
		{"GET", "/traits/CUSTOM_NOPE", "", true},
	} {
		r := send(t, api.URL, c.method, c.path, h, c.body)
		if r.status != 404 {
			t.Errorf("%s %s: %d %s, want 404", c.method, c.path, r.status, r.body)
			continue
		}
		if got := r.header.Get("Vary") != ""; got != c.vary || r.header.Get("OpenStack-API-Version") != "placement 1.39" {
			t.Errorf("%s %s: Vary %q, version %q; want Vary: %v", c.method, c.path, r.header.Get("Vary"), r.header.Get("OpenStack-API-Version"), c.vary)
		}
	}
	// At 1.6 PUT /resource_classes/{name} renames: the class is looked up
	// without catching.
	h["OpenStack-API-Version"] = "placement 1.6"
	if r := send(t, api.URL, "PUT", "/resource_classes/CUSTOM_NOPE", h, `{"name": "CUSTOM_YES"}`); r.status != 404 || r.header.Get("Vary") != "" {
		t.Errorf("rename at 1.6: %d Vary %q", r.status, r.header.Get("Vary"))
	}
}

// A malformed body is reported in the words of Python's json module, as
// upstream's extract_json reports it (the messages are Python 3.11's).
func TestMalformedJSONMessages(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	for body, want := range map[string]string{
		"":                                "Expecting value: line 1 column 1 (char 0)",
		`{"name": "unterminated`:          "Unterminated string starting at: line 1 column 10 (char 9)",
		`{"name": "x",}`:                  "Expecting property name enclosed in double quotes: line 1 column 14 (char 13)",
		`{"name" "x"}`:                    "Expecting ':' delimiter: line 1 column 9 (char 8)",
		`{"name": "x"} {}`:                "Extra data: line 1 column 15 (char 14)",
		"{\"name\": \"a\x01b\"}":          "Invalid control character at: line 1 column 12 (char 11)",
		"{\n \"name\": \"\u00e9\" \"x\"}": "Expecting ',' delimiter: line 2 column 14 (char 15)",
		"\xff":                            "'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
		`{"name": NaN}`:                   "", // valid JSON to Python: the schema speaks
	} {
		r := send(t, api.URL, "POST", "/resource_classes", h, body)
		detail, _ := r.firstError(t)["detail"].(string)
		if want == "" {
			want = "JSON does not validate: nan is not of type 'string'"
		} else {
			want = "Malformed JSON: " + want
		}
		if r.status != 400 || !strings.Contains(detail, want) {
			t.Errorf("body %q: %d %q, want 400 with %q", body, r.status, detail, want)
		}
	}
	// NaN passes upstream's schema for allocation_ratio (then upstream
	// fails with 500); placementd refuses it.
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	r := send(t, api.URL, "POST", "/resource_providers/"+rpTestA+"/inventories", h,
		`{"resource_class": "VCPU", "total": 1, "allocation_ratio": NaN, "resource_provider_generation": 0}`)
	if detail, _ := r.firstError(t)["detail"].(string); r.status != 400 || !strings.Contains(detail, "Out of range float values are not JSON compliant") {
		t.Errorf("NaN allocation_ratio: %d %s", r.status, r.body)
	}
}

// The GETs upstream decorates with check_accept answer 406 when the Accept
// header rules JSON out, after the route's microversion check where
// upstream checks that first.
func TestCheckAcceptOnEveryJSONGet(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	rp := "/resource_providers/" + rpTestA
	h["Accept"] = "text/html"
	for _, path := range []string{
		"/resource_classes", "/resource_classes/VCPU", "/resource_providers", rp, rp + "/inventories",
		rp + "/inventories/VCPU", rp + "/usages", rp + "/aggregates", rp + "/allocations", rp + "/traits",
		"/allocations/" + rpTestA, "/allocation_candidates?resources=VCPU:1", "/traits", "/usages?project_id=p",
	} {
		r := send(t, api.URL, "GET", path, h, "")
		if r.status != 406 || !strings.Contains(r.body, "Only application/json is provided") {
			t.Errorf("GET %s with Accept text/html: %d %.200s", path, r.status, r.body)
		}
	}
	// These have no check_accept upstream.
	for _, path := range []string{"/", "/traits/HW_CPU_X86_AVX"} {
		if r := send(t, api.URL, "GET", path, h, ""); r.status/100 != 2 {
			t.Errorf("GET %s with Accept text/html: %d", path, r.status)
		}
	}
	// The microversion check comes first where upstream's decorators put
	// it first, after check_accept for aggregates.
	h["OpenStack-API-Version"] = "placement 1.0"
	for path, want := range map[string]int{"/resource_classes": 404, "/traits": 404, rp + "/aggregates": 406} {
		if r := send(t, api.URL, "GET", path, h, ""); r.status != want {
			t.Errorf("GET %s at 1.0 with Accept text/html: %d, want %d", path, r.status, want)
		}
	}
}

// An error answer to HEAD (every route answers HEAD with 405, as upstream's
// router has no HEAD routes) is webob's bare Response: text/html, no body.
func TestHeadErrorsAreBare(t *testing.T) {
	api := newTestAPI(t, Config{})
	for _, path := range []string{"/resource_providers", "/resource_classes", "/", "/nope"} {
		for _, accept := range []string{"", "application/json", "text/plain"} {
			h := map[string]string{"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
			if accept != "" {
				h["Accept"] = accept
			}
			r := send(t, api.URL, "HEAD", path, h, "")
			if r.status/100 != 4 || r.header.Get("Content-Type") != "text/html; charset=UTF-8" || r.body != "" {
				t.Errorf("HEAD %s (Accept %q): %d %q %q", path, accept, r.status, r.header.Get("Content-Type"), r.body)
			}
		}
	}
	r := send(t, api.URL, "HEAD", "/resource_providers", map[string]string{"X-Auth-Token": "admin"}, "")
	if r.status != 405 || r.header.Get("Allow") != "GET, POST" {
		t.Errorf("HEAD /resource_providers: %d Allow %q", r.status, r.header.Get("Allow"))
	}
}

// PUT /resource_providers/{uuid} sends, from 1.15, the Last-Modified of
// the provider as upstream loaded it before saving: none for a provider
// created under a parent and never changed since (upstream's updated_at is
// NULL; a root's is set when it is created), else the time of its last
// change.
func TestUpdateProviderLastModified(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.31"}
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "b", "uuid": "`+rpTestB+`", "parent_provider_uuid": "`+rpTestA+`"}`)
	lastModified := func(r rawResp) bool {
		lm, err := http.ParseTime(r.header.Get("Last-Modified"))
		return err == nil && time.Since(lm) < time.Minute
	}
	child := "/resource_providers/" + rpTestB
	r := send(t, api.URL, "PUT", child, h, `{"name": "b2"}`)
	if r.status != 200 || r.header.Get("Last-Modified") != "" || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("first PUT of a child: %d Last-Modified %q Cache-Control %q", r.status, r.header.Get("Last-Modified"), r.header.Get("Cache-Control"))
	}
	// That PUT changed it: the next one reports when.
	if r = send(t, api.URL, "PUT", child, h, `{"name": "b3"}`); r.status != 200 || !lastModified(r) {
		t.Errorf("second PUT of a child: %d Last-Modified %q", r.status, r.header.Get("Last-Modified"))
	}
	if r = send(t, api.URL, "PUT", "/resource_providers/"+rpTestA, h, `{"name": "a2"}`); r.status != 200 || !lastModified(r) {
		t.Errorf("first PUT of a root: %d Last-Modified %q", r.status, r.header.Get("Last-Modified"))
	}
	h["OpenStack-API-Version"] = "placement 1.14"
	r = send(t, api.URL, "PUT", child, h, `{"name": "d"}`)
	if r.header.Get("Last-Modified") != "" || r.header.Get("Cache-Control") != "" {
		t.Errorf("PUT at 1.14: Last-Modified %q Cache-Control %q", r.header.Get("Last-Modified"), r.header.Get("Cache-Control"))
	}
}

func newDictOf(kv ...any) *dict {
	d := newDict()
	for i := 0; i < len(kv); i += 2 {
		d.set(kv[i].(string), kv[i+1])
	}
	return d
}

// GET /allocations/{consumer} lists providers and classes in the order of
// the write that set them (upstream's row order): the request body's
// order, whatever the providers' creation order or the class names.
func TestConsumerAllocationsInWriteOrder(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	const rpA, rpB = "aaaaaaaa-0000-4000-8000-000000000001", "bbbbbbbb-0000-4000-8000-000000000002"
	const consumer = "cccccccc-0000-4000-8000-000000000003"
	for _, u := range []string{rpA, rpB} {
		if r := send(t, api.URL, "POST", "/resource_providers", h, `{"name": "`+u+`", "uuid": "`+u+`"}`); r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
		r := send(t, api.URL, "PUT", "/resource_providers/"+u+"/inventories", h,
			`{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 8}, "DISK_GB": {"total": 8}}}`)
		if r.status != 200 {
			t.Fatalf("inventories: %d %s", r.status, r.body)
		}
	}
	get := func() string {
		r := send(t, api.URL, "GET", "/allocations/"+consumer, h, "")
		i := strings.Index(r.body, `, "project_id"`)
		if r.status != 200 || i < 0 {
			t.Fatalf("GET: %d %s", r.status, r.body)
		}
		return r.body[:i]
	}
	put := `{"allocations": {"` + rpB + `": {"resources": {"VCPU": 1, "DISK_GB": 2}}, "` + rpA + `": {"resources": {"MEMORY_MB": 3, "VCPU": 4}}}, ` +
		`"project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`
	if r := send(t, api.URL, "PUT", "/allocations/"+consumer, h, put); r.status != 204 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	want := `{"allocations": {"` + rpB + `": {"resources": {"VCPU": 1, "DISK_GB": 2}, "generation": 2}, "` + rpA + `": {"resources": {"MEMORY_MB": 3, "VCPU": 4}, "generation": 2}}`
	if got := get(); got != want {
		t.Errorf("after PUT:\n got %s\nwant %s", got, want)
	}
	// A later write replaces the order with its own.
	post := `{"` + consumer + `": {"allocations": {"` + rpA + `": {"resources": {"DISK_GB": 1}}, "` + rpB + `": {"resources": {"MEMORY_MB": 1, "DISK_GB": 1}}}, ` +
		`"project_id": "p", "user_id": "u", "consumer_generation": 1, "consumer_type": "INSTANCE"}}`
	if r := send(t, api.URL, "POST", "/allocations", h, post); r.status != 204 {
		t.Fatalf("POST: %d %s", r.status, r.body)
	}
	want = `{"allocations": {"` + rpA + `": {"resources": {"DISK_GB": 1}, "generation": 3}, "` + rpB + `": {"resources": {"MEMORY_MB": 1, "DISK_GB": 1}, "generation": 3}}`
	if got := get(); got != want {
		t.Errorf("after POST:\n got %s\nwant %s", got, want)
	}
}

// inOrder reports whether each of parts appears in s after the one before.
func inOrder(s string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

// Answers keyed by resource class list the classes as upstream's queries
// give them: by class id (standard classes in os-resource-classes order,
// then custom ones in creation order), not by name; a write's answer
// keeps the request's order. Usages by consumer type put a type's
// consumer count after its first class. A provider's allocations come in
// upstream's index order: class id, amount, then write order.
func TestClassKeyedAnswersInUpstreamOrder(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	must := func(method, path, body string, status int) string {
		t.Helper()
		r := send(t, api.URL, method, path, h, body)
		if r.status != status {
			t.Fatalf("%s %s: %d %s", method, path, r.status, r.body)
		}
		return r.body
	}
	must("POST", "/resource_classes", `{"name": "CUSTOM_ZED"}`, 201)
	must("POST", "/resource_classes", `{"name": "CUSTOM_ALPHA"}`, 201)
	must("POST", "/resource_providers", `{"name": "a", "uuid": "`+rpTestA+`"}`, 200)
	rp := "/resource_providers/" + rpTestA
	body := must("PUT", rp+"/inventories", `{"resource_provider_generation": 0, "inventories": {"CUSTOM_ZED": {"total": 9}, "VCPU": {"total": 9}, "CUSTOM_ALPHA": {"total": 9}, "DISK_GB": {"total": 9}}}`, 200)
	if !inOrder(body, `"CUSTOM_ZED"`, `"VCPU"`, `"CUSTOM_ALPHA"`, `"DISK_GB"`) {
		t.Errorf("PUT inventories: not in the request's order: %s", body)
	}
	if body = must("GET", rp+"/inventories", "", 200); !inOrder(body, `"VCPU"`, `"DISK_GB"`, `"CUSTOM_ZED"`, `"CUSTOM_ALPHA"`) {
		t.Errorf("GET inventories: not in class id order: %s", body)
	}
	alloc := func(consumer, typ, resources string) {
		must("PUT", "/allocations/"+consumer, `{"allocations": {"`+rpTestA+`": {"resources": {`+resources+`}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "`+typ+`"}`, 204)
	}
	const c1, c2, c3 = "c1111111-0000-4000-8000-000000000001", "c2222222-0000-4000-8000-000000000002", "c3333333-0000-4000-8000-000000000003"
	// MIGRATION gets the first consumer type id: its rows come first.
	alloc(c1, "MIGRATION", `"CUSTOM_ALPHA": 2, "VCPU": 1`)
	alloc(c2, "INSTANCE", `"CUSTOM_ZED": 1, "DISK_GB": 1`)
	alloc(c3, "INSTANCE", `"DISK_GB": 3, "VCPU": 2`)
	if body = must("GET", rp+"/usages", "", 200); body != `{"resource_provider_generation": 4, "usages": {"VCPU": 3, "DISK_GB": 4, "CUSTOM_ZED": 1, "CUSTOM_ALPHA": 2}}` {
		t.Errorf("provider usages: %s", body)
	}
	want := `{"usages": {"MIGRATION": {"VCPU": 1, "consumer_count": 1, "CUSTOM_ALPHA": 2}, "INSTANCE": {"VCPU": 2, "consumer_count": 2, "DISK_GB": 4, "CUSTOM_ZED": 1}}}`
	if body = must("GET", "/usages?project_id=p", "", 200); body != want {
		t.Errorf("usages by type:\n got %s\nwant %s", body, want)
	}
	if body = must("GET", "/usages?project_id=p&consumer_type=all", "", 200); body != `{"usages": {"all": {"VCPU": 3, "consumer_count": 3, "DISK_GB": 4, "CUSTOM_ZED": 1, "CUSTOM_ALPHA": 2}}}` {
		t.Errorf("usages of all types: %s", body)
	}
	h["OpenStack-API-Version"] = "placement 1.37"
	if body = must("GET", "/usages?project_id=p", "", 200); body != `{"usages": {"VCPU": 3, "DISK_GB": 4, "CUSTOM_ZED": 1, "CUSTOM_ALPHA": 2}}` {
		t.Errorf("usages: %s", body)
	}
	h["OpenStack-API-Version"] = "placement 1.39"
	// Rows (VCPU 1 c1) (VCPU 2 c3) (DISK_GB 1 c2) (DISK_GB 3 c3) (ZED 1 c2) (ALPHA 2 c1).
	body = must("GET", rp+"/allocations", "", 200)
	if !inOrder(body, c1, `"VCPU": 1, "CUSTOM_ALPHA": 2`, c3, `"VCPU": 2, "DISK_GB": 3`, c2, `"DISK_GB": 1, "CUSTOM_ZED": 1`) {
		t.Errorf("provider allocations: %s", body)
	}
	body = must("GET", "/allocation_candidates?resources=VCPU:1", "", 200)
	if !inOrder(body, `"provider_summaries"`, `"VCPU"`, `"DISK_GB"`, `"CUSTOM_ZED"`, `"CUSTOM_ALPHA"`) {
		t.Errorf("provider summary: %s", body)
	}
	if body = must("GET", "/resource_classes/CUSTOM_ZED", "", 200); body != `{"name": "CUSTOM_ZED", "links": [{"rel": "self", "href": "/resource_classes/CUSTOM_ZED"}]}` {
		t.Errorf("resource class: %s", body)
	}
}

// Provider summaries come tree by tree (upstream reads them by root id),
// then by provider creation.
func TestProviderSummariesByTree(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	for _, body := range []string{
		`{"name": "root1", "uuid": "` + rpTestA + `"}`,
		`{"name": "root2", "uuid": "` + rpTestB + `"}`,
		`{"name": "child1", "uuid": "` + rpTestC + `", "parent_provider_uuid": "` + rpTestA + `"}`,
	} {
		if r := send(t, api.URL, "POST", "/resource_providers", h, body); r.status != 200 {
			t.Fatalf("create: %d %s", r.status, r.body)
		}
	}
	for _, u := range []string{rpTestB, rpTestC} {
		if r := send(t, api.URL, "PUT", "/resource_providers/"+u+"/inventories", h, `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 4}}}`); r.status != 200 {
			t.Fatalf("inventories: %d %s", r.status, r.body)
		}
	}
	r := send(t, api.URL, "GET", "/allocation_candidates?resources=VCPU:1", h, "")
	if !inOrder(r.body, `"provider_summaries": {"`+rpTestA, `"`+rpTestC+`": {`, `"`+rpTestB+`": {`) {
		t.Errorf("summaries not tree by tree: %s", r.body)
	}
}

// Upstream looks providers and consumers up as they are spelt, except the
// consumer of PUT /allocations/{uuid}, which it canonicalises: a provider
// uuid without dashes in an allocation names no provider, and GET or
// DELETE /allocations with another spelling of the consumer find nothing.
func TestUUIDSpellings(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.11"}
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	send(t, api.URL, "PUT", "/resource_providers/"+rpTestA+"/inventories", h, `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 8}}}`)
	dashless := strings.ReplaceAll(rpTestA, "-", "")
	const consumer = "dddddddd-0000-4000-8000-000000000004"
	r := send(t, api.URL, "PUT", "/allocations/"+consumer, h, `{"allocations": [{"resource_provider": {"uuid": "`+dashless+`"}, "resources": {"VCPU": 1}}], "project_id": "p", "user_id": "u"}`)
	if detail, _ := r.firstError(t)["detail"].(string); r.status != 400 || !strings.Contains(detail, "Allocation for resource provider '"+dashless+"' that does not exist.") {
		t.Errorf("dashless provider: %d %s", r.status, r.body)
	}
	// The consumer of a PUT is canonicalised.
	r = send(t, api.URL, "PUT", "/allocations/"+strings.ReplaceAll(consumer, "-", ""), h, `{"allocations": [{"resource_provider": {"uuid": "`+rpTestA+`"}, "resources": {"VCPU": 1}}], "project_id": "p", "user_id": "u"}`)
	if r.status != 204 {
		t.Fatalf("PUT: %d %s", r.status, r.body)
	}
	if r = send(t, api.URL, "GET", "/allocations/"+consumer, h, ""); !strings.Contains(r.body, rpTestA) {
		t.Errorf("GET: %s", r.body)
	}
	if r = send(t, api.URL, "GET", "/allocations/"+strings.ToUpper(consumer), h, ""); r.body != `{"allocations": {}}` {
		t.Errorf("GET in capitals: %s", r.body)
	}
	if r = send(t, api.URL, "DELETE", "/allocations/"+strings.ReplaceAll(consumer, "-", ""), h, ""); r.status != 404 {
		t.Errorf("DELETE without dashes: %d %s", r.status, r.body)
	}
}

// Trait lists come in upstream's trait id order (standard traits, then
// custom ones in creation order), but by name where upstream's query
// filters on names: the answer of PUT .../traits and GET /traits?name=in:.
func TestTraitListOrder(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	send(t, api.URL, "PUT", "/traits/CUSTOM_ZZ", h, "")
	send(t, api.URL, "PUT", "/traits/CUSTOM_AA", h, "")
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	rp := "/resource_providers/" + rpTestA + "/traits"
	for _, c := range []struct{ method, path, body, want string }{
		{"PUT", rp, `{"traits": ["CUSTOM_ZZ", "HW_CPU_X86_AVX", "CUSTOM_AA"], "resource_provider_generation": 0}`, `{"traits": ["CUSTOM_AA", "CUSTOM_ZZ", "HW_CPU_X86_AVX"], `},
		{"GET", rp, "", `{"traits": ["HW_CPU_X86_AVX", "CUSTOM_ZZ", "CUSTOM_AA"], `},
		{"GET", "/traits?name=startswith:CUSTOM", "", `{"traits": ["CUSTOM_ZZ", "CUSTOM_AA"]}`},
		{"GET", "/traits?name=in:CUSTOM_ZZ,CUSTOM_AA", "", `{"traits": ["CUSTOM_AA", "CUSTOM_ZZ"]}`},
	} {
		if r := send(t, api.URL, c.method, c.path, h, c.body); !strings.HasPrefix(r.body, c.want) {
			t.Errorf("%s %s: %d %s, want %s...", c.method, c.path, r.status, r.body, c.want)
		}
	}
}

// A WSGI server hands upstream's handlers the path decoded as Latin-1: a
// non-ASCII path name shows in messages one character per UTF-8 byte.
func TestPathVariablesAsWSGISeesThem(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.39"}
	for path, want := range map[string]string{
		"/resource_classes/CUSTOM_%C3%89":      `No such resource class CUSTOM_\u00c3\u0089.`,
		"/traits/CUSTOM_%C3%89":                `No such trait(s): CUSTOM_\u00c3\u0089.`,
		"/resource_providers/%C3%89":           `No resource provider with uuid \u00c3\u0089 found`,
		"/resource_providers/%E2%98%83/traits": `No resource provider with uuid \u00e2\u0098\u0083 found`,
	} {
		if r := send(t, api.URL, "GET", path, h, ""); r.status != 404 || !strings.Contains(r.body, want) {
			t.Errorf("GET %s: %d %s, want %s", path, r.status, r.body, want)
		}
	}
}

// An allocation request lists the unsuffixed group's classes in query
// order while the deployment has neither trees nor sharing providers
// (upstream's one-provider path), by class id once it has.
func TestCandidateResourceOrder(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	send(t, api.URL, "PUT", "/resource_providers/"+rpTestA+"/inventories", h, `{"resource_provider_generation": 0, "inventories": {"SRIOV_NET_VF": {"total": 8}, "IPV4_ADDRESS": {"total": 8}}}`)
	query := "/allocation_candidates?resources=IPV4_ADDRESS:1,SRIOV_NET_VF:1"
	if r := send(t, api.URL, "GET", query, h, ""); !strings.Contains(r.body, `{"resources": {"IPV4_ADDRESS": 1, "SRIOV_NET_VF": 1}}`) {
		t.Errorf("without trees: %s", r.body)
	}
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "b", "uuid": "`+rpTestB+`", "parent_provider_uuid": "`+rpTestA+`"}`)
	if r := send(t, api.URL, "GET", query, h, ""); !strings.Contains(r.body, `{"resources": {"SRIOV_NET_VF": 1, "IPV4_ADDRESS": 1}}`) {
		t.Errorf("with a tree: %s", r.body)
	}
}

// A custom class is numbered one above the highest there is, as upstream
// numbers them: after the highest is deleted its id is given again. The
// ids show in the order upstream names classes in "Inventory for ...
// invalid" (a Python set of them).
func TestResourceClassIDsReused(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	send(t, api.URL, "PUT", "/resource_classes/CUSTOM_A", h, "")
	send(t, api.URL, "DELETE", "/resource_classes/CUSTOM_A", h, "")
	send(t, api.URL, "PUT", "/resource_classes/CUSTOM_B", h, "") // 10000 again
	send(t, api.URL, "PUT", "/resource_classes/CUSTOM_C", h, "") // 10001, not 10002
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	r := send(t, api.URL, "PUT", "/allocations/"+rpTestB, h, `{"allocations": {"`+rpTestA+`": {"resources": {"CUSTOM_C": 1, "MEMORY_MB": 1}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "I"}`)
	if !strings.Contains(r.body, "Inventory for 'CUSTOM_C, MEMORY_MB' on resource provider") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// A body the schema lets through with a value the handler cannot use (a
// key outside the schema's patterns; upstream fails with 500) is refused
// in words that name it, not Go's.
func TestUnusableBodyValues(t *testing.T) {
	api := newTestAPI(t, Config{})
	h := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json", "OpenStack-API-Version": "placement 1.39"}
	send(t, api.URL, "POST", "/resource_providers", h, `{"name": "a", "uuid": "`+rpTestA+`"}`)
	r := send(t, api.URL, "PUT", "/resource_providers/"+rpTestA+"/inventories", h, `{"resource_provider_generation": 0, "inventories": {"VCPU": {"total": 2}, "extra": "x"}}`)
	detail, _ := r.firstError(t)["detail"].(string)
	if r.status != 400 || !strings.Contains(detail, "JSON does not validate: the string at 'extra' should be an object") {
		t.Errorf("%d %s", r.status, r.body)
	}
}

// appendPyString copies runs of plain bytes whole: it writes what
// escaping byte by byte (the reference below) writes, on strings mixing
// plain runs with every kind of escape.
func TestAppendPyStringRuns(t *testing.T) {
	ref := func(s string) string {
		var b []byte
		for _, r := range s {
			switch {
			case r == '"' || r == '\\':
				b = append(b, '\\', byte(r))
			case r == '\n':
				b = append(b, `\n`...)
			case r == '\r':
				b = append(b, `\r`...)
			case r == '\t':
				b = append(b, `\t`...)
			case r == '\b':
				b = append(b, `\b`...)
			case r == '\f':
				b = append(b, `\f`...)
			case r < 0x20 || r >= 0x7f:
				b = appendUnicodeEscape(b, r)
			default:
				b = append(b, byte(r))
			}
		}
		return `"` + string(b) + `"`
	}
	pieces := []string{"", "abc", "c0000000-0000-4000-8000-000000000001", `"`, `\`, "\n", "\r\t\b\f", "\x00", "\x1f", "\x7f",
		"é", "réseau", "€", "😀", "CUSTOM_X", " ~"}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		var s strings.Builder
		for n := r.IntN(6); n > 0; n-- {
			s.WriteString(pieces[r.IntN(len(pieces))])
		}
		if got, want := string(appendPyString([]byte("x"), s.String())), "x"+ref(s.String()); got != want {
			t.Fatalf("%q: %s, want %s", s.String(), got, want)
		}
	}
}

// plainWord agrees with pyPlain on every byte value at every position of
// a word, beside plain bytes and beside bytes with the high bit set.
func TestPlainWord(t *testing.T) {
	for _, fill := range []byte{'a', 0xc3} {
		for pos := 0; pos < 8; pos++ {
			for c := 0; c < 256; c++ {
				w := []byte(strings.Repeat(string([]byte{fill}), 8))
				w[pos] = byte(c)
				want := true
				for _, b := range w {
					want = want && pyPlain[b]
				}
				if got := plainWord(string(w)); got != want {
					t.Fatalf("plainWord(%q) = %v, want %v", w, got, want)
				}
			}
		}
	}
}
