package cluster_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/placementd/placementd/internal/testcluster"
	"github.com/placementd/placementd/internal/wanlab"
)

// labCluster starts n placementd processes in a WAN lab, each in its own
// namespace, plus a "client" host and a "ctl" host (no delay, for status
// polls), or skips the test where no lab can run.
func labCluster(t *testing.T, n int, args ...string) (*wanlab.Lab, *testcluster.ProcCluster) {
	t.Helper()
	if testing.Short() || os.Getenv("PLACEMENTD_WANLAB") == "off" {
		t.Skip("the WAN lab is left out (-short or PLACEMENTD_WANLAB=off)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the WAN lab needs root (network namespaces, iptables)")
	}
	dir := t.TempDir()
	delayer, err := wanlab.BuildDelayer(dir)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := wanlab.New(delayer)
	if errors.Is(err, wanlab.ErrUnavailable) {
		t.Skipf("skipping: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lab.Close() })
	c := testcluster.NewProcs(t, testcluster.Binary(t))
	c.Args = append([]string{"--leave-on-shutdown=false"}, args...)
	ctl, err := lab.AddHost("ctl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lab.AddHost("client"); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= n; i++ {
		h, err := lab.AddHost(fmt.Sprintf("n%d", i))
		if err != nil {
			t.Fatal(err)
		}
		c.Grow(c.AddLab(h, ctl.HTTPClient()))
	}
	c.Healthy(n)
	return lab, c
}

// A leader cut off by a partition never answers what it was forwarded:
// the forwarding follower gives up on it once it sees a new leader, so a
// read is answered by the new leader and a write gets its 503 (unknown
// outcome) within an election, not when the client gives up.
func TestForwardingGivesUpOnCutOffLeader(t *testing.T) {
	lab, c := labCluster(t, 3, "--raft-timing-multiplier", "0.5")
	nodes := c.Nodes
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if err := lab.SetRTT(a.ID, b.ID, 40*time.Millisecond, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	st := c.Healthy(3)
	var leader, via *testcluster.Proc
	var others []string
	for _, n := range nodes {
		if n.ID == st.Leader {
			leader = n
		} else {
			via = n
			others = append(others, n.ID)
		}
	}
	hc := lab.Host("client").HTTPClient()
	hc.Timeout = 30 * time.Second
	send := func(method, path string, body []byte) (int, time.Duration, error) {
		req, _ := http.NewRequest(method, "http://"+via.HTTPAddr+path, bytes.NewReader(body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		req.Header.Set("Content-Type", "application/json")
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			return 0, time.Since(start), err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, time.Since(start), nil
	}

	// The leader and its region are cut off from the others and the
	// client; ctl, in no group, still sees everyone.
	if err := lab.Partition([]string{leader.ID}, append(others, "client")); err != nil {
		t.Fatal(err)
	}
	type result struct {
		what string
		code int
		took time.Duration
		err  error
	}
	results := make(chan result, 2)
	go func() {
		u := uuid.NewString()
		code, took, err := send(http.MethodPost, "/resource_providers", fmt.Appendf(nil, `{"uuid": %q, "name": %q}`, u, u))
		results <- result{"write", code, took, err}
	}()
	go func() {
		code, took, err := send(http.MethodGet, "/resource_providers", nil)
		results <- result{"read", code, took, err}
	}()
	for range 2 {
		r := <-results
		t.Logf("%s through %s after cutting off %s: %d in %v (%v)", r.what, via.ID, leader.ID, r.code, r.took.Round(time.Millisecond), r.err)
		if r.err != nil {
			t.Fatalf("the %s through a follower waited for the cut-off leader: %v after %v", r.what, r.err, r.took)
		}
		want := r.code == http.StatusOK || r.what == "write" && r.code == http.StatusServiceUnavailable
		if !want || r.took > 10*time.Second {
			t.Errorf("the %s answered %d after %v: want 200 (or 503 for the write) within an election", r.what, r.code, r.took)
		}
	}
	if err := lab.Heal(); err != nil {
		t.Fatal(err)
	}
}
