package cluster_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// Data written by an older placementd must be read by a newer one. The
// fixtures under testdata/ were written by the build that introduced each
// format version and are kept forever: when fsm.SnapshotVersion or
// fsm.EntryVersion goes up, write new ones with
//
//	PLACEMENTD_WRITE_FIXTURES=v4 go test ./cluster/ -run TestWriteUpgradeFixtures
//
// add the new files beside the old ones, and list them in upgradeFixtures
// with the digest the test logs.
var upgradeFixtures = []upgradeFixture{
	{name: "v1", snapshotFormat: 1, digest: "ae5bdf720f7d09c2249fdcbfac7a0fb87492b449caddf98c59eacc5fcb9d0f65"},
	{name: "v2", snapshotFormat: 1, batches: true, // log entry v2: batches
		digest: "11f75313ad3474ed87faa0faf15e03ade89f051401eda7e86f0d5f951a054e2f"},
	// Log entry v3: allocations kept in the order they were written.
	{name: "v3", snapshotFormat: 1, batches: true, writeOrder: true,
		digest: "f8ad9b56d0d174eabfca498f0858e6e40e110d35761982b1eaf8d319c2b59052"},
	// Log entry v4: the lone node raised the cluster version.
	{name: "v4", snapshotFormat: 1, batches: true, writeOrder: true, raised: true,
		digest: "15d0ce401b0528f3d8605c8712561c186a71706fe87df2414de90ba75f8b72d5"},
}

type upgradeFixture struct {
	name           string // datadir-NAME.tar.gz and backup-NAME.snap
	snapshotFormat int    // the backup's header
	// batches: written by a build with group commit, the log holds batch
	// entries (the burst of concurrent writes in writeFixtureWorkload).
	batches bool
	// writeOrder: written by a build that keeps a consumer's allocations
	// in the order of the write (the ordered consumers of
	// writeFixtureWorkload, one in the snapshot and one in the log).
	writeOrder bool
	// raised: the data dir's log holds the entry raising the cluster
	// version (log entry v4), which must replay.
	raised bool
	// digest is the state's digest as the build that wrote the fixture
	// saw it: the data directory's, once replayed, and the backup's. A
	// later build must read both to exactly that state.
	digest string
}

// fixtureBatchTraits is how many traits writeFixtureWorkload creates at
// once, so that they go out in batch entries.
const fixtureBatchTraits = 16

const (
	fixtureNode     = "n1"
	fixtureSecret   = "fixture-secret"
	fixtureRoot     = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d01"
	fixtureChild    = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d02"
	fixtureConsumer = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d03"
	fixtureLate     = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d04"
	fixtureProject  = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d05"
	fixtureAgg      = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d06"
	// Written by v3 and later: two providers and two consumers whose
	// allocations are written in an order that is not the sorted one.
	fixtureOrderA       = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d07"
	fixtureOrderB       = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d08"
	fixtureOrdered      = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d09"
	fixtureOrderedLate  = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d0a"
	fixtureOrderProject = "0b1d0e5a-3c55-4e0f-9d5e-2a4f3b6c7d0b"
)

// orderedAllocations is a PUT /allocations body whose providers and
// classes come in the order given (a Go map would be sorted).
func orderedAllocations(allocations string) json.RawMessage {
	return json.RawMessage(`{"allocations": {` + allocations + `}, "project_id": "` + fixtureOrderProject +
		`", "user_id": "` + fixtureOrderProject + `", "consumer_generation": null, "consumer_type": "INSTANCE"}`)
}

// The ordered consumers' allocations as written, and as GET
// /allocations/{consumer} must list them.
var (
	fixtureOrderedBody     = `"` + fixtureOrderB + `": {"resources": {"VCPU": 1, "DISK_GB": 1}}, "` + fixtureOrderA + `": {"resources": {"DISK_GB": 2}}`
	fixtureOrderedLateBody = `"` + fixtureOrderB + `": {"resources": {"DISK_GB": 3}}, "` + fixtureOrderA + `": {"resources": {"VCPU": 2, "DISK_GB": 1}}`
)

