package httpapi

import (
	"encoding/json"
	"fmt"
	"github.com/placementd/placementd/internal/testcluster"
	"net/http"
	"strings"
	"sync"
	"testing"
)

// alRequest is a request usable from any goroutine: it reports failures
// as errors instead of failing the test.
func alRequest(a *testAPI, method, path, version string, body any) (int, any, error) {
	r, err := testcluster.Send(http.DefaultClient, a.URL, method, path, body, "OpenStack-API-Version", "placement "+version)
	if err != nil {
		return 0, nil, err
	}
	var out any
	if len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, &out); err != nil {
			return r.Status, nil, fmt.Errorf("body is not JSON: %q", r.Body)
		}
	}
	return r.Status, out, nil
}

// alExpect makes a request and checks its status.
func alExpect(t *testing.T, a *testAPI, method, path, version string, body any, want int) any {
	t.Helper()
	status, out, err := alRequest(a, method, path, version, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != want {
		t.Fatalf("%s %s: status %d, want %d: %v", method, path, status, want, out)
	}
	return out
}

// alProvider creates a provider with the given inventory totals.
func alProvider(t *testing.T, a *testAPI, uuid string, totals map[string]int) {
	t.Helper()
	alExpect(t, a, "POST", "/resource_providers", "1.20", map[string]any{"name": "rp-" + uuid, "uuid": uuid}, 200)
	invs := map[string]any{}
	for class, total := range totals {
		invs[class] = map[string]any{"total": total}
	}
	alExpect(t, a, "PUT", "/resource_providers/"+uuid+"/inventories", "1.20",
		map[string]any{"resource_provider_generation": 0, "inventories": invs}, 200)
}

func alUUID(prefix byte, i int) string {
	return fmt.Sprintf("%02x%06x-0000-4000-8000-%012x", prefix, i, i)
}

func alUsage(t *testing.T, a *testAPI, rp, class string) (float64, float64) {
	t.Helper()
	out := alExpect(t, a, "GET", "/resource_providers/"+rp+"/usages", "1.0", nil, 200).(map[string]any)
	return out["usages"].(map[string]any)[class].(float64), out["resource_provider_generation"].(float64)
}

func alClaimBody(rp string, amount int, gen any) map[string]any {
	return map[string]any{
		"allocations":         map[string]any{rp: map[string]any{"resources": map[string]any{"VCPU": amount}}},
		"project_id":          "proj",
		"user_id":             "user",
		"consumer_generation": gen,
	}
}

// TestConcurrentClaims races many claims over HTTP, through Raft, for a
// provider with room for K: exactly K succeed, every other gets 409, and
// the provider is never over-allocated, as seen by a concurrent reader.
func TestConcurrentClaims(t *testing.T) {
	a := newTestAPI(t, Config{})
	const rp = "11111111-2222-4333-8444-555555555555"
	const k, n = 10, 40
	alProvider(t, a, rp, map[string]int{"VCPU": k})

	stop := make(chan struct{})
	var readerErr error
	var readerDone sync.WaitGroup
	readerDone.Add(1)
	go func() {
		defer readerDone.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			status, out, err := alRequest(a, "GET", "/resource_providers/"+rp+"/usages", "1.0", nil)
			if err != nil || status != 200 {
				readerErr = fmt.Errorf("usages: %d %v", status, err)
				return
			}
			if used := out.(map[string]any)["usages"].(map[string]any)["VCPU"].(float64); used > k {
				readerErr = fmt.Errorf("over-allocated: %v VCPU of %d", used, k)
				return
			}
		}
	}()

	statuses := make([]int, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			statuses[i], _, errs[i] = alRequest(a, "PUT", "/allocations/"+alUUID('a', i), "1.28", alClaimBody(rp, 1, nil))
		}(i)
	}
	wg.Wait()
	close(stop)
	readerDone.Wait()
	if readerErr != nil {
		t.Fatal(readerErr)
	}
	count := map[int]int{}
	for i := range statuses {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		count[statuses[i]]++
	}
	if count[204] != k || count[409] != n-k {
		t.Fatalf("statuses %v, want %d×204 and %d×409", count, k, n-k)
	}
	used, gen := alUsage(t, a, rp, "VCPU")
	if used != k || gen != 1+k {
		t.Fatalf("usage %v generation %v, want %d and %d", used, gen, k, 1+k)
	}
	allocs := alExpect(t, a, "GET", "/resource_providers/"+rp+"/allocations", "1.28", nil, 200).(map[string]any)
	if got := len(allocs["allocations"].(map[string]any)); got != k {
		t.Fatalf("%d consumers hold allocations, want %d", got, k)
	}
}

