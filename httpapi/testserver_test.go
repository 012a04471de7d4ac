package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
)

// testAPI is a single-node placementd (real Raft over the in-memory
// transport, real FSM, real HTTP stack) for handler tests.
type testAPI struct {
	t    *testing.T
	URL  string
	Node *cluster.Node
}

func newTestAPI(t *testing.T, cfg Config) *testAPI { return newTestAPIWith(t, cfg, nil) }

// newTestAPIWith is newTestAPI with prepare run on the server before it
// serves (to set test hooks).
func newTestAPIWith(t *testing.T, cfg Config, prepare func(*Server)) *testAPI {
	t.Helper()
	_, trans := raft.NewInmemTransport("")
	node, err := cluster.Open(cluster.Config{
		NodeID: "n1", InMemory: true, Transport: trans, Bootstrap: true,
		Tune: func(c *raft.Config) {
			c.HeartbeatTimeout = 50 * time.Millisecond
			c.ElectionTimeout = 50 * time.Millisecond
			c.LeaderLeaseTimeout = 50 * time.Millisecond
		},
	}, fsm.New())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		t.Fatal(err)
	}
	api := New(node, cfg)
	if prepare != nil {
		prepare(api)
	}
	srv := httptest.NewServer(api)
	t.Cleanup(func() {
		srv.Close()
		node.Shutdown()
	})
	return &testAPI{t: t, URL: srv.URL, Node: node}
}

// do sends a request as the admin at the given microversion ("" for none)
// with body marshalled to JSON (nil for none) and returns status, headers
// and the decoded JSON body (nil if empty).
func (a *testAPI) do(method, path, version string, body any) (int, http.Header, any) {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			a.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		a.t.Fatal(err)
	}
	req.Header.Set("X-Auth-Token", "admin")
	if version != "" {
		req.Header.Set("OpenStack-API-Version", "placement "+version)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			a.t.Fatalf("%s %s: body is not JSON: %q", method, path, raw)
		}
	}
	return resp.StatusCode, resp.Header, out
}
