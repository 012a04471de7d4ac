package httpapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/httpapi/policy"
)

// rawResp is a response as it came over the wire.
type rawResp struct {
	status int
	header http.Header
	body   string
}

// json decodes the body, failing the test if it is not JSON.
func (r rawResp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.body), &m); err != nil {
		t.Fatalf("body is not JSON: %q", r.body)
	}
	return m
}

// firstError is errors[0] of a Placement error body.
func (r rawResp) firstError(t *testing.T) map[string]any {
	t.Helper()
	errs, _ := r.json(t)["errors"].([]any)
	if len(errs) != 1 {
		t.Fatalf("no single error in %q", r.body)
	}
	return errs[0].(map[string]any)
}

// send makes a request with exactly the given headers (Go's client adds
// only Host, User-Agent, Accept-Encoding and Content-Length).
func send(t *testing.T, base, method, path string, hdr map[string]string, body string) rawResp {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return rawResp{resp.StatusCode, resp.Header, string(b)}
}

var reqIDRE = regexp.MustCompile(`^req-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestRequestIDOnEveryResponse(t *testing.T) {
	api := newTestAPI(t, Config{})
	seen := map[string]bool{}
	for _, c := range []struct {
		method, path string
		hdr          map[string]string
		status       int
	}{
		{"GET", "/", nil, 200},
		{"GET", "/resource_providers", nil, 401},
		{"GET", "/barnabas", map[string]string{"X-Auth-Token": "admin"}, 404},
		{"GET", "/", map[string]string{"OpenStack-API-Version": "placement 9.9"}, 406},
	} {
		r := send(t, api.URL, c.method, c.path, c.hdr, "")
		id := r.header.Get("X-Openstack-Request-Id")
		if r.status != c.status || !reqIDRE.MatchString(id) || seen[id] {
			t.Errorf("%s %s: %d, request id %q", c.method, c.path, r.status, id)
		}
		seen[id] = true
		if r.status == 404 || r.status == 406 {
			// The error body names the same request, at any version.
			if got := r.firstError(t)["request_id"]; got != id {
				t.Errorf("%s: error request_id %v, header %q", c.path, got, id)
			}
		}
	}
}

func TestErrorBodyFormat(t *testing.T) {
	api := newTestAPI(t, Config{})
	admin := func(version string) map[string]string {
		h := map[string]string{"X-Auth-Token": "admin"}
		if version != "" {
			h["OpenStack-API-Version"] = "placement " + version
		}
		return h
	}
	r := send(t, api.URL, "GET", "/barnabas", admin("1.22"), "")
	e := r.firstError(t)
	if e["status"] != 404.0 || e["title"] != "Not Found" || e["detail"] != "The resource could not be found.\n\n   " {
		t.Errorf("404 body: %q", r.body)
	}
	if _, ok := e["code"]; ok || r.header.Get("Content-Type") != "application/json" {
		t.Errorf("code before 1.23 or wrong type: %v %q", r.header, r.body)
	}
	if e := send(t, api.URL, "GET", "/barnabas", admin("1.23"), "").firstError(t); e["code"] != "placement.undefined_code" {
		t.Errorf("1.23 code: %v", e)
	}

	// 405 lists upstream's methods in declaration order, with webob's
	// template naming the method.
	r = send(t, api.URL, "DELETE", "/resource_providers", admin(""), "")
	if r.status != 405 || r.header.Get("Allow") != "GET, POST" ||
		r.firstError(t)["detail"] != "The method DELETE is not allowed for this resource. \n\n The method specified is not allowed for this resource." {
		t.Errorf("405: %d %v %q", r.status, r.header, r.body)
	}
	if r := send(t, api.URL, "OPTIONS", "/resource_providers", admin(""), ""); r.status != 405 || r.header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("OPTIONS without CORS: %d %v", r.status, r.header)
	}

	// A body needs a content type; JSON handlers want JSON.
	r = send(t, api.URL, "POST", "/resource_providers", admin(""), "I want a resource provider please")
	if r.status != 400 || !strings.Contains(r.firstError(t)["detail"].(string), "content-type header required when content-length > 0") {
		t.Errorf("missing content type: %d %q", r.status, r.body)
	}
	r = send(t, api.URL, "PUT", "/resource_providers/d3a64825-8228-4ccb-8a6c-1c6d3eb6a3e8", admin(""), "")
	if r.status != 415 || r.firstError(t)["detail"] != "The request media type None is not supported by this server. \n\n The media type None is not supported, use application/json" {
		t.Errorf("415 without content type: %d %q", r.status, r.body)
	}
	h := admin("")
	h["Content-Type"] = "text/plain; charset=utf-8"
	r = send(t, api.URL, "POST", "/resource_providers", h, "x")
	if r.status != 415 || r.firstError(t)["detail"] != "The request media type text/plain; charset=utf-8 is not supported by this server. \n\n The media type text/plain is not supported, use application/json" {
		t.Errorf("415: %d %q", r.status, r.body)
	}
	h["Content-Type"] = "application/json; charset=utf-8"
	r = send(t, api.URL, "POST", "/resource_providers", h, `{"name": `)
	if r.status != 400 || !strings.Contains(r.firstError(t)["detail"].(string), "\n\n Malformed JSON: ") {
		t.Errorf("malformed JSON: %d %q", r.status, r.body)
	}
}

func TestMicroversionNegotiation(t *testing.T) {
	api := newTestAPI(t, Config{})
	for _, c := range []struct {
		header  string // OpenStack-API-Version; "-" for none
		status  int
		version string // the OpenStack-API-Version answered, "" for none
		detail  string
	}{
		{"-", 200, "placement 1.0", ""},
		{"placement latest", 200, "placement 1.39", ""},
		{"placement 1.39", 200, "placement 1.39", ""},
		{"PLACEMENT  1.3 ", 200, "placement 1.3", ""},
		{"placement 1.01", 200, "placement 1.1", ""},
		{"compute 2.1, placement 1.5", 200, "placement 1.5", ""},
		{"placement 1.5,placement 1.7, compute 2.1", 200, "placement 1.7", ""},
		{"compute 2.1", 200, "placement 1.0", ""},
		{"placement", 200, "placement 1.0", ""},
		{"placement 0.5", 406, "", "Invalid microversion: Unacceptable version header: 0.5"},
		{"placement 1.40", 406, "", "Invalid microversion: Unacceptable version header: 1.40"},
		{"placement pony.horse", 400, "", "Invalid microversion: invalid version string: pony.horse; invalid literal for int() with base 10: 'pony'"},
		{"placement 1.2.3", 400, "", "Invalid microversion: invalid version string: 1.2.3; invalid literal for int() with base 10: '2.3'"},
		{"placement 1", 400, "", "Invalid microversion: invalid version string: 1; Version.__new__() missing 1 required positional argument: 'minor'"},
		{"placement LATEST", 400, "", "Invalid microversion: invalid version string: LATEST; invalid literal for int() with base 10: 'LATEST'"},
	} {
		hdr := map[string]string{}
		if c.header != "-" {
			hdr["OpenStack-API-Version"] = c.header
		}
		r := send(t, api.URL, "GET", "/", hdr, "")
		if r.status != c.status || r.header.Get("OpenStack-API-Version") != c.version {
			t.Errorf("%q: %d %q, want %d %q", c.header, r.status, r.header.Get("OpenStack-API-Version"), c.status, c.version)
			continue
		}
		if c.status == 200 {
			if r.header.Get("Vary") != "openstack-api-version" {
				t.Errorf("%q: Vary %q", c.header, r.header.Get("Vary"))
			}
			continue
		}
		e := r.firstError(t)
		if !strings.HasSuffix(e["detail"].(string), "\n\n "+c.detail) && !strings.HasSuffix(e["detail"].(string), "\n\n "+c.detail+"  ") {
			t.Errorf("%q: detail %q, want %q", c.header, e["detail"], c.detail)
		}
		if r.header.Get("Vary") != "" || e["code"] != nil {
			t.Errorf("%q: refused version has Vary or code: %v %v", c.header, r.header, e)
		}
		// Only an unknown version says which ones exist.
		if (c.status == 406) != (e["max_version"] == "1.39" && e["min_version"] == "1.0") {
			t.Errorf("%q: version range in %v", c.header, e)
		}
	}

	// microversion_parse reads only OpenStack-API-Version.
	r := send(t, api.URL, "GET", "/", map[string]string{"X-OpenStack-Placement-API-Version": "1.5"}, "")
	if r.header.Get("OpenStack-API-Version") != "placement 1.0" {
		t.Errorf("legacy header: %v", r.header)
	}

	// An error raised past the microversion middleware has the version
	// but not Vary; a returned one has both.
	r = send(t, api.URL, "GET", "/barnabas", map[string]string{"X-Auth-Token": "admin", "OpenStack-API-Version": "placement 1.7"}, "")
	if r.header.Get("OpenStack-API-Version") != "placement 1.7" || r.header.Get("Vary") != "" {
		t.Errorf("404: %v", r.header)
	}
	r = send(t, api.URL, "POST", "/", map[string]string{"Content-Type": "application/xml"}, "")
	if r.status != 405 || r.header.Get("OpenStack-API-Version") != "placement 1.0" || r.header.Get("Vary") != "openstack-api-version" {
		t.Errorf("405 at root: %d %v", r.status, r.header)
	}
}

func TestRootDocument(t *testing.T) {
	api := newTestAPI(t, Config{})
	r := send(t, api.URL, "GET", "/", nil, "")
	want := `{"versions": [{"id": "v1.0", "max_version": "1.39", "min_version": "1.0", "status": "CURRENT", "links": [{"rel": "self", "href": ""}]}]}`
	if r.status != 200 || r.body != want {
		t.Errorf("GET /: %d %s", r.status, r.body)
	}
	if r.header.Get("Last-Modified") != "" || r.header.Get("Cache-Control") != "" {
		t.Errorf("cache headers before 1.15: %v", r.header)
	}
	r = send(t, api.URL, "GET", "/", map[string]string{"OpenStack-API-Version": "placement 1.15"}, "")
	lm, err := http.ParseTime(r.header.Get("Last-Modified"))
	if err != nil || time.Since(lm) > time.Minute || r.header.Get("Cache-Control") != "no-cache" {
		t.Errorf("1.15: %v", r.header)
	}
}

func TestAcceptNegotiation(t *testing.T) {
	api := newTestAPI(t, Config{})
	get := func(path, accept string) rawResp {
		h := map[string]string{"X-Auth-Token": "admin"}
		if accept != "" {
			h["Accept"] = accept
		}
		return send(t, api.URL, "GET", path, h, "")
	}
	for _, c := range []struct {
		accept string
		status int
		ctype  string
	}{
		{"", 200, "application/json"},
		{"*/*", 200, "application/json"},
		{"text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", 200, "application/json"},
		{"application/*", 200, "application/json"},
		{"text/plain", 406, "text/plain; charset=UTF-8"},
		{"text/html,application/xhtml+xml,application/xml;q=0.9", 406, "text/html; charset=UTF-8"},
		{"application/json;q=0, text/html", 406, "text/html; charset=UTF-8"},
		// webob: a range with parameters never matches a bare offer.
		{"application/json; charset=utf-8", 406, "text/plain; charset=UTF-8"},
		// webob ignores an Accept header it cannot parse (and then
		// prefers HTML for errors).
		{"application/json;q=2", 200, "application/json"},
	} {
		r := get("/resource_providers", c.accept)
		if r.status != c.status || r.header.Get("Content-Type") != c.ctype {
			t.Errorf("Accept %q: %d %q, want %d %q", c.accept, r.status, r.header.Get("Content-Type"), c.status, c.ctype)
			continue
		}
		if r.status == 406 && !strings.Contains(r.body, "Only application/json is provided") {
			t.Errorf("Accept %q: body %q", c.accept, r.body)
		}
	}
	r := get("/resource_providers", "text/plain")
	want := "406 Not Acceptable\n\nThe resource could not be generated that was acceptable to your browser (content of type text/plain. \n\n Only application/json is provided"
	if r.body != want {
		t.Errorf("plain 406 body %q", r.body)
	}
	r = get("/barnabas", "text/html")
	if !strings.HasPrefix(r.body, "<html>\n <head>\n  <title>404 Not Found</title>") || !strings.Contains(r.body, "The resource could not be found.<br /><br />") {
		t.Errorf("HTML 404 body %q", r.body)
	}
	if r := get("/barnabas", "foo"); r.header.Get("Content-Type") != "text/html; charset=UTF-8" {
		t.Errorf("invalid Accept: error as %q", r.header.Get("Content-Type"))
	}
}

func TestParseAccept(t *testing.T) {
	for _, c := range []struct {
		header string
		valid  bool
		offers []string // acceptable among text/html, application/json
	}{
		{"", true, []string{}},
		{",", true, []string{}},
		{"application/json", true, []string{"application/json"}},
		{"text/html;q=0.5, application/json", true, []string{"application/json", "text/html"}},
		{"*/*;q=0.1, text/*;q=0", true, []string{"application/json"}},
		// The range with parameters does not apply to text/html; */* does.
		{"text/html ; level=1 ; q=0.7 ; ext=\"a b\", */*", true, []string{"text/html", "application/json"}},
		{"text/html;q=0.7;ext=\"a b\", application/json;q=0.8", true, []string{"application/json", "text/html"}},
		{"TEXT/HTML", true, []string{"text/html"}},
		{"application/json,", true, []string{"application/json"}},
		{"application/json, ,text/html", true, []string{"text/html", "application/json"}},
		{"application/json;q=1.5", false, nil},
		{"application/json;q=0.1234", false, nil},
		{"application/json;foo", false, nil},
		{"application", false, nil},
		{"application/json text/html", false, nil},
	} {
		ranges, valid := parseAccept(c.header)
		if valid != c.valid {
			t.Errorf("%q: valid %v", c.header, valid)
			continue
		}
		if !valid {
			continue
		}
		got := acceptableOffers(ranges, valid, []string{"text/html", "application/json"})
		if strings.Join(got, " ") != strings.Join(c.offers, " ") {
			t.Errorf("%q: offers %v, want %v", c.header, got, c.offers)
		}
	}
}

func TestNoAuth(t *testing.T) {
	api := newTestAPI(t, Config{})
	r := send(t, api.URL, "GET", "/resource_providers", map[string]string{"OpenStack-API-Version": "placement 1.30"}, "")
	// webob's own JSON for a 401, before any microversion handling.
	want := map[string]any{
		"message": "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.<br /><br />\n\n\n",
		"code":    "401 Unauthorized",
		"title":   "Unauthorized",
	}
	got := r.json(t)
	if r.status != 401 || r.header.Get("OpenStack-API-Version") != "" || len(got) != 3 {
		t.Errorf("401: %d %v %q", r.status, r.header, r.body)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("401 %s: %q", k, got[k])
		}
	}
	if r := send(t, api.URL, "GET", "/", nil, ""); r.status != 200 {
		t.Errorf("root without token: %d", r.status)
	}
	if r := send(t, api.URL, "GET", "/resource_providers", map[string]string{"X-Auth-Token": "admin:admin"}, ""); r.status != 200 {
		t.Errorf("with token: %d", r.status)
	}
}

func TestCredentialsFromHeaders(t *testing.T) {
	s := New(nil, Config{})
	var got Credentials
	h := s.authenticate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = credentialsOf(r) }))
	for _, c := range []struct {
		hdr  map[string]string
		want Credentials
	}{
		{map[string]string{"X-Auth-Token": "admin"},
			Credentials{UserID: "admin", ProjectID: "admin", Roles: []string{"admin"}, IsAdminProject: true}},
		{map[string]string{"X-Auth-Token": "alice:proj"},
			Credentials{UserID: "alice", ProjectID: "proj", IsAdminProject: true}},
		{map[string]string{"X-Auth-Token": "admin", "X-Roles": "reader, Member", "X-Tenant-Id": "ignored"},
			Credentials{UserID: "admin", ProjectID: "admin", Roles: []string{"reader", "Member"}, IsAdminProject: true}},
		// oslo.context prefers X-Project-Id to the tenant noauth2 sets.
		{map[string]string{"X-Auth-Token": "bob:p1", "X-Project-Id": "p2", "X-User-Id": "ignored"},
			Credentials{UserID: "bob", ProjectID: "p2", IsAdminProject: true}},
		// System scoped: the token's project is not used.
		{map[string]string{"X-Auth-Token": "admin", "OpenStack-System-Scope": "all", "X-Is-Admin-Project": "False", "X-Domain-Id": "d"},
			Credentials{UserID: "admin", SystemScope: "all", DomainID: "d", Roles: []string{"admin"}}},
		{map[string]string{"X-Auth-Token": "svc", "X-Roles": "", "X-Service-Roles": "service", "X-Service-User-Id": "nova"},
			Credentials{UserID: "svc", ProjectID: "svc", IsAdminProject: true, ServiceRoles: []string{"service"}, ServiceUserID: "nova"}},
	} {
		req := httptest.NewRequest("GET", "/resource_providers", nil)
		req = req.WithContext(context.WithValue(req.Context(), infoKey{}, &reqInfo{})) // as requestLog gives it
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		got = Credentials{}
		h.ServeHTTP(httptest.NewRecorder(), req)
		if !credsEqual(got, c.want) {
			t.Errorf("%v: got %+v, want %+v", c.hdr, got, c.want)
		}
	}
}

func credsEqual(a, b Credentials) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestPolicyRefusal(t *testing.T) {
	enf, _, err := policy.New(policy.Options{EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	api := newTestAPI(t, Config{Authorizer: enf})
	r := send(t, api.URL, "GET", "/resource_providers", map[string]string{"X-Auth-Token": "user", "OpenStack-API-Version": "placement 1.23"}, "")
	e := r.firstError(t)
	if r.status != 403 || e["title"] != "Forbidden" || e["code"] != "placement.undefined_code" ||
		!strings.HasPrefix(e["detail"].(string), "Access was denied to this resource.\n\n ") {
		t.Errorf("403: %d %q", r.status, r.body)
	}
	if r.header.Get("OpenStack-API-Version") != "placement 1.23" || r.header.Get("Vary") != "" {
		t.Errorf("403 headers: %v", r.header)
	}
	if r := send(t, api.URL, "GET", "/resource_providers", map[string]string{"X-Auth-Token": "admin"}, ""); r.status != 200 {
		t.Errorf("admin: %d %s", r.status, r.body)
	}
}

func TestCORS(t *testing.T) {
	api := newTestAPI(t, Config{CORSAllowedOrigins: []string{"http://valid.example.com"}, CORSAllowHeaders: []string{"openstack-api-version"}})
	pre := func(hdr map[string]string) rawResp {
		return send(t, api.URL, "OPTIONS", "/resource_providers", hdr, "")
	}

	// A valid preflight needs no token.
	r := pre(map[string]string{"Origin": "http://valid.example.com", "Access-Control-Request-Method": "GET",
		"Access-Control-Request-Headers": "OpenStack-API-Version, content-type"})
	wantHeaders := map[string]string{
		"Access-Control-Allow-Origin":      "http://valid.example.com",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Max-Age":           "3600",
		"Access-Control-Allow-Methods":     "GET",
		"Access-Control-Allow-Headers":     "OpenStack-API-Version,content-type",
		"Vary":                             "Origin",
		"Content-Type":                     "",
		"OpenStack-API-Version":            "",
	}
	if r.status != 200 || r.body != "" {
		t.Errorf("preflight: %d %q", r.status, r.body)
	}
	for k, v := range wantHeaders {
		if r.header.Get(k) != v {
			t.Errorf("preflight %s: %q, want %q", k, r.header.Get(k), v)
		}
	}
	// Refused preflights are still an empty 200, without CORS headers.
	for _, hdr := range []map[string]string{
		{"Origin": "http://invalid.example.com", "Access-Control-Request-Method": "GET"},
		{"Origin": "http://valid.example.com"},
		{"Origin": "http://valid.example.com", "Access-Control-Request-Method": "OPTIONS"},
		{"Origin": "http://valid.example.com", "Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "x-evil"},
		{},
	} {
		if r := pre(hdr); r.status != 200 || r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "" {
			t.Errorf("preflight %v: %d %v", hdr, r.status, r.header)
		}
	}

	// Actual requests from the origin get the CORS headers, errors too.
	r = send(t, api.URL, "GET", "/", map[string]string{"Origin": "http://valid.example.com"}, "")
	if r.header.Get("Access-Control-Allow-Origin") != "http://valid.example.com" || r.header.Get("Vary") != "openstack-api-version,Origin" ||
		r.header.Get("Access-Control-Expose-Headers") != "X-Auth-Token,X-Openstack-Request-Id,X-Subject-Token,X-Service-Token,OpenStack-API-Version" {
		t.Errorf("simple request: %v", r.header)
	}
	r = send(t, api.URL, "GET", "/resource_providers", map[string]string{"Origin": "http://valid.example.com"}, "")
	if r.status != 401 || r.header.Get("Access-Control-Allow-Origin") != "http://valid.example.com" || r.header.Get("Vary") != "Origin" {
		t.Errorf("401 from origin: %d %v", r.status, r.header)
	}
	r = send(t, api.URL, "GET", "/", map[string]string{"Origin": "http://invalid.example.com"}, "")
	if r.header.Get("Access-Control-Allow-Origin") != "" || r.header.Get("Vary") != "openstack-api-version" {
		t.Errorf("other origin: %v", r.header)
	}
}

func TestBodyTooLarge(t *testing.T) {
	api := newTestAPI(t, Config{MaxBodyBytes: 64})
	r := send(t, api.URL, "POST", "/resource_providers", map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json"},
		`{"name": "`+strings.Repeat("x", 100)+`"}`)
	if r.status != 413 || r.firstError(t)["title"] != "Request Entity Too Large" {
		t.Errorf("big body: %d %q", r.status, r.body)
	}
}

func TestFaultWrap(t *testing.T) {
	s := New(nil, Config{})
	h := s.requestLog(s.faultWrap(negotiateVersion(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/somewhere")
		panic("boom")
	}))))
	req := httptest.NewRequest("GET", "/x", nil)
	req.Header.Set("OpenStack-API-Version", "placement 1.23")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var body errorBody
	json.Unmarshal(rec.Body.Bytes(), &body)
	if rec.Code != 500 || len(body.Errors) != 1 || body.Errors[0].Code != "placement.undefined_code" ||
		!strings.HasSuffix(body.Errors[0].Detail, "\n\n boom  ") {
		t.Fatalf("panic: %d %s", rec.Code, rec.Body)
	}
	// A fresh response: nothing the handler or the microversion layer set.
	for _, k := range []string{"Location", "OpenStack-API-Version", "Vary"} {
		if rec.Header().Get(k) != "" {
			t.Errorf("500 has %s", k)
		}
	}
	if rec.Header().Get("X-Openstack-Request-Id") != body.Errors[0].RequestID {
		t.Errorf("request id: %v %v", rec.Header(), body.Errors[0].RequestID)
	}
}

func TestUnicodeNames(t *testing.T) {
	api := newTestAPI(t, Config{})
	admin := map[string]string{"X-Auth-Token": "admin", "Content-Type": "application/json"}
	if r := send(t, api.URL, "GET", "/resources_providers/%e2%98%83", admin, ""); r.status != 404 {
		t.Errorf("snowman path: %d", r.status)
	}
	r := send(t, api.URL, "POST", "/resource_providers", admin, `{"name": "☃", "uuid": "`+rpTestA+`"}`)
	if r.status != 201 {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	r = send(t, api.URL, "GET", "/resource_providers?name=%e2%98%83", admin, "")
	rps, _ := r.json(t)["resource_providers"].([]any)
	if len(rps) != 1 || rps[0].(map[string]any)["name"] != "☃" {
		t.Errorf("query by name: %s", r.body)
	}
}

// exchangeRaw sends raw on a new connection to addr and reads the
// answers until the connection ends.
func exchangeRaw(t *testing.T, addr, raw string) []*http.Response {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	var out []*http.Response
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return out
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(strings.NewReader(string(b)))
		out = append(out, resp)
	}
}

// TestFixContentLength serves the API the way placementd does, behind
// FixContentLength, and talks raw HTTP to it.
func TestFixContentLength(t *testing.T) {
	api := newTestAPI(t, Config{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: New(api.Node, Config{})}
	go srv.Serve(FixContentLength(ln))
	t.Cleanup(func() { srv.Close() })

	exchange := func(raw string) []*http.Response { return exchangeRaw(t, ln.Addr().String(), raw) }
	body := `{"uuid": "ce13d7f1-9988-4dfd-8e16-ce071802eb36"}`
	resps := exchange("POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Type: application/json\r\nContent-Length: hi mom\r\n\r\n" + body)
	if len(resps) != 1 || resps[0].StatusCode != 400 || !resps[0].Close {
		t.Fatalf("bad content length: %v", resps)
	}
	if b, _ := io.ReadAll(resps[0].Body); !strings.Contains(string(b), "content-length header must be an integer") {
		t.Errorf("bad content length body %s", b)
	}

	// Python's int() reads "-1" and " +0 ": upstream goes on (here to the
	// content type check), and asks for a content type only above 0.
	for clen, want := range map[string]string{
		"-1":   "The media type None is not supported",
		" +0 ": "The media type None is not supported",
		"1_0":  "content-type header required when content-length > 0",
	} {
		resps = exchange("POST /resource_classes HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nOpenStack-API-Version: placement 1.2\r\nContent-Length: " + clen + "\r\n\r\n")
		if len(resps) != 1 || !resps[0].Close {
			t.Fatalf("Content-Length %q: %v", clen, resps)
		}
		if b, _ := io.ReadAll(resps[0].Body); !strings.Contains(string(b), want) {
			t.Errorf("Content-Length %q: %d %s", clen, resps[0].StatusCode, b)
		}
	}

	// Valid requests, pipelined on one connection, keep working.
	post := `{"name": "pipelined"}`
	resps = exchange("POST /resource_providers HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Type: application/json\r\nContent-Length: " +
		strconv.Itoa(len(post)) + "\r\n\r\n" + post +
		"GET /resource_providers?name=pipelined HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
	if len(resps) != 2 || resps[0].StatusCode != 201 || resps[1].StatusCode != 200 {
		t.Fatalf("pipelined: %v", resps)
	}
	if b, _ := io.ReadAll(resps[1].Body); !strings.Contains(string(b), `"name": "pipelined"`) {
		t.Errorf("pipelined GET: %s", b)
	}
}

// objectKeys' byte scan must list the keys encoding/json's tokenizer
// lists, or leave the document to it.
func TestObjectKeysScan(t *testing.T) {
	docs := []string{
		`{}`, ` { "a" : 1 , "b": {"c": [1, {"d": 2}]}, "a": 3 } `,
		`{"VCPU": 1, "MEMORY_MB": 512}`,
		`{"x": "va,lue: \"quoted\"", "y": 1}`, // escapes: left to encoding/json
		`{"k\u00e9y": 1, "z": [ "}", "{" ]}`,
		`{"é": {"résumé": 1}, "e": []}`,
		`[1, 2]`, `"s"`, `{"a": 1} x`,
	}
	var many []string
	for i := 0; i < 40; i++ {
		many = append(many, fmt.Sprintf(`"k%d": %d`, i%30, i))
	}
	docs = append(docs, "{"+strings.Join(many, ", ")+"}")
	for _, d := range docs {
		want := decodeObjectKeys(json.RawMessage(d))
		if got := objectKeys(json.RawMessage(d)); !slices.Equal(got, want) {
			t.Errorf("objectKeys(%s) = %q, want %q", d, got, want)
		}
	}
	if _, ok := scanObjectKeys([]byte(`{"a": {"b": 1}, "c": [2]}`)); !ok {
		t.Error("a plain object was left to encoding/json")
	}
}
