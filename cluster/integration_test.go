package cluster_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/testcluster"
)

// claimClient sends Placement requests with short timeouts.
var claimClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

// placement sends a Placement request at microversion 1.36 to the API at
// addr (host:port), a stale read if stale.
func placement(method, addr, path string, body any, stale bool) (int, []byte, error) {
	headers := []string{"OpenStack-API-Version", "placement 1.36"}
	if stale {
		headers = append(headers, front.StaleReadHeader, "true")
	}
	r, err := testcluster.Send(claimClient, "http://"+addr, method, path, body, headers...)
	return r.Status, r.Body, err
}

// TestIntegrationClaimsSurviveLeaderKill runs three placementd processes
// over TCP on loopback, makes concurrent claims through all three against
// a provider of limited capacity, SIGKILLs the leader in the middle and
// restarts it. Afterwards every acknowledged claim is on every node,
// nothing is over-allocated, the digests agree, and writes were served
// again within 5 s of the kill.
func TestIntegrationClaimsSurviveLeaderKill(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs placementd processes")
	}
	bin := testcluster.Binary(t)
	dir := t.TempDir()
	c := testcluster.StartProcs(t, bin, 3)
	nodes := c.Nodes
	t.Logf("cluster up: leader %s", c.Status().Leader)

	// A provider with room for `capacity` claims of one VCPU.
	const capacity = 300
	rp := uuid.NewString()
	if code, body, err := placement("POST", nodes[1].HTTPAddr, "/resource_providers", map[string]any{"name": "rp", "uuid": rp}, false); err != nil || code != 200 {
		t.Fatalf("create provider: %d %s %v", code, body, err)
	}
	if code, body, err := placement("PUT", nodes[2].HTTPAddr, "/resource_providers/"+rp+"/inventories",
		map[string]any{"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": capacity}}}, false); err != nil || code != 200 {
		t.Fatalf("set inventory: %d %s %v", code, body, err)
	}

	var (
		mu          sync.Mutex
		acked       = map[string]bool{} // consumers whose claim was acknowledged
		outcomes    = map[int]int{}
		killedAt    time.Time
		servedAgain time.Duration = -1
	)
	const workers, perWorker = 6, 90
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				n := nodes[(w+i)%3]
				consumer := uuid.NewString()
				sent := time.Now()
				code, _, err := placement("PUT", n.HTTPAddr, "/allocations/"+consumer, map[string]any{
					"allocations": map[string]any{rp: map[string]any{"resources": map[string]int{"VCPU": 1}}},
					"project_id":  "p", "user_id": "u", "consumer_generation": nil,
				}, false)
				mu.Lock()
				if err != nil {
					code = -1
				}
				outcomes[code]++
				if code == 204 {
					acked[consumer] = true
				}
				// A definite answer to a write sent after the kill.
				if (code == 204 || code == 409) && !killedAt.IsZero() && sent.After(killedAt) && servedAgain < 0 {
					servedAgain = time.Since(killedAt)
				}
				mu.Unlock()
			}
		}(w)
	}

	// Kill the leader once claims are flowing, restart it once the
	// others serve writes without it.
	testcluster.WaitFor(t, 60*time.Second, "claims flowing", func() error {
		mu.Lock()
		defer mu.Unlock()
		return testcluster.Check(len(acked) >= 60, "%d acknowledged", len(acked))
	})
	leader := c.Leader()
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	c.Kill(leader)
	t.Logf("SIGKILLed leader %s", leader.ID)
	testcluster.WaitFor(t, 30*time.Second, "writes served again without "+leader.ID, func() error {
		mu.Lock()
		defer mu.Unlock()
		return testcluster.Check(servedAgain >= 0, "none yet")
	})
	c.Restart(leader)
	wg.Wait()
	mu.Lock()
	t.Logf("outcomes: %v; %d acknowledged; writes served again %s after the kill", outcomes, len(acked), servedAgain)
	if servedAgain < 0 || servedAgain > 5*time.Second {
		t.Errorf("writes were not served again within 5 s of the kill (%s)", servedAgain)
	}
	mu.Unlock()

	// Every node holds the same state...
	digest := c.Converged()
	t.Logf("converged at %s", digest)
	// ... with every acknowledged claim, and no more than the capacity.
	for _, n := range nodes {
		code, body, err := placement("GET", n.HTTPAddr, "/resource_providers/"+rp+"/allocations", nil, true)
		if err != nil || code != 200 {
			t.Fatalf("allocations on %s: %d %v", n.ID, code, err)
		}
		var allocs struct {
			Allocations map[string]struct {
				Resources map[string]int `json:"resources"`
			} `json:"allocations"`
		}
		if err := json.Unmarshal(body, &allocs); err != nil {
			t.Fatal(err)
		}
		used := 0
		for _, a := range allocs.Allocations {
			used += a.Resources["VCPU"]
		}
		missing := 0
		for c := range acked {
			if _, ok := allocs.Allocations[c]; !ok {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%s lacks %d of %d acknowledged claims", n.ID, missing, len(acked))
		}
		if used > capacity {
			t.Errorf("%s: %d VCPU allocated of %d", n.ID, used, capacity)
		}
		code, body, _ = placement("GET", n.HTTPAddr, "/resource_providers/"+rp+"/usages", nil, true)
		var usages struct {
			Usages map[string]int `json:"usages"`
		}
		json.Unmarshal(body, &usages)
		if code != 200 || usages.Usages["VCPU"] != used {
			t.Errorf("%s: usages %d %s, allocations sum %d", n.ID, code, body, used)
		}
		t.Logf("%s: %d claims, %d VCPU of %d", n.ID, len(allocs.Allocations), used, capacity)
	}
	if outcomes[409] == 0 {
		t.Errorf("capacity was never reached: %v", outcomes)
	}

	// Back up through a follower with the CLI, seed a new cluster with
	// it, and compare: same digest, same answers.
	backup := filepath.Join(dir, "backup.snap")
	follower := c.Followers()[0]
	run(t, bin, "snapshot", "save", backup, "--addr", follower.HTTPAddr, "--cluster-secret", secret)
	seeded := testcluster.NewProcs(t, bin)
	fresh := seeded.Add("r1")
	run(t, bin, "snapshot", "restore", backup, "--data-dir", fresh.DataDir, "--node-id", "r1")
	seeded.Start(fresh)
	restored := seeded.Converged()
	if restored != digest {
		t.Errorf("restored cluster digest %s, original %s", restored, digest)
	}
	for _, path := range []string{"/resource_providers/" + rp + "/allocations", "/resource_providers/" + rp + "/usages",
		"/resource_providers", "/resource_providers/" + rp + "/inventories", "/resource_classes", "/usages?project_id=p"} {
		c1, b1, _ := placement("GET", follower.HTTPAddr, path, nil, false)
		c2, b2, _ := placement("GET", fresh.HTTPAddr, path, nil, false)
		if c1 != c2 || !bytes.Equal(b1, b2) {
			t.Errorf("GET %s: original %d %.200s, restored %d %.200s", path, c1, b1, c2, b2)
		}
	}
}

