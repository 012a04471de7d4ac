package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/cluster"
)

// procNode is one placementd process of the integration test.
type procNode struct {
	id, httpAddr, raftAddr, dataDir string
	join                            string
	cmd                             *exec.Cmd
	log                             *os.File
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func buildBinary(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "placementd")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/placementd/placementd/cmd/placementd")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

func (p *procNode) start(t *testing.T, bin string) {
	t.Helper()
	args := []string{"serve", "--node-id", p.id, "--http-addr", p.httpAddr, "--raft-addr", p.raftAddr,
		"--data-dir", p.dataDir, "--cluster-secret", secret, "--log-level", "warn"}
	if p.join != "" {
		args = append(args, "--join", p.join)
	}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
}

func (p *procNode) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.cmd.Wait()
		p.cmd = nil
	}
}

// claimClient sends Placement requests with short timeouts.
var claimClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 32}}

func placement(method, addr, path string, body any, stale bool) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+addr+path, rd)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.36")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if stale {
		req.Header.Set(cluster.StaleReadHeader, "true")
	}
	resp, err := claimClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, raw, err
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
	bin := buildBinary(t)
	dir := t.TempDir()
	nodes := startProcs(t, bin, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	status := waitHealthy(t, ctx, nodes, 3)
	t.Logf("cluster up: leader %s", status.Leader)

	// A provider with room for `capacity` claims of one VCPU.
	const capacity = 300
	rp := uuid.NewString()
	if code, body, err := placement("POST", nodes[1].httpAddr, "/resource_providers", map[string]any{"name": "rp", "uuid": rp}, false); err != nil || code != 200 {
		t.Fatalf("create provider: %d %s %v", code, body, err)
	}
	if code, body, err := placement("PUT", nodes[2].httpAddr, "/resource_providers/"+rp+"/inventories",
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
				code, _, err := placement("PUT", n.httpAddr, "/allocations/"+consumer, map[string]any{
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

	// Kill the leader once claims are flowing, restart it 3 s later.
	for {
		mu.Lock()
		n := len(acked)
		mu.Unlock()
		if n >= 60 {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("claims did not start")
		}
		time.Sleep(5 * time.Millisecond)
	}
	var leader *procNode
	for _, n := range nodes {
		if n.id == leaderOf(t, ctx, nodes).Leader {
			leader = n
		}
	}
	mu.Lock()
	killedAt = time.Now()
	mu.Unlock()
	leader.kill()
	t.Logf("SIGKILLed leader %s", leader.id)
	time.Sleep(3 * time.Second)
	leader.start(t, bin)
	wg.Wait()
	mu.Lock()
	t.Logf("outcomes: %v; %d acknowledged; writes served again %s after the kill", outcomes, len(acked), servedAgain)
	if servedAgain < 0 || servedAgain > 5*time.Second {
		t.Errorf("writes were not served again within 5 s of the kill (%s)", servedAgain)
	}
	mu.Unlock()

	// Every node holds the same state...
	digest := waitConverged(t, ctx, nodes)
	t.Logf("converged at %s", digest)
	// ... with every acknowledged claim, and no more than the capacity.
	for _, n := range nodes {
		code, body, err := placement("GET", n.httpAddr, "/resource_providers/"+rp+"/allocations", nil, true)
		if err != nil || code != 200 {
			t.Fatalf("allocations on %s: %d %v", n.id, code, err)
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
			t.Errorf("%s lacks %d of %d acknowledged claims", n.id, missing, len(acked))
		}
		if used > capacity {
			t.Errorf("%s: %d VCPU allocated of %d", n.id, used, capacity)
		}
		code, body, _ = placement("GET", n.httpAddr, "/resource_providers/"+rp+"/usages", nil, true)
		var usages struct {
			Usages map[string]int `json:"usages"`
		}
		json.Unmarshal(body, &usages)
		if code != 200 || usages.Usages["VCPU"] != used {
			t.Errorf("%s: usages %d %s, allocations sum %d", n.id, code, body, used)
		}
		t.Logf("%s: %d claims, %d VCPU of %d", n.id, len(allocs.Allocations), used, capacity)
	}
	if outcomes[409] == 0 {
		t.Errorf("capacity was never reached: %v", outcomes)
	}

	// Back up through a follower with the CLI, seed a new cluster with
	// it, and compare: same digest, same answers.
	backup := filepath.Join(dir, "backup.snap")
	var follower *procNode
	for _, n := range nodes {
		if n.id != leaderOf(t, ctx, nodes).Leader {
			follower = n
		}
	}
	run(t, bin, "snapshot", "save", backup, "--addr", follower.httpAddr, "--cluster-secret", secret)
	fresh := &procNode{id: "r1", httpAddr: freePort(t), raftAddr: freePort(t), dataDir: filepath.Join(dir, "r1"), log: nodes[0].log}
	run(t, bin, "snapshot", "restore", backup, "--data-dir", fresh.dataDir, "--node-id", "r1")
	fresh.start(t, bin)
	defer fresh.kill()
	restored := waitConverged(t, ctx, []*procNode{fresh})
	if restored != digest {
		t.Errorf("restored cluster digest %s, original %s", restored, digest)
	}
	for _, path := range []string{"/resource_providers/" + rp + "/allocations", "/resource_providers/" + rp + "/usages",
		"/resource_providers", "/resource_providers/" + rp + "/inventories", "/resource_classes", "/usages?project_id=p"} {
		c1, b1, _ := placement("GET", follower.httpAddr, path, nil, false)
		c2, b2, _ := placement("GET", fresh.httpAddr, path, nil, false)
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

// startProcs starts p1 (a new cluster) and p2, p3 joining it.
func startProcs(t *testing.T, bin, dir string) []*procNode {
	nodes := make([]*procNode, 3)
	for i := range nodes {
		id := fmt.Sprintf("p%d", i+1)
		logf, err := os.Create(filepath.Join(dir, id+".log"))
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = &procNode{id: id, httpAddr: freePort(t), raftAddr: freePort(t),
			dataDir: filepath.Join(dir, id), log: logf}
		if i > 0 {
			nodes[i].join = nodes[0].httpAddr
		}
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			n.kill()
			n.log.Close()
		}
		if t.Failed() {
			for _, n := range nodes {
				b, _ := os.ReadFile(n.log.Name())
				t.Logf("--- log of %s:\n%s", n.id, b)
			}
		}
	})
	for _, n := range nodes {
		n.start(t, bin)
	}
	return nodes
}

// TestIntegrationGracefulLeaderStop stops the leader with SIGTERM while
// claims flow through the followers: none of them fails, the leader
// hands over and leaves, and joins again when restarted.
func TestIntegrationGracefulLeaderStop(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs placementd processes")
	}
	bin := buildBinary(t)
	nodes := startProcs(t, bin, t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := waitHealthy(t, ctx, nodes, 3)
	var leader *procNode
	var followers []*procNode
	for _, n := range nodes {
		if n.id == st.Leader {
			leader = n
		} else {
			followers = append(followers, n)
		}
	}
	rp := uuid.NewString()
	if code, body, err := placement("POST", followers[0].httpAddr, "/resource_providers", map[string]any{"name": "rp", "uuid": rp}, false); err != nil || code != 200 {
		t.Fatalf("create provider: %d %s %v", code, body, err)
	}
	if code, body, err := placement("PUT", followers[1].httpAddr, "/resource_providers/"+rp+"/inventories",
		map[string]any{"resource_provider_generation": 0, "inventories": map[string]any{"VCPU": map[string]any{"total": 100000}}}, false); err != nil || code != 200 {
		t.Fatalf("set inventory: %d %s %v", code, body, err)
	}

	var mu sync.Mutex
	outcomes := map[string]int{}
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
				code, body, err := placement("PUT", followers[(w+i)%2].httpAddr, "/allocations/"+uuid.NewString(), map[string]any{
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
	time.Sleep(time.Second)
	leader.cmd.Process.Signal(syscall.SIGTERM)
	err := leader.cmd.Wait()
	leader.cmd = nil
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	if err != nil {
		t.Errorf("the leader exited with %v after SIGTERM", err)
	}
	t.Logf("outcomes: %v", outcomes)
	for k, n := range outcomes {
		if k != "204" {
			t.Errorf("%d claims through followers answered %s", n, k)
		}
	}
	st = waitHealthy(t, ctx, followers, 2)
	if len(st.Members) != 2 {
		t.Errorf("the stopped leader did not leave: %+v", st.Members)
	}
	// Restarted without --join, it joins again through the peers it
	// remembered.
	leader.start(t, bin)
	waitHealthy(t, ctx, nodes, 3)
	waitConverged(t, ctx, nodes)
}

func leaderOf(t *testing.T, ctx context.Context, nodes []*procNode) cluster.ClusterStatus {
	t.Helper()
	for ctx.Err() == nil {
		for _, n := range nodes {
			c := &cluster.Client{Addr: n.httpAddr, Secret: secret}
			st, err := c.Status(ctx)
			if err == nil && st.Leader != "" {
				return st
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no leader")
	return cluster.ClusterStatus{}
}

// waitHealthy waits until the cluster reports want healthy members.
func waitHealthy(t *testing.T, ctx context.Context, nodes []*procNode, want int) cluster.ClusterStatus {
	t.Helper()
	var last cluster.ClusterStatus
	for ctx.Err() == nil {
		last = leaderOf(t, ctx, nodes)
		healthy := 0
		for _, m := range last.Members {
			if m.Healthy {
				healthy++
			}
		}
		if healthy == want {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("cluster not healthy: %+v", last)
	return last
}

// waitConverged waits until all nodes report the same digest at the same
// state index.
func waitConverged(t *testing.T, ctx context.Context, nodes []*procNode) string {
	t.Helper()
	var seen map[string]string
	for ctx.Err() == nil {
		seen = map[string]string{}
		keys := map[string]bool{}
		for _, n := range nodes {
			st, err := (&cluster.Client{Addr: n.httpAddr, Secret: secret}).Self(ctx)
			key := "unreachable"
			if err == nil {
				key = st.Digest + "@" + strconv.FormatUint(st.StateIndex, 10)
			}
			seen[n.id] = key
			keys[key] = true
		}
		if len(keys) == 1 && seen[nodes[0].id] != "unreachable" {
			return seen[nodes[0].id]
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("nodes did not converge: %v", seen)
	return ""
}
