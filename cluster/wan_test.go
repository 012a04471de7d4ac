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

	"github.com/placementd/placementd/cluster/front"
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

// cutLab starts 3 voters 150 ms apart with the documented 150 ms settings
// in a WAN lab, and writes once through a follower, so that the followers
// hold open connections to the leader's API, as followers that forward
// do (otherwise a request forwarded after the cut could fail to dial,
// which is safe to retry anywhere). It returns the lab, the leader, the
// followers and the name (and uuid) of the provider written.
func cutLab(t *testing.T) (*wanlab.Lab, *testcluster.Proc, testcluster.Procs, string) {
	lab, c := labCluster(t, 3, "--raft-timing-multiplier", "0.5", "--raft-leader-lease-timeout", "400ms")
	nodes := c.Nodes
	for i, a := range nodes {
		for _, b := range nodes[i+1:] {
			if err := lab.SetRTT(a.ID, b.ID, cutRTT, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	leader := nodes.Named(c.Healthy(3).Leader)
	followers := nodes.Except(leader)
	u := uuid.NewString()
	hc := lab.Host("client").HTTPClient()
	for _, f := range followers {
		if r := labSend(hc, f, http.MethodPost, "/resource_providers", fmt.Appendf(nil, `{"uuid": %q, "name": %q}`, u, u)); r.code != http.StatusOK && r.code != http.StatusConflict {
			t.Fatalf("write through %s before the cut: %d %v", f.ID, r.code, r.err)
		}
	}
	return lab, leader, followers, u
}

const cutRTT = 150 * time.Millisecond

func ids(ps testcluster.Procs) []string {
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID)
	}
	return ids
}

// labAnswer is what a request sent by labSend got.
type labAnswer struct {
	code   int
	header http.Header
	body   []byte
	took   time.Duration
	err    error
}

// labSend sends a Placement request to node p with client hc, as an
// operator (the answer names the node that served it).
func labSend(hc *http.Client, p *testcluster.Proc, method, path string, body []byte) labAnswer {
	req, _ := http.NewRequest(method, "http://"+p.HTTPAddr+path, bytes.NewReader(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Authorization", "Bearer "+p.Secret)
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	req.Header.Set("Content-Type", "application/json")
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return labAnswer{took: time.Since(start), err: err}
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return labAnswer{code: resp.StatusCode, header: resp.Header, body: b, took: time.Since(start), err: err}
}

// learnsLeader reports on the channel it returns when p first names a
// leader other than old (polled from ctl, which sees it without delay).
func learnsLeader(ctx context.Context, p *testcluster.Proc, old string) <-chan time.Time {
	learnt := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			if s, err := p.Client().Self(ctx); err == nil && s.Leader != "" && s.Leader != old {
				learnt <- time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return learnt
}

// A leader cut off by a partition never answers what it was forwarded:
// the forwarding follower gives up on it once its own Raft gives up on
// that leader, so a write gets its 503 (unknown outcome) within an
// election, before the new leader is known, not when the client gives up;
// a read is answered once the new leader is known (from the follower's
// own state after the new leader's read index: the next test).
func TestForwardingGivesUpOnCutOffLeader(t *testing.T) {
	lab, leader, followers, _ := cutLab(t)
	via := followers[len(followers)-1]
	hc := lab.Host("client").HTTPClient()
	hc.Timeout = 30 * time.Second

	// The leader and its region are cut off from the others and the
	// client; ctl, in no group, still sees everyone.
	if err := lab.Partition([]string{leader.ID}, append(ids(followers), "client")); err != nil {
		t.Fatal(err)
	}
	ctx, stopPoll := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopPoll()
	learnt := learnsLeader(ctx, via, leader.ID)
	type result struct {
		what string
		labAnswer
	}
	start := time.Now()
	results := make(chan result, 2)
	go func() {
		u := uuid.NewString()
		results <- result{"write", labSend(hc, via, http.MethodPost, "/resource_providers", fmt.Appendf(nil, `{"uuid": %q, "name": %q}`, u, u))}
	}()
	go func() {
		results <- result{"read", labSend(hc, via, http.MethodGet, "/resource_providers", nil)}
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
		if !write503.IsZero() && !write503.Before(at.Add(-cutRTT/2)) {
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

// A follower's linearizable read pending on a leader that is then cut off
// stops waiting for it when the follower's Raft gives up on it, and asks
// the next leader for a read index as soon as the follower learns of it:
// every read sent through a follower during the cut is answered from that
// follower's own state (or by itself as the new leader), includes the
// write acknowledged before the cut, and comes after the follower learnt
// of the new leader; none is forwarded whole, none waits for a timeout.
// (Before, the read index request timed out after a heartbeat timeout
// and the read was forwarded whole: to the cut-off leader, then to the
// next one, which served it.)
func TestFollowerReadAsksNewLeaderAfterCut(t *testing.T) {
	lab, leader, followers, u := cutLab(t)
	hc := lab.Host("client").HTTPClient()
	hc.Timeout = 30 * time.Second
	// Before the cut, reads through the followers are served by them.
	for _, f := range followers {
		if r := labSend(hc, f, http.MethodGet, "/resource_providers", nil); r.code != http.StatusOK || r.header.Get(front.ServedByHeader) != f.ID {
			t.Fatalf("read through %s before the cut: %d served by %q (%v)", f.ID, r.code, r.header.Get(front.ServedByHeader), r.err)
		}
	}

	if err := lab.Partition([]string{leader.ID}, append(ids(followers), "client")); err != nil {
		t.Fatal(err)
	}
	ctx, stopPoll := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopPoll()
	start := time.Now()
	learnt := map[string]<-chan time.Time{}
	for _, f := range followers {
		learnt[f.ID] = learnsLeader(ctx, f, leader.ID)
	}
	// Reads through each follower at the cut and every 250 ms for 2 s,
	// through the election.
	type read struct {
		via  *testcluster.Proc
		sent time.Duration
		labAnswer
	}
	reads := make(chan read, 32)
	n := 0
	for at := time.Duration(0); at <= 2*time.Second; at += 250 * time.Millisecond {
		time.Sleep(time.Until(start.Add(at)))
		for _, f := range followers {
			n++
			go func() {
				sent := time.Since(start)
				reads <- read{f, sent, labSend(hc, f, http.MethodGet, "/resource_providers", nil)}
			}()
		}
	}
	learntAt := map[string]time.Duration{}
	for _, f := range followers {
		select {
		case at := <-learnt[f.ID]:
			learntAt[f.ID] = at.Sub(start)
		case <-ctx.Done():
			t.Fatalf("%s never named a new leader", f.ID)
		}
	}
	for range n {
		r := <-reads
		f := r.via.ID
		answered := r.sent + r.took
		t.Logf("read through %s sent %v after the cut (it learnt the new leader at %v): %d in %v, served by %q (%v)",
			f, r.sent.Round(time.Millisecond), learntAt[f].Round(time.Millisecond), r.code, r.took.Round(time.Millisecond), r.header.Get(front.ServedByHeader), r.err)
		switch {
		case r.err != nil:
			t.Errorf("read through %s sent %v after the cut: %v after %v", f, r.sent, r.err, r.took)
		case r.code == http.StatusServiceUnavailable:
			// Allowed: no leader within the request's wait.
		case r.code != http.StatusOK:
			t.Errorf("read through %s sent %v after the cut: %d %s", f, r.sent, r.code, r.body)
		case !bytes.Contains(r.body, []byte(u)):
			t.Errorf("read through %s sent %v after the cut misses the write acknowledged before it: %s", f, r.sent, r.body)
		case r.header.Get(front.ServedByHeader) != f || r.header.Get(front.ReadLevelHeader) != "linearizable":
			t.Errorf("read through %s sent %v after the cut: served by %q at level %q, want by %s itself after a read index from the new leader, linearizable",
				f, r.sent, r.header.Get(front.ServedByHeader), r.header.Get(front.ReadLevelHeader), f)
		case answered < learntAt[f]-cutRTT/2:
			t.Errorf("read through %s answered %v after the cut, before it learnt of the new leader (%v)", f, answered, learntAt[f])
		}
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
