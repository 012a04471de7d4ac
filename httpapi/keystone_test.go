package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/httpapi/policy"
	"github.com/placementd/placementd/internal/testcluster"
)

// The Keystone integration test runs a real Keystone (Debian's keystone
// package) started by testdata/keystone/setup.sh. Without keystone
// installed, or when it cannot start, it is skipped, unless
// PLACEMENTD_REQUIRE_KEYSTONE=1 (CI, which installs it) makes either a
// failure: CI must never pass without having run it.

// ksEnv is the running Keystone and the users setup.sh made.
type ksEnv struct {
	AuthURL  string            `json:"auth_url"`
	Projects map[string]string `json:"projects"`
	Users    map[string]struct {
		Password string `json:"password"`
		Project  string `json:"project"`
		ID       string `json:"id"`
	} `json:"users"`
}

func startKeystone(t *testing.T) *ksEnv {
	t.Helper()
	if testing.Short() {
		t.Skip("Keystone integration test skipped in -short mode")
	}
	for _, cmd := range []string{"keystone-manage", "uwsgi"} {
		if _, err := exec.LookPath(cmd); err != nil {
			msg := fmt.Sprintf("Keystone integration test: %s not found (apt-get install keystone, as .ci/run does)", cmd)
			if os.Getenv("PLACEMENTD_REQUIRE_KEYSTONE") == "1" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	dir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	// Minutes on a loaded machine (a cold Keystone's first calls).
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "testdata/keystone/setup.sh", dir, fmt.Sprint(port))
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Cleanup(func() {
		if b, err := os.ReadFile(filepath.Join(dir, "keystone.pid")); err == nil {
			var pid int
			if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGTERM)
				// uwsgi exits within a second; wait so that TempDir's
				// removal does not race it.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				testcluster.Poll(ctx, func() error { return syscall.Kill(pid, 0) })
			}
		}
	})
	if err != nil {
		msg := fmt.Sprintf("Keystone could not be started: %v\n%s", err, out)
		if os.Getenv("PLACEMENTD_REQUIRE_KEYSTONE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Logf("Keystone started in %s: %s", time.Since(start).Round(time.Millisecond), bytes.TrimSpace(out))
	b, err := os.ReadFile(filepath.Join(dir, "users.json"))
	if err != nil {
		t.Fatal(err)
	}
	env := &ksEnv{}
	if err := json.Unmarshal(b, env); err != nil {
		t.Fatal(err)
	}
	return env
}

// ksCall calls Keystone's API.
func ksCall(t *testing.T, method, url, token, subject string, body any) (int, http.Header, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("X-Auth-Token", token)
	}
	if subject != "" {
		req.Header.Set("X-Subject-Token", subject)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, resp.Header, out
}

// token authenticates a user with its password; scope is a project name,
// "system" or "" (unscoped).
func (e *ksEnv) token(t *testing.T, user, scope string) string {
	t.Helper()
	auth := map[string]any{"identity": map[string]any{"methods": []string{"password"},
		"password": map[string]any{"user": map[string]any{"name": user, "domain": map[string]string{"id": "default"},
			"password": e.Users[user].Password}}}}
	switch scope {
	case "":
	case "system":
		auth["scope"] = map[string]any{"system": map[string]bool{"all": true}}
	default:
		auth["scope"] = map[string]any{"project": map[string]any{"name": scope, "domain": map[string]string{"id": "default"}}}
	}
	status, h, body := ksCall(t, "POST", e.AuthURL+"/auth/tokens", "", "", map[string]any{"auth": auth})
	if status != http.StatusCreated {
		t.Fatalf("token for %s (%s): %d %v", user, scope, status, body)
	}
	return h.Get("X-Subject-Token")
}

// newKeystoneAPI is a single-node placementd whose API authenticates
// against Keystone and enforces the default policy.
func newKeystoneAPI(t *testing.T, ks KeystoneConfig, newDefaults bool) (*Server, string) {
	t.Helper()
	authz, _, err := policy.New(policy.Options{EnforceNewDefaults: newDefaults, EnforceScope: true})
	if err != nil {
		t.Fatal(err)
	}
	node := testcluster.OpenNode(t, cluster.Config{}, nil)
	s := New(node, Config{Keystone: &ks, Authorizer: authz})
	return s, testcluster.Serve(t, s).URL
}

// call sends a request to placementd with a token and extra headers.
func call(t *testing.T, base, method, path, token, version string, body string, hdr ...string) rawResp {
	t.Helper()
	h := map[string]string{}
	if token != "" {
		h["X-Auth-Token"] = token
	}
	if version != "" {
		h["OpenStack-API-Version"] = "placement " + version
	}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		h[hdr[i]] = hdr[i+1]
	}
	return send(t, base, method, path, h, body)
}

