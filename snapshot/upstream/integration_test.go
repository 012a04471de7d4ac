package upstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/testcluster"
	"github.com/placementd/placementd/snapshot/export"
	"github.com/placementd/placementd/snapshot/upstream"
)

// The migration integration test: upstream Placement from Debian's
// python3-placement (SQLite, noauth2) filled through its API with a small
// cloud, imported into a placementd process by `placementd import --from`,
// then every GET compared; and `placementd export` of the result imported
// into a second placementd with `placementd import --file`, which must
// hold the same state digest.

const secret = "migration-test-secret"

// process runs a command until the test ends; its output goes to a file
// shown when the test fails. The channel is closed when it exits.
func process(t *testing.T, name string, cmd *exec.Cmd) <-chan struct{} {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// The process group: the ones this test started, nothing else.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		log.Close()
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			if len(out) > 4000 {
				out = out[len(out)-4000:]
			}
			t.Logf("%s output (tail):\n%s", name, out)
		}
	})
	return exited
}

// waitHTTP waits until url answers 200; it gives up at once when the
// server's process has exited (say its port was taken meanwhile).
func waitHTTP(t *testing.T, url string, exited <-chan struct{}, timeout time.Duration) {
	t.Helper()
	testcluster.WaitFor(t, timeout, url+" answers 200", func() error {
		select {
		case <-exited:
			return testcluster.Abort(errors.New("the server exited (its output is below)"))
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		return testcluster.Check(resp.StatusCode == http.StatusOK, "%d", resp.StatusCode)
	})
}

// refServer is a small WSGI server for upstream's application, like the
// packaged placement-api development server.
const refServer = `
import sys
import wsgiref.simple_server as ws
from placement.wsgi import init_application

class Handler(ws.WSGIRequestHandler):
    def log_message(self, *args):
        pass

ws.make_server(sys.argv[1], int(sys.argv[2]), init_application(), handler_class=Handler).serve_forever()
`

// startUpstream runs upstream Placement on SQLite and returns its URL.
func startUpstream(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	conf := filepath.Join(dir, "placement.conf")
	err := os.WriteFile(conf, []byte(fmt.Sprintf(`[api]
auth_strategy = noauth2
[placement_database]
connection = sqlite:///%s/placement.db
[oslo_policy]
enforce_scope = false
enforce_new_defaults = false
`, dir)), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("placement-manage", "--config-file", conf, "db", "sync").CombinedOutput(); err != nil {
		t.Fatalf("placement-manage db sync: %v\n%s", err, out)
	}
	script := filepath.Join(dir, "server.py")
	if err := os.WriteFile(script, []byte(refServer), 0o600); err != nil {
		t.Fatal(err)
	}
	addr, err := testcluster.FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	host, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("/usr/bin/python3", script, host, port)
	cmd.Env = append(os.Environ(), "OS_PLACEMENT_CONFIG_DIR="+dir)
	exited := process(t, "upstream-placement", cmd)
	waitHTTP(t, "http://"+addr+"/", exited, 30*time.Second)
	return "http://" + addr
}

// startPlacementd runs a fresh single-node placementd and returns its API
// address.
func startPlacementd(t *testing.T, bin, name string) string {
	t.Helper()
	c := testcluster.NewProcs(t, bin)
	c.Secret = secret
	n := c.Add(name)
	c.Start(n)
	c.Healthy(1)
	return n.HTTPAddr
}

// api writes to a Placement API as the admin and fails the test on an
// unexpected status.
type api struct {
	t   *testing.T
	url string
}

func (a api) call(method, path, version string, body any, want int) map[string]any {
	a.t.Helper()
	r := testcluster.Do(a.t, a.url, method, path, body, "OpenStack-API-Version", "placement "+version, "Accept", "application/json")
	raw := r.Body
	if r.Status != want {
		a.t.Fatalf("%s %s @%s: %d, want %d: %s", method, path, version, r.Status, want, raw)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
}

func uid(kind, n int) string { return fmt.Sprintf("%08x-0000-4000-8000-%012x", kind, n) }

// fillCloud writes a small cloud through the API: compute nodes with NUMA
// children and a VF grandchild, a GPU child, a re-parented provider (so a
// child is listed before its parent), an Ironic node with a custom class,
// shared storage and an IP pool shared through aggregates, an empty
// provider, custom classes and traits (some unused), and consumers of
// three types (one untyped, written at 1.28) in three projects, some
// rewritten (generation 2), one moved by a migration, one deleted.
func fillCloud(a api) {
	const v = "1.39"
	for _, rc := range []string{"CUSTOM_GPU_A100", "CUSTOM_BAREMETAL_GOLD", "CUSTOM_UNUSED_CLASS"} {
		a.call("PUT", "/resource_classes/"+rc, v, nil, 201)
	}
	for _, tr := range []string{"CUSTOM_RACK_R1", "CUSTOM_RACK_R2", "CUSTOM_FAST_SSD", "CUSTOM_UNUSED_TRAIT"} {
		a.call("PUT", "/traits/"+tr, v, nil, 201)
	}
	az1, az2, ceph := uid(0xa66, 1), uid(0xa66, 2), uid(0xa66, 3)
	gens := map[string]float64{}
	create := func(u, name, parent string) {
		body := map[string]any{"uuid": u, "name": name}
		if parent != "" {
			body["parent_provider_uuid"] = parent
		}
		gens[u] = a.call("POST", "/resource_providers", v, body, 200)["generation"].(float64)
	}
	inventories := func(u string, inv map[string]any) {
		out := a.call("PUT", "/resource_providers/"+u+"/inventories", v,
			map[string]any{"resource_provider_generation": gens[u], "inventories": inv}, 200)
		gens[u] = out["resource_provider_generation"].(float64)
	}
	traits := func(u string, tr ...string) {
		out := a.call("PUT", "/resource_providers/"+u+"/traits", v,
			map[string]any{"resource_provider_generation": gens[u], "traits": tr}, 200)
		gens[u] = out["resource_provider_generation"].(float64)
	}
	aggregates := func(u string, ag ...string) {
		out := a.call("PUT", "/resource_providers/"+u+"/aggregates", v,
			map[string]any{"resource_provider_generation": gens[u], "aggregates": ag}, 200)
		gens[u] = out["resource_provider_generation"].(float64)
	}
	inv := func(total, reserved int, ratio float64) map[string]any {
		return map[string]any{"total": total, "reserved": reserved, "allocation_ratio": ratio, "max_unit": total}
	}

	cn := func(i int) string { return uid(0xc0, i) }
	numa := func(i, j int) string { return uid(0xc1, i*10+j) }
	for i := 1; i <= 4; i++ {
		create(cn(i), fmt.Sprintf("compute-%d.example.org", i), "")
		traits(cn(i), "HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH", fmt.Sprintf("CUSTOM_RACK_R%d", 1+i%2))
		if i == 4 {
			traits(cn(i), "HW_CPU_X86_AVX2", "COMPUTE_STATUS_DISABLED")
		}
		az := az1
		if i > 2 {
			az = az2
		}
		aggregates(cn(i), az, ceph)
		if i <= 2 {
			inventories(cn(i), map[string]any{"DISK_GB": inv(500, 10, 1.0)})
			for j := 0; j < 2; j++ {
				create(numa(i, j), fmt.Sprintf("compute-%d.example.org_NUMA%d", i, j), cn(i))
				inventories(numa(i, j), map[string]any{"VCPU": inv(16, 2, 4.0), "PCPU": inv(8, 0, 1.0), "MEMORY_MB": inv(65536, 2048, 1.5)})
			}
			create(uid(0xf0, i), fmt.Sprintf("compute-%d.example.org_ens1f0", i), numa(i, 0))
			inventories(uid(0xf0, i), map[string]any{"SRIOV_NET_VF": inv(8, 0, 1.0)})
			traits(uid(0xf0, i), "CUSTOM_FAST_SSD", "HW_NIC_SRIOV")
		} else {
			inventories(cn(i), map[string]any{"VCPU": inv(32, 0, 16.0), "MEMORY_MB": inv(131072, 512, 1.0), "DISK_GB": inv(1000, 0, 1.0)})
		}
	}
	create(uid(0x60, 1), "compute-3.example.org_gpu0", cn(3))
	inventories(uid(0x60, 1), map[string]any{"CUSTOM_GPU_A100": inv(4, 0, 1.0)})

	create(uid(0x5e, 1), "ceph-pool", "")
	inventories(uid(0x5e, 1), map[string]any{"DISK_GB": inv(100000, 1000, 1.0)})
	traits(uid(0x5e, 1), "MISC_SHARES_VIA_AGGREGATE", "STORAGE_DISK_SSD")
	aggregates(uid(0x5e, 1), ceph)
	create(uid(0x5e, 2), "ipv4-pool-public", "")
	inventories(uid(0x5e, 2), map[string]any{"IPV4_ADDRESS": inv(254, 4, 1.0)})
	traits(uid(0x5e, 2), "MISC_SHARES_VIA_AGGREGATE")
	aggregates(uid(0x5e, 2), az1, az2)
	create(uid(0x1e, 1), "ironic-node-1", "")
	inventories(uid(0x1e, 1), map[string]any{"CUSTOM_BAREMETAL_GOLD": inv(1, 0, 1.0)})
	create(uid(0xee, 1), "empty-provider", "")
	// A child moved (1.37) under a provider created after it.
	create(uid(0x77, 1), "moving-child", cn(1))
	create(uid(0x77, 2), "late-parent", "")
	a.call("PUT", "/resource_providers/"+uid(0x77, 1), "1.37", map[string]any{"name": "moving-child", "parent_provider_uuid": uid(0x77, 2)}, 200)

	alloc := func(rp string, res map[string]int) map[string]any {
		return map[string]any{"resources": res}
	}
	put := func(consumer, project, user, ctype string, gen any, allocs map[string]any) {
		body := map[string]any{"allocations": allocs, "project_id": project, "user_id": user, "consumer_generation": gen}
		version := "1.39"
		if ctype == "" {
			version = "1.28"
		} else {
			body["consumer_type"] = ctype
		}
		a.call("PUT", "/allocations/"+consumer, version, body, 204)
	}
	vm := func(i int) string { return uid(0x1a, i) }
	for i := 1; i <= 8; i++ {
		host := 1 + i%2
		project := fmt.Sprintf("project-%d", 1+i%3)
		allocs := map[string]any{
			numa(host, i%2): alloc(numa(host, i%2), map[string]int{"VCPU": 2, "MEMORY_MB": 4096}),
			uid(0x5e, 1):    alloc(uid(0x5e, 1), map[string]int{"DISK_GB": 20 * i}),
			uid(0x5e, 2):    alloc(uid(0x5e, 2), map[string]int{"IPV4_ADDRESS": 1}),
		}
		if i == 3 {
			allocs[uid(0xf0, host)] = alloc(uid(0xf0, host), map[string]int{"SRIOV_NET_VF": 2})
		}
		ctype := "INSTANCE"
		if i == 5 {
			ctype = ""
		}
		put(vm(i), project, "user-"+project, ctype, nil, allocs)
	}
	// Resize: generation 1 -> 2.
	put(vm(2), "project-3", "user-project-3", "INSTANCE", 1, map[string]any{
		numa(1, 0): alloc(numa(1, 0), map[string]int{"VCPU": 4, "MEMORY_MB": 8192, "PCPU": 2})})
	// A migration: the instance moves to compute-3, the migration consumer
	// holds the source host's resources.
	a.call("POST", "/allocations", v, map[string]any{
		vm(1): map[string]any{"allocations": map[string]any{cn(3): alloc(cn(3), map[string]int{"VCPU": 2, "MEMORY_MB": 4096})},
			"project_id": "project-2", "user_id": "user-project-2", "consumer_generation": 1, "consumer_type": "INSTANCE"},
		uid(0x316, 1): map[string]any{"allocations": map[string]any{numa(2, 1): alloc(numa(2, 1), map[string]int{"VCPU": 2, "MEMORY_MB": 4096})},
			"project_id": "project-2", "user_id": "user-project-2", "consumer_generation": nil, "consumer_type": "MIGRATION"},
	}, 204)
	put(uid(0x1b, 1), "project-baremetal", "ironic", "INSTANCE", nil, map[string]any{
		uid(0x1e, 1): alloc(uid(0x1e, 1), map[string]int{"CUSTOM_BAREMETAL_GOLD": 1})})
	put(uid(0x6a, 1), "project-1", "ml-user", "INSTANCE", nil, map[string]any{
		uid(0x60, 1): alloc(uid(0x60, 1), map[string]int{"CUSTOM_GPU_A100": 2}),
		cn(3):        alloc(cn(3), map[string]int{"VCPU": 8, "MEMORY_MB": 16384, "DISK_GB": 100})})
	a.call("DELETE", "/allocations/"+vm(8), v, nil, 204)
}

// extraRequests are GETs beyond the resources themselves: filtered
// listings, allocation candidates and usages at several microversions.
func extraRequests() []upstream.Request {
	var out []upstream.Request
	add := func(version string, paths ...string) {
		for _, p := range paths {
			out = append(out, upstream.Request{Path: p, Version: version})
		}
	}
	az1, ceph := uid(0xa66, 1), uid(0xa66, 3)
	for _, v := range []string{"1.0", "1.9", "1.14", "1.20", "1.28", "1.38"} {
		add(v, "/", "/resource_providers", "/resource_classes", "/traits",
			"/resource_providers/"+uid(0xc1, 10)+"/allocations", "/allocations/"+uid(0x1a, 2),
			"/resource_providers/"+uid(0xc0, 1)+"/aggregates", "/resource_providers/"+uid(0xc0, 3)+"/inventories",
			"/usages?project_id=project-2", "/usages?project_id=project-2&user_id=user-project-2")
	}
	add("1.39",
		"/resource_providers?resources=VCPU:2,MEMORY_MB:2048",
		"/resource_providers?resources=DISK_GB:100",
		"/resource_providers?required=CUSTOM_RACK_R1",
		"/resource_providers?required=!COMPUTE_STATUS_DISABLED",
		"/resource_providers?required=in:CUSTOM_RACK_R1,CUSTOM_RACK_R2",
		"/resource_providers?member_of=in:"+az1+","+ceph,
		"/resource_providers?member_of=!"+ceph,
		"/resource_providers?name=ironic-node-1",
		"/resource_providers?uuid="+uid(0x77, 1),
		"/traits?associated=true", "/traits?associated=false", "/traits?name=startswith:CUSTOM_",
		"/resource_classes/VCPU", "/resource_classes/CUSTOM_UNUSED_CLASS", "/traits/HW_CPU_X86_AVX2",
		"/usages?project_id=project-1&consumer_type=INSTANCE",
		"/usages?project_id=project-2&consumer_type=MIGRATION",
		"/usages?project_id=project-3&consumer_type=unknown",
		"/usages?project_id=project-1&consumer_type=all",
		"/usages?project_id=nobody",
		"/allocations/"+uid(0x1a, 8),
		"/resource_providers/"+uid(0xdead, 1),
		"/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048",
		"/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048,DISK_GB:50",
		"/allocation_candidates?resources=VCPU:1,IPV4_ADDRESS:1&required=CUSTOM_RACK_R2",
		"/allocation_candidates?resources=CUSTOM_GPU_A100:1&resources1=VCPU:4",
		"/allocation_candidates?resources1=VCPU:2,MEMORY_MB:1024&resources2=SRIOV_NET_VF:1&required2=HW_NIC_SRIOV&group_policy=isolate",
		"/allocation_candidates?resources=CUSTOM_BAREMETAL_GOLD:1",
		"/allocation_candidates?resources=VCPU:1&member_of="+az1+"&in_tree="+uid(0xc0, 2),
		"/allocation_candidates?resources=PCPU:2&root_required=!COMPUTE_STATUS_DISABLED",
	)
	add("1.10", "/allocation_candidates?resources=VCPU:1,DISK_GB:10")
	add("1.29", "/allocation_candidates?resources=VCPU:1,DISK_GB:10")
	return out
}

func TestMigrationFromUpstreamPlacement(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs upstream Placement and placementd processes")
	}
	if _, err := exec.LookPath("placement-manage"); err != nil {
		t.Skip("python3-placement is not installed (apt-get install -y python3-placement): cannot run upstream Placement")
	}
	start := time.Now()
	var bin string
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		bin = testcluster.Binary(t)
	}()
	srcURL := startUpstream(t)
	fillCloud(api{t, srcURL})
	wg.Wait()
	if t.Failed() {
		return
	}
	t.Logf("upstream filled, placementd built: %s", time.Since(start).Round(time.Millisecond))

	addr := startPlacementd(t, bin, "migrated")
	out, err := exec.Command(bin, "import", "--from", srcURL, "--token", "admin",
		"--addr", addr, "--cluster-secret", secret, "--chunk-bytes", "4096").CombinedOutput()
	t.Logf("placementd import --from:\n%s", out)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	if !strings.Contains(string(out), "verified:") {
		t.Fatal("the import did not report its verification")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src := &upstream.Endpoint{URL: srcURL, Token: "admin"}
	dst := &upstream.Endpoint{URL: "http://" + addr, Token: "admin"}
	doc, err := upstream.Read(ctx, src, upstream.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Summary(); got != (state.Contents{Providers: 17, CustomClasses: 3, CustomTraits: 4, ConsumerTypes: 2, Consumers: 10}) {
		t.Fatalf("the source holds %s: not the cloud the test means", got)
	}
	reqs := append(upstream.Requests(doc, "1.39"), extraRequests()...)
	diffs, err := upstream.Compare(ctx, src, dst, reqs, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Errorf("%s", d)
	}
	t.Logf("%d GETs compared, %d differ", len(reqs), len(diffs))
	// The same state read back through placementd's API.
	back, err := upstream.Read(ctx, dst, upstream.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range export.Compare(doc, back) {
		t.Errorf("read back: %s", d)
	}

	// Export, and import into a fresh placementd: the same state digest.
	file := filepath.Join(t.TempDir(), "export.json")
	if out, err := exec.Command(bin, "export", file, "--addr", addr, "--cluster-secret", secret).CombinedOutput(); err != nil {
		t.Fatalf("export: %v\n%s", err, out)
	}
	addr2 := startPlacementd(t, bin, "copy")
	out, err = exec.Command(bin, "import", "--file", file, "--addr", addr2, "--cluster-secret", secret).CombinedOutput()
	t.Logf("placementd import --file:\n%s", out)
	if err != nil {
		t.Fatalf("import --file: %v", err)
	}
	d1, d2 := clusterDigest(t, ctx, addr), clusterDigest(t, ctx, addr2)
	if d1 != d2 {
		t.Fatalf("state digests differ after export and import: %s, %s", d1, d2)
	}
	// A second import is refused.
	if out, err := exec.Command(bin, "import", "--file", file, "--addr", addr2, "--cluster-secret", secret).CombinedOutput(); err == nil ||
		!strings.Contains(string(out), "not empty") {
		t.Fatalf("a second import was not refused: %v\n%s", err, out)
	}
	t.Logf("state digest %s; whole test %s", d1, time.Since(start).Round(time.Millisecond))
}

// clusterDigest is the digest of a cluster's state, log index aside.
func clusterDigest(t *testing.T, ctx context.Context, addr string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := (&front.Client{Addr: addr, Secret: secret}).Snapshot(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	img, err := fsm.ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	img.LastIndex = 0
	return image.Digest(img)
}
