package main

import (
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/internal/testcluster"
)

// --max-request-body-mb bounds the API's request bodies: with 1, a body of
// 1 MiB is served and one a byte longer (announced, or sent chunked) is
// answered 413 in Placement's error format and changes nothing.
func TestMaxRequestBodyFlag(t *testing.T) {
	addr, _ := hostileServer(t, "--max-request-body-mb", "1")
	// A resource provider's body padded with blanks to size bytes.
	provider := func(name string, size int) string {
		b := `{"name": "` + name + `"}`
		return b[:len(b)-1] + strings.Repeat(" ", size-len(b)) + "}"
	}
	send := func(method, path, body string, chunked bool) (int, []byte) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
			if chunked {
				rd = io.MultiReader(rd) // no length known: sent chunked
			}
		}
		r := testcluster.Do(t, "http://"+addr, method, path, rd)
		return r.Status, r.Body
	}
	if status, raw := send("POST", "/resource_providers", provider("at-the-bound", 1<<20), false); status != http.StatusOK {
		t.Fatalf("a body of exactly 1 MiB: %d %s", status, raw)
	}
	for _, chunked := range []bool{false, true} {
		status, raw := send("POST", "/resource_providers", provider("past-the-bound", 1<<20+1), chunked)
		var e struct {
			Errors []struct {
				Status    int    `json:"status"`
				Title     string `json:"title"`
				RequestID string `json:"request_id"`
			} `json:"errors"`
		}
		if status != http.StatusRequestEntityTooLarge || json.Unmarshal(raw, &e) != nil || len(e.Errors) != 1 ||
			e.Errors[0].Status != 413 || e.Errors[0].Title != "Request Entity Too Large" || e.Errors[0].RequestID == "" {
			t.Fatalf("a body a byte past 1 MiB (chunked %v): %d %s", chunked, status, raw)
		}
	}
	status, raw := send("GET", "/resource_providers", "", false)
	var list struct {
		Providers []struct{ Name string } `json:"resource_providers"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &list) != nil || len(list.Providers) != 1 || list.Providers[0].Name != "at-the-bound" {
		t.Fatalf("providers after the refusals: %d %s", status, raw)
	}
}

// The limits' flags default to the former constants, may come from
// placement.conf's [placementd] section, and bad values stop the server
// before it writes anything.
func TestLimitFlags(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if c.httpLimits.maxRequestBodyMB != 16 || c.cluster.raftConns != cluster.DefaultRaftConnLimits {
		t.Fatalf("defaults: --max-request-body-mb %d, raft connections %+v", c.httpLimits.maxRequestBodyMB, c.cluster.raftConns)
	}
	conf := filepath.Join(t.TempDir(), "placement.conf")
	if err := os.WriteFile(conf, []byte("[placementd]\nmax_request_body_mb = 4\nraft-max-connections-per-ip = 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := configure(fs, []string{"--config-file", conf, "--raft-handshake-timeout", "3s"}, true); err != nil {
		t.Fatal(err)
	}
	if c.httpLimits.maxRequestBodyMB != 4 || c.cluster.raftConns.MaxPerSource != 8 || c.cluster.raftConns.Handshake.String() != "3s" {
		t.Fatalf("from placement.conf and the command line: --max-request-body-mb %d, raft connections %+v", c.httpLimits.maxRequestBodyMB, c.cluster.raftConns)
	}
	refusedAtStart(t, []startRefusal{
		{[]string{"--max-request-body-mb", "0"}, "--max-request-body-mb 0: want 1 to 1024"},
		{[]string{"--max-request-body-mb", "1025"}, "--max-request-body-mb 1025"},
		{[]string{"--raft-handshake-timeout", "0s"}, "raft handshake timeout 0s"},
		{[]string{"--raft-first-message-timeout", "-1s"}, "raft first message timeout -1s"},
		{[]string{"--raft-max-pending-connections", "0"}, "raft max pending connections 0"},
		{[]string{"--raft-max-connections", "0"}, "raft max connections 0"},
		{[]string{"--raft-max-connections-per-ip", "-1"}, "raft max connections per source address -1"},
	})
}
