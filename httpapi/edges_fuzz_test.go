package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/placementd/placementd/httpapi/policy"
	"github.com/placementd/placementd/httpapi/schema"
)

// Fuzz targets for the client input that is not a body or a query string
// of one handler: the JSON writer every answer goes through, the
// microversion header, the query parameter normalizers the candidate and
// provider searches share, the noauth2 token and role headers, and the
// Keystone token validation answers. Seeds come from the conformance files
// (testdata/gen-fuzz-seeds.py) and run in `go test`. To fuzz one target:
// go test ./httpapi -run '^$' -fuzz '^FuzzMicroversionHeader$' -parallel 1

// checkPlacementError holds an error answer to Placement's format: a JSON
// body {"errors": [{"status", "title", "detail", "request_id", ...}]}
// whose status is the answer's.
func checkPlacementError(t *testing.T, desc string, rec *httptest.ResponseRecorder) {
	t.Helper()
	if !strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		t.Fatalf("%s: answered %d as %q, not JSON: %q", desc, rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var body struct {
		Errors []struct {
			Status    *int    `json:"status"`
			Title     *string `json:"title"`
			Detail    *string `json:"detail"`
			RequestID string  `json:"request_id"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || len(body.Errors) != 1 {
		t.Fatalf("%s: answered %d, not in Placement's error format (%v): %q", desc, rec.Code, err, rec.Body)
	}
	e := body.Errors[0]
	if e.Status == nil || *e.Status != rec.Code || e.Title == nil || *e.Title == "" || e.Detail == nil || e.RequestID == "" {
		t.Fatalf("%s: answered %d, error item incomplete: %q", desc, rec.Code, rec.Body)
	}
}

// fuzzServerAsLeft is the fuzz API as the last input left it (the
// fixture unless resetIfChanged saw a change): restoring the fixture
// snapshot for every input costs more than most inputs.
func fuzzServerAsLeft(t *testing.T) *fuzzAPI {
	t.Helper()
	fuzzOnce.Do(func() { fuzzInst, fuzzErr = newFuzzAPI() })
	if fuzzErr != nil {
		t.Fatal(fuzzErr)
	}
	return fuzzInst
}

// resetIfChanged puts the fixture back when an input changed the state.
func (a *fuzzAPI) resetIfChanged(t *testing.T, before, after string) {
	if before != after {
		fuzzServer(t)
	}
}

// validHeaderValue reports whether net/http's server would pass the value
// on (no control characters but tab): fuzzed header values it would refuse
// never reach the handlers.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// FuzzPyJSON holds the JSON writer to json.dumps' promises for any value a
// request can carry back into an answer: the output is valid JSON, pure
// ASCII, uses ", " and ": " between items, and reads back as the same
// value.
func FuzzPyJSON(f *testing.F) {
	for _, s := range []string{`{"a": [1, "é", "\u2028<>&", null, true, 1.5e300]}`, `"\ud83d\ude00"`, `"\u007f\u0000"`,
		`{"k\"ey": {"x": ["\\", "/"]}}`, `[]`, `"\xff"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		if dec.Decode(&v) != nil {
			return
		}
		out, err := pyJSON(v)
		if err != nil {
			t.Fatalf("pyJSON(%q): %v", in, err)
		}
		for _, c := range out {
			if c >= 0x80 {
				t.Fatalf("pyJSON(%q) = %q: not ASCII", in, out)
			}
		}
		d2 := json.NewDecoder(bytes.NewReader(out))
		d2.UseNumber()
		var back any
		if err := d2.Decode(&back); err != nil {
			t.Fatalf("pyJSON(%q) = %q: not JSON: %v", in, out, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("pyJSON(%q) = %q reads back as %#v, not %#v", in, out, back, v)
		}
	})
}

// FuzzMicroversionHeader sends OpenStack-API-Version headers (one value a
// line) to GET /resource_providers. The answer is 200 at the version the
// header names, or a 400 (malformed) or 406 (unknown version) in
// Placement's format; a 200 says which version it served, a version that
// reads back as itself.
func FuzzMicroversionHeader(f *testing.F) {
	for _, s := range []string{"placement 1.39", "placement latest", "compute 2.1, placement 1.2", "placement 1.40",
		"placement 1", "placement 01.2", "PLACEMENT  1.\u0662", "placement 1.2\nplacement 1.3", "placement", "placement  ", "placement 2.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, header string) {
		a := fuzzServerAsLeft(t)
		lines := strings.Split(header, "\n")
		for _, l := range lines {
			if !validHeaderValue(l) {
				return
			}
		}
		req := httptest.NewRequest("GET", "http://placement/resource_providers", http.NoBody)
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Accept", "application/json")
		req.Header["Openstack-Api-Version"] = lines
		rec := httptest.NewRecorder()
		a.api.ServeHTTP(rec, req)
		desc := fmt.Sprintf("OpenStack-API-Version %q", lines)
		switch rec.Code {
		case http.StatusOK:
			served := rec.Header().Get("Openstack-Api-Version")
			s, ok := strings.CutPrefix(served, "placement ")
			v, malformed, unknown := parseVersion(s)
			if !ok || malformed != "" || unknown != "" || v.String() != s {
				t.Fatalf("%s: served %q", desc, served)
			}
			// A plain "placement 1.N" of a version that exists is served
			// at that version.
			if minor, ok := strings.CutPrefix(header, "placement 1."); ok {
				if n, err := strconv.Atoi(minor); err == nil && strconv.Itoa(n) == minor && n <= MaxVersion.Minor && s != "1."+minor {
					t.Fatalf("%s: served %q", desc, served)
				}
			}
		case http.StatusBadRequest, http.StatusNotAcceptable:
			checkPlacementError(t, desc, rec)
			if !strings.Contains(rec.Body.String(), "Invalid microversion: ") {
				t.Fatalf("%s: answered %d: %s", desc, rec.Code, rec.Body)
			}
		default:
			t.Fatalf("%s: answered %d: %s", desc, rec.Code, rec.Body)
		}
	})
}

// FuzzQueryNormalize fuzzes the parsers of resources=, required= and
// member_of= values that GET /allocation_candidates and GET
// /resource_providers share. An accepted value normalizes to something
// that, written back in the query syntax, normalizes to the same thing
// (the parsers are idempotent), with no empty or forbidden-marked names
// left in the required lists, amounts of at least 1, and member_of
// groups of valid UUIDs.
func FuzzQueryNormalize(f *testing.F) {
	for _, s := range []string{"VCPU:1,MEMORY_MB:1024", "VCPU:1_000", "VCPU: 2 ", "VCPU:0", "VCPU:-1", "VCPU:99999999999999999999",
		"VCPU:" + strings.Repeat("9", 4300), "VCPU:" + strings.Repeat("9", 4301), "VCPU:1_" + strings.Repeat("0", 4300),
		"HW_CPU_X86_AVX,!CUSTOM_X", "in:A,B", "!!A", "in:!A", " A ,B", "in:" + fuzzAgg + "," + fuzzAgg, "!in:" + fuzzAgg,
		"!" + strings.ReplaceAll(fuzzAgg, "-", ""), "a,b"} {
		for kind := uint8(0); kind < 3; kind++ {
			f.Add(kind, s)
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, value string) {
		switch kind % 3 {
		case 0:
			amounts, detail := normalizeResources(value)
			if detail != "" {
				return
			}
			var parts []string
			seen := map[string]bool{}
			for _, a := range amounts {
				if a.Amount < 1 || seen[a.Class] {
					t.Fatalf("resources=%q: %+v", value, amounts)
				}
				seen[a.Class] = true
				parts = append(parts, fmt.Sprintf("%s:%d", a.Class, a.Amount))
			}
			again, detail := normalizeResources(strings.Join(parts, ","))
			if detail != "" || !reflect.DeepEqual(again, amounts) {
				t.Fatalf("resources=%q: %+v, written back %+v (%s)", value, amounts, again, detail)
			}
		case 1:
			allowForbidden, allowAny := kind&4 != 0, kind&8 != 0
			req, forb, detail := normalizeTraitsValue(value, allowForbidden, allowAny)
			if detail != "" {
				return
			}
			if len(forb) > 0 && !allowForbidden {
				t.Fatalf("required=%q: forbidden %q before 1.22", value, forb)
			}
			var written string
			if strings.HasPrefix(value, "in:") {
				if len(req) != 1 {
					t.Fatalf("required=%q: %q", value, req)
				}
				written = "in:" + strings.Join(req[0], ",")
			} else {
				var parts []string
				for _, g := range req {
					if len(g) != 1 {
						t.Fatalf("required=%q: %q", value, req)
					}
					parts = append(parts, g[0])
				}
				for _, name := range forb {
					parts = append(parts, "!"+name)
				}
				// A leading space keeps a first name such as "in:x" (from
				// " in:x") from reading as the in: form.
				written = " " + strings.Join(parts, ",")
			}
			for _, g := range req {
				for _, name := range g {
					if name == "" || strings.HasPrefix(name, "!") || pyStripText(name) != name {
						t.Fatalf("required=%q: required %q", value, req)
					}
				}
			}
			req2, forb2, detail := normalizeTraitsValue(written, allowForbidden, allowAny)
			if detail != "" || !reflect.DeepEqual(req2, req) || !reflect.DeepEqual(forb2, forb) {
				t.Fatalf("required=%q: %q !%q, written back as %q: %q !%q (%s)", value, req, forb, written, req2, forb2, detail)
			}
		default:
			req, forb, detail := normalizeMemberOfValue(value)
			if detail != "" {
				return
			}
			for _, agg := range append(append([]string{}, req...), forb...) {
				if schema.UUIDLikeHex(agg) == "" {
					t.Fatalf("member_of=%q: %q is no UUID", value, agg)
				}
			}
			var written string
			switch {
			case len(req) > 0:
				written = "in:" + strings.Join(req, ",")
			default:
				written = "!in:" + strings.Join(forb, ",")
			}
			req2, forb2, detail := normalizeMemberOfValue(written)
			if detail != "" || !reflect.DeepEqual(req2, req) || !reflect.DeepEqual(forb2, forb) {
				t.Fatalf("member_of=%q: %q !%q, written back as %q: %q !%q (%s)", value, req, forb, written, req2, forb2, detail)
			}
		}
	})
}

// policyFuzzAPI is the fuzz API with the default policy enforced, for the
// authentication targets.
var (
	policyOnce sync.Once
	policyAuth *policy.Enforcer
	policyErr  error
)

func defaultEnforcer(t *testing.T) *policy.Enforcer {
	policyOnce.Do(func() { policyAuth, _, policyErr = policy.New(policy.Options{}) })
	if policyErr != nil {
		t.Fatal(policyErr)
	}
	return policyAuth
}

// fuzzAuthRequests are the requests the authentication targets send: a
// read and writes of each kind.
var fuzzAuthRequests = []struct{ method, path, body string }{
	{"GET", "/resource_providers", ""},
	{"POST", "/resource_providers", `{"name": "fuzz-new"}`},
	{"PUT", "/traits/CUSTOM_FUZZ_AUTH", ""},
	{"DELETE", "/allocations/" + fuzzConsumer, ""},
	{"GET", "/usages?project_id=fuzz-project", ""},
}

// serveAs sends one of fuzzAuthRequests through api with the given
// headers (a header with several lines has several values).
func serveAs(api http.Handler, op uint8, hdr map[string]string) (*httptest.ResponseRecorder, string) {
	rq := fuzzAuthRequests[int(op)%len(fuzzAuthRequests)]
	var body io.Reader = http.NoBody
	if rq.body != "" {
		body = strings.NewReader(rq.body)
	}
	req := httptest.NewRequest(rq.method, "http://placement"+rq.path, body)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	if rq.body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header[http.CanonicalHeaderKey(k)] = strings.Split(v, "\n")
	}
	rec := httptest.NewRecorder()
	api.ServeHTTP(rec, req)
	return rec, rq.method + " " + rq.path
}

