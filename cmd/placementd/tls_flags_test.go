package main

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/placementd/placementd/internal/testcluster"
)

// writePEM writes a new CA, and a node certificate and key signed by it,
// into dir, and returns the three file names.
func writePEM(t *testing.T, dir, prefix string) (caFile, certFile, keyFile string) {
	return testcluster.WritePEM(t, dir, prefix)
}

// The TLS flags come in complete sets; an incomplete set, or files that
// do not load, stop serve before it writes anything to the data dir.
func TestTLSFlagsComeInSets(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(t.TempDir(), "not.pem")
	if err := os.WriteFile(garbage, []byte("not PEM\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pems := t.TempDir()
	ca, cert, key := writePEM(t, pems, "a-")
	otherCA, _, _ := writePEM(t, pems, "b-")
	for _, tc := range []struct {
		args []string
		want string
	}{
		// A Raft certificate its own CA did not sign would be refused by
		// every peer.
		{[]string{"--raft-tls-cert-file", cert, "--raft-tls-key-file", key, "--raft-tls-ca-file", otherCA}, "unknown authority"},
		{[]string{"--tls-cert-file", garbage}, "--tls-key-file"},
		{[]string{"--tls-key-file", garbage}, "--tls-cert-file"},
		{[]string{"--tls-ca-file", garbage}, "--tls-ca-file needs"},
		{[]string{"--tls-cert-file", garbage, "--tls-key-file", garbage}, "--tls-cert-file/--tls-key-file"},
		{[]string{"--raft-tls-cert-file", garbage, "--raft-tls-key-file", garbage}, "all three or none"},
		{[]string{"--raft-tls-ca-file", garbage}, "all three or none"},
		{[]string{"--raft-tls-cert-file", garbage, "--raft-tls-key-file", garbage, "--raft-tls-ca-file", garbage}, "--raft-tls-cert-file/--raft-tls-key-file"},
	} {
		err := serve(append([]string{"--data-dir", dir}, tc.args...))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v: %v, want an error with %q", tc.args, err, tc.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused start wrote to the data dir: %v", entries)
	}

	// Complete sets load.
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c := serveFlags(fs)
	if err := configure(fs, []string{"--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-file", otherCA,
		"--raft-tls-cert-file", cert, "--raft-tls-key-file", key, "--raft-tls-ca-file", ca}, true); err != nil {
		t.Fatal(err)
	}
	if err := c.security.loadTLS(); err != nil {
		t.Fatal(err)
	}
	if c.security.apiTLS == nil || c.security.peerAPITLS.RootCAs == nil || c.security.raftTLS == nil {
		t.Fatalf("TLS not configured: %+v", c.security)
	}

	// The operator commands load --tls-ca-file as they parse it.
	fs = flag.NewFlagSet("cluster status", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var o operatorFlags
	o.register(fs)
	if _, err := parseCommand(fs, []string{"--tls-ca-file", garbage}); err == nil || !strings.Contains(err.Error(), "no PEM certificate") {
		t.Errorf("operator --tls-ca-file with no certificate: %v", err)
	}
	if o.client().TLS != nil {
		t.Error("a CA file that did not load still turned TLS on")
	}
}
