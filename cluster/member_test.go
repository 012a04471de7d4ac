package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/testcluster"
)

const hopsHeader = "X-Placementd-Forwarded-Hops"

// A client cannot set the forwarding protocol's headers: a forged hop
// count (which used to make a follower answer a write itself, or, negative,
// disabled the loop guard) or a forged member token changes nothing.
func TestForgedInternalHeadersHaveNoEffect(t *testing.T) {
	c, _ := threeNodes(t, nil)
	leader := c.Leader()
	f := c.Followers()
	forged := "v1." + strconv.FormatInt(time.Now().Unix(), 10) + "." + fmt.Sprintf("%064x", 7)
	for i, hdrs := range [][]string{
		{hopsHeader, "2"},
		{hopsHeader, "99999999999999999999"},
		{hopsHeader, "-1000"},
		{hopsHeader, "5", "X-Placementd-Member", forged},
	} {
		r := do(t, f[0], "PUT", fmt.Sprintf("/traits/CUSTOM_FORGED_%d", i), nil, hdrs...)
		if r.status != 201 || r.header.Get(front.ServedByHeader) != leader.ID {
			t.Errorf("PUT via a follower with %v: %d served by %q (want 201 by %s): %s",
				hdrs, r.status, r.header.Get(front.ServedByHeader), leader.ID, r.body)
		}
	}
	// A read with a forged hop count is still served by the follower from
	// its own state after a read index (a forwarded read is not).
	r := do(t, f[1], "GET", "/traits/CUSTOM_FORGED_0", nil, hopsHeader, "1")
	if r.status != 204 || r.header.Get(front.ServedByHeader) != f[1].ID || r.header.Get(front.ReadLevelHeader) != "linearizable" {
		t.Errorf("read with a forged hop count: %d served by %q at %q", r.status, r.header.Get(front.ServedByHeader), r.header.Get(front.ReadLevelHeader))
	}
	// The read index endpoint answers members only.
	r = do(t, leader, "GET", "/_cluster/read-index?id="+f[0].ID+"&term=1", nil)
	if r.status != 401 {
		t.Errorf("read index without a member token: %d %s", r.status, r.body)
	}
}

// A forwarding loop is cut after maxHops forwards even when the client
// sent a negative hop count. The leader's API address is taken over by a
// relay that sends every request back to a follower, as a member that
// believes the follower leads would: the follower forwards to the "leader"
// again, and must stop after two hops.
func TestForwardingLoopIsCut(t *testing.T) {
	c, _ := threeNodes(t, nil)
	leader := c.Leader()
	f := c.Followers()[0]
	// The follower forwards only once it knows the leader (until then it
	// answers 503 itself, and the loop would never start).
	testcluster.WaitFor(t, testcluster.LeaderTimeout, f.ID+" knows the leader", func() error {
		id, _ := f.Node.Leader()
		return testcluster.Check(id == leader.ID, "%s sees leader %q, not %s", f.ID, id, leader.ID)
	})
	target, _ := url.Parse("http://" + f.Addr)
	var mu sync.Mutex
	inFlight, most, total := 0, 0, 0
	proxy := httputil.NewSingleHostReverseProxy(target)
	relay := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != "PUT" { // the follower's read index rounds
			proxy.ServeHTTP(w, r)
			return
		}
		mu.Lock()
		inFlight++
		total++
		most = max(most, inFlight)
		mu.Unlock()
		defer func() { mu.Lock(); inFlight--; mu.Unlock() }()
		proxy.ServeHTTP(w, r)
	})
	leader.Srv.Close()
	ln, err := net.Listen("tcp", leader.Addr)
	if err != nil {
		t.Skipf("cannot take over the leader's API address: %v", err)
	}
	srv := httptest.NewUnstartedServer(relay)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	defer srv.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "PUT", "http://"+f.Addr+"/traits/CUSTOM_LOOP", nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement 1.39")
	req.Header.Set(hopsHeader, "-1000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("the request did not end: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	if most > 2 || total == 0 {
		t.Fatalf("the loop went %d forwards deep (%d in all), want at most 2", most, total)
	}
	t.Logf("answer %d after at most %d nested forwards (%d in all)", resp.StatusCode, most, total)
}

// Node ids and addresses are told only to callers with the cluster
// secret: the answers' headers, /_cluster/health and /readyz.
func TestNodeNamesNeedTheSecret(t *testing.T) {
	c, _ := threeNodes(t, nil)
	leader := c.Leader()
	f := c.Followers()
	get := func(n *testNode, method, path string, withSecret bool) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(method, "http://"+n.Addr+path, nil)
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement 1.39")
		if withSecret {
			req.Header.Set("Authorization", "Bearer "+secret)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	for _, n := range []*testNode{leader, f[0]} {
		for _, m := range []string{"PUT", "GET"} {
			resp, _ := get(n, m, "/traits/CUSTOM_NAMES", false)
			if resp.StatusCode >= 300 || resp.Header.Get(front.ServedByHeader) != "" ||
				resp.Header.Get(front.KnownLeaderHeader) != "true" || resp.Header.Get(front.AppliedIndexHeader) == "" {
				t.Errorf("%s via %s without the secret: %d, headers %v", m, n.ID, resp.StatusCode, resp.Header)
			}
			resp, _ = get(n, m, "/traits/CUSTOM_NAMES", true)
			if resp.Header.Get(front.ServedByHeader) == "" {
				t.Errorf("%s via %s with the secret: no %s", m, n.ID, front.ServedByHeader)
			}
		}
	}
	for _, withSecret := range []bool{false, true} {
		resp, b := get(f[0], "GET", "/_cluster/health", withSecret)
		var st cluster.NodeStatus
		if err := json.Unmarshal(b, &st); err != nil || resp.StatusCode != 200 || !st.Ready || st.CommitIndex == 0 {
			t.Fatalf("health (secret %v): %d %s", withSecret, resp.StatusCode, b)
		}
		named := st.ID != "" || st.Leader != "" || st.HTTPAddr != "" || st.RaftAddr != "" || st.TimingMS != nil
		if named != withSecret {
			t.Errorf("health (secret %v) names nodes: %v: %s", withSecret, named, b)
		}
	}
	rec := httptest.NewRecorder()
	frontOf(f[0]).Readyz(rec, httptest.NewRequest("GET", "/readyz", nil))
	var p front.Probe
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil || !p.Ready || p.Leader != "" {
		t.Errorf("/readyz without the secret: %d %s", rec.Code, rec.Body)
	}
}
