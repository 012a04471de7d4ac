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

// The [keystone_authtoken] of docs/deploy.md's Kolla-Ansible and
// OpenStack-Helm sections, with TLS to Keystone, start as they are: Kolla's
// with its cafile pointed at the CA it copies into the container,
// OpenStack-Helm's with the chart's keystone.caSecret, whose
// --keystone-cafile (the YAML settings) wins over the file's cafile.
func TestDeployedKeystoneTLS(t *testing.T) {
	dir := t.TempDir()
	ca, _, _ := testcluster.WritePEM(t, dir, "ks-")
	kolla := writeFileIn(t, dir, "kolla.conf", `[keystone_authtoken]
service_type = placement
www_authenticate_uri = https://openstack.example.net:5000
auth_url = https://10.0.0.10:5000
auth_type = password
project_domain_id = default
user_domain_id = default
project_name = service
username = placement
password = secret
cafile = `+ca+`
region_name = RegionOne
memcache_security_strategy = ENCRYPT
memcache_secret_key = secret
memcached_servers = 10.0.0.11:11211,10.0.0.12:11211,10.0.0.13:11211
`)
	helm := writeFileIn(t, dir, "osh.conf", `[keystone_authtoken]
auth_url = https://keystone-api.openstack.svc.cluster.local:443/v3
auth_type = password
auth_version = v3
region_name = RegionOne
project_name = service
project_domain_name = service
user_domain_name = service
username = placement
password = secret
service_type = placement
cafile = /etc/placement/certs/ca.crt
memcache_security_strategy = ENCRYPT
memcache_secret_key = secret
memcached_servers = memcached.openstack.svc.cluster.local:11211
`)
	settings := writeFileIn(t, dir, "placementd.yaml", "keystone-cafile: "+ca+"\n")
	for name, args := range map[string][]string{
		"kolla":          {"--config-file", kolla},
		"openstack-helm": {"--config-file", helm, "--config", settings},
	} {
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		c := serveFlags(fs)
		if err := configure(fs, args, true); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		k, err := c.security.keystoneConfig()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if k.TLS == nil || k.TLS.RootCAs == nil || k.RegionName != "RegionOne" || k.Interface != "internal" {
			t.Errorf("%s: TLS %+v, region %q, interface %q", name, k.TLS, k.RegionName, k.Interface)
		}
	}
}