func run(t *testing.T, bin string, args ...string) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("placementd %v: %v\n%s", args, err, out)
	}
	t.Logf("placementd %s: %s", args[:2], bytes.TrimSpace(out))
}

// TestIntegrationGracefulLeaderStop stops the leader with SIGTERM while
// claims flow through the followers: none of them fails, the leader
// hands over and leaves, and joins again when restarted.
func TestIntegrationGracefulLeaderStop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs placementd processes")
	}
	c := testcluster.StartProcs(t, testcluster.Binary(t), 3)
	leader := c.Leader()
	followers := c.Nodes.Except(leader)
	rp := uuid.NewString()
	if code, body, err := placement("POST", followers[0].HTTPAddr, "/resource_providers", map[string]any{"name": "rp", "uuid": rp}, false); err != nil || code != 200 {
		t.Fatalf("create provider: %d %s %v", code, body, err)
	}
	if code, body, err := placement("PUT", followers[1].HTTPAddr, "/resource_providers/"+rp+"/inventories",
		map[string]any{"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": 100000}}}, false); err != nil || code != 200 {
		t.Fatalf("set inventory: %d %s %v", code, body, err)
	}

	var mu sync.Mutex
	outcomes := map[string]int{}
	sent := func() int {
		mu.Lock()
		defer mu.Unlock()
		total := 0
		for _, n := range outcomes {
			total += n
		}
		return total
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				code, body, err := placement("PUT", followers[(w+i)%2].HTTPAddr, "/allocations/"+uuid.NewString(), map[string]any{
					"allocations": map[string]any{rp: map[string]any{"resources": map[string]int{"VCPU": 1}}},
					"project_id":  "p", "user_id": "u", "consumer_generation": nil,
				}, false)
				key := strconv.Itoa(code)
				if err != nil {
					key = err.Error()
				} else if code != 204 {
					key += " " + string(body)
				}
				mu.Lock()
				outcomes[key]++
				mu.Unlock()
			}
		}(w)
	}
	testcluster.WaitFor(t, 30*time.Second, "claims flowing before the stop", func() error {
		return testcluster.Check(sent() >= 20, "%d claims answered", sent())
	})
	if err := leader.Stop(30 * time.Second); err != nil {
		t.Error(err)
	}
	if err := leader.LastExit(); err != nil {
		t.Errorf("the leader exited with %v after SIGTERM", err)
	}
	// Claims go on through the followers after the leader left.
	afterStop := sent()
	testcluster.WaitFor(t, 30*time.Second, "claims answered after the stop", func() error {
		return testcluster.Check(sent() >= afterStop+20, "%d claims answered since", sent()-afterStop)
	})
	close(stop)
	wg.Wait()
	t.Logf("outcomes: %v", outcomes)
	for k, n := range outcomes {
		if k != "204" {
			t.Errorf("%d claims through followers answered %s", n, k)
		}
	}
	c.Healthy(2) // the stopped leader left
	// Restarted without --join, it joins again through the peers it
	// remembered.
	c.Restart(leader)
	c.Healthy(3)
	c.Converged()
}
