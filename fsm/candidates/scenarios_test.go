package candidates_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/placementd/placementd/fsm/candidates"
	"github.com/placementd/placementd/fsm/state"
)

func res(pairs ...any) []state.ResourceAmount {
	var out []state.ResourceAmount
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, state.ResourceAmount{Class: pairs[i].(string), Amount: int64(pairs[i+1].(int))})
	}
	return out
}

func search(t *testing.T, st *state.Store, req *candidates.Request, opt candidates.Options) *candidates.Result {
	t.Helper()
	r, err := candidates.Search(context.Background(), st, req, opt)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wideTree makes one root with n children of one VF each.
func wideTree(t *testing.T, n int) *builder {
	b := newBuilder(t)
	b.provider("cn", "")
	b.inv("cn", "VCPU", 8)
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("vf%d", i)
		b.provider(name, "cn")
		b.inv(name, "SRIOV_NET_VF", 1)
	}
	return b
}

func vfGroups(n int) []candidates.Group {
	var gs []candidates.Group
	for i := 0; i < n; i++ {
		gs = append(gs, candidates.Group{Suffix: fmt.Sprint(i + 1), Resources: res("SRIOV_NET_VF", 1)})
	}
	return gs
}

// Upstream bug 2070257: a few wide trees made hundreds of thousands of
// candidates. With max_allocation_candidates the work stays bounded: 50
// children and four isolated groups would make 5,527,200 candidates.
func TestWideTreeBounded(t *testing.T) {
	b := wideTree(t, 50)
	req := &candidates.Request{Groups: vfGroups(4), Isolate: true, NestedAware: true}
	start := time.Now()
	r := search(t, b.st, req, candidates.Options{MaxCandidates: 1000})
	if len(r.Candidates) != 1000 {
		t.Fatalf("%d candidates, want 1000", len(r.Candidates))
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("took %v", d)
	}
	// A limit alone stops generation too (without randomization).
	req.Limit = 10
	r = search(t, b.st, req, candidates.Options{})
	if len(r.Candidates) != 10 || len(r.Summaries) != 51 {
		t.Fatalf("%d candidates, %d summaries", len(r.Candidates), len(r.Summaries))
	}
	// Isolation holds: the four groups use four different VFs.
	for _, c := range r.Candidates {
		seen := map[string]bool{}
		for _, m := range c.Mappings {
			seen[m.Providers[0]] = true
		}
		if len(seen) != 4 {
			t.Fatalf("not isolated: %v", c.Mappings)
		}
	}
}

func TestBreadthFirstAlternatesRoots(t *testing.T) {
	b := newBuilder(t)
	for _, cn := range []string{"cn1", "cn2"} {
		b.provider(cn, "")
		for i := 0; i < 3; i++ {
			name := fmt.Sprintf("%s-vf%d", cn, i)
			b.provider(name, cn)
			b.inv(name, "SRIOV_NET_VF", 1)
		}
	}
	req := &candidates.Request{Groups: []candidates.Group{{Resources: res("SRIOV_NET_VF", 1)}}, NestedAware: true}
	roots := func(r *candidates.Result) []string {
		var out []string
		for _, c := range r.Candidates {
			out = append(out, b.st.Providers.Get(c.Allocations[0].Provider).RootUUID)
		}
		return out
	}
	cn1, cn2 := uuidOf("cn1"), uuidOf("cn2")
	if got := roots(search(t, b.st, req, candidates.Options{})); !reflect.DeepEqual(got, []string{cn1, cn1, cn1, cn2, cn2, cn2}) {
		t.Errorf("depth-first roots %v", got)
	}
	got := roots(search(t, b.st, req, candidates.Options{Strategy: candidates.BreadthFirst}))
	if !reflect.DeepEqual(got, []string{cn1, cn2, cn1, cn2, cn1, cn2}) {
		t.Errorf("breadth-first roots %v", got)
	}
	// With a bound, breadth-first spreads over both roots.
	got = roots(search(t, b.st, req, candidates.Options{Strategy: candidates.BreadthFirst, MaxCandidates: 2}))
	if !reflect.DeepEqual(got, []string{cn1, cn2}) {
		t.Errorf("bounded breadth-first roots %v", got)
	}
}