// diskNode is a single node on real files with the API in front.
type diskNode struct {
	Node *cluster.Node
	srv  *httptest.Server
}

func openDiskNode(t *testing.T, dir string) *diskNode {
	t.Helper()
	n, err := cluster.Open(cluster.Config{NodeID: fixtureNode, RaftAddr: "127.0.0.1:0", DataDir: dir, Bootstrap: true,
		Logger: hclog.NewNullLogger()}, fsm.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.WaitLeader(ctx); err != nil {
		t.Fatalf("the node did not become leader: %v", err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := httptest.NewServer(front.New(n, httpapi.New(n, httpapi.Config{Logger: quiet}),
		front.Options{Secret: fixtureSecret, Logger: quiet}))
	return &diskNode{Node: n, srv: srv}
}

func (d *diskNode) close() {
	d.srv.Close()
	d.Node.Shutdown()
}

// send makes one API request as admin at 1.39. Unlike call it does not
// stop the test, so other goroutines than the test's may use it.
func (d *diskNode) send(method, path string, body any) (status int, raw []byte, err error) {
	r, err := testcluster.Send(http.DefaultClient, d.srv.URL, method, path, body)
	return r.Status, r.Body, err
}

func (d *diskNode) call(t *testing.T, method, path string, body any, wantStatus int) map[string]any {
	t.Helper()
	status, raw, err := d.send(method, path, body)
	if err != nil {
		t.Fatal(err)
	}
	if status != wantStatus {
		t.Fatalf("%s %s: %d, want %d: %s", method, path, status, wantStatus, raw)
	}
	var out map[string]any
	json.Unmarshal(raw, &out)
	return out
}

// writeFixtureWorkload fills a node with one of everything the state
// holds; part of it goes into a Raft snapshot and the rest stays in the
// log, so reading the fixture replays both.
func writeFixtureWorkload(t *testing.T, d *diskNode) {
	d.call(t, "PUT", "/resource_classes/CUSTOM_FIXTURE_GPU", nil, 201)
	d.call(t, "PUT", "/traits/CUSTOM_FIXTURE_TRAIT", nil, 201)
	d.call(t, "POST", "/resource_providers", map[string]any{"name": "fixture-root", "uuid": fixtureRoot}, 200)
	d.call(t, "POST", "/resource_providers", map[string]any{"name": "fixture-child", "uuid": fixtureChild,
		"parent_provider_uuid": fixtureRoot}, 200)
	d.call(t, "PUT", "/resource_providers/"+fixtureRoot+"/inventories", map[string]any{
		"resource_provider_generation": 0,
		"inventories": map[string]any{
			"VCPU":      map[string]any{"total": 16, "allocation_ratio": 4.0},
			"MEMORY_MB": map[string]any{"total": 32768, "reserved": 512},
		}}, 200)
	d.call(t, "PUT", "/resource_providers/"+fixtureChild+"/inventories", map[string]any{
		"resource_provider_generation": 0,
		"inventories":                  map[string]any{"CUSTOM_FIXTURE_GPU": map[string]any{"total": 2}}}, 200)
	d.call(t, "PUT", "/resource_providers/"+fixtureRoot+"/traits", map[string]any{
		"resource_provider_generation": 1, "traits": []string{"CUSTOM_FIXTURE_TRAIT", "HW_CPU_X86_AVX2"}}, 200)
	d.call(t, "PUT", "/resource_providers/"+fixtureRoot+"/aggregates", map[string]any{
		"resource_provider_generation": 2, "aggregates": []string{fixtureAgg}}, 200)
	d.call(t, "PUT", "/allocations/"+fixtureConsumer, map[string]any{
		"allocations": map[string]any{
			fixtureRoot:  map[string]any{"resources": map[string]any{"VCPU": 4, "MEMORY_MB": 2048}},
			fixtureChild: map[string]any{"resources": map[string]any{"CUSTOM_FIXTURE_GPU": 1}},
		},
		"project_id": fixtureProject, "user_id": fixtureProject,
		"consumer_generation": nil, "consumer_type": "INSTANCE"}, 204)
	for _, u := range []string{fixtureOrderA, fixtureOrderB} {
		d.call(t, "POST", "/resource_providers", map[string]any{"name": "fixture-order-" + u[len(u)-1:], "uuid": u}, 200)
		d.call(t, "PUT", "/resource_providers/"+u+"/inventories", map[string]any{"resource_provider_generation": 0,
			"inventories": map[string]any{"VCPU": map[string]any{"total": 8}, "DISK_GB": map[string]any{"total": 100}}}, 200)
	}
	d.call(t, "PUT", "/allocations/"+fixtureOrdered, orderedAllocations(fixtureOrderedBody), 204)
	if err := d.Node.Raft().Snapshot().Error(); err != nil {
		t.Fatal(err)
	}
	// After the snapshot: only in the log.
	d.call(t, "PUT", "/allocations/"+fixtureOrderedLate, orderedAllocations(fixtureOrderedLateBody), 204)
	d.call(t, "PUT", "/allocations/"+fixtureLate, map[string]any{
		"allocations": map[string]any{fixtureRoot: map[string]any{"resources": map[string]any{"VCPU": 2}}},
		"project_id":  fixtureProject, "user_id": fixtureProject,
		"consumer_generation": nil, "consumer_type": "MIGRATION"}, 204)
	d.call(t, "PUT", "/traits/CUSTOM_FIXTURE_LATE", nil, 201)
	var wg sync.WaitGroup
	statuses := make([]int, fixtureBatchTraits)
	for i := range fixtureBatchTraits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			statuses[i], _, _ = d.send("PUT", fmt.Sprintf("/traits/CUSTOM_FIXTURE_BATCH_%d", i), nil)
		}()
	}
	wg.Wait()
	for i, status := range statuses {
		if status != 201 {
			t.Fatalf("trait %d of the burst: status %d", i, status)
		}
	}
}

// logBatches counts the batch entries in the Raft log of a stopped node's
// data directory, and the cluster metadata entries raising the cluster
// version.
func logBatches(t *testing.T, dir string) (batches, raises int) {
	t.Helper()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), MsgpackUseNewTimeFormat: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	first, _ := store.FirstIndex()
	last, _ := store.LastIndex()
	for i := first; i <= last && i > 0; i++ {
		var l raft.Log
		if err := store.GetLog(i, &l); err != nil {
			t.Fatal(err)
		}
		if l.Type != raft.LogCommand {
			continue
		}
		if payload, ok := fsm.ClusterEntry(l.Data); ok {
			if strings.Contains(string(payload), `"op":"cluster_version"`) {
				raises++
			}
			continue
		}
		entries, err := fsm.Decode(l.Data)
		if err != nil {
			t.Fatalf("log entry %d: %v", i, err)
		}
		if len(entries) > 1 {
			batches++
		}
	}
	return batches, raises
}