const ksm401Body = `{"error": {"code": 401, "title": "Unauthorized", "message": "The request you have made requires authentication."}}`

func TestKeystoneIntegration(t *testing.T) {
	env := startKeystone(t)
	svc := KeystoneConfig{AuthURL: env.AuthURL, Username: "placement", Password: env.Users["placement"].Password,
		ProjectName: "service", UserDomainName: "Default", ProjectDomainName: "Default"}

	// Keystone validations are cheap once its cache is warm, but not
	// free: the servers for the policy matrix cache for the whole test;
	// two more show how revocation meets the cache.
	cached := svc
	cached.TokenCacheTime = 10 * time.Minute
	legacySrv, legacy := newKeystoneAPI(t, cached, false)
	_, strict := newKeystoneAPI(t, cached, true)
	noCache := svc
	noCache.TokenCacheTime = -1 // every request asks Keystone
	_, uncached := newKeystoneAPI(t, noCache, false)
	shortCache := svc
	shortCache.TokenCacheTime = 3 * time.Second
	_, short := newKeystoneAPI(t, shortCache, false)
	// token_cache_time = 0: cached with no time limit.
	noLimitCache := svc
	noLimitCache.TokenCacheTime = TokenCacheNoTimeLimit
	_, noLimit := newKeystoneAPI(t, noLimitCache, false)

	// An application credential that expires soon gives a token that
	// expires with it (Keystone caps the token's life): the "expired
	// token" subtest, last, waits for it.
	memberToken := env.token(t, "demo-member", "demo")
	expiry := time.Now().UTC().Add(10 * time.Second).Truncate(time.Second)
	status, _, body := ksCall(t, "POST", env.AuthURL+"/users/"+env.Users["demo-member"].ID+"/application_credentials",
		memberToken, "", map[string]any{"application_credential": map[string]any{
			"name": "short-lived", "expires_at": expiry.Format("2006-01-02T15:04:05")}})
	if status != http.StatusCreated {
		t.Fatalf("application credential: %d %v", status, body)
	}
	appCred := body["application_credential"].(map[string]any)
	status, h, body := ksCall(t, "POST", env.AuthURL+"/auth/tokens", "", "", map[string]any{"auth": map[string]any{
		"identity": map[string]any{"methods": []string{"application_credential"},
			"application_credential": map[string]any{"id": appCred["id"], "secret": appCred["secret"]}}}})
	if status != http.StatusCreated {
		t.Fatalf("token from application credential: %d %v", status, body)
	}
	expiringToken := h.Get("X-Subject-Token")
	var kt keystoneTime
	b, _ := json.Marshal(body["token"].(map[string]any)["expires_at"])
	if err := kt.UnmarshalJSON(b); err != nil || kt.After(expiry) {
		t.Fatalf("token from an application credential expiring at %s expires at %s (%v)", expiry, b, err)
	}
	tokenExpiry := kt.Time

	t.Run("expiring token works before it expires", func(t *testing.T) {
		// Both servers see it valid; legacy caches it for 10 minutes.
		for _, base := range []string{legacy, uncached} {
			r := call(t, base, "GET", "/usages?project_id="+env.Projects["demo"], expiringToken, "1.9", "")
			if r.status != 200 && time.Now().After(tokenExpiry) {
				t.Fatalf("Keystone too slow: the token expired (%s) before it could be used", tokenExpiry)
			}
			if r.status != 200 {
				t.Fatalf("usages with a fresh application credential token: %d %s", r.status, r.body)
			}
		}
	})

	tokens := map[string]string{
		"admin":        env.token(t, "admin", "admin"),
		"system-admin": env.token(t, "admin", "system"),
		"unscoped":     env.token(t, "demo-member", ""),
		"nova":         env.token(t, "nova", "service"),
		"demo-member":  memberToken,
		"demo-reader":  env.token(t, "demo-reader", "demo"),
		"stranger":     env.token(t, "stranger", "other"),
	}
	demo, other := env.Projects["demo"], env.Projects["other"]

	// What each caller may do under the default policy: admin and service
	// (project scoped) everything but, under the new defaults, only the
	// service may reshape; project readers (members imply reader) their
	// own project's usages; a system-scoped or an unscoped token nothing
	// (Placement's rules are project scoped and scope is enforced).
	type op struct {
		name, method, path, version, body string
	}
	ops := []op{
		{"list providers", "GET", "/resource_providers", "", ""},
		{"create provider", "POST", "/resource_providers", "1.20", `{"name": "rp-%s"}`},
		{"list traits", "GET", "/traits", "1.6", ""},
		{"list resource classes", "GET", "/resource_classes", "1.2", ""},
		{"list allocations", "GET", "/allocations/" + "7f4b1e6c-1d2a-4c1e-9a0e-5d2f7b3c8a91", "1.12", ""},
		{"allocation candidates", "GET", "/allocation_candidates?resources=VCPU:1", "1.10", ""},
		{"demo usages", "GET", "/usages?project_id=" + demo, "1.9", ""},
		{"other usages", "GET", "/usages?project_id=" + other, "1.9", ""},
		// An empty body: allowed callers get the schema's 400.
		{"reshape", "POST", "/reshaper", "1.30", `{}`},
	}
	type want map[string]int
	allowed := want{"list providers": 200, "create provider": 200, "list traits": 200, "list resource classes": 200,
		"list allocations": 200, "allocation candidates": 200, "demo usages": 200, "other usages": 200, "reshape": 400}
	only := func(w want) want {
		out := want{}
		for k := range allowed {
			out[k] = 403
		}
		for k, v := range w {
			out[k] = v
		}
		return out
	}
	legacyWant := map[string]want{
		"admin":        allowed,
		"nova":         allowed,
		"system-admin": only(nil),
		"unscoped":     only(nil),
		"demo-member":  only(want{"demo usages": 200}),
		"demo-reader":  only(want{"demo usages": 200}),
		"stranger":     only(want{"other usages": 200}),
	}
	strictWant := map[string]want{}
	for who, w := range legacyWant {
		strictWant[who] = want{}
		for k, v := range w {
			strictWant[who][k] = v
		}
	}
	strictWant["admin"]["reshape"] = 403
	for _, mode := range []struct {
		name, base string
		want       map[string]want
	}{{"legacy and new defaults", legacy, legacyWant}, {"new defaults only", strict, strictWant}} {
		t.Run(mode.name, func(t *testing.T) {
			for who, w := range mode.want {
				for _, o := range ops {
					body := o.body
					if strings.Contains(body, "%s") {
						body = fmt.Sprintf(body, who+"-"+mode.name)
					}
					r := call(t, mode.base, o.method, o.path, tokens[who], o.version, body)
					if r.status != w[o.name] {
						t.Errorf("%s: %s: got %d, want %d: %s", who, o.name, r.status, w[o.name], r.body)
					}
				}
			}
		})
	}

	t.Run("credentials come from the token only", func(t *testing.T) {
		// Headers a caller sends claiming admin are dropped.
		r := call(t, legacy, "GET", "/resource_providers", tokens["demo-member"], "", "",
			"X-Roles", "admin", "X_ROLES", "admin", "X-Project-Id", env.Projects["admin"], "X-User-Id", env.Users["admin"].ID,
			"X-Identity-Status", "Confirmed", "OpenStack-System-Scope", "all")
		if r.status != 403 {
			t.Errorf("member with forged admin headers: %d %s", r.status, r.body)
		}
		// The reader's own project comes from its token: another project
		// named in a header does not make its usages readable.
		r = call(t, legacy, "GET", "/usages?project_id="+other, tokens["demo-reader"], "1.9", "",
			"X-Project-Id", other, "X-Tenant-Id", other)
		if r.status != 403 {
			t.Errorf("reader with a forged project: %d %s", r.status, r.body)
		}
	})

	t.Run("missing or bad token", func(t *testing.T) {
		for name, token := range map[string]string{"none": "", "garbage": "not-a-token", "noauth2 style": "admin:admin"} {
			r := call(t, legacy, "GET", "/resource_providers", token, "", "")
			if r.status != 401 || string(r.body) != ksm401Body {
				t.Errorf("%s: %d %s", name, r.status, r.body)
			}
			if got, want := r.header.Get("WWW-Authenticate"), `Keystone uri="`+env.AuthURL+`"`; got != want {
				t.Errorf("%s: WWW-Authenticate %q, want %q", name, got, want)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type %q", name, ct)
			}
		}
		// The root document needs no token.
		if r := call(t, legacy, "GET", "/", "", "", ""); r.status != 200 {
			t.Errorf("GET / without a token: %d", r.status)
		}
	})

	t.Run("revoked token", func(t *testing.T) {
		tok := env.token(t, "demo-reader", "demo")
		for _, base := range []string{uncached, short, noLimit} {
			if r := call(t, base, "GET", "/usages?project_id="+demo, tok, "1.9", ""); r.status != 200 {
				t.Fatalf("before revocation: %d %s", r.status, r.body)
			}
		}
		if status, _, body := ksCall(t, "DELETE", env.AuthURL+"/auth/tokens", tokens["admin"], tok, nil); status != 204 {
			t.Fatalf("revoking: %d %v", status, body)
		}
		revoked := time.Now()
		// Without a cache the revocation takes effect at once.
		if r := call(t, uncached, "GET", "/usages?project_id="+demo, tok, "1.9", ""); r.status != 401 || string(r.body) != ksm401Body {
			t.Errorf("revoked token, no cache: %d %s", r.status, r.body)
		}
		// With one, once the cached validation has expired. About time:
		// the cache's lifetime is what is under test.
		time.Sleep(time.Until(revoked.Add(shortCache.TokenCacheTime)))
		if r := call(t, short, "GET", "/usages?project_id="+demo, tok, "1.9", ""); r.status != 401 || string(r.body) != ksm401Body {
			t.Errorf("revoked token after the cache time: %d %s", r.status, r.body)
		}
		// As keystonemiddleware's in-process cache with token_cache_time
		// = 0: still accepted, the cached validation has no time limit.
		if r := call(t, noLimit, "GET", "/usages?project_id="+demo, tok, "1.9", ""); r.status != 200 {
			t.Errorf("revoked token, cached with no time limit: %d %s", r.status, r.body)
		}
	})

	t.Run("service token renewed when Keystone refuses it", func(t *testing.T) {
		k := legacySrv.keystone
		k.mu.Lock()
		own := k.svcToken
		k.mu.Unlock()
		if own == "" {
			t.Fatal("no service token after validating tokens")
		}
		if status, _, body := ksCall(t, "DELETE", env.AuthURL+"/auth/tokens", tokens["admin"], own, nil); status != 204 {
			t.Fatalf("revoking the service token: %d %v", status, body)
		}
		fresh := env.token(t, "nova", "service")
		if r := call(t, legacy, "GET", "/traits", fresh, "1.6", ""); r.status != 200 {
			t.Fatalf("after the service token was revoked: %d %s", r.status, r.body)
		}
		k.mu.Lock()
		renewed := k.svcToken
		k.mu.Unlock()
		if renewed == own || renewed == "" {
			t.Error("service token was not renewed")
		}
	})

	t.Run("wrong service password", func(t *testing.T) {
		bad := svc
		bad.Password = "wrong"
		_, base := newKeystoneAPI(t, bad, false)
		r := call(t, base, "GET", "/traits", tokens["nova"], "1.6", "")
		if r.status != 503 || !strings.Contains(string(r.body), "The Keystone service is temporarily unavailable.") {
			t.Errorf("validating with refused service credentials: %d %s", r.status, r.body)
		}
	})

	t.Run("expired token", func(t *testing.T) {
		// About time: the token's expiry is what is under test.
		time.Sleep(time.Until(tokenExpiry.Add(time.Second)))
		// Refused from the cache too, where it has been since it worked.
		for _, base := range []string{legacy, uncached} {
			r := call(t, base, "GET", "/usages?project_id="+demo, expiringToken, "1.9", "")
			if r.status != 401 || string(r.body) != ksm401Body {
				t.Errorf("expired token: %d %s", r.status, r.body)
			}
		}
	})

	// Last: they need the expired token, and add identity endpoints.
	t.Run("as keystonemiddleware answers", func(t *testing.T) {
		testAsKeystonemiddleware(t, env, svc, tokens, expiringToken)
	})
	t.Run("identity endpoint and TLS", func(t *testing.T) {
		testIdentityEndpointAndTLS(t, env, svc, tokens["admin"])
	})
}

// isEnvKey answers as comparing envKey's result, without building it.
func TestIsEnvKeyAgreesWithEnvKey(t *testing.T) {
	names := []string{"X-Auth-Token", "X-AUTH-TOKEN", "x_auth-token", "X-Auth-Tokens", "X-Roles", "Accept",
		"", "-", "X-Ümlaut", "x-ümlaut", "X-ß", "HTTP_X", "X-Auth-Tokeñ"}
	keys := []string{"HTTP_X_AUTH_TOKEN", "HTTP_X_ROLES", "HTTP_ACCEPT", "HTTP_", "HTTP__", "HTTP_X-AUTH-TOKEN",
		"X_AUTH_TOKEN_X", "HTTP_X_ÜMLAUT", "HTTP_X_SS", "HTTP_HTTP_X", ""}
	for _, n := range names {
		keys = append(keys, envKey(n))
	}
	for _, n := range names {
		for _, k := range keys {
			if got, want := isEnvKey(n, k), envKey(n) == k; got != want {
				t.Errorf("isEnvKey(%q, %q) = %v, envKey gives %q", n, k, got, envKey(n))
			}
		}
	}
}
