package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/placementd/placementd/httpapi/httpguard"
	"github.com/placementd/placementd/internal/testcluster"
)

// openFDs counts the file descriptors of the placementd process whose
// command line names nodeDir (-1: none found).
func openFDs(t *testing.T, nodeDir string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !containsArg(b, nodeDir) {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join(filepath.Dir(p), "fd"))
		return len(fds)
	}
	return -1
}

func containsArg(cmdline []byte, arg string) bool {
	start := 0
	for i, c := range cmdline {
		if c == 0 {
			if string(cmdline[start:i]) == arg {
				return true
			}
			start = i + 1
		}
	}
	return false
}

// idleConns opens n connections to addr that send nothing, closed when
// the test ends, and returns them.
func idleConns(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	for i := range conns {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatalf("connection to %s: %v", addr, err)
		}
		conns[i] = c
	}
	return conns
}

// Idle connections flooding --metrics-addr take at most its own small cap,
// not file descriptors the API needs: with an open-files limit of 2048
// (the API's cap then 1024), 1100 idle connections to the metrics
// listener and 1020 to the API (4 short of its cap) leave the API answering. Before, the
// metrics listener had the API's cap: both together passed the limit,
// accept failed with "too many open files" and a plain GET timed out.
func TestMetricsFloodLeavesTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: builds and runs placementd processes")
	}
	c := testcluster.NewProcs(t, testcluster.Binary(t))
	n := c.Add("n1")
	metricsAddr, err := testcluster.FreeAddr("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	// Idle connections are closed at the header timeout: a long one keeps
	// the flood in place while the test looks.
	n.Args = append(n.Args, "--metrics-addr", metricsAddr, "--http-read-header-timeout", "2m")
	n.Exec = []string{"prlimit", "--nofile=2048:2048"}
	c.Start(n)
	c.Healthy(1)

	// The listener takes connections in order and refuses those past its
	// cap: once the last is refused, the cap is full.
	flood := idleConns(t, metricsAddr, 1100)
	last := flood[len(flood)-1]
	last.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.ReadAll(last); err != nil {
		t.Fatalf("the metrics listener kept its 1100th connection: %v", err)
	}
	flood = append(flood, idleConns(t, n.HTTPAddr, 1020)...)
	// A new connection: the health checks left one open.
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	testcluster.WaitFor(t, 30*time.Second, "the flood accepted", func() error {
		if fds := openFDs(t, n.DataDir); fds < 1020+httpguard.SideMaxConns {
			return fmt.Errorf("placementd holds %d file descriptors", fds)
		}
		return nil
	})
	resp, err := hc.Get("http://" + n.HTTPAddr + "/")
	if err != nil {
		t.Fatalf("GET / under the flood: %v (placementd holds %d file descriptors)", err, openFDs(t, n.DataDir))
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET / under the flood: %d", resp.StatusCode)
	}
	t.Logf("1100 idle connections to --metrics-addr, 1020 to the API: GET / %d; placementd holds %d file descriptors (limit 2048)",
		resp.StatusCode, openFDs(t, n.DataDir))
	runtime.KeepAlive(flood)
}
