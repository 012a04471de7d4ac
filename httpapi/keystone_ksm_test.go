package httpapi

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// The parts of the Keystone integration test that compare placementd with
// keystonemiddleware itself, and that move the identity endpoint behind
// TLS. They run as subtests of TestKeystoneIntegration, on its Keystone.

// startKeystonemiddleware serves keystonemiddleware's auth_token
// (testdata/keystone/ksm.py) once per variant of its options, and returns
// each variant's base URL. Debian's keystone package brings
// python3-keystonemiddleware: without it the test is skipped, unless
// PLACEMENTD_REQUIRE_KEYSTONE=1.
func startKeystonemiddleware(t *testing.T, variants map[string]map[string]string) map[string]string {
	t.Helper()
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import keystonemiddleware.auth_token").Run(); err != nil {
		msg := fmt.Sprintf("keystonemiddleware is not importable by %s (apt-get install python3-keystonemiddleware): %v", py, err)
		if os.Getenv("PLACEMENTD_REQUIRE_KEYSTONE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	arg, _ := json.Marshal(variants)
	cmd := exec.Command(py, "testdata/keystone/ksm.py", string(arg))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // it exits when stdin closes
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	bases := map[string]string{}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	deadline := time.After(2 * time.Minute)
	for len(bases) < len(variants) {
		select {
		case line, ok := <-lines:
			var name, port string
			if !ok {
				t.Fatalf("keystonemiddleware exited: %s", stderr.String())
			}
			if _, err := fmt.Sscan(line, new(string), &name, &port); err != nil || !strings.HasPrefix(line, "ready ") {
				t.Fatalf("keystonemiddleware said %q", line)
			}
			bases[name] = "http://127.0.0.1:" + port
		case <-deadline:
			t.Fatalf("keystonemiddleware did not start: %s", stderr.String())
		}
	}
	return bases
}

// testAsKeystonemiddleware sends the same requests to keystonemiddleware
// and to placementd configured alike, and compares: whether each passes
// authentication, and a refusal's headers and body byte for byte. tokens
// are the integration test's; expired is a user token that has expired.
func testAsKeystonemiddleware(t *testing.T, env *ksEnv, svc KeystoneConfig, tokens map[string]string, expired string) {
	// [keystone_authtoken] variants: the defaults, service token roles
	// required (service_token_roles = service), required with another
	// role, and required with no role at all.
	common := map[string]string{"auth_type": "password", "auth_url": env.AuthURL, "www_authenticate_uri": env.AuthURL,
		"username": svc.Username, "password": svc.Password, "project_name": svc.ProjectName,
		"user_domain_name": "Default", "project_domain_name": "Default"}
	type variant struct {
		opts     map[string]string
		roles    []string // nil: the default
		required bool
	}
	variants := map[string]variant{
		"defaults":       {},
		"required":       {opts: map[string]string{"service_token_roles_required": "true"}, required: true},
		"required-admin": {opts: map[string]string{"service_token_roles_required": "true", "service_token_roles": "admin"}, roles: []string{"admin"}, required: true},
		"required-none":  {opts: map[string]string{"service_token_roles_required": "true", "service_token_roles": ""}, roles: []string{}, required: true},
	}
	confs := map[string]map[string]string{}
	for name, v := range variants {
		conf := map[string]string{}
		for k, val := range common {
			conf[k] = val
		}
		for k, val := range v.opts {
			conf[k] = val
		}
		confs[name] = conf
	}
	ksm := startKeystonemiddleware(t, confs)

	// Each pair is a user token and a service token ("" for none).
	cases := []struct{ user, service string }{
		{"", ""}, {"garbage", ""}, {"admin", ""}, {"", "nova"},
		{"admin", "nova"}, {"admin", "demo-member"}, {"admin", "admin"}, {"admin", "garbage"},
		{"expired", ""}, {"expired", "nova"}, {"expired", "demo-member"}, {"expired", "admin"},
	}
	token := func(name string) string {
		switch name {
		case "garbage":
			return "not-a-token"
		case "expired":
			return expired
		}
		return tokens[name]
	}
	for name, v := range variants {
		cfg := svc
		cfg.ServiceTokenRoles, cfg.ServiceTokenRolesRequired = v.roles, v.required
		_, pd := newKeystoneAPI(t, cfg, false)
		for _, c := range cases {
			hdr := []string{}
			if c.service != "" {
				hdr = append(hdr, "X-Service-Token", token(c.service))
			}
			want := call(t, ksm[name], "GET", "/resource_providers", token(c.user), "", "", hdr...)
			got := call(t, pd, "GET", "/resource_providers", token(c.user), "", "", hdr...)
			what := fmt.Sprintf("%s: user token %q, service token %q", name, c.user, c.service)
			t.Logf("%s: keystonemiddleware %d, placementd %d", what, want.status, got.status)
			switch {
			case want.status != 200 && want.status != 401:
				t.Fatalf("%s: keystonemiddleware answered %d %s", what, want.status, want.body)
			case want.status == 200 && (got.status == 401 || got.status >= 500):
				t.Errorf("%s: keystonemiddleware lets it through, placementd answers %d %s", what, got.status, got.body)
			case want.status == 401 && got.status != 401:
				t.Errorf("%s: keystonemiddleware refuses it (401), placementd answers %d %s", what, got.status, got.body)
			case want.status == 401:
				if got.body != want.body {
					t.Errorf("%s: 401 body %q, keystonemiddleware's %q", what, got.body, want.body)
				}
				// Every header keystonemiddleware sends, byte for byte,
				// but the server's own; placementd adds only its request
				// id (upstream's request log middleware adds it too).
				for h, vals := range want.header {
					if h == "Date" || h == "Server" {
						continue
					}
					if g := got.header.Values(h); strings.Join(g, "\n") != strings.Join(vals, "\n") {
						t.Errorf("%s: 401 header %s: %q, keystonemiddleware's %q", what, h, g, vals)
					}
				}
				for h := range got.header {
					if _, ok := want.header[h]; !ok && h != "Date" && h != requestIDHeader {
						t.Errorf("%s: 401 header %s: %q, which keystonemiddleware does not send", what, h, got.header.Values(h))
					}
				}
			}
		}
	}
}

// countingProxy is a TLS-terminating reverse proxy to Keystone at target
// (scheme and host), serving cert; with clientCAs it asks clients for a
// certificate those CAs signed. It counts the token validations it passes.
func countingProxy(t *testing.T, target string, cert tls.Certificate, clientCAs *x509.CertPool) (string, *atomic.Int64) {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	validations := &atomic.Int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/auth/tokens") {
			validations.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	if clientCAs != nil {
		srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, clientCAs
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL, validations
}

// testIdentityEndpointAndTLS puts Keystone behind two TLS proxies with a
// CA made here, registered as the internal and public identity endpoints
// of a region of their own (the public one wants a client certificate),
// and checks that placementd validates tokens at the catalog's endpoint
// of its interface and region, over TLS as cafile, certfile/keyfile and
// insecure say.
func testIdentityEndpointAndTLS(t *testing.T, env *ksEnv, svc KeystoneConfig, adminToken string) {
	dir := t.TempDir()
	caFile, certFile, keyFile := testcluster.WritePEM(t, dir, "keystone-")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pem, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	internal, internalValidations := countingProxy(t, env.AuthURL, cert, nil)
	public, publicValidations := countingProxy(t, env.AuthURL, cert, pool)

	const region = "RegionTLS"
	if status, _, body := ksCall(t, "POST", env.AuthURL+"/regions", adminToken, "", map[string]any{"region": map[string]any{"id": region}}); status != 201 {
		t.Fatalf("creating region: %d %v", status, body)
	}
	_, _, body := ksCall(t, "GET", env.AuthURL+"/services?type=identity", adminToken, "", nil)
	services, _ := body["services"].([]any)
	if len(services) != 1 {
		t.Fatalf("identity services: %v", body)
	}
	serviceID := services[0].(map[string]any)["id"]
	for iface, base := range map[string]string{"internal": internal, "public": public} {
		status, _, body := ksCall(t, "POST", env.AuthURL+"/endpoints", adminToken, "", map[string]any{"endpoint": map[string]any{
			"service_id": serviceID, "interface": iface, "region_id": region, "url": base + "/v3"}})
		if status != 201 {
			t.Fatalf("creating the %s endpoint: %d %v", iface, status, body)
		}
		id := body["endpoint"].(map[string]any)["id"].(string)
		// Other servers of the test must not find it once it is over.
		t.Cleanup(func() { ksCall(t, "DELETE", env.AuthURL+"/endpoints/"+id, adminToken, "", nil) })
	}

	tlsConfig := func(ca, cert, key string, insecure bool) *tls.Config {
		c, err := KeystoneTLS(ca, cert, key, insecure)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		name    string
		authURL string // default: Keystone itself, over HTTP
		iface   string
		tls     *tls.Config
		want    int
		counter *atomic.Int64 // validations that must have gone through a proxy
	}{
		{name: "internal endpoint with cafile", tls: tlsConfig(caFile, "", "", false), want: 200, counter: internalValidations},
		{name: "internal endpoint, the system's CAs", want: 503},
		{name: "internal endpoint, insecure", tls: tlsConfig("", "", "", true), want: 200, counter: internalValidations},
		{name: "authenticating over TLS too", authURL: internal + "/v3", tls: tlsConfig(caFile, "", "", false), want: 200, counter: internalValidations},
		{name: "public endpoint with a client certificate", iface: "public", tls: tlsConfig(caFile, certFile, keyFile, false), want: 200, counter: publicValidations},
		{name: "public endpoint without a client certificate", iface: "public", tls: tlsConfig(caFile, "", "", false), want: 503},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := svc
			cfg.RegionName, cfg.Interface, cfg.TLS = region, c.iface, c.tls
			if c.authURL != "" {
				cfg.AuthURL = c.authURL
			}
			_, base := newKeystoneAPI(t, cfg, false)
			var before int64
			if c.counter != nil {
				before = c.counter.Load()
			}
			r := call(t, base, "GET", "/resource_providers", adminToken, "", "")
			if r.status != c.want {
				t.Fatalf("admin token: %d, want %d: %s", r.status, c.want, r.body)
			}
			if c.counter != nil && c.counter.Load() == before {
				t.Error("the token was not validated at the region's identity endpoint")
			}
		})
	}
}
