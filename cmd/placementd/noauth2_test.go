package main

import (
	"strings"
	"testing"
)

func TestLoopbackOnly(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:8778": true, "127.1.2.3:0": true, "[::1]:8778": true, "localhost:8778": true,
		"0.0.0.0:8778": false, ":8778": false, "[::]:8778": false, "10.0.0.1:8778": false,
		"node1:8778": false, "127.0.0.1": false,
	} {
		if got := loopbackOnly(addr); got != want {
			t.Errorf("loopbackOnly(%q) = %v, want %v", addr, got, want)
		}
	}
}

// noauth2 refuses a non-loopback API address before anything starts,
// unless --auth-noauth2-insecure-remote allows it.
func TestNoauth2RefusesRemoteAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0"} {
		dir := t.TempDir()
		err := serve([]string{"--http-addr", addr, "--raft-addr", "127.0.0.1:0", "--data-dir", dir})
		if err == nil || !strings.Contains(err.Error(), "--auth-noauth2-insecure-remote") {
			t.Errorf("noauth2 on %s: %v, want a refusal naming the flag", addr, err)
		}
	}
	// With the flag, start-up goes on: here to listening on an address
	// this host does not have (TEST-NET-1), which fails differently.
	err := serve([]string{"--http-addr", "192.0.2.1:0", "--raft-addr", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--auth-noauth2-insecure-remote"})
	if err == nil || strings.Contains(err.Error(), "--auth-noauth2-insecure-remote") {
		t.Errorf("noauth2 on 192.0.2.1 with the flag: %v, want a listen error", err)
	}
	// Keystone needs no flag (it fails here for want of its settings).
	err = serve([]string{"--http-addr", "0.0.0.0:0", "--auth-strategy", "keystone", "--data-dir", t.TempDir()})
	if err == nil || strings.Contains(err.Error(), "noauth2") {
		t.Errorf("keystone on 0.0.0.0: %v", err)
	}
}
