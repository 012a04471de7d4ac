package upstream_test

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/backend"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
	"github.com/placementd/placementd/snapshot/export"
	"github.com/placementd/placementd/snapshot/upstream"
)

// memNode is an in-process placementd: these tests read and compare
// placementd itself through the same public API an upstream Placement
// has, without needing python3-placement.
type memNode struct {
	n   *cluster.Node
	url string
	// hook, when set, runs before each request is served.
	hook atomic.Pointer[func(r *http.Request)]
}

func startMem(t *testing.T) *memNode {
	t.Helper()
	n := testcluster.OpenNode(t, cluster.Config{}, nil)
	m := &memNode{n: n}
	fr := front.New(n, httpapi.New(n, httpapi.Config{Logger: testcluster.Quiet}),
		front.Options{Secret: secret, Logger: testcluster.Quiet})
	m.url = testcluster.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := m.hook.Load(); h != nil {
			(*h)(r)
		}
		fr.ServeHTTP(w, r)
	})).URL
	return m
}

func (m *memNode) apply(t *testing.T, cmds ...state.Command) {
	t.Helper()
	for _, c := range cmds {
		if _, err := m.n.Apply(context.Background(), c); err != nil {
			t.Errorf("%s: %v", c.Kind(), err)
		}
	}
}