// TestConcurrentPostMoves races POST /allocations writes that move claims
// between consumers (which always fit, and of which exactly one per source
// consumer wins the consumer generation) against writes of new pairs of
// claims competing for the free room.
func TestConcurrentPostMoves(t *testing.T) {
	a := newTestAPI(t, Config{})
	const rp = "22222222-2222-4333-8444-555555555555"
	const k, held, pairs = 10, 5, 20
	alProvider(t, a, rp, map[string]int{"VCPU": k})
	for i := 0; i < held; i++ {
		alExpect(t, a, "PUT", "/allocations/"+alUUID('b', i), "1.28", alClaimBody(rp, 1, nil), 204)
	}

	type result struct {
		kind   string
		status int
		err    error
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	run := func(kind string, body any) {
		defer wg.Done()
		status, _, err := alRequest(a, "POST", "/allocations", "1.28", body)
		mu.Lock()
		results = append(results, result{kind, status, err})
		mu.Unlock()
	}
	for i := 0; i < held; i++ {
		// Two competing moves of each held claim, both from generation 1.
		for j := 0; j < 2; j++ {
			wg.Add(1)
			go run("move", map[string]any{
				alUUID('b', i):     map[string]any{"allocations": map[string]any{}, "project_id": "proj", "user_id": "user", "consumer_generation": 1},
				alUUID('c', i*2+j): alClaimBody(rp, 1, nil),
			})
		}
	}
	for i := 0; i < pairs; i++ {
		wg.Add(1)
		go run("pair", map[string]any{
			alUUID('d', i): alClaimBody(rp, 1, nil),
			alUUID('e', i): alClaimBody(rp, 1, nil),
		})
	}
	wg.Wait()

	count := map[string]int{}
	for _, r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.status != 204 && r.status != 409 {
			t.Fatalf("%s: status %d", r.kind, r.status)
		}
		count[fmt.Sprintf("%s %d", r.kind, r.status)]++
	}
	free := k - held
	want := map[string]int{"move 204": held, "move 409": held, "pair 204": free / 2, "pair 409": pairs - free/2}
	for key, n := range want {
		if count[key] != n {
			t.Fatalf("results %v, want %v", count, want)
		}
	}
	if used, _ := alUsage(t, a, rp, "VCPU"); used != float64(held+2*(free/2)) {
		t.Fatalf("usage %v", used)
	}
	// Every held claim moved exactly once: the sources are gone.
	for i := 0; i < held; i++ {
		out := alExpect(t, a, "GET", "/allocations/"+alUUID('b', i), "1.28", nil, 200).(map[string]any)
		if len(out["allocations"].(map[string]any)) != 0 {
			t.Fatalf("source %d still holds %v", i, out)
		}
	}
}