// privileged reports whether roles (X-Roles, comma-separated, as the
// policy reads them) hold a role the legacy default policy lets write.
func privileged(roles []string) bool {
	for _, r := range roles {
		switch strings.ToLower(strings.TrimSpace(r)) {
		case "admin", "service":
			return true
		}
	}
	return false
}

var (
	noauthOnce sync.Once
	noauthAPI  *Server
)

// FuzzNoauthHeaders sends noauth2 tokens ("user[:project]"), X-Roles and
// system scope headers, and headers a client should not be able to use
// to raise its rights (X-Service-Roles, X-Identity-Status), through the
// API with the default (legacy) policy: the answer is never 5xx, a
// refusal is in Placement's format and changes nothing, and only a
// caller whose roles include admin or service (X-Roles, or the user
// "admin" without X-Roles) gets a write through.
func FuzzNoauthHeaders(f *testing.F) {
	f.Add(uint8(1), "admin", "", false, "")
	f.Add(uint8(1), "admin:admin", "reader", true, "")
	f.Add(uint8(2), "nova:service", "service", true, "all")
	f.Add(uint8(3), "user:project", "member, reader", true, "")
	f.Add(uint8(0), "user", "ADMIN", true, "project")
	f.Add(uint8(4), ":", ",,admin ,", true, "")
	f.Fuzz(func(t *testing.T, op uint8, token, roles string, sendRoles bool, scope string) {
		for _, v := range []string{token, roles, scope} {
			if !validHeaderValue(strings.ReplaceAll(v, "\n", "")) {
				return
			}
		}
		a := fuzzServerAsLeft(t)
		noauthOnce.Do(func() {
			noauthAPI = New(a.backend, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Authorizer: defaultEnforcer(t)})
		})
		api := noauthAPI
		hdr := map[string]string{"X-Auth-Token": token, "X-Service-Roles": "admin", "X-Identity-Status": "Confirmed"}
		if sendRoles {
			hdr["X-Roles"] = roles
		}
		if scope != "" {
			hdr["OpenStack-System-Scope"] = scope
		}
		before, _ := a.digest()
		rec, what := serveAs(api, op, hdr)
		after, err := a.digest()
		a.resetIfChanged(t, before, after)
		desc := fmt.Sprintf("%s token %q roles %q (sent %v) scope %q", what, token, roles, sendRoles, scope)
		if rec.Code >= 500 || err != nil {
			t.Fatalf("%s: answered %d (%v): %s", desc, rec.Code, err, rec.Body)
		}
		if rec.Code >= 400 {
			if after != before {
				t.Fatalf("%s: answered %d and changed the state", desc, rec.Code)
			}
			if rec.Code != http.StatusUnauthorized {
				checkPlacementError(t, desc, rec)
			}
			return
		}
		effective := strings.Split(strings.Join(strings.Split(roles, "\n"), ","), ",")
		if !sendRoles {
			user, _, _ := strings.Cut(strings.Join(strings.Split(token, "\n"), ","), ":")
			effective = nil
			if user == "admin" {
				effective = []string{"admin"}
			}
		}
		if !strings.HasPrefix(what, "GET") && !privileged(effective) {
			t.Fatalf("%s: a caller with roles %q wrote (%d)", desc, effective, rec.Code)
		}
	})
}

