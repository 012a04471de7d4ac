package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// Many distinct tokens against a Keystone that never answers (issue 35,
// N6), at the process: at most --keystone-max-validations calls reach
// Keystone, each request waiting for a place is answered 503 at its
// deadline, and /healthz and a cached token answer at once all the while.
func TestKeystoneValidationsBoundedProcess(t *testing.T) {
	ks := testcluster.NewKeystone(t)
	const bound, tokens = 8, 300
	c := testcluster.NewProcs(t, testcluster.Binary(t))
	c.Secret = "s"
	// Calls to Keystone outlive the test's requests: none gives its place
	// to another.
	c.Args = []string{"--auth-strategy", "keystone", "--keystone-auth-url", ks.URL, "--keystone-password", "pw",
		"--keystone-max-validations", fmt.Sprint(bound), "--keystone-timeout", "1m", "--request-timeout", "3s"}
	n := c.Add("n1")
	c.Start(n)
	c.Healthy(1)
	// "good" is a reader of project p1: its usages are its to read.
	const cached = "/usages?project_id=p1"
	if a := api(t, n, "GET", cached, "good", "1.9", ""); a.status != 200 {
		t.Fatalf("a valid token: %d %v", a.status, a.body)
	}
	<-ks.Started

	ks.Hold(t)
	answers := make(chan string, tokens)
	for i := 0; i < tokens; i++ {
		go func() {
			req, _ := http.NewRequest("GET", "http://"+n.HTTPAddr+"/resource_providers", nil)
			req.Header.Set("X-Auth-Token", fmt.Sprintf("slow-%d", i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				answers <- err.Error()
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- fmt.Sprintf("%d %s", resp.StatusCode, body)
		}()
	}
	for i := 0; i < bound; i++ {
		select {
		case <-ks.Started:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d validations reached Keystone, want %d", i, bound)
		}
	}
	// Keystone is saturated and requests wait: these do not.
	for _, probe := range []struct{ path, token, version string }{{"/healthz", "", ""}, {cached, "good", "1.9"}} {
		start := time.Now()
		if a := api(t, n, "GET", probe.path, probe.token, probe.version, ""); a.status != 200 {
			t.Errorf("%s while Keystone hangs: %d %v", probe.path, a.status, a.body)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s while Keystone hangs took %s", probe.path, d)
		}
	}
	for i := 0; i < tokens; i++ {
		if a := <-answers; !strings.HasPrefix(a, "503 ") || !strings.Contains(a, "The Keystone service is temporarily unavailable.") {
			t.Fatalf("a token Keystone never answers for: %s", a)
		}
	}
	// One validation of "good", then the bound.
	if v, open := ks.Validations(), ks.MaxOpen(); v > bound+1 || open > bound {
		t.Errorf("%d distinct tokens: %d validations reached Keystone, %d connections at most; bound %d", tokens, v-1, open, bound)
	}
}
