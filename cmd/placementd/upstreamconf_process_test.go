package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/placementd/placementd/internal/testcluster"
)

// The placement.conf tests run the real binary with --config-file and
// check each option in what the API answers.

// upstreamConfPath is Debian's placement.conf: the file placement-common
// installs (as /usr/share/placement-common/placement.conf, copied to
// /etc/placement/ on install), or PLACEMENTD_UPSTREAM_CONF (.ci/run
// extracts it from the package). The test is skipped without it unless
// that variable names it.
func upstreamConfPath(t *testing.T) string {
	if p := os.Getenv("PLACEMENTD_UPSTREAM_CONF"); p != "" {
		return p
	}
	for _, p := range []string{"/etc/placement/placement.conf", "/usr/share/placement-common/placement.conf"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("no upstream placement.conf: apt-get download placement-common and set PLACEMENTD_UPSTREAM_CONF to its usr/share/placement-common/placement.conf")
	return ""
}

// startWithConf runs one node with --config-file conf and waits until it
// serves.
func startWithConf(t *testing.T, bin, conf string, args ...string) *testcluster.Proc {
	t.Helper()
	c := testcluster.NewProcs(t, bin)
	c.Secret = "s"
	c.Args = append([]string{"--config-file", conf, "--log-level", "info"}, args...)
	n := c.Add("n1")
	c.Start(n)
	c.Healthy(1)
	return n
}

// The process tests share one build of placementd.
func TestMain(m *testing.M) { testcluster.Main(m) }

type apiAnswer struct {
	status int
	header http.Header
	body   map[string]any
}

// api sends a Placement request; token "" sends none, version "" none.
func api(t *testing.T, n *testcluster.Proc, method, path, token, version, body string, headers ...string) apiAnswer {
	t.Helper()
	var payload any
	if body != "" {
		payload = json.RawMessage(body)
	}
	if version != "" {
		version = "placement " + version
	}
	r := testcluster.Do(t, "http://"+n.HTTPAddr, method, path, payload,
		append([]string{"X-Auth-Token", token, "OpenStack-API-Version", version}, headers...)...)
	a := apiAnswer{status: r.Status, header: r.Header}
	json.Unmarshal(r.Body, &a.body)
	return a
}

// Debian's placement.conf as installed: no [api] auth_strategy, so
// keystone (upstream's default), with [keystone_authtoken] from the file;
// its empty [placement_database] and unknown sections are logged, not
// refused. Only the password comes from the environment (Debian's debconf
// writes it into the file on a real install).
func TestDebianPlacementConf(t *testing.T) {
	src := upstreamConfPath(t)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	conf := writeFileIn(t, t.TempDir(), "placement.conf", string(data))
	bin := testcluster.Binary(t)
	t.Setenv("PLACEMENTD_KEYSTONE_PASSWORD", "from-the-environment")
	n := startWithConf(t, bin, conf)

	if a := api(t, n, "GET", "/", "", "", ""); a.status != 200 {
		t.Errorf("GET /: %d", a.status)
	}
	a := api(t, n, "GET", "/resource_providers", "", "1.39", "")
	if a.status != 401 {
		t.Fatalf("no token, under Debian's file (keystone): %d %v", a.status, a.body)
	}
	// www_authenticate_uri of the file.
	if got, want := a.header.Get("WWW-Authenticate"), `Keystone uri="http://localhost:5000"`; got != want {
		t.Errorf("WWW-Authenticate %q, want %q", got, want)
	}
	// A noauth2 token is a Keystone token to validate, at the file's
	// auth_url, where no Keystone runs here.
	if a := api(t, n, "GET", "/resource_providers", "admin", "1.39", ""); a.status != 503 {
		t.Errorf("a token with no Keystone to ask: %d %v, want 503", a.status, a.body)
	}
	log := n.LogTail(1 << 20)
	for _, want := range []string{"[placement_database] ignored", "placementd import", "pybasedir", "profiler"} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

// A placement.conf with noauth2, a policy file, the candidate options,
// CORS and the incomplete consumer: each shows in the API's answers.
func TestPlacementConfOptionsTakeEffect(t *testing.T) {
	dir := t.TempDir()
	writeFileIn(t, dir, "policy.yaml", `"placement:traits:list": "!"`+"\n")
	const project = "11111111-2222-3333-4444-555555555555"
	conf := writeFileIn(t, dir, "placement.conf", `[DEFAULT]
state_path = /var/lib/placement
[api]
auth_strategy = noauth2
[placement]
randomize_allocation_candidates = true
max_allocation_candidates = 2
allocation_candidates_generation_strategy = breadth-first
incomplete_consumer_project_id = `+project+`
[oslo_policy]
policy_file = policy.yaml
[cors]
allowed_origin = http://dashboard.example
[keystone_authtoken]
auth_url = http://keystone.invalid:5000/v3
password = unused-under-noauth2
[placement_database]
connection = mysql+pymysql://placement:secret@db/placement
`)
	bin := testcluster.Binary(t)
	n := startWithConf(t, bin, conf)

	// noauth2: the token names the user; five providers of 8 VCPU.
	var rps []string
	for i := 0; i < 5; i++ {
		id := fmt.Sprintf("00000000-0000-0000-0000-00000000000%d", i+1)
		if a := api(t, n, "POST", "/resource_providers", "admin", "1.39", fmt.Sprintf(`{"name":"cn%d","uuid":"%s"}`, i, id)); a.status != 200 {
			t.Fatalf("create provider: %d %v", a.status, a.body)
		}
		inv := `{"resource_provider_generation":0,"inventories":{"VCPU":{"total":8}}}`
		if a := api(t, n, "PUT", "/resource_providers/"+id+"/inventories", "admin", "1.39", inv); a.status != 200 {
			t.Fatalf("inventory: %d %v", a.status, a.body)
		}
		rps = append(rps, id)
	}

	// max_allocation_candidates: two of the five.
	a := api(t, n, "GET", "/allocation_candidates?resources=VCPU:1", "admin", "1.39", "")
	if reqs, _ := a.body["allocation_requests"].([]any); a.status != 200 || len(reqs) != 2 {
		t.Fatalf("allocation candidates: %d, %d requests, want 2 (max_allocation_candidates)", a.status, len(reqs))
	}
	// randomize_allocation_candidates: limit=1 does not always pick the
	// same one (fixed order would; 1 in 2^39 that random does).
	seen := map[string]bool{}
	for i := 0; i < 40 && len(seen) < 2; i++ {
		a := api(t, n, "GET", "/allocation_candidates?resources=VCPU:1&limit=1", "admin", "1.39", "")
		ps, _ := a.body["provider_summaries"].(map[string]any)
		for id := range ps {
			seen[id] = true
		}
	}
	if len(seen) < 2 {
		t.Errorf("limit=1 always answered %v: not randomized", seen)
	}

	// incomplete_consumer_project_id: an allocation written at 1.7 (no
	// project) belongs to it.
	consumer := "c0000000-0000-0000-0000-000000000001"
	alloc := fmt.Sprintf(`{"allocations":[{"resource_provider":{"uuid":"%s"},"resources":{"VCPU":1}}]}`, rps[0])
	if a := api(t, n, "PUT", "/allocations/"+consumer, "admin", "1.7", alloc); a.status != 204 {
		t.Fatalf("allocation at 1.7: %d %v", a.status, a.body)
	}
	if a := api(t, n, "GET", "/allocations/"+consumer, "admin", "1.12", ""); a.body["project_id"] != project {
		t.Errorf("consumer project %v, want %s", a.body["project_id"], project)
	}

	// policy_file (beside placement.conf): traits:list refused to admin.
	if a := api(t, n, "GET", "/traits", "admin", "1.39", ""); a.status != 403 {
		t.Errorf("GET /traits under a policy refusing it: %d", a.status)
	}
	if a := api(t, n, "GET", "/resource_classes", "admin", "1.39", ""); a.status != 200 {
		t.Errorf("GET /resource_classes: %d", a.status)
	}

	// [cors] allowed_origin.
	a = api(t, n, "OPTIONS", "/resource_providers", "", "", "",
		"Origin", "http://dashboard.example", "Access-Control-Request-Method", "GET")
	if got := a.header.Get("Access-Control-Allow-Origin"); got != "http://dashboard.example" {
		t.Errorf("CORS preflight: %d, Access-Control-Allow-Origin %q", a.status, got)
	}
	if strings.Contains(n.LogTail(1<<20), "secret@db") {
		t.Error("the database URL was logged")
	}
}
