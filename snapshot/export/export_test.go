package export_test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
	"github.com/placementd/placementd/snapshot/export"
)

const secret = "s3cret"

// node is an in-process single-node cluster behind the real cluster front
// (operator API included) on loopback HTTP.
type node struct {
	n      *cluster.Node
	client *front.Client
}

func startNode(t *testing.T) *node {
	t.Helper()
	n := testcluster.OpenNode(t, cluster.Config{}, nil)
	srv := testcluster.Front(t, n, httpapi.New(n, httpapi.Config{Logger: testcluster.Quiet}), front.Options{Secret: secret})
	return &node{n: n, client: &front.Client{Addr: srv.URL, Secret: secret}}
}

func (nd *node) apply(t *testing.T, cmds ...state.Command) {
	t.Helper()
	for _, c := range cmds {
		if _, err := nd.n.Apply(context.Background(), c); err != nil {
			t.Fatalf("%s: %v", c.Kind(), err)
		}
	}
}

// image is the node's state through the operator API's snapshot.
func (nd *node) image(t *testing.T) *state.Image {
	t.Helper()
	var buf bytes.Buffer
	if err := nd.client.Snapshot(context.Background(), &buf); err != nil {
		t.Fatal(err)
	}
	img, err := fsm.ReadSnapshot(&buf)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// digest is the state digest without the log index, which differs
// between clusters holding the same state.
func digest(img *state.Image) string {
	c := *img
	c.LastIndex = 0
	return image.Digest(&c)
}

const (
	cn1, numa0, numa1 = "10000000-0000-0000-0000-000000000001", "10000000-0000-0000-0000-000000000002", "10000000-0000-0000-0000-000000000003"
	cn2, shared, gone = "10000000-0000-0000-0000-000000000004", "10000000-0000-0000-0000-000000000005", "10000000-0000-0000-0000-000000000006"
	agg               = "a0000000-0000-0000-0000-000000000001"
)

func inv(class string, total int64) state.InventoryValues {
	return state.InventoryValues{Class: class, Total: total, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: 1.5}
}

func gen(g int64) *int64 { return &g }

// fill writes a small cloud through Raft: nested and sharing providers,
// custom classes (one renamed) and traits, aggregates, a deleted provider
// and class (so the counters run ahead of the largest IDs), a deleted
// consumer, and consumers of several types and projects.
func fill(t *testing.T, nd *node) {
	claim := func(consumer, project, typ string, g *int64, allocs ...state.AllocationRequest) state.Command {
		return &state.SetAllocations{Consumers: []state.ConsumerAllocations{{Consumer: consumer, ProjectID: project,
			UserID: "user-" + project, ConsumerType: typ, CheckGeneration: true, Generation: g, Allocations: allocs}}}
	}
	a := func(p, class string, used int64) state.AllocationRequest {
		return state.AllocationRequest{Provider: p, Class: class, Used: used}
	}
	nd.apply(t,
		&state.CreateResourceClass{Name: "CUSTOM_TMP"},
		&state.RenameResourceClass{Name: "CUSTOM_TMP", NewName: "CUSTOM_GPU"},
		&state.CreateResourceClass{Name: "CUSTOM_FPGA"},
		&state.CreateTrait{Name: "CUSTOM_RACK_A"},
		&state.CreateTrait{Name: "CUSTOM_SPARE"},
		&state.CreateProvider{UUID: cn1, Name: "cn1"},
		&state.CreateProvider{UUID: numa0, Name: "cn1-numa0", ParentUUID: cn1},
		&state.CreateProvider{UUID: numa1, Name: "cn1-numa1", ParentUUID: cn1},
		&state.CreateProvider{UUID: cn2, Name: "cn2"},
		&state.CreateProvider{UUID: shared, Name: "ceph"},
		&state.CreateProvider{UUID: gone, Name: "gone"},
		&state.DeleteProvider{UUID: gone},
		&state.CreateResourceClass{Name: "CUSTOM_DROPPED"},
		&state.DeleteResourceClass{Name: "CUSTOM_DROPPED"},
		&state.SetInventories{Provider: numa0, Inventories: []state.InventoryValues{inv("VCPU", 16), inv("MEMORY_MB", 32768), inv("CUSTOM_GPU", 2)}},
		&state.SetInventories{Provider: numa1, Inventories: []state.InventoryValues{inv("VCPU", 16), inv("MEMORY_MB", 32768)}},
		&state.SetInventories{Provider: cn2, Inventories: []state.InventoryValues{inv("VCPU", 8), inv("CUSTOM_FPGA", 1)}},
		&state.SetInventories{Provider: shared, Inventories: []state.InventoryValues{inv("DISK_GB", 10000)}},
		&state.SetProviderTraits{Provider: shared, Generation: 1, Traits: []string{state.SharingTrait, "CUSTOM_RACK_A"}},
		&state.SetProviderTraits{Provider: cn1, Generation: 0, Traits: []string{"HW_CPU_X86_AVX2", "CUSTOM_RACK_A"}},
		&state.SetAggregates{UUID: shared, Aggregates: []string{agg}, Generation: gen(2)},
		&state.SetAggregates{UUID: cn1, Aggregates: []string{agg}},
		&state.SetAggregates{UUID: cn2, Aggregates: []string{agg}},
		claim("c0000000-0000-0000-0000-000000000001", "p1", "INSTANCE", nil, a(numa0, "VCPU", 4), a(numa0, "CUSTOM_GPU", 1), a(shared, "DISK_GB", 100)),
		claim("c0000000-0000-0000-0000-000000000002", "p1", "MIGRATION", nil, a(numa1, "VCPU", 2), a(shared, "DISK_GB", 20)),
		claim("c0000000-0000-0000-0000-000000000003", "p2", "", nil, a(cn2, "VCPU", 1), a(cn2, "CUSTOM_FPGA", 1)),
		claim("c0000000-0000-0000-0000-000000000004", "p2", "INSTANCE", nil, a(cn2, "VCPU", 1)),
		claim("c0000000-0000-0000-0000-000000000004", "p2", "INSTANCE", gen(1)),
		claim("c0000000-0000-0000-0000-000000000001", "p1", "INSTANCE", gen(1), a(numa0, "VCPU", 8), a(numa0, "CUSTOM_GPU", 1), a(shared, "DISK_GB", 100)),
	)
}

// TestExportImportRoundTrip exports a cluster's state as a document,
// writes and reads it back, imports it into a fresh cluster in several
// chunks through the operator API, and gets the same state digest.
func TestExportImportRoundTrip(t *testing.T) {
	src := startNode(t)
	fill(t, src)
	img := src.image(t)
	if len(img.Consumers) != 3 || img.NextProviderID != 7 || len(img.ConsumerTypes) != 2 {
		t.Fatalf("source state is not what the test means: %d consumers, next provider %d", len(img.Consumers), img.NextProviderID)
	}

	var file bytes.Buffer
	if err := export.Write(&file, export.FromImage(img)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"format": "placementd-export"`, `"version": 1`, `"parent_provider_uuid": "` + cn1 + `"`,
		`"consumer_type": "MIGRATION"`, `"allocation_ratio": 1.5`, `"next_resource_provider_id": 7`} {
		if !strings.Contains(file.String(), want) {
			t.Errorf("document lacks %s", want)
		}
	}
	doc, err := export.Read(bytes.NewReader(file.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := export.Chunks(doc, 600, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(chunks) < 3 {
		t.Fatalf("%d chunks: the test means to load several", len(chunks))
	}

	dst := startNode(t)
	if c, err := dst.client.ImportContents(context.Background()); err != nil || !c.Empty() {
		t.Fatalf("fresh cluster contents %v, %v", c, err)
	}
	for i, c := range chunks {
		if _, err := dst.client.Import(context.Background(), c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	got := dst.image(t)
	if digest(got) != digest(img) {
		t.Fatalf("digests differ after the round trip:\n%s", strings.Join(export.Compare(doc, export.FromImage(got)), "\n"))
	}
	if diffs := export.Compare(doc, export.FromImage(got)); len(diffs) > 0 {
		t.Fatalf("differences: %v", diffs)
	}

	// The imported cluster refuses a second import, and a forced one
	// replaces its state.
	_, err = dst.client.Import(context.Background(), chunks[0])
	var se *front.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusConflict {
		t.Fatalf("second import: %v, want 409", err)
	}
	only := &state.ImportChunk{First: true, Replace: true, Providers: []state.ProviderImage{{UUID: cn2, Name: "alone"}}}
	if _, err := dst.client.Import(context.Background(), only); err != nil {
		t.Fatal(err)
	}
	if c, _ := dst.client.ImportContents(context.Background()); c != (state.Contents{Providers: 1}) {
		t.Fatalf("after a forced import: %v", c)
	}
}

// Load (the offline check) predicts the imported state exactly.
func TestLoadMatchesTheCluster(t *testing.T) {
	src := startNode(t)
	fill(t, src)
	img := src.image(t)
	s, err := export.Load(export.FromImage(img), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if digest(s.Image()) != digest(img) {
		t.Fatal("Load built another state")
	}
}

func TestReadRefusesOtherDocuments(t *testing.T) {
	for _, in := range []string{
		`{"format": "something", "version": 1}`,
		`{"format": "placementd-export", "version": 2}`,
		`{"format": "placementd-export", "version": 1, "resource_provider": []}`,
		`not json`,
	} {
		if _, err := export.Read(strings.NewReader(in)); err == nil {
			t.Errorf("read %s without error", in)
		}
	}
}

func TestChunksRefuseBrokenTrees(t *testing.T) {
	d := export.New("test")
	d.ResourceProviders = []export.ResourceProvider{{UUID: cn1, Name: "a", ParentProviderUUID: numa0}, {UUID: numa0, Name: "b", ParentProviderUUID: cn1}}
	if _, err := export.Chunks(d, 1<<20, false); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Fatalf("loop: %v", err)
	}
	d.ResourceProviders = []export.ResourceProvider{{UUID: cn1, Name: "a", ParentProviderUUID: numa0}}
	if _, err := export.Chunks(d, 1<<20, false); err == nil || !strings.Contains(err.Error(), "not in the document") {
		t.Fatalf("missing parent: %v", err)
	}
}

func TestCompareReportsDifferences(t *testing.T) {
	want := export.New("a")
	want.ResourceProviders = []export.ResourceProvider{{UUID: cn1, Name: "a", Generation: 2, Traits: []string{"X", "Y"}}, {UUID: cn2, Name: "b"}}
	got := export.New("b")
	got.ResourceProviders = []export.ResourceProvider{{UUID: cn1, Name: "a", Generation: 3, ID: 9, CreatedAt: time.Now(), Traits: []string{"Y", "X"}}, {UUID: shared, Name: "c"}}
	diffs := export.Compare(want, got)
	wantDiffs := []string{
		"resource provider " + cn1 + ": generation is 3, want 2",
		"resource provider " + cn2 + ": missing",
		"resource provider " + shared + ": not expected (only in the copy)",
	}
	if strings.Join(diffs, "\n") != strings.Join(wantDiffs, "\n") {
		t.Fatalf("differences:\n%s\nwant:\n%s", strings.Join(diffs, "\n"), strings.Join(wantDiffs, "\n"))
	}
}