// checkFixtureState asserts, through the API, everything
// writeFixtureWorkload wrote.
func checkFixtureState(t *testing.T, d *diskNode, fx upgradeFixture) {
	t.Helper()
	rp := d.call(t, "GET", "/resource_providers/"+fixtureChild, nil, 200)
	if rp["name"] != "fixture-child" || rp["parent_provider_uuid"] != fixtureRoot || rp["root_provider_uuid"] != fixtureRoot {
		t.Errorf("child provider: %v", rp)
	}
	inv := d.call(t, "GET", "/resource_providers/"+fixtureRoot+"/inventories/VCPU", nil, 200)
	if inv["total"] != 16.0 || inv["allocation_ratio"] != 4.0 {
		t.Errorf("VCPU inventory: %v", inv)
	}
	traits := d.call(t, "GET", "/resource_providers/"+fixtureRoot+"/traits", nil, 200)
	if got, _ := json.Marshal(traits["traits"]); !strings.Contains(string(got), "CUSTOM_FIXTURE_TRAIT") {
		t.Errorf("provider traits: %s", got)
	}
	aggs := d.call(t, "GET", "/resource_providers/"+fixtureRoot+"/aggregates", nil, 200)
	if got, _ := json.Marshal(aggs["aggregates"]); string(got) != `["`+fixtureAgg+`"]` {
		t.Errorf("aggregates: %s", got)
	}
	usages := d.call(t, "GET", "/resource_providers/"+fixtureRoot+"/usages", nil, 200)
	if got, _ := json.Marshal(usages["usages"]); string(got) != `{"MEMORY_MB":2048,"VCPU":6}` {
		t.Errorf("root usages: %s", got)
	}
	alloc := d.call(t, "GET", "/allocations/"+fixtureConsumer, nil, 200)
	if alloc["consumer_type"] != "INSTANCE" || alloc["project_id"] != fixtureProject {
		t.Errorf("consumer: %v", alloc)
	}
	// Written in sorted order (a Go map): the same in every version.
	if _, raw, _ := d.send("GET", "/allocations/"+fixtureConsumer, nil); !inOrder(string(raw), fixtureRoot, "MEMORY_MB", "VCPU", fixtureChild) {
		t.Errorf("consumer's allocations out of order: %s", raw)
	}
	if fx.writeOrder {
		for consumer, body := range map[string]string{fixtureOrdered: fixtureOrderedBody, fixtureOrderedLate: fixtureOrderedLateBody} {
			_, raw, _ := d.send("GET", "/allocations/"+consumer, nil)
			// The body as written, each provider with its generation.
			parts := strings.Split(body, "}}")
			if !inOrder(string(raw), parts[0], parts[1]) {
				t.Errorf("consumer %s: allocations not in write order: %s", consumer, raw)
			}
		}
	}
	late := d.call(t, "GET", "/allocations/"+fixtureLate, nil, 200)
	if late["consumer_type"] != "MIGRATION" {
		t.Errorf("consumer written after the snapshot: %v", late)
	}
	project := d.call(t, "GET", "/usages?project_id="+fixtureProject, nil, 200)
	if got, _ := json.Marshal(project["usages"]); string(got) != `{"INSTANCE":{"CUSTOM_FIXTURE_GPU":1,"MEMORY_MB":2048,"VCPU":4,"consumer_count":1},"MIGRATION":{"VCPU":2,"consumer_count":1}}` {
		t.Errorf("project usages: %s", got)
	}
	d.call(t, "GET", "/resource_classes/CUSTOM_FIXTURE_GPU", nil, 200)
	d.call(t, "GET", "/traits/CUSTOM_FIXTURE_LATE", nil, 204)
	if fx.batches {
		for i := range fixtureBatchTraits {
			d.call(t, "GET", fmt.Sprintf("/traits/CUSTOM_FIXTURE_BATCH_%d", i), nil, 204)
		}
	}
}

