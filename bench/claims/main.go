package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/cluster/front"
)

const secret = "bench"

func main() {
	var (
		bin         = flag.String("bin", "", "placementd binary (default: build it)")
		nodes       = flag.Int("nodes", 3, "cluster size")
		duration    = flag.Duration("duration", 10*time.Second, "how long to make claims")
		concurrency = flag.Int("concurrency", 32, "concurrent clients")
		providers   = flag.Int("providers", 20, "providers to claim against")
		leaderOnly  = flag.Bool("leader-only", false, "send every claim to the leader instead of spreading them")
		reads       = flag.Bool("reads", false, "make linearizable reads (GET /resource_providers/{uuid}) instead of claims: the read barrier's cost")
	)
	flag.Parse()
	dir, err := os.MkdirTemp("", "placementd-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if *bin == "" {
		*bin = filepath.Join(dir, "placementd")
		cmd := exec.Command("go", "build", "-o", *bin, "github.com/placementd/placementd/cmd/placementd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("go build: %v\n%s", err, out)
		}
	}

	addrs := startCluster(*bin, dir, *nodes)
	defer stopCluster()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	leader := waitCluster(ctx, addrs, *nodes)
	targets := addrs
	if *leaderOnly {
		targets = []string{leader}
	}

	rps := make([]string, *providers)
	for i := range rps {
		rps[i] = uuid.NewString()
		must(call("POST", addrs[0], "/resource_providers", map[string]any{"name": "bench-" + rps[i], "uuid": rps[i]}, 200))
		must(call("PUT", addrs[0], "/resource_providers/"+rps[i]+"/inventories", map[string]any{
			"resource_provider_generation": 0,
			"inventories":                  map[string]any{"VCPU": map[string]any{"total": 1 << 30}, "MEMORY_MB": map[string]any{"total": 1 << 30}},
		}, 200))
	}

	var (
		mu        sync.Mutex
		latencies []time.Duration
		failed    int
	)
	stop := time.Now().Add(*duration)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < *concurrency; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for i := 0; time.Now().Before(stop); i++ {
				rp := rps[(w+i)%len(rps)]
				t0 := time.Now()
				var err error
				if *reads {
					err = call("GET", targets[(w+i)%len(targets)], "/resource_providers/"+rp, nil, 200)
				} else {
					err = call("PUT", targets[(w+i)%len(targets)], "/allocations/"+uuid.NewString(), map[string]any{
						"allocations": map[string]any{rp: map[string]any{"resources": map[string]int{"VCPU": 1, "MEMORY_MB": 512}}},
						"project_id":  "bench", "user_id": "bench", "consumer_generation": nil,
					}, 204)
				}
				if err != nil {
					bad++
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			failed += bad
			mu.Unlock()
		}(w)
	}
	wg.Wait()
	elapsed := time.Since(start)
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[int(float64(len(latencies)-1)*p)]
	}
	mode := "spread over all nodes"
	if *leaderOnly {
		mode = "to the leader"
	}
	what := "claims"
	if *reads {
		what = "reads"
	}
	fmt.Printf("nodes=%d concurrency=%d (%s): %d %s in %.1fs = %.0f %s/s; latency p50 %.1fms p99 %.1fms; %d failed\n",
		*nodes, *concurrency, mode, len(latencies), what, elapsed.Seconds(), float64(len(latencies))/elapsed.Seconds(), what,
		ms(pct(0.50)), ms(pct(0.99)), failed)
	// CPU per claim of each process (setup included): on a small machine
	// the nodes compete for the same cores.
	stopCluster()
	for i, p := range procs {
		cpu := p.ProcessState.UserTime() + p.ProcessState.SystemTime()
		fmt.Printf("  node b%d: %.1fs CPU, %.0fus per operation\n", i+1, cpu.Seconds(), float64(cpu.Microseconds())/float64(max(len(latencies), 1)))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

var procs []*exec.Cmd

func startCluster(bin, dir string, n int) []string {
	var addrs []string
	for i := 0; i < n; i++ {
		httpAddr, raftAddr := freePort(), freePort()
		args := []string{"serve", "--node-id", fmt.Sprintf("b%d", i+1), "--http-addr", httpAddr, "--raft-addr", raftAddr,
			"--data-dir", filepath.Join(dir, fmt.Sprintf("b%d", i+1)), "--cluster-secret", secret, "--log-level", "error"}
		if i > 0 {
			args = append(args, "--join", addrs[0])
		}
		cmd := exec.Command(bin, args...)
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		procs = append(procs, cmd)
		addrs = append(addrs, httpAddr)
	}
	return addrs
}

// stopCluster kills the cluster's processes.
func stopCluster() {
	for _, p := range procs {
		if p.ProcessState == nil {
			p.Process.Signal(syscall.SIGKILL)
			p.Wait()
		}
	}
}

func must(err error) {
	if err != nil {
		stopCluster()
		log.Fatal(err)
	}
}

func freePort() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// waitCluster waits for n healthy members and returns the leader's API
// address.
func waitCluster(ctx context.Context, addrs []string, n int) string {
	for ctx.Err() == nil {
		st, err := (&front.Client{Addr: addrs[0], Secret: secret}).Status(ctx)
		if err == nil {
			healthy, leader := 0, ""
			for _, m := range st.Members {
				if m.Healthy {
					healthy++
				}
				if m.Leader {
					leader = m.HTTPAddr
				}
			}
			if healthy == n && leader != "" {
				return leader
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	must(fmt.Errorf("cluster of %d did not come up", n))
	return ""
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func call(method, addr, path string, body any, want int) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, "http://"+addr+path, rd)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.36")
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, raw)
	}
	return nil
}
