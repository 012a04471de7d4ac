package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/metrics"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// hostileServer serves the API of a single-node cluster (in-memory Raft)
// the way runNode does: flags parsed by serveFlags, the listener stack of
// apiListener and the servers' limits, on a loopback port. It returns the
// address and the node's metrics.
func hostileServer(t *testing.T, args ...string) (string, *metrics.Metrics) {
	t.Helper()
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	limits, err := c.httpLimits.limits(c.requestTimeout)
	if err != nil {
		t.Fatal(err)
	}
	_, trans := raft.NewInmemTransport("")
	node, err := cluster.Open(cluster.Config{NodeID: "n1", InMemory: true, Transport: trans, Bootstrap: true,
		Logger: hclog.NewNullLogger()}, fsm.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	mtr := metrics.New()
	apiCfg := httpapi.Config{Logger: slog.New(slog.DiscardHandler), Observer: mtr, RequestTimeout: c.requestTimeout}
	c.httpLimits.apiLimits(&apiCfg)
	api := httpapi.New(node, apiCfg)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := limits.Server(api)
	go srv.Serve(apiListener(ln, limits, nil, mtr))
	t.Cleanup(func() {
		srv.Close()
		node.Shutdown()
	})
	return ln.Addr().String(), mtr
}

// metricValue is the value of the metric name (with the label
// label=value when label is not empty) in m's registry.
func metricValue(t *testing.T, m *metrics.Metrics, name, label, value string) float64 {
	t.Helper()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			match := label == ""
			for _, l := range s.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case s.Gauge != nil:
				return s.GetGauge().GetValue()
			case s.Counter != nil:
				return s.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("metric %s{%s=%q} not found", name, label, value)
	return 0
}

// raiseFileLimit raises the open-files limit to n, or skips the test.
func raiseFileLimit(t *testing.T, n uint64) {
	t.Helper()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("reading RLIMIT_NOFILE: %v", err)
	}
	if rl.Cur >= n {
		return
	}
	old := rl
	rl.Cur = n
	if rl.Max < n {
		rl.Max = n
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Skipf("needs RLIMIT_NOFILE %d (now %d, hard %d), which cannot be raised here (%v): run it with -hostile-conns %d",
			n, old.Cur, old.Max, err, (old.Max-1500)/2/100*100)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}

// hostileConns is how many connections TestHostileConnections holds. The
// test process holds both ends, so it needs an open-files limit of twice
// that and more; where it cannot raise its limit so far, the test skips,
// and -hostile-conns runs it with fewer:
//
//	go test ./cmd/placementd -run TestHostileConnections -hostile-conns 9000
var hostileConns = flag.Int("hostile-conns", 20000, "connections TestHostileConnections holds")

// TestHostileConnections holds 20,000 hostile connections to the API, as
// many idle keep-alive ones (a request answered, then nothing) as ones
// that announce a body and stall, from 20 client addresses: a normal
// client is served while they are all open, and the idle and read
// timeouts close every one of them. Before the timeouts (only a header
// timeout), none was ever closed. The timeouts are 30 s here so that the
// 20,000 connections can all be opened, on a loaded machine, before the
// first may be closed.
func TestHostileConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("holds 20,000 connections for about a minute")
	}
	perKind, addrs := *hostileConns/2, 20
	raiseFileLimit(t, uint64(2*2*perKind+1500))
	addr, mtr := hostileServer(t, "--http-idle-timeout", "30s", "--http-read-timeout", "30s", "--http-read-header-timeout", "30s")

	// Every hostile connection ends by reading until the server closes it;
	// closed counts those that saw the end.
	var closed atomic.Int64
	var wg sync.WaitGroup
	opened := make(chan error, 2*perKind)
	var conns sync.Map
	// A few are opened at a time: a bounded number of dials and first
	// requests in flight.
	sem := make(chan struct{}, 64)
	hostile := func(i int, stall bool) {
		defer wg.Done()
		var once sync.Once
		openDone := func(err error) { once.Do(func() { opened <- err; <-sem }) }
		defer openDone(nil)
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, byte(2+i%addrs))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			openDone(err)
			return
		}
		conns.Store(c, true)
		defer c.Close()
		r := bufio.NewReader(c)
		if stall {
			// A body announced and never finished: the handler waits in
			// its read.
			_, err = fmt.Fprintf(c, "PUT /resource_classes/CUSTOM_X%d HTTP/1.1\r\nHost: x\r\nX-Auth-Token: admin\r\n"+
				"OpenStack-API-Version: placement 1.7\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"na", i)
		} else {
			_, err = io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
			if err == nil {
				var resp *http.Response
				if resp, err = http.ReadResponse(r, nil); err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}
		}
		openDone(err)
		if err != nil {
			return
		}
		// Idle (or stalled) from here: whatever the server still sends
		// (the stalled body's 408), then the end.
		c.SetReadDeadline(time.Now().Add(3 * time.Minute))
		if _, err := io.Copy(io.Discard, r); err == nil || !errors.Is(err, syscall.ETIMEDOUT) && !isTimeout(err) {
			closed.Add(1)
		}
	}
	for i := range 2 * perKind {
		wg.Add(1)
		sem <- struct{}{}
		go hostile(i, i%2 == 1)
	}
	t.Cleanup(func() {
		conns.Range(func(c, _ any) bool { c.(net.Conn).Close(); return true })
		wg.Wait()
	})
	for range 2 * perKind {
		if err := <-opened; err != nil {
			t.Fatalf("opening a hostile connection: %v", err)
		}
	}
	open := metricValue(t, mtr, "placementd_http_connections_open", "", "")
	t.Logf("%d hostile connections open (server side: %.0f)", 2*perKind, open)
	if open < float64(2*perKind) {
		t.Fatalf("only %.0f of the %d hostile connections are still open: opening them took longer than the 30 s timeouts", open, 2*perKind)
	}

	// A normal client is served meanwhile.
	client := &http.Client{Timeout: 30 * time.Second}
	for _, name := range []string{"CUSTOM_NORMAL_A", "CUSTOM_NORMAL_B"} {
		req, _ := http.NewRequest(http.MethodPut, "http://"+addr+"/resource_classes/"+name, nil)
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement 1.7")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("normal client, with %d hostile connections open: %v", 2*perKind, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("normal client: PUT %s: %d, want 201", name, resp.StatusCode)
		}
	}
	t.Logf("normal client served with %.0f connections open", metricValue(t, mtr, "placementd_http_connections_open", "", ""))

	// The timeouts close every hostile connection.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Minute):
		t.Fatalf("after 3 minutes, %d of %d hostile connections were closed by the server", closed.Load(), 2*perKind)
	}
	if n := closed.Load(); n != int64(2*perKind) {
		t.Fatalf("%d of %d hostile connections were closed by the server", n, 2*perKind)
	}
	testcluster.WaitFor(t, 30*time.Second, "the server counts no open connection", func() error {
		n := metricValue(t, mtr, "placementd_http_connections_open", "", "")
		return testcluster.Check(n == 0, "%.0f open", n)
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestConnectionCaps: past --http-max-connections-per-ip from one
// address, and past --http-max-connections in all, a new connection is
// answered 503 placement.server.busy with Retry-After and closed, and
// counted; a connection closed gives its place back.
func TestConnectionCaps(t *testing.T) {
	addr, mtr := hostileServer(t, "--http-max-connections", "6", "--http-max-connections-per-ip", "3")
	dial := func(ip byte) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, ip)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	// get sends a request on c and returns the status line and the body.
	get := func(c net.Conn) (string, string) {
		c.SetDeadline(time.Now().Add(30 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("503 without Retry-After: %v", resp.Header)
		}
		return resp.Status, string(body)
	}
	var held []net.Conn
	for range 3 {
		c := dial(2)
		if status, _ := get(c); status != "200 OK" {
			t.Fatalf("connection within the caps: %s", status)
		}
		held = append(held, c)
	}
	status, body := get(dial(2))
	if status != "503 Service Unavailable" || !strings.Contains(body, `"code": "placement.server.busy"`) {
		t.Fatalf("4th connection from one address: %s %s", status, body)
	}
	if n := metricValue(t, mtr, "placementd_http_connections_refused_total", "reason", "ip_limit"); n != 1 {
		t.Errorf("ip_limit refusals counted: %v, want 1", n)
	}
	for range 3 {
		c := dial(3)
		if status, _ := get(c); status != "200 OK" {
			t.Fatalf("connection from a second address: %s", status)
		}
	}
	if status, _ := get(dial(4)); status != "503 Service Unavailable" {
		t.Fatalf("7th connection: %s, want 503", status)
	}
	if n := metricValue(t, mtr, "placementd_http_connections_refused_total", "reason", "node_limit"); n != 1 {
		t.Errorf("node_limit refusals counted: %v, want 1", n)
	}
	// A closed connection gives its place back (once the server saw it).
	held[0].Close()
	testcluster.WaitFor(t, 30*time.Second, "the closed connection no longer counted", func() error {
		n := metricValue(t, mtr, "placementd_http_connections_open", "", "")
		return testcluster.Check(n <= 5, "%.0f open", n)
	})
	if status, _ := get(dial(4)); status != "200 OK" {
		t.Fatalf("after a close: %s, want 200", status)
	}
}