// inOrder reports whether each of parts appears in s after the one before.
func inOrder(s string, parts ...string) bool {
	for _, p := range parts {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return true
}

func TestWriteUpgradeFixtures(t *testing.T) {
	version := os.Getenv("PLACEMENTD_WRITE_FIXTURES")
	if version == "" {
		t.Skip("set PLACEMENTD_WRITE_FIXTURES=vN to write the fixtures of the current formats")
	}
	fx := upgradeFixture{name: version, snapshotFormat: fsm.SnapshotVersion, batches: true, writeOrder: true}
	dir := t.TempDir()
	d := openDiskNode(t, dir)
	writeFixtureWorkload(t, d)
	testcluster.WaitFor(t, 15*time.Second, "the lone node raised the cluster version", func() error {
		return testcluster.Check(d.Node.ClusterVersion().Formats == fsm.BuildFormats, "%v", d.Node.ClusterVersion())
	})
	checkFixtureState(t, d, fx)
	var backup bytes.Buffer
	c := &front.Client{Addr: strings.TrimPrefix(d.srv.URL, "http://"), Secret: fixtureSecret}
	if err := c.Snapshot(context.Background(), &backup); err != nil {
		t.Fatal(err)
	}
	d.close()
	if n, _ := logBatches(t, dir); n == 0 {
		t.Fatal("the burst of writes left no batch entry in the log")
	}
	digest, _, err := fsm.InspectSnapshot(backup.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the fixtures' digest (for upgradeFixtures): %s", digest)
	if err := os.WriteFile(filepath.Join("testdata", "backup-"+version+".snap"), backup.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "datadir-"+version+".tar.gz"), tarDir(t, dir), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A data directory (Raft log, stable store, snapshot) written by an
// earlier format version opens, replays to the same state, takes new
// writes, and comes back again after a restart in the current format.
func TestUpgradeDataDir(t *testing.T) {
	for _, fx := range upgradeFixtures {
		t.Run(fx.name, func(t *testing.T) {
			archive, err := os.ReadFile(filepath.Join("testdata", "datadir-"+fx.name+".tar.gz"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			untarDir(t, archive, dir)
			n, raises := logBatches(t, dir)
			if fx.batches && n == 0 {
				t.Fatal("the fixture's log holds no batch entry")
			}
			if fx.raised != (raises > 0) {
				t.Fatalf("the fixture's log holds %d entries raising the cluster version (raised: %v)", raises, fx.raised)
			}
			d := openDiskNode(t, dir)
			if err := d.Node.ReadBarrier(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkFixtureState(t, d, fx)
			if got, _ := d.Node.Digest(); got != fx.digest {
				t.Fatalf("the fixture replays to digest %s, it was written at %s", got, fx.digest)
			}
			d.call(t, "PUT", "/traits/CUSTOM_AFTER_UPGRADE", nil, 201)
			if err := d.Node.Raft().Snapshot().Error(); err != nil {
				t.Fatal(err)
			}
			want, _ := d.Node.Digest()
			d.close()

			d = openDiskNode(t, dir)
			defer d.close()
			if err := d.Node.ReadBarrier(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got, _ := d.Node.Digest(); got != want {
				t.Fatal("state changed across the restart after the upgrade")
			}
			checkFixtureState(t, d, fx)
			d.call(t, "GET", "/traits/CUSTOM_AFTER_UPGRADE", nil, 204)
		})
	}
}

// A backup (`placementd snapshot save`) written by an earlier format
// version is accepted by `snapshot inspect` and restores a new cluster.
func TestRestoreOldBackup(t *testing.T) {
	for _, fx := range upgradeFixtures {
		t.Run(fx.name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "backup-"+fx.name+".snap"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(data, []byte(fmt.Sprintf("placementd-snapshot v%d\n", fx.snapshotFormat))) {
				t.Fatalf("fixture header %q", data[:min(len(data), 24)])
			}
			digest, _, err := fsm.InspectSnapshot(data)
			if err != nil {
				t.Fatal(err)
			}
			if digest != fx.digest {
				t.Fatalf("the backup reads as digest %s, it was written at %s", digest, fx.digest)
			}
			dir := t.TempDir()
			if _, err := cluster.SeedRestore(data, dir); err != nil {
				t.Fatal(err)
			}
			d := openDiskNode(t, dir)
			defer d.close()
			if err := d.Node.RestoreBackup(data); err != nil {
				t.Fatal(err)
			}
			if err := d.Node.ReadBarrier(context.Background()); err != nil {
				t.Fatal(err)
			}
			checkFixtureState(t, d, fx)
			if got, _ := d.Node.Digest(); got != digest {
				t.Fatalf("restored digest %s, backup's %s", got, digest)
			}
		})
	}
}

func tarDir(t *testing.T, dir string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		info, err := e.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		hdr.ModTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if e.IsDir() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if err == nil {
		err = zw.Close()
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func untarDir(t *testing.T, archive []byte, dir string) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(path, dir+string(filepath.Separator)) {
			t.Fatalf("archive entry %q escapes", hdr.Name)
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(path, 0o750); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o640); err != nil {
			t.Fatal(err)
		}
	}
}
