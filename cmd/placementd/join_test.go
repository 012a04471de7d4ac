package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/placementd/placementd/internal/testcluster"
)

// A --join address that is not a placementd member (here a server that
// answers 404) leaves the node unready; its log says why, with the
// answer, while it retries; a SIGTERM then does not
// claim it left a cluster it never joined.
func TestJoinFailureIsLogged(t *testing.T) {
	if testing.Short() {
		t.Skip("runs placementd processes")
	}
	notPlacement := httptest.NewServer(http.NotFoundHandler())
	defer notPlacement.Close()
	c := testcluster.NewProcs(t, testcluster.Binary(t))
	n := c.Add("n2")
	n.Args = []string{"--log-level", "info"}
	c.Start(n, strings.TrimPrefix(notPlacement.URL, "http://"))
	testcluster.WaitFor(t, 3*joinLogEvery, "the join failure logged", func() error {
		if err := n.Exited(); err != nil {
			return testcluster.Abort(err)
		}
		logs := n.LogTail(1 << 20)
		return testcluster.Check(strings.Contains(logs, "joining keeps failing") && strings.Contains(logs, "404"),
			"log:\n%s", logs)
	})
	resp, err := http.Get("http://" + n.HTTPAddr + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("/readyz of a node that never joined: %d", resp.StatusCode)
	}
	c.Stop(n)
	if logs := n.LogTail(1 << 20); strings.Contains(logs, "left the cluster") || !strings.Contains(logs, "shutting down") {
		t.Errorf("after SIGTERM:\n%s", logs)
	}
}
