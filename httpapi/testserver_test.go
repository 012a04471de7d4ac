package httpapi

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/internal/testcluster"
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
	node := testcluster.OpenNode(t, cluster.Config{}, nil)
	api := New(node, cfg)
	if prepare != nil {
		prepare(api)
	}
	srv := testcluster.Serve(t, api)
	return &testAPI{t: t, URL: srv.URL, Node: node}
}

// do sends a request as the admin at the given microversion ("" for none)
// with body marshalled to JSON (nil for none) and returns status, headers
// and the decoded JSON body (nil if empty).
func (a *testAPI) do(method, path, version string, body any) (int, http.Header, any) {
	a.t.Helper()
	if version != "" {
		version = "placement " + version
	}
	r := testcluster.Do(a.t, a.URL, method, path, body, "OpenStack-API-Version", version)
	var out any
	if len(r.Body) > 0 {
		if err := json.Unmarshal(r.Body, &out); err != nil {
			a.t.Fatalf("%s %s: body is not JSON: %q", method, path, r.Body)
		}
	}
	return r.Status, r.Header, out
}
