package main

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// The --keystone-* flags become the API's Keystone configuration as
// keystonemiddleware reads its options: token_cache_time 0 caches with no
// time limit and a negative one not at all; the TLS files load at start,
// and a file that does not load stops it.
func TestKeystoneFlags(t *testing.T) {
	ca, cert, key := testcluster.WritePEM(t, t.TempDir(), "ks-")
	keystone := func(args ...string) (*httpapi.KeystoneConfig, error) {
		t.Helper()
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c := serveFlags(fs)
		if err := fs.Parse(append([]string{"--keystone-auth-url", "https://keystone:5000", "--keystone-password", "pw"}, args...)); err != nil {
			t.Fatal(err)
		}
		return c.security.keystoneConfig()
	}
	for _, tc := range []struct {
		arg  string
		want time.Duration
	}{{"5m", 5 * time.Minute}, {"0", httpapi.TokenCacheNoTimeLimit}, {"-1s", -1}} {
		k, err := keystone("--keystone-token-cache-time", tc.arg)
		if err != nil || k.TokenCacheTime != tc.want {
			t.Errorf("--keystone-token-cache-time %s: %v, %v; want %v", tc.arg, k.TokenCacheTime, err, tc.want)
		}
	}
	k, err := keystone()
	if err != nil || k.TLS != nil || k.Interface != "internal" || k.MaxValidations != httpapi.DefaultMaxKeystoneValidations {
		t.Fatalf("defaults: TLS %v, interface %q, max validations %d, %v", k.TLS, k.Interface, k.MaxValidations, err)
	}
	k, err = keystone("--keystone-cafile", ca, "--keystone-certfile", cert, "--keystone-keyfile", key)
	if err != nil || k.TLS == nil || k.TLS.RootCAs == nil || len(k.TLS.Certificates) != 1 || k.TLS.InsecureSkipVerify {
		t.Fatalf("cafile, certfile, keyfile: %+v, %v", k.TLS, err)
	}
	if k, err = keystone("--keystone-insecure"); err != nil || k.TLS == nil || !k.TLS.InsecureSkipVerify {
		t.Fatalf("insecure: %+v, %v", k.TLS, err)
	}
	for _, args := range [][]string{{"--keystone-cafile", key}, {"--keystone-cafile", ca + ".missing"},
		{"--keystone-certfile", ca}, {"--keystone-keyfile", key}} {
		if _, err := keystone(args...); err == nil || !strings.Contains(err.Error(), "--keystone-") {
			t.Errorf("%q: %v, want an error naming the flags", args, err)
		}
	}
}
