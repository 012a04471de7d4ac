package main

import (
	"bytes"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeFileIn(t *testing.T, dir, name, text string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every placement.conf option placementd honours sets its serve flag,
// with oslo.config's syntax (":" or "=", quotes, continuation lines, no
// inline comments, dashes for underscores); the others are reported, and
// sections placementd does not know are no error.
func TestUpstreamConfigOptions(t *testing.T) {
	dir := t.TempDir()
	writeFileIn(t, dir, "policy.d/10-more.yaml", "placement:traits:list: role:reader\n")
	conf := writeFileIn(t, dir, "placement.conf", `
[DEFAULT]
debug = True
use_json = yes
state_path = /var/lib/placement
[api]
auth_strategy = keystone
[placement]
randomize_allocation_candidates = true
max_allocation_candidates: 5
allocation_candidates_generation_strategy = breadth-first
incomplete_consumer_project_id = 11111111-1111-1111-1111-111111111111
incomplete-consumer-user-id = 22222222-2222-2222-2222-222222222222
allocation_conflict_retry_count = 10
[keystone_authtoken]
auth_url = http://keystone:5000/v3
auth_uri = http://old-name:5000
www_authenticate_uri = http://public:5000
auth_type = password
username = placement
password = "s3cret # not a comment"
project_name = service
user_domain_id = default
project_domain_id = default
user_domain_name = Users
project_domain_name = Projects
token_cache_time = 60
service_token_roles = service,
  admin
service_type = placement
http_connect_timeout = 7
region_name = RegionOne
interface = public
service_token_roles_required = true
cafile = /etc/kolla/certificates/ca/root.crt
certfile = client.pem
keyfile = client.key
insecure = false
memcached_servers = m1:11211
memcache_security_strategy = ENCRYPT
[oslo_policy]
policy_file = my-policy.yaml
enforce_new_defaults = true
enforce_scope = false
[cors]
allowed_origin = http://a.example,http://b.example
allow_headers = X-One, X-Two
max_age = 3600
[placement_database]
connection = mysql+pymysql://placement:secret@db/placement
[profiler]
enabled = true
[placementd]
cluster_secret = from-the-file
cluster_secret_next = next-from-the-file
bootstrap-expect = 3
max_allocation_candidates = 1000
`)
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := configure(fs, []string{"--config-file", conf}, true); err != nil {
		t.Fatal(err)
	}
	k := c.security.keystone
	for _, tc := range []struct{ name, got, want string }{
		{"log-level", c.logLevel, "debug"},
		{"log-format", c.logFormat, "json"},
		{"auth-strategy", c.authStrategy, "keystone"},
		{"strategy", c.candidates.strategy, "breadth-first"},
		{"incomplete project", c.incompleteProject, "11111111-1111-1111-1111-111111111111"},
		{"incomplete user", c.incompleteUser, "22222222-2222-2222-2222-222222222222"},
		{"auth_url", k.AuthURL, "http://keystone:5000/v3"},
		{"www_authenticate_uri (over auth_uri)", k.WWWAuthenticateURI, "http://public:5000"},
		{"username", k.Username, "placement"},
		{"password (quotes, no inline comment)", k.Password, "s3cret # not a comment"},
		{"project_name", k.ProjectName, "service"},
		{"user_domain_id", k.UserDomainID, "default"},
		{"project_domain_id", k.ProjectDomainID, "default"},
		{"user_domain_name", k.UserDomainName, "Users"},
		{"project_domain_name", k.ProjectDomainName, "Projects"},
		{"service_token_roles (continued)", c.security.keystoneServiceRoles, "service,admin"},
		{"service_type", k.ServiceType, "placement"},
		{"region_name", k.RegionName, "RegionOne"},
		{"interface", k.Interface, "public"},
		{"service_token_roles_required", fmt.Sprint(k.ServiceTokenRolesRequired), "true"},
		{"cafile", c.security.keystoneCAFile, "/etc/kolla/certificates/ca/root.crt"},
		// keystoneauth opens them from the working directory.
		{"certfile (as given)", c.security.keystoneCertFile, "client.pem"},
		{"keyfile (as given)", c.security.keystoneKeyFile, "client.key"},
		{"insecure", fmt.Sprint(c.security.keystoneInsecure), "false"},
		{"policy_file (beside the file)", c.policyFile, filepath.Join(dir, "my-policy.yaml")},
		{"policy_dirs (upstream default, present)", c.policyDirs, filepath.Join(dir, "policy.d")},
		{"cors origins", c.corsAllowedOrigin, "http://a.example,http://b.example"},
		{"cors headers", c.corsAllowHeaders, "X-One,X-Two"},
		{"[placementd] cluster_secret_next", c.cluster.secretNext, "next-from-the-file"},
	} {
		if tc.got != tc.want {
			t.Errorf("%s = %q, want %q", tc.name, tc.got, tc.want)
		}
	}
	if !c.candidates.randomize || c.candidates.max != 1000 || !c.policyEnforceNewDefaults || c.policyEnforceScope {
		t.Errorf("randomize %v, max %d, enforce_new_defaults %v, enforce_scope %v",
			c.candidates.randomize, c.candidates.max, c.policyEnforceNewDefaults, c.policyEnforceScope)
	}
	if c.cluster.secret != "from-the-file" || c.cluster.bootstrapExpect != 3 {
		t.Errorf("[placementd]: cluster-secret %q, bootstrap-expect %d", c.cluster.secret, c.cluster.bootstrapExpect)
	}
	if c.security.keystoneCacheTime != time.Minute || k.Timeout != 7*time.Second {
		t.Errorf("token_cache_time %s, http_connect_timeout %s", c.security.keystoneCacheTime, k.Timeout)
	}

	// What is not used is logged once, by name only (no values: the
	// database URL holds a password).
	var buf bytes.Buffer
	c.upstream.logIgnored(slog.New(slog.NewTextHandler(&buf, nil)))
	out := buf.String()
	for _, want := range []string{"state_path", "allocation_conflict_retry_count", "memcached_servers", "memcache_security_strategy",
		"max_age", "[placement_database] ignored", "placementd import", "profiler"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	for _, secret := range []string{"secret@db", "s3cret"} {
		if strings.Contains(out, secret) {
			t.Errorf("log shows a value (%s):\n%s", secret, out)
		}
	}
	if n := strings.Count(out, "\n"); n != 6 {
		t.Errorf("%d log lines, want one per section with unused options and one per ignored kind of section:\n%s", n, out)
	}
}

// Upstream's defaults where they differ from placementd's: keystone unless
// the file says otherwise, policy.yaml beside the file when it is there.
// Flags, the environment and the YAML file override placement.conf.
func TestUpstreamConfigDefaultsAndPrecedence(t *testing.T) {
	dir := t.TempDir()
	conf := writeFileIn(t, dir, "placement.conf", "[placement]\nmax_allocation_candidates = 10\nrandomize_allocation_candidates = true\n")
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := configure(fs, []string{"--config-file=" + conf}, true); err != nil {
		t.Fatal(err)
	}
	if c.authStrategy != "keystone" || c.policyFile != "" || c.policyDirs != "" {
		t.Errorf("auth-strategy %q, policy-file %q, policy-dirs %q", c.authStrategy, c.policyFile, c.policyDirs)
	}
	// oslo.policy's defaults since 2024.2 (docs/api-compat.md).
	if !c.policyEnforceScope || !c.policyEnforceNewDefaults {
		t.Errorf("without [oslo_policy]: enforce_scope %v, enforce_new_defaults %v; upstream's defaults are true", c.policyEnforceScope, c.policyEnforceNewDefaults)
	}

	writeFileIn(t, dir, "policy.yaml", "{}\n")
	yaml := writeFileIn(t, dir, "placementd.yaml", "max-allocation-candidates: 20\nlog-format: json\n")
	t.Setenv("PLACEMENTD_CONFIG_FILE", conf)
	t.Setenv("PLACEMENTD_AUTH_STRATEGY", "noauth2")
	t.Setenv("PLACEMENTD_LOG_FORMAT", "text")
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	c = serveFlags(fs)
	if err := configure(fs, []string{"--config", yaml, "--randomize-allocation-candidates=false"}, true); err != nil {
		t.Fatal(err)
	}
	if c.policyFile != filepath.Join(dir, "policy.yaml") {
		t.Errorf("policy.yaml beside the file not used: %q", c.policyFile)
	}
	if c.authStrategy != "noauth2" || c.candidates.max != 20 || c.logFormat != "text" || c.candidates.randomize {
		t.Errorf("precedence: auth %q (env), max %d (YAML), log-format %q (env over YAML), randomize %v (flag)",
			c.authStrategy, c.candidates.max, c.logFormat, c.candidates.randomize)
	}

	// The YAML file cannot name placement.conf: it is read first.
	fs = flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs)
	if err := configure(fs, []string{"--config", writeFileIn(t, dir, "bad.yaml", "config-file: x\n")}, true); err == nil {
		t.Error("config-file accepted in the YAML file")
	}
}

// Values placementd cannot use stop the start with the file, section and
// option named; a password plugin other than password cannot work.
func TestUpstreamConfigBadValues(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ text, want string }{
		{"[placement]\nmax_allocation_candidates = many\n", "[placement] max_allocation_candidates"},
		{"[placement]\nrandomize_allocation_candidates = maybe\n", "randomize_allocation_candidates"},
		{"[keystone_authtoken]\nauth_type = v3applicationcredential\n", "auth_type"},
		{"[keystone_authtoken]\ntoken_cache_time = 5m\n", "token_cache_time"},
		{"[api\nauth_strategy = keystone\n", "--config-file"},
		{"[placementd]\nhttp_adr = x\n", "http_adr"},
		{"[placementd]\nconfig_file = x\n", "config_file"},
	} {
		conf := writeFileIn(t, dir, "placement.conf", tc.text)
		fs := flag.NewFlagSet("serve", flag.ContinueOnError)
		serveFlags(fs)
		err := configure(fs, []string{"--config-file", conf}, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error naming %s", tc.text, err, tc.want)
		}
	}
}
