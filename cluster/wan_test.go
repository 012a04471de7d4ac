package cluster_test

import (
	"bytes"
	"context"
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
// the forwarding follower gives up on it once its own Raft gives up on
// that leader, so a read is answered by the new leader and a write gets
// its 503 (unknown outcome) within an election, before the new leader is
// known, not when the client gives up.
func TestForwardingGivesUpOnCutOffLeader(t *testing.T) {
	lab, c := labCluster(t, 3, "--raft-timing-multiplier", "0.5", "--raft-leader-lease-timeout", "400ms")
	const rtt = 150 * time.Millisecond
	nodes := c.Nodes
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if err := lab.SetRTT(a.ID, b.ID, rtt, 0); err != nil {
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

	// A write through via first: via then holds an open connection to
	// the leader's API, as a follower that forwards does (otherwise the
	// forward below could fail to dial, which is safe to retry anywhere).
	u := uuid.NewString()
	if code, _, err := send(http.MethodPost, "/resource_providers", fmt.Appendf(nil, `{"uuid": %q, "name": %q}`, u, u)); code != http.StatusOK {
		t.Fatalf("write through %s before the cut: %d %v", via.ID, code, err)
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
	// When via first names another leader (polled from ctl, which sees
	// it without delay).
	learnt := make(chan time.Time, 1)
	ctx, stopPoll := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopPoll()
	go func() {
		for ctx.Err() == nil {
			if s, err := via.Client().Self(ctx); err == nil && s.Leader != "" && s.Leader != leader.ID {
				learnt <- time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
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
	var write503 time.Time
	for range 2 {
		r := <-results
		if r.what == "write" && r.code == http.StatusServiceUnavailable {
			write503 = start.Add(r.took)
		}
		t.Logf("%s through %s after cutting off %s: %d in %v (%v)", r.what, via.ID, leader.ID, r.code, r.took.Round(time.Millisecond), r.err)
		if r.err != nil {
			t.Fatalf("the %s through a follower waited for the cut-off leader: %v after %v", r.what, r.err, r.took)
		}
		want := r.code == http.StatusOK || r.what == "write" && r.code == http.StatusServiceUnavailable
		if !want || r.took > 10*time.Second {
			t.Errorf("the %s answered %d after %v: want 200 (or 503 for the write) within an election", r.what, r.code, r.took)
		}
	}
	// The write's 503 comes when via's own Raft gives up on the cut-off
	// leader, before the election ends (via, second in the election
	// order, then campaigns itself: a pre-vote and a vote, two round
	// trips): the client's retry then waits on via for the new leader
	// instead of crossing its link again after it.
	select {
	case at := <-learnt:
		if !write503.IsZero() && !write503.Before(at.Add(-rtt/2)) {
			t.Errorf("the write's 503 came %v after the cut, %s learnt of the new leader %v after it: want the 503 an election earlier",
				write503.Sub(start).Round(time.Millisecond), via.ID, at.Sub(start).Round(time.Millisecond))
		}
	case <-ctx.Done():
		t.Errorf("%s never named a new leader", via.ID)
	}
	if err := lab.Heal(); err != nil {
		t.Fatal(err)
	}
}

// A leader killed at 150 ms RTT with the documented 150 ms profile is
// replaced promptly: the survivors campaign in the election order
// (electorder.go), and a write through a survivor is accepted again well
// within the bound below. The bound is loose (the goal is 2.5 s; the
// lab's delayer shares a loaded machine): the test shows that failover
// happens and stays bounded, wan-bench measures it.
func TestLabFailoverIsPrompt(t *testing.T) {
	lab, c := labCluster(t, 3, "--raft-timing-multiplier", "0.5", "--raft-leader-lease-timeout", "400ms")
	nodes := c.Nodes
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if err := lab.SetRTT(a.ID, b.ID, 150*time.Millisecond, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := lab.SetRTT("client", a.ID, 75*time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
	}
	hc := lab.Host("client").HTTPClient()
	hc.Timeout = 15 * time.Second
	write := func(via *testcluster.Proc) int {
		u := uuid.NewString()
		req, _ := http.NewRequest(http.MethodPost, "http://"+via.HTTPAddr+"/resource_providers",
			bytes.NewReader(fmt.Appendf(nil, `{"uuid": %q, "name": %q}`, u, u)))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	const bound = 6 * time.Second
	for kill := range 2 {
		dead := nodes.Named(c.Healthy(3).Leader)
		via := nodes.Except(dead)[0]
		start := time.Now()
		c.Kill(dead)
		for write(via) != http.StatusOK {
			if time.Since(start) > bound {
				t.Fatalf("kill %d: no write accepted through %s within %v of killing the leader %s", kill, via.ID, bound, dead.ID)
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Logf("kill %d: leader %s killed, a write through %s accepted after %v", kill, dead.ID, via.ID, time.Since(start).Round(time.Millisecond))
		c.Restart(dead)
	}
}