// fuzzKeystoneServer answers placementd's calls to Keystone in memory: its own
// service token, and the fuzzed answer to every token validation.
type fuzzKeystoneServer struct {
	mu     sync.Mutex
	status int
	body   []byte
	calls  atomic.Int64
}

func (k *fuzzKeystoneServer) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
	}
	resp := &http.Response{Request: r, Header: http.Header{}, ProtoMajor: 1, ProtoMinor: 1, Proto: "HTTP/1.1"}
	resp.Header.Set("Content-Type", "application/json")
	if r.Method == http.MethodPost {
		resp.StatusCode = http.StatusCreated
		resp.Header.Set("X-Subject-Token", "placement-service-token")
		resp.Body = io.NopCloser(strings.NewReader(`{"token": {"expires_at": "2999-01-01T00:00:00Z", "user": {"id": "placement"},
			"catalog": [{"type": "identity", "endpoints": [{"interface": "internal", "url": "http://keystone.invalid/v3"}]}]}}`))
		return resp, nil
	}
	k.calls.Add(1)
	k.mu.Lock()
	resp.StatusCode, resp.Body = k.status, io.NopCloser(bytes.NewReader(k.body))
	k.mu.Unlock()
	resp.Status = fmt.Sprintf("%d %s", k.status, http.StatusText(k.status))
	return resp, nil
}