// TestPostAllocationsFailingLastLeavesNothing checks all or nothing over
// HTTP: the last consumer of a POST does not fit, so none is written.
func TestPostAllocationsFailingLastLeavesNothing(t *testing.T) {
	a := newTestAPI(t, Config{})
	const rp1, rp2 = "33333333-2222-4333-8444-555555555555", "44444444-2222-4333-8444-555555555555"
	alProvider(t, a, rp1, map[string]int{"VCPU": 4})
	alProvider(t, a, rp2, map[string]int{"VCPU": 4})
	alExpect(t, a, "PUT", "/allocations/"+alUUID('f', 0), "1.28", alClaimBody(rp1, 2, nil), 204)
	_, gen1 := alUsage(t, a, rp1, "VCPU")
	_, gen2 := alUsage(t, a, rp2, "VCPU")

	body := map[string]any{
		alUUID('f', 0): map[string]any{"allocations": map[string]any{}, "project_id": "proj", "user_id": "user", "consumer_generation": 1},
		alUUID('f', 1): alClaimBody(rp1, 3, nil),
		alUUID('f', 2): alClaimBody(rp2, 5, nil), // over capacity
	}
	out := alExpect(t, a, "POST", "/allocations", "1.28", body, 409)
	if !strings.Contains(fmt.Sprint(out), "The requested amount would exceed the capacity") {
		t.Fatalf("error %v", out)
	}
	if used, gen := alUsage(t, a, rp1, "VCPU"); used != 2 || gen != gen1 {
		t.Fatalf("rp1 usage %v generation %v changed", used, gen)
	}
	if _, gen := alUsage(t, a, rp2, "VCPU"); gen != gen2 {
		t.Fatalf("rp2 generation %v changed", gen)
	}
	got := alExpect(t, a, "GET", "/allocations/"+alUUID('f', 0), "1.28", nil, 200).(map[string]any)
	if got["consumer_generation"] != 1.0 {
		t.Fatalf("first consumer changed: %v", got)
	}
	got = alExpect(t, a, "GET", "/allocations/"+alUUID('f', 1), "1.28", nil, 200).(map[string]any)
	if len(got["allocations"].(map[string]any)) != 0 {
		t.Fatalf("second consumer written: %v", got)
	}
}

// TestReshapeFailingLastLeavesNothing: a reshape whose last consumer
// breaks max_unit changes neither inventories nor allocations.
func TestReshapeFailingLastLeavesNothing(t *testing.T) {
	a := newTestAPI(t, Config{})
	const parent, child = "55555555-2222-4333-8444-555555555555", "66666666-2222-4333-8444-555555555555"
	alProvider(t, a, parent, map[string]int{"VCPU": 8, "DISK_GB": 100})
	alExpect(t, a, "POST", "/resource_providers", "1.20", map[string]any{"name": "child", "uuid": child, "parent_provider_uuid": parent}, 200)
	alExpect(t, a, "PUT", "/allocations/"+alUUID('g', 0), "1.28", map[string]any{
		"allocations": map[string]any{parent: map[string]any{"resources": map[string]any{"VCPU": 2, "DISK_GB": 10}}},
		"project_id":  "proj", "user_id": "user", "consumer_generation": nil,
	}, 204)
	alExpect(t, a, "PUT", "/allocations/"+alUUID('g', 1), "1.28", alClaimBody(parent, 3, nil), 204)
	before := alExpect(t, a, "GET", "/resource_providers/"+parent+"/inventories", "1.30", nil, 200)

	reshape := func(lastAmount int) map[string]any {
		return map[string]any{
			"inventories": map[string]any{
				parent: map[string]any{"resource_provider_generation": 3, "inventories": map[string]any{"DISK_GB": map[string]any{"total": 100}}},
				child:  map[string]any{"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": 8, "max_unit": 4}}},
			},
			"allocations": map[string]any{
				alUUID('g', 0): map[string]any{
					"allocations": map[string]any{
						parent: map[string]any{"resources": map[string]any{"DISK_GB": 10}},
						child:  map[string]any{"resources": map[string]any{"VCPU": 2}},
					},
					"project_id": "proj", "user_id": "user", "consumer_generation": 1,
				},
				alUUID('g', 1): map[string]any{
					"allocations": map[string]any{child: map[string]any{"resources": map[string]any{"VCPU": lastAmount}}},
					"project_id":  "proj", "user_id": "user", "consumer_generation": 1,
				},
			},
		}
	}
	alExpect(t, a, "POST", "/reshaper", "1.30", reshape(5), 409)
	after := alExpect(t, a, "GET", "/resource_providers/"+parent+"/inventories", "1.30", nil, 200)
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Fatalf("inventory changed:\n%v\n%v", before, after)
	}
	if used, gen := alUsage(t, a, parent, "VCPU"); used != 5 || gen != 3 {
		t.Fatalf("parent usage %v generation %v", used, gen)
	}
	alExpect(t, a, "POST", "/reshaper", "1.30", reshape(3), 204)
	if used, gen := alUsage(t, a, child, "VCPU"); used != 5 || gen != 3 {
		t.Fatalf("child usage %v generation %v after reshape", used, gen)
	}
}

