package main

import (
	"crypto/tls"
	"crypto/x509"
	"strings"
	"testing"

	"github.com/placementd/placementd/cluster"
)

// --cluster-secret-next: refused without a current secret or equal to it;
// otherwise Raft's TLS derived from the secret trusts both CAs and the
// node's joins carry both secrets' ids, current first.
func TestSecretNextSettings(t *testing.T) {
	for _, tc := range []struct{ secret, next, want string }{
		{"", "next-0123456789abcdef", "needs --cluster-secret"},
		{"same-0123456789abcdef", "same-0123456789abcdef", "the same as --cluster-secret"},
	} {
		c := clusterFlags{secret: tc.secret, secretNext: tc.next}
		if err := c.checkSecretNext(&securityFlags{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("secret %q next %q: %v", tc.secret, tc.next, err)
		}
	}
	const cur, next = "current-0123456789abcdef", "next-0123456789abcdef"
	tlsConf, err := cluster.RaftTLSFromSecret(cur, "n1")
	if err != nil {
		t.Fatal(err)
	}
	sec := securityFlags{raftTLS: tlsConf, raftTLSDerived: true}
	c := clusterFlags{secret: cur, secretNext: next}
	if err := c.checkSecretNext(&sec); err != nil {
		t.Fatal(err)
	}
	curID, _ := cluster.SecretID(cur)
	nextID, _ := cluster.SecretID(next)
	if len(c.secretIDs) != 2 || c.secretIDs[0] != curID || c.secretIDs[1] != nextID || curID == nextID {
		t.Fatalf("secret ids %v, want [%s %s]", c.secretIDs, curID, nextID)
	}
	// A peer presenting a certificate of the next secret's CA is accepted.
	peer, err := cluster.RaftTLSFromSecret(next, "n2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peer.Certificates[0].Leaf.Verify(x509Opts(sec.raftTLS)); err != nil {
		t.Fatalf("a certificate of the next secret's CA: %v", err)
	}
}

func x509Opts(c *tls.Config) x509.VerifyOptions {
	return x509.VerifyOptions{Roots: c.RootCAs, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
}