var (
	ksOnce sync.Once
	ksAPI  *Server
	ksFake = &fuzzKeystoneServer{}
	ksSeq  atomic.Int64
)

// FuzzKeystoneToken has Keystone answer token validations with fuzzed
// bodies (200, or 404 for an invalid token) for requests that also carry
// forged identity headers. placementd must never answer 5xx for them (a
// bad answer from Keystone is an invalid token, 401), a 401 is
// keystonemiddleware's, and a write gets through only when the token
// Keystone described holds a privileged role: the forged X-Roles never
// count.
func FuzzKeystoneToken(f *testing.F) {
	good := `{"token": {"expires_at": "2999-01-01T00:00:00Z", "user": {"id": "u1", "name": "u", "domain": {"id": "default"}},
		"project": {"id": "p1", "name": "p", "domain": {"id": "default"}}, "roles": [{"id": "r", "name": "reader"}]}}`
	f.Add(uint8(0), uint8(1), []byte(good))
	f.Add(uint8(0), uint8(1), []byte(strings.Replace(good, "reader", "admin", 1)))
	f.Add(uint8(0), uint8(2), []byte(strings.Replace(good, "2999", "2001", 1)))
	f.Add(uint8(1), uint8(0), []byte(`{"error": {"code": 404}}`))
	f.Add(uint8(0), uint8(3), []byte(`{"token": {"user": {"id": "x"}, "expires_at": "2999-01-01T00:00:00", "system": {"all": true},
		"roles": [{"name": "admin"}], "application_credential": {"access_rules": [{"method": "GET", "path": "/resource_providers", "service": "placement"}]}}}`))
	f.Add(uint8(0), uint8(0), []byte(`{"token": null}`))
	f.Fuzz(func(t *testing.T, status, op uint8, body []byte) {
		a := fuzzServerAsLeft(t)
		ksOnce.Do(func() {
			ksAPI = New(a.backend, Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Authorizer: defaultEnforcer(t),
				Keystone: &KeystoneConfig{AuthURL: "http://keystone.invalid/v3", Username: "placement", Password: "x",
					ProjectName: "service", ServiceType: "placement", TokenCacheTime: -1, Timeout: 5 * time.Second,
					HTTPClient: &http.Client{Transport: ksFake}}})
		})
		ksFake.mu.Lock()
		ksFake.status = pick(status, http.StatusOK, http.StatusNotFound)
		ksFake.body = body
		ksFake.mu.Unlock()
		// A token of its own for every input, whatever the cache keeps.
		token := fmt.Sprintf("fuzz-token-%d", ksSeq.Add(1))
		before, _ := a.digest()
		rec, what := serveAs(ksAPI, op, map[string]string{"X-Auth-Token": token, "X-Roles": "admin",
			"X-Service-Roles": "service", "X-Identity-Status": "Confirmed", "X-User-Id": "admin"})
		after, err := a.digest()
		a.resetIfChanged(t, before, after)
		desc := fmt.Sprintf("%s, Keystone %d %q", what, ksFake.status, body)
		if rec.Code >= 500 || err != nil {
			t.Fatalf("%s: answered %d (%v): %s", desc, rec.Code, err, rec.Body)
		}
		if rec.Code >= 400 && after != before {
			t.Fatalf("%s: answered %d and changed the state", desc, rec.Code)
		}
		if rec.Code == http.StatusUnauthorized {
			if !strings.Contains(rec.Body.String(), `"title": "Unauthorized"`) || rec.Header().Get("WWW-Authenticate") == "" {
				t.Fatalf("%s: 401 not keystonemiddleware's: %s", desc, rec.Body)
			}
			return
		}
		if ksFake.status == http.StatusNotFound && rec.Code != http.StatusUnauthorized {
			t.Fatalf("%s: Keystone refused the token, answered %d", desc, rec.Code)
		}
		if rec.Code >= 300 || strings.HasPrefix(what, "GET") {
			return
		}
		var parsed struct {
			Token struct {
				Roles []struct {
					Name string `json:"name"`
				} `json:"roles"`
			} `json:"token"`
		}
		json.Unmarshal(body, &parsed)
		// The role names reach the policy as X-Roles, joined with ",",
		// as keystonemiddleware sends them (Keystone's names are trusted).
		var roles []string
		for _, r := range parsed.Token.Roles {
			roles = append(roles, strings.Split(r.Name, ",")...)
		}
		if !privileged(roles) {
			t.Fatalf("%s: a token with roles %q wrote (%d)", desc, roles, rec.Code)
		}
	})
}