// TestAllocationFormats checks each microversion's representation.
func TestAllocationFormats(t *testing.T) {
	a := newTestAPI(t, Config{IncompleteConsumerProjectID: "inc-proj", IncompleteConsumerUserID: "inc-user"})
	const rp = "77777777-2222-4333-8444-555555555555"
	alProvider(t, a, rp, map[string]int{"VCPU": 8, "DISK_GB": 100})
	consumer := alUUID('h', 0)

	// The list format before 1.12, with the incomplete consumer before 1.8.
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.7", map[string]any{"allocations": []any{
		map[string]any{"resource_provider": map[string]any{"uuid": rp}, "resources": map[string]any{"VCPU": 1}},
	}}, 204)
	keys := func(m map[string]any) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		return fmt.Sprint(len(ks))
	}
	for version, want := range map[string]string{"1.11": "1", "1.12": "3", "1.28": "4", "1.38": "5"} {
		out := alExpect(t, a, "GET", "/allocations/"+consumer, version, nil, 200).(map[string]any)
		if keys(out) != want {
			t.Errorf("%s: %d keys in %v, want %s", version, len(out), out, want)
		}
	}
	out := alExpect(t, a, "GET", "/allocations/"+consumer, "1.38", nil, 200).(map[string]any)
	if out["project_id"] != "inc-proj" || out["user_id"] != "inc-user" || out["consumer_type"] != "unknown" || out["consumer_generation"] != 1.0 {
		t.Errorf("consumer %v", out)
	}
	rpAllocs := out["allocations"].(map[string]any)[rp].(map[string]any)
	if rpAllocs["generation"] != 2.0 || rpAllocs["resources"].(map[string]any)["VCPU"] != 1.0 {
		t.Errorf("provider part %v", rpAllocs)
	}
	// The dict format is refused before 1.12 and the list one after.
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.11", alClaimBody(rp, 1, nil), 400)
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.12", map[string]any{"allocations": []any{}, "project_id": "p", "user_id": "u"}, 400)

	// Mappings from 1.34, consumer types from 1.38.
	withMappings := alClaimBody(rp, 2, 1)
	withMappings["mappings"] = map[string]any{"_NET1": []any{rp}}
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.33", withMappings, 400)
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.34", withMappings, 204)
	typed := alClaimBody(rp, 2, 2)
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.38", typed, 400)
	typed["consumer_type"] = "INSTANCE"
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.38", typed, 204)
	out = alExpect(t, a, "GET", "/allocations/"+consumer, "1.38", nil, 200).(map[string]any)
	if out["consumer_type"] != "INSTANCE" || out["consumer_generation"] != 3.0 || out["project_id"] != "proj" {
		t.Errorf("consumer %v", out)
	}

	// The provider's view, with consumer generations from 1.28.
	pv := alExpect(t, a, "GET", "/resource_providers/"+rp+"/allocations", "1.27", nil, 200).(map[string]any)
	if _, has := pv["allocations"].(map[string]any)[consumer].(map[string]any)["consumer_generation"]; has {
		t.Errorf("consumer generation shown before 1.28: %v", pv)
	}
	pv = alExpect(t, a, "GET", "/resource_providers/"+rp+"/allocations", "1.28", nil, 200).(map[string]any)
	if pv["allocations"].(map[string]any)[consumer].(map[string]any)["consumer_generation"] != 3.0 {
		t.Errorf("provider allocations %v", pv)
	}
	// Usages show every inventory class, used or not.
	us := alExpect(t, a, "GET", "/resource_providers/"+rp+"/usages", "1.0", nil, 200).(map[string]any)["usages"].(map[string]any)
	if us["VCPU"] != 2.0 || us["DISK_GB"] != 0.0 {
		t.Errorf("usages %v", us)
	}

	// A generation-checked removal, then DELETE of nothing is 404.
	alExpect(t, a, "PUT", "/allocations/"+consumer, "1.38", map[string]any{
		"allocations": map[string]any{}, "project_id": "proj", "user_id": "user", "consumer_generation": 3, "consumer_type": "INSTANCE",
	}, 204)
	alExpect(t, a, "DELETE", "/allocations/"+consumer, "1.38", nil, 404)
}