// state is the node's state as it is.
func (m *memNode) state(t *testing.T) *state.Store {
	t.Helper()
	st, err := m.n.Read(context.Background(), backend.ReadOptions{Level: backend.Stale})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (m *memNode) endpoint() *upstream.Endpoint {
	return &upstream.Endpoint{URL: m.url, Token: "admin"}
}

var (
	rpA, rpB, rpC = uid(1, 1), uid(1, 2), uid(1, 3)
	agg1          = uid(2, 1)
	con1, con2    = uid(3, 1), uid(3, 2)
)

func smallCloud(t *testing.T, m *memNode) {
	inv := func(class string, total int64) state.InventoryValues {
		return state.InventoryValues{Class: class, Total: total, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: 2}
	}
	gen := func(g int64) *int64 { return &g }
	m.apply(t,
		&state.CreateResourceClass{Name: "CUSTOM_B"},
		&state.CreateResourceClass{Name: "CUSTOM_A"},
		&state.CreateTrait{Name: "CUSTOM_T"},
		&state.CreateProvider{UUID: rpA, Name: "a"},
		&state.CreateProvider{UUID: rpB, Name: "b", ParentUUID: rpA},
		&state.CreateProvider{UUID: rpC, Name: "c"},
		&state.SetInventories{Provider: rpB, Inventories: []state.InventoryValues{inv("VCPU", 8), inv("CUSTOM_A", 2)}},
		&state.SetInventories{Provider: rpC, Inventories: []state.InventoryValues{inv("DISK_GB", 100)}},
		&state.SetProviderTraits{Provider: rpC, Generation: 1, Traits: []string{state.SharingTrait, "CUSTOM_T"}},
		&state.SetAggregates{UUID: rpC, Aggregates: []string{agg1}, Generation: gen(2)},
		&state.SetAggregates{UUID: rpA, Aggregates: []string{agg1}},
		&state.SetAllocations{Consumers: []state.ConsumerAllocations{{Consumer: con1, ProjectID: "p", UserID: "u", ConsumerType: "INSTANCE",
			Allocations: []state.AllocationRequest{{Provider: rpB, Class: "VCPU", Used: 2}, {Provider: rpC, Class: "DISK_GB", Used: 10}}}}},
		&state.SetAllocations{Consumers: []state.ConsumerAllocations{{Consumer: con2, ProjectID: "q", UserID: "v",
			Allocations: []state.AllocationRequest{{Provider: rpB, Class: "CUSTOM_A", Used: 1}}}}},
	)
}

// Reading placementd through its API gives what its own export says, but
// for what the API does not show (times, counters).
func TestReadMatchesTheExport(t *testing.T) {
	src := startMem(t)
	smallCloud(t, src)
	var lines []string
	doc, err := upstream.Read(context.Background(), src.endpoint(), upstream.ReadOptions{Workers: 3,
		Progress: func(f string, args ...any) { lines = append(lines, f) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 {
		t.Error("no progress reported")
	}
	img := src.state(t).Image()
	if diffs := export.Compare(doc, export.FromImage(img)); len(diffs) > 0 {
		t.Fatalf("the API read differs from the state:\n%s", strings.Join(diffs, "\n"))
	}
	if doc.ResourceClasses[0].Name != "CUSTOM_B" || doc.ResourceProviders[1].ParentProviderUUID != rpA ||
		doc.Consumers[0].ConsumerType != "INSTANCE" || doc.Consumers[1].ConsumerType != "" || doc.Counters != nil {
		t.Fatalf("document: %+v", doc)
	}
}

// Compare finds no difference between a source and its import, and finds
// a change made to either afterwards.
func TestCompareAfterImport(t *testing.T) {
	src, dst := startMem(t), startMem(t)
	smallCloud(t, src)
	ctx := context.Background()
	doc, err := upstream.Read(ctx, src.endpoint(), upstream.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chunks, err := export.Chunks(doc, 300, false)
	if err != nil {
		t.Fatal(err)
	}
	client := &front.Client{Addr: dst.url, Secret: secret}
	for _, c := range chunks {
		if _, err := client.Import(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	reqs := upstream.Requests(doc, "1.39")
	diffs, err := upstream.Compare(ctx, src.endpoint(), dst.endpoint(), reqs, 4)
	if err != nil || len(diffs) > 0 {
		t.Fatalf("after the import: %v %v", diffs, err)
	}
	dst.apply(t, &state.SetAggregates{UUID: rpA, Aggregates: []string{}})
	diffs, err = upstream.Compare(ctx, src.endpoint(), dst.endpoint(), reqs, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range diffs {
		got = append(got, d.Path)
	}
	want := []string{"/resource_providers/" + rpA + "/aggregates", "/resource_providers?member_of=" + agg1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("differences at %v, want %v: %v", got, want, diffs)
	}
	if !strings.Contains(diffs[0].Detail, "$.aggregates") {
		t.Fatalf("detail %q does not say where", diffs[0].Detail)
	}
}

// A provider written to while it is read is read again; one that keeps
// changing fails the read with ErrChanged.
func TestReadRetriesAndDetectsChanges(t *testing.T) {
	src := startMem(t)
	smallCloud(t, src)
	var bumps atomic.Int32
	var limit atomic.Int32
	limit.Store(1)
	hook := func(r *http.Request) {
		if r.URL.Path == "/resource_providers/"+rpA+"/traits" && bumps.Load() < limit.Load() {
			// A trait change bumps the generation.
			traits := []string{"CUSTOM_T"}
			if bumps.Add(1)%2 == 0 {
				traits = nil
			}
			gen := src.state(t).Providers.Get(rpA).Generation
			src.apply(t, &state.SetProviderTraits{Provider: rpA, Generation: gen, Traits: traits})
		}
	}
	src.hook.Store(&hook)
	doc, err := upstream.Read(context.Background(), src.endpoint(), upstream.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if doc.ResourceProviders[0].Generation != 1 || !reflect.DeepEqual(doc.ResourceProviders[0].Traits, []string{"CUSTOM_T"}) {
		t.Fatalf("provider read before the change settled: %+v", doc.ResourceProviders[0])
	}
	limit.Store(100)
	_, err = upstream.Read(context.Background(), src.endpoint(), upstream.ReadOptions{})
	if !errors.Is(err, upstream.ErrChanged) {
		t.Fatalf("read of a changing source: %v", err)
	}
}

func TestNormalize(t *testing.T) {
	a, err := upstream.Normalize([]byte(`{"b": [3, 1, 2], "links": [{"rel": "self", "href": "/placement/x"}],
		"errors": [{"request_id": "req-1", "detail": "d"}], "n": 1.0}`), "/placement")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := upstream.Normalize([]byte(`{"b": [1, 2, 3], "links": [{"rel": "self", "href": "/x"}],
		"errors": [{"request_id": "req-2", "detail": "d"}], "n": 1}`), "")
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("%v\n%v", a, b)
	}
}
