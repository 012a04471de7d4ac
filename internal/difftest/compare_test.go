package difftest

import (
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := Generate(7, 400), Generate(7, 400)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("the same seed gave two sequences")
	}
	if reflect.DeepEqual(a, Generate(8, 400)) {
		t.Fatal("two seeds gave the same sequence")
	}
	routes := map[string]bool{}
	for _, q := range a {
		routes[q.Method+" "+routeOf(q.Path)] = true
	}
	// Every route is reached within a few hundred steps.
	for _, r := range []string{"GET /", "POST /resource_providers", "PUT /allocations/{consumer_uuid}", "POST /allocations",
		"GET /allocation_candidates", "POST /reshaper", "GET /usages", "PUT /resource_providers/{uuid}/traits",
		"PUT /resource_providers/{uuid}/aggregates", "PUT /resource_classes/{name}", "PUT /traits/{name}"} {
		if !routes[r] {
			t.Errorf("%s not generated", r)
		}
	}
}

func TestJSONTreeKeepsOrderAndLiterals(t *testing.T) {
	n, err := parseJSON([]byte(` {"b": [1, 2.0, "\u00e9"], "a": {"x": null, "y": true}} `))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := n.String(), `{"b": [1, 2.0, "\u00e9"], "a": {"x": null, "y": true}}`; got != want {
		t.Errorf("pyDumps: %s, want %s", got, want)
	}
	for _, bad := range []string{`{"a": 1`, `{"a" 1}`, `[1,]x`, `{"a": 1} {}`} {
		if _, err := parseJSON([]byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
}

func TestDiff(t *testing.T) {
	none := func(string) bool { return false }
	parse := func(s string) *jnode {
		n, err := parseJSON([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		a, b      string
		unordered []string
		same      bool
	}{
		{`{"a": 1, "b": 2}`, `{"a": 1, "b": 2}`, nil, true},
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, nil, false},
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, []string{""}, true},
		{`{"x": [1, 2]}`, `{"x": [2, 1]}`, []string{"x"}, true},
		{`{"x": [1, 2]}`, `{"x": [2, 1]}`, nil, false},
		{`{"x": {"p": [1, 2]}}`, `{"x": {"p": [2, 1]}}`, []string{"x.*"}, true},
		{`{"r": 1.0}`, `{"r": 1}`, []string{""}, false},
	} {
		un := none
		if c.unordered != nil {
			un = func(p string) bool { return matchesAny(c.unordered, p) }
		}
		if d := diff("", parse(c.a), parse(c.b), un); (d == "") != c.same {
			t.Errorf("diff(%s, %s, %v) = %q", c.a, c.b, c.unordered, d)
		}
	}
}

func TestCompareNormalizes(t *testing.T) {
	up := &session{target: &Target{Name: "upstream", Addr: "127.0.0.1:1"}, generated: map[string]string{"gen:3": "11111111-1111-4111-8111-111111111111"}, named: map[string]bool{}}
	pd := &session{target: &Target{Name: "placementd", Addr: "127.0.0.1:2"}, generated: map[string]string{"gen:3": "22222222-2222-4222-8222-222222222222"}, named: map[string]bool{}}
	req := &Request{Method: "GET", Path: "/resource_providers"}
	resp := func(addr, uuid, reqID string, extra ...string) *Response {
		h := http.Header{"Location": {"http://" + addr + "/resource_providers/" + uuid}, "X-Openstack-Request-Id": {reqID},
			"Date": {reqID}, "Content-Type": {"application/json"}}
		for i := 0; i+1 < len(extra); i += 2 {
			h.Set(extra[i], extra[i+1])
		}
		return &Response{Status: 200, Header: h, Body: []byte(`{"uuid": "` + uuid + `", "request_id": "` + reqID + `"}`)}
	}
	a := resp("127.0.0.1:1", "11111111-1111-4111-8111-111111111111", "req-aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa")
	b := resp("127.0.0.1:2", "22222222-2222-4222-8222-222222222222", "req-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb")
	if d := compare(req, a, b, up, pd); d != nil {
		t.Errorf("equal answers diverge: %s: %s", d.Kind, d.Detail)
	}
	b = resp("127.0.0.1:2", "22222222-2222-4222-8222-222222222222", "req-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb", "Vary", "openstack-api-version")
	if d := compare(req, a, b, up, pd); d == nil || d.Kind != "header Vary" {
		t.Errorf("an extra header: %+v", d)
	}
	b = resp("127.0.0.1:2", "22222222-2222-4222-8222-222222222222", "req-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb")
	b.Body = []byte(`{"uuid":"22222222-2222-4222-8222-222222222222","request_id":"req-bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"}`)
	if d := compare(req, a, b, up, pd); d == nil || d.Kind != "format" {
		t.Errorf("compact JSON: %+v", d)
	}
	b.Status, b.Body = 400, []byte(`{}`)
	a.Status = 500
	if d := compare(req, a, b, up, pd); d == nil || !d.Deliberate {
		t.Errorf("upstream 500: %+v", d)
	}
}

func TestTraitAndSetNormalizations(t *testing.T) {
	n, _ := parseJSON([]byte(`{"traits": ["HW_B", "CUSTOM_Z", "HW_A", "CUSTOM_A"]}`))
	sortStandardTraits(n, []string{"traits"}, "")
	if got := n.String(); got != `{"traits": ["HW_A", "HW_B", "CUSTOM_Z", "CUSTOM_A"]}` {
		t.Errorf("traits: %s", got)
	}
	msg := `Inventory for 'VCPU' on resource provider 'b, a' invalid. No such trait CUSTOM_B, CUSTOM_A. ` +
		"Real suffixes should be specified in `same_subtree`: ['_x', '_NET'] not found in ['', '2']."
	if got := sortSetMessages(msg); !strings.Contains(got, "provider 'a, b'") || !strings.Contains(got, "trait CUSTOM_A, CUSTOM_B") ||
		!strings.Contains(got, "['_NET', '_x'] not found") {
		t.Errorf("set messages: %s", got)
	}
}