// TestTotalUsages checks GET /usages, summed before 1.38 and grouped by
// consumer type from 1.38.
func TestTotalUsages(t *testing.T) {
	a := newTestAPI(t, Config{})
	const rp = "88888888-2222-4333-8444-555555555555"
	alProvider(t, a, rp, map[string]int{"VCPU": 100, "DISK_GB": 1000})
	put := func(i int, user, ctype string, vcpu, disk int) {
		body := map[string]any{
			"allocations": map[string]any{rp: map[string]any{"resources": map[string]any{"VCPU": vcpu, "DISK_GB": disk}}},
			"project_id":  "proj", "user_id": user, "consumer_generation": nil,
		}
		version := "1.28"
		if ctype != "" {
			body["consumer_type"], version = ctype, "1.38"
		}
		alExpect(t, a, "PUT", "/allocations/"+alUUID('u', i), version, body, 204)
	}
	put(0, "u1", "", 1, 10)
	put(1, "u1", "INSTANCE", 2, 20)
	put(2, "u2", "INSTANCE", 4, 40)
	put(3, "u2", "MIGRATION", 8, 80)

	usages := func(query, version string) string {
		out := alExpect(t, a, "GET", "/usages?"+query, version, nil, 200).(map[string]any)
		b, _ := json.Marshal(out["usages"])
		return string(b)
	}
	cases := []struct{ query, version, want string }{
		{"project_id=proj", "1.9", `{"DISK_GB":150,"VCPU":15}`},
		{"project_id=proj&user_id=u2", "1.9", `{"DISK_GB":120,"VCPU":12}`},
		{"project_id=other", "1.9", `{}`},
		{"project_id=proj", "1.38", `{"INSTANCE":{"DISK_GB":60,"VCPU":6,"consumer_count":2},"MIGRATION":{"DISK_GB":80,"VCPU":8,"consumer_count":1},"unknown":{"DISK_GB":10,"VCPU":1,"consumer_count":1}}`},
		{"project_id=proj&consumer_type=all", "1.38", `{"all":{"DISK_GB":150,"VCPU":15,"consumer_count":4}}`},
		{"project_id=proj&consumer_type=unknown", "1.38", `{"unknown":{"DISK_GB":10,"VCPU":1,"consumer_count":1}}`},
		{"project_id=proj&consumer_type=INSTANCE&user_id=u1", "1.38", `{"INSTANCE":{"DISK_GB":20,"VCPU":2,"consumer_count":1}}`},
		{"project_id=proj&consumer_type=ALL", "1.38", `{}`},
		{"project_id=other&consumer_type=all", "1.38", `{}`},
	}
	for _, c := range cases {
		if got := usages(c.query, c.version); got != c.want {
			t.Errorf("%s at %s: %s, want %s", c.query, c.version, got, c.want)
		}
	}
	alExpect(t, a, "GET", "/usages?project_id=proj&consumer_type=INSTANCE", "1.37", nil, 400)
	alExpect(t, a, "GET", "/usages?project_id=proj", "1.8", nil, 404)
}