func TestRandomizedSample(t *testing.T) {
	b := newBuilder(t)
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("cn%d", i)
		b.provider(name, "")
		b.inv(name, "VCPU", 4)
	}
	req := &candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1)}}, NestedAware: true, Limit: 5}
	nm := b.names()
	first := renderAll(search(t, b.st, req, candidates.Options{}).Candidates, nm)
	differs := false
	for seed := uint64(0); seed < 10; seed++ {
		r := search(t, b.st, req, candidates.Options{Randomize: true, Rand: rand.New(rand.NewPCG(seed, 1))})
		if len(r.Candidates) != 5 || len(r.Summaries) != 5 {
			t.Fatalf("%d candidates, %d summaries", len(r.Candidates), len(r.Summaries))
		}
		// Summaries are those of the sampled candidates.
		for _, c := range r.Candidates {
			if !slices.ContainsFunc(r.Summaries, func(s candidates.Summary) bool { return s.UUID == c.Allocations[0].Provider }) {
				t.Fatalf("no summary for %s", nm[c.Allocations[0].Provider])
			}
		}
		differs = differs || !reflect.DeepEqual(renderAll(r.Candidates, nm), first)
	}
	if !differs {
		t.Error("randomized samples are always the first candidates")
	}
}

// Before 1.29, with nested providers around, upstream keeps the summaries
// of providers used by any candidate (before the limit) whose root is the
// root of a returned candidate.
func TestOldMicroversionLimitedSummaries(t *testing.T) {
	b := newBuilder(t)
	b.provider("cn", "")
	b.provider("pf1", "cn")
	b.provider("pf2", "cn")
	b.provider("idle", "cn")
	b.inv("pf1", "SRIOV_NET_VF", 4)
	b.inv("pf2", "SRIOV_NET_VF", 4)
	b.inv("idle", "DISK_GB", 4)
	req := &candidates.Request{Groups: []candidates.Group{{Resources: res("SRIOV_NET_VF", 1)}}, Limit: 1}
	r := search(t, b.st, req, candidates.Options{})
	if len(r.Candidates) != 1 {
		t.Fatalf("%d candidates", len(r.Candidates))
	}
	got := renderSummaries(r.Summaries, b.names())
	if len(got) != 2 || got[0][:4] != "pf1 " || got[1][:4] != "pf2 " {
		t.Errorf("summaries %v, want pf1 and pf2", got)
	}
	req.NestedAware = true
	if r := search(t, b.st, req, candidates.Options{}); len(r.Summaries) != 4 {
		t.Errorf("1.29: %d summaries, want the whole tree", len(r.Summaries))
	}
}

// A request served by sharing providers alone comes out once, although
// every tree in the aggregate anchors it.
func TestSharingOnlyCandidateOnce(t *testing.T) {
	b := newBuilder(t)
	for _, cn := range []string{"cn1", "cn2"} {
		b.provider(cn, "")
		b.inv(cn, "VCPU", 4)
		b.aggs(cn, "agg")
	}
	b.provider("ss", "")
	b.inv("ss", "DISK_GB", 100)
	b.aggs("ss", "agg")
	b.traits("ss", state.SharingTrait)
	r := search(t, b.st, &candidates.Request{Groups: []candidates.Group{{Resources: res("DISK_GB", 10)}}, NestedAware: true}, candidates.Options{})
	if got := renderAll(r.Candidates, b.names()); !reflect.DeepEqual(got, []string{`ss(DISK_GB:10) | ""=ss`}) {
		t.Errorf("candidates %v", got)
	}
	if len(r.Summaries) != 1 {
		t.Errorf("%d summaries", len(r.Summaries))
	}
	r = search(t, b.st, &candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1, "DISK_GB", 10)}}, NestedAware: true}, candidates.Options{})
	if got := renderAll(r.Candidates, b.names()); len(got) != 2 {
		t.Errorf("candidates %v", got)
	}
}

