package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// The metrics token opens /metrics and nothing else: every operator
// endpoint (status, join, remove, leadership, snapshot, import) and the
// members' read index refuse it, on a node that has a cluster secret. A
// node with neither secret nor token serves /metrics to a loopback caller.
func TestMetricsTokenOpensOnlyMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs placementd processes")
	}
	bin := testcluster.Binary(t)
	const token = "scrape-only-token-0123456789"
	c := testcluster.NewProcs(t, bin)
	c.Args = []string{"--metrics-token", token}
	n := c.Add("n1")
	c.Start(n)
	plain := c.Add("plain")
	plain.Secret, plain.Args = "", nil
	c.Start(plain)
	c.Healthy(1)
	base := "http://" + n.HTTPAddr
	bearer := func(s string) []string { return []string{"Authorization", "Bearer " + s} }

	metrics := testcluster.Do(t, base, "GET", "/metrics", nil, bearer(token)...)
	if metrics.Status != http.StatusOK || !strings.Contains(string(metrics.Body), "placementd_raft_term") {
		t.Fatalf("/metrics with the token: %d %.200s", metrics.Status, metrics.Body)
	}
	if r := testcluster.Do(t, base, "GET", "/metrics", nil, bearer(c.Secret)...); r.Status != http.StatusOK {
		t.Errorf("/metrics with the cluster secret: %d %s", r.Status, r.Body)
	}
	for _, auth := range [][]string{nil, bearer("wrong"), {"Authorization", token}} {
		if r := testcluster.Do(t, base, "GET", "/metrics", nil, auth...); r.Status != http.StatusUnauthorized {
			t.Errorf("/metrics with %q: %d, want 401", auth, r.Status)
		}
	}
	for _, ep := range []struct{ method, path string }{
		{"GET", "/_cluster/status"}, {"GET", "/_cluster/self"},
		{"POST", "/_cluster/join"}, {"POST", "/_cluster/remove"}, {"POST", "/_cluster/transfer-leadership"},
		{"GET", "/_cluster/snapshot"}, {"GET", "/_cluster/import"}, {"POST", "/_cluster/import"},
		{"GET", "/_cluster/read-index"},
	} {
		r := testcluster.Do(t, base, ep.method, ep.path, map[string]any{}, bearer(token)...)
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s %s with the metrics token: %d %s, want 401", ep.method, ep.path, r.Status, r.Body)
		}
	}
	// The token names no node either.
	r := testcluster.Do(t, base, "GET", "/_cluster/health", nil, bearer(token)...)
	if id := r.JSON(t)["id"]; id != "" {
		t.Errorf("/_cluster/health with the metrics token names the node %v", id)
	}

	testcluster.WaitFor(t, 30*time.Second, "the node without secret answers /metrics on loopback", func() error {
		if err := plain.Exited(); err != nil {
			return testcluster.Abort(err)
		}
		r, err := testcluster.Send(http.DefaultClient, "http://"+plain.HTTPAddr, "GET", "/metrics", nil)
		if err != nil {
			return err
		}
		return testcluster.Check(r.Status == http.StatusOK && strings.Contains(string(r.Body), "placementd_raft_term"), "%d %.300s", r.Status, r.Body)
	})
}

// Who may read /metrics, by credential, listener and caller address.
func TestMetricsAccess(t *testing.T) {
	const token, secret = "tok", "sec"
	for _, tc := range []struct {
		name         string
		access       metricsAccess
		apiPort      bool
		remote, auth string
		want         int
		detailSays   string
	}{
		{"token on the API port", metricsAccess{token, secret}, true, "10.0.0.9:4000", "Bearer tok", 0, ""},
		{"secret on the API port", metricsAccess{token, secret}, true, "10.0.0.9:4000", "Bearer sec", 0, ""},
		{"nothing on the API port", metricsAccess{token, secret}, true, "127.0.0.1:4000", "", 401, "--metrics-token"},
		{"dev node, loopback caller", metricsAccess{}, true, "127.0.0.1:4000", "", 0, ""},
		{"dev node, IPv6 loopback caller", metricsAccess{}, true, "[::1]:4000", "", 0, ""},
		{"dev node, remote caller", metricsAccess{}, true, "10.0.0.9:4000", "", 403, "PLACEMENTD_METRICS_TOKEN"},
		{"secret only, loopback caller without it", metricsAccess{secret: secret}, true, "127.0.0.1:4000", "", 401, "--metrics-token"},
		{"metrics-addr without a token set", metricsAccess{secret: secret}, false, "10.0.0.9:4000", "", 0, ""},
		{"metrics-addr with a token set, none given", metricsAccess{token, secret}, false, "127.0.0.1:4000", "", 401, "--metrics-token"},
		{"metrics-addr with a token set, the secret given", metricsAccess{token, secret}, false, "10.0.0.9:4000", "Bearer sec", 401, ""},
		{"metrics-addr with the token", metricsAccess{token, secret}, false, "10.0.0.9:4000", "Bearer tok", 0, ""},
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.RemoteAddr = tc.remote
		if tc.auth != "" {
			r.Header.Set("Authorization", tc.auth)
		}
		got, detail := tc.access.check(r, tc.apiPort)
		if got != tc.want || !strings.Contains(detail, tc.detailSays) {
			t.Errorf("%s: %d %q, want %d saying %q", tc.name, got, detail, tc.want, tc.detailSays)
		}
	}
	if err := checkMetricsToken("same", "same"); err == nil {
		t.Error("a metrics token equal to the cluster secret was accepted")
	}
}
