package cluster_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/httpapi"
	"github.com/placementd/placementd/internal/testcluster"
)

// The in-process cluster of these tests is internal/testcluster's.
type (
	testCluster = testcluster.Cluster
	testNode    = testcluster.Node
)

const secret = testcluster.Secret

// The process tests share one build of placementd.
func TestMain(m *testing.M) { testcluster.Main(m) }

var (
	fastRaft = testcluster.FastRaft
	check    = testcluster.Check
)

// placementAPI is the API the test clusters' nodes serve.
func placementAPI(node *cluster.Node, logger *slog.Logger) http.Handler {
	return httpapi.New(node, httpapi.Config{Logger: logger})
}

func newTestCluster(t *testing.T) *testCluster { return testcluster.New(t, placementAPI) }

// threeNodes starts n1 (bootstrapped) and joins n2, n3 to it.
func threeNodes(t *testing.T, tune func(*raft.Config)) (*testCluster, []*testNode) {
	t.Helper()
	return testcluster.Three(t, placementAPI, tune)
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T) map[string]any {
	t.Helper()
	return testcluster.Response{Body: r.body}.JSON(t)
}

// do sends a Placement request as admin at microversion 1.39, with the
// cluster secret (answers name the node that served them only then).
func do(t *testing.T, n *testNode, method, path string, body any, headers ...string) response {
	t.Helper()
	r := n.Do(t, method, path, body, headers...)
	return response{status: r.Status, header: r.Header, body: r.Body}
}

func client(n *testNode) *front.Client { return n.Client() }

// waitFor waits up to 15 s until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testcluster.WaitFor(t, 15*time.Second, what, func() error { return check(cond(), "not yet") })
}

// putRetrying sends an idempotent PUT (a custom class or trait: 201, then
// 204) through n, again while it answers 503 (no quorum yet, or leadership
// moved under load).
func putRetrying(t *testing.T, n *testNode, path string) response {
	return retrying(t, n, "PUT", path)
}

// getRetrying is a read through n, again while it answers 503 (the read
// barrier could not confirm a leader in time under load), as a client
// does: a 503 is no answer, so this hides no stale read.
func getRetrying(t *testing.T, n *testNode, path string, headers ...string) response {
	return retrying(t, n, "GET", path, headers...)
}

// retrying sends a bodyless request through n until it answers other than
// 503, for up to 15 s. Safe to call from goroutines: it returns what it
// got last instead of failing the test.
func retrying(t *testing.T, n *testNode, method, path string, headers ...string) response {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var last response
	testcluster.Poll(ctx, func() error {
		r, err := n.Send(http.DefaultClient, method, path, nil, headers...)
		last = response{status: r.Status, header: r.Header, body: r.Body}
		if err != nil {
			last.body = []byte(err.Error())
			return err
		}
		return check(r.Status != 503, "503")
	})
	return last
}