func TestUnknownNames(t *testing.T) {
	b := newBuilder(t)
	b.provider("cn", "")
	b.inv("cn", "VCPU", 4)
	cases := []struct {
		name string
		req  candidates.Request
		err  string // "" for an empty answer
	}{
		{"class", candidates.Request{Groups: []candidates.Group{{Resources: res("CUSTOM_NOPE", 1)}}}, "No such resource class CUSTOM_NOPE."},
		{"trait", candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1), Required: [][]string{{"CUSTOM_NOPE"}}}}}, "No such trait(s): CUSTOM_NOPE."},
		{"forbidden trait", candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1), Forbidden: []string{"CUSTOM_NOPE"}}}}, "No such trait(s): CUSTOM_NOPE."},
		{"root trait first", candidates.Request{RootRequired: []string{"CUSTOM_R"}, Groups: []candidates.Group{{Resources: res("CUSTOM_NOPE", 1)}}}, "No such trait(s): CUSTOM_R."},
		{"a root matches", candidates.Request{RootForbidden: []string{"HW_CPU_X86_AVX2"}, Groups: []candidates.Group{{Resources: res("CUSTOM_NOPE", 1)}}}, "No such resource class CUSTOM_NOPE."},
		{"no root matches", candidates.Request{RootRequired: []string{"HW_CPU_X86_AVX2"}, Groups: []candidates.Group{{Resources: res("CUSTOM_NOPE", 1)}}}, ""},
		{"earlier group empty", candidates.Request{Groups: []candidates.Group{
			{Suffix: "1", Resources: res("VCPU", 5)}, {Suffix: "2", Resources: res("CUSTOM_NOPE", 1)}}}, ""},
		{"earlier group fine", candidates.Request{Groups: []candidates.Group{
			{Suffix: "1", Resources: res("VCPU", 4)}, {Suffix: "2", Resources: res("CUSTOM_NOPE", 1)}}}, "No such resource class CUSTOM_NOPE."},
		{"member_of matches nothing", candidates.Request{Groups: []candidates.Group{
			{Resources: res("VCPU", 1), MemberOf: [][]string{{"agg"}}, Required: [][]string{{"CUSTOM_NOPE"}}}}}, ""},
		{"unknown in_tree in earlier group", candidates.Request{Groups: []candidates.Group{
			{Suffix: "1", Resources: res("VCPU", 1), InTree: uuidOf("nope")}, {Suffix: "2", Resources: res("CUSTOM_NOPE", 1)}}}, ""},
	}
	for _, c := range cases {
		r, err := candidates.Search(context.Background(), b.st, &c.req, candidates.Options{})
		var ne *candidates.NameError
		switch {
		case c.err == "" && (err != nil || len(r.Candidates) != 0):
			t.Errorf("%s: %v %v, want an empty answer", c.name, err, r)
		case c.err != "" && (!errors.As(err, &ne) || err.Error() != c.err):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}

// Searches of one version share its sharing providers; a later version
// (here: the sharing provider joins a second aggregate) has its own.
func TestSharingFollowsTheVersion(t *testing.T) {
	b := newBuilder(t)
	for i, cn := range []string{"cn1", "cn2"} {
		b.provider(cn, "")
		b.inv(cn, "VCPU", 4)
		b.aggs(cn, fmt.Sprint("agg", i+1))
	}
	b.provider("ss", "")
	b.inv("ss", "DISK_GB", 100)
	b.aggs("ss", "agg1")
	b.traits("ss", state.SharingTrait)
	req := &candidates.Request{Groups: []candidates.Group{{Resources: res("VCPU", 1, "DISK_GB", 10)}}, NestedAware: true}
	want := []string{`cn1(VCPU:1) ss(DISK_GB:10) | ""=cn1+ss`}
	for range 2 {
		if got := renderAll(search(t, b.st, req, candidates.Options{}).Candidates, b.names()); !reflect.DeepEqual(got, want) {
			t.Fatalf("candidates %v, want %v", got, want)
		}
	}
	b.aggs("ss", "agg2")
	want = append(want, `cn2(VCPU:1) ss(DISK_GB:10) | ""=cn2+ss`)
	if got := renderAll(search(t, b.st, req, candidates.Options{}).Candidates, b.names()); !reflect.DeepEqual(got, want) {
		t.Fatalf("after the sharing provider joined agg2: candidates %v, want %v", got, want)
	}
}
