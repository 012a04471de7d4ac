package httpapi

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/placementd/placementd/httpapi/policy"
)

// concretePath fills a route template's variables with values the
// checks before a handler never look at.
func concretePath(template string) string {
	return strings.NewReplacer(
		"{uuid}", "9f1a3a4e-52f6-4c3c-9d3a-0c5b1e2f3a4b",
		"{consumer_uuid}", "0d3e5a1b-8c2f-4e6a-b1d7-3f9c2a5e8b1d",
		"{name}", "CUSTOM_ROUTE_TEST",
		"{resource_class}", "VCPU",
	).Replace(template)
}

func at(minor int) map[string]string {
	return map[string]string{"X-Auth-Token": "admin", "OpenStack-API-Version": fmt.Sprintf("placement 1.%d", minor)}
}

// The table drives the answers given before any handler runs: every path
// answers a method it does not declare with 405 and the table's methods
// in Allow; every line answers below its first microversion with its
// belowMin status (404 unless set); every line with the Accept check
// answers 406 to an Accept ruling out JSON, and every line with the
// content check 415 to a body that is not JSON.
func TestRouteTableDrives405And406(t *testing.T) {
	api := newTestAPI(t, Config{})
	srv := &Server{}
	for _, rt := range srv.routes() {
		path := concretePath(rt.path)
		allow := strings.Join(methodNames(rt.methods), ", ")
		declared := map[string]bool{}
		for _, m := range methodNames(rt.methods) {
			declared[m] = true
		}
		for _, m := range []string{"GET", "PUT", "POST", "DELETE", "PATCH", "HEAD"} {
			if declared[m] {
				continue
			}
			r := send(t, api.URL, m, path, at(MaxVersion.Minor), "")
			if r.status != 405 || r.header.Get("Allow") != allow {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q", m, rt.path, r.status, r.header.Get("Allow"), allow)
			}
		}
	}
	for _, e := range srv.table() {
		path := concretePath(e.path)
		if e.min > 0 && !servedBelow(srv.table(), e) {
			want := e.belowMin
			if want == 0 {
				want = 404
			}
			// JSON content, so that the aggregates' content check (before
			// their version check) lets the request through.
			h := at(e.min - 1)
			h["Content-Type"] = "application/json"
			if r := send(t, api.URL, e.method, path, h, ""); r.status != want {
				t.Errorf("%s %s at 1.%d (below its 1.%d): %d, want %d", e.method, e.path, e.min-1, e.min, r.status, want)
			}
		}
		for _, c := range []struct {
			on           bool
			header, body string
			status       int
			detail       string
		}{
			{e.accept, "Accept", "", 406, "Only application/json is provided"},
			{e.content, "Content-Type", "x", 415, "The media type text/plain is not supported, use application/json"},
		} {
			if !c.on {
				continue
			}
			h := at(e.min)
			h[c.header] = "text/plain"
			if r := send(t, api.URL, e.method, path, h, c.body); r.status != c.status || !strings.Contains(r.body, c.detail) {
				t.Errorf("%s %s with %s text/plain: %d %q, want %d", e.method, e.path, c.header, r.status, r.body, c.status)
			}
		}
	}
}

// servedBelow reports whether another line of e's method serves the
// version just below e's range.
func servedBelow(table []endpoint, e endpoint) bool {
	for _, o := range table {
		if o.path == e.path && o.method == e.method && o.serves(Version{1, e.min - 1}) {
			return true
		}
	}
	return false
}

// Upstream's own routes that exist only from a microversion, pinned here so
// that a table edit changing them fails: the table test above checks the
// server follows the table, this one the table itself.
func TestRouteTableMicroversionFloors(t *testing.T) {
	want := map[string]int{
		"GET /resource_classes":                         2,
		"PUT /resource_providers/{uuid}/aggregates":     1,
		"DELETE /resource_providers/{uuid}/inventories": 5,
		"GET /usages":                           9,
		"GET /resource_providers/{uuid}/usages": 0,
		"GET /allocation_candidates":            10,
		"POST /allocations":                     13,
		"GET /traits":                           6,
		"POST /reshaper":                        30,
	}
	floors := map[string]int{}
	for _, e := range (&Server{}).table() {
		k := e.method + " " + e.path
		if f, ok := floors[k]; !ok || e.min < f {
			floors[k] = e.min
		}
	}
	for k, min := range want {
		if got, ok := floors[k]; !ok || got != min {
			t.Errorf("%s: first microversion 1.%d in the table (present %v), want 1.%d", k, got, ok, min)
		}
	}
}

// Every line's ranges are disjoint per method, its schemas ascend, and its
// policy rule is one the enforcer has registered (an unregistered one would
// answer every request with 500) and that upstream documents as protecting
// that method and path.
func TestRouteTableConsistent(t *testing.T) {
	enf, _, err := policy.New(policy.Options{})
	if err != nil {
		t.Fatal(err)
	}
	admin := policy.Credentials{UserID: "admin", ProjectID: "admin", Roles: []string{"admin"}, IsAdminProject: true}
	ops := map[string]map[policy.Operation]bool{} // rule -> the requests upstream says it protects
	for _, r := range policy.Rules() {
		ops[r.Name] = map[policy.Operation]bool{}
		for _, op := range r.Operations {
			ops[r.Name][op] = true
		}
	}
	table := (&Server{}).table()
	for i, e := range table {
		for _, o := range table[:i] {
			if o.path != e.path || o.method != e.method {
				continue
			}
			for minor := 0; minor <= MaxVersion.Minor; minor++ {
				if v := (Version{1, minor}); o.serves(v) && e.serves(v) {
					t.Errorf("%s %s: two lines serve 1.%d", e.method, e.path, minor)
				}
			}
		}
		for _, vs := range []versioned{e.body, e.query} {
			for j := 1; j < len(vs); j++ {
				if vs[j].minor <= vs[j-1].minor {
					t.Errorf("%s %s: schemas out of order", e.method, e.path)
				}
			}
		}
		if e.handler == nil {
			t.Errorf("%s %s: no handler", e.method, e.path)
		}
		if e.policy == "" {
			if e.path != "/" {
				t.Errorf("%s %s: no policy rule", e.method, e.path)
			}
			continue
		}
		if !ops[e.policy][policy.Operation{Method: e.method, Path: e.path}] {
			t.Errorf("%s %s: rule %q does not list it among upstream's operations", e.method, e.path, e.policy)
		}
		err := enf.Authorize(e.policy, admin, policy.DefaultTarget(admin))
		var unregistered *policy.NotRegisteredError
		if errors.As(err, &unregistered) {
			t.Errorf("%s %s: policy rule %q is not registered", e.method, e.path, e.policy)
		}
	}
}
