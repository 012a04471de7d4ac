package cluster

import (
	"crypto/ed25519"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Raft's mutual TLS without certificate files: every node given the same
// cluster secret derives the same CA from it, makes a certificate of its
// own signed by that CA when it starts (in memory, never written), and
// accepts as a peer whoever shows a certificate of that CA. Membership of
// the Raft group is then knowledge of the secret, the same test the
// operator API and joining apply.
//
// The CA key is derived with PBKDF2 rather than a plain HKDF: the secret
// is a password an operator chose, and anyone who can open a TLS
// connection to a Raft port receives a certificate signed by the CA, so a
// weak secret can be guessed offline against it; the iterations make each
// guess cost. A random secret (openssl rand -hex 32) makes guessing moot.

const (
	// raftCASalt names the purpose and its version: a new derivation
	// takes a new salt, so the two can never be confused.
	raftCASalt       = "placementd raft CA v1"
	raftCAIterations = 200_000
)

var (
	// The validity of the derived certificates is fixed and wide: the CA
	// cert must be byte-identical on every node, and a node's own
	// certificate lives only as long as its process, so a window would
	// only add failures on nodes with skewed clocks.
	raftCANotBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	raftCANotAfter  = time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)

	// derivedCAs caches the CA per secret: the derivation is deliberately
	// slow, and in-process tests start many nodes with one secret.
	derivedCAs sync.Map // secret -> *derivedCA
)

type derivedCA struct {
	once sync.Once
	cert *x509.Certificate
	key  ed25519.PrivateKey
	err  error
}

// raftCAFromSecret is the CA every node with this secret derives: its key
// from the secret, its certificate from a fixed template (ed25519
// signatures are deterministic, so the DER is the same everywhere).
func raftCAFromSecret(secret string) (*x509.Certificate, ed25519.PrivateKey, error) {
	v, _ := derivedCAs.LoadOrStore(secret, &derivedCA{})
	d := v.(*derivedCA)
	d.once.Do(func() {
		seed, err := pbkdf2.Key(sha256.New, secret, []byte(raftCASalt), raftCAIterations, ed25519.SeedSize)
		if err != nil {
			d.err = err
			return
		}
		key := ed25519.NewKeyFromSeed(seed)
		// Set, not left to Go, whose way of generating it changed (SHA-1,
		// then truncated SHA-256): builds with different Go versions must
		// still derive the same certificate.
		ski := sha256.Sum256(key.Public().(ed25519.PublicKey))
		tmpl := &x509.Certificate{
			SubjectKeyId:          ski[:20],
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: "placementd Raft CA (derived from the cluster secret)"},
			NotBefore:             raftCANotBefore,
			NotAfter:              raftCANotAfter,
			IsCA:                  true,
			BasicConstraintsValid: true,
			MaxPathLenZero:        true,
			KeyUsage:              x509.KeyUsageCertSign,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
		if err != nil {
			d.err = err
			return
		}
		d.cert, d.err = x509.ParseCertificate(der)
		d.key = key
	})
	return d.cert, d.key, d.err
}

// RaftTLSFromSecret is a Config.RaftTLS for a node named nodeID in a
// cluster whose members share secret: a new key and certificate for this
// node, signed by the CA derived from the secret, which is also the only
// CA its peers' certificates are checked against (both ways, TLS 1.3).
// Host names are not checked, as with certificate files (raftTLSConfigs):
// a peer proves membership by a certificate of the cluster's CA, which
// only holders of the secret can have, and Raft dials the addresses of
// its configuration, which a name check would add nothing to.
func RaftTLSFromSecret(secret, nodeID string) (*tls.Config, error) {
	if secret == "" {
		return nil, fmt.Errorf("raft TLS from the cluster secret: the secret is empty")
	}
	ca, caKey, err := raftCAFromSecret(secret)
	if err != nil {
		return nil, fmt.Errorf("raft TLS from the cluster secret: %w", err)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	if nodeID == "" {
		nodeID = "placementd node"
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: nodeID}, // a label: nothing checks it
		NotBefore:    raftCANotBefore,
		NotAfter:     raftCANotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, pub, caKey)
	if err != nil {
		return nil, fmt.Errorf("raft TLS from the cluster secret: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	return &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}},
		RootCAs:      roots,
		MinVersion:   tls.VersionTLS13,
	}, nil
}

// TrustRaftSecret makes c, a Config.RaftTLS from RaftTLSFromSecret, also
// accept peers whose certificates the CA of secret signed: the next
// secret during a rotation (docs/operators-guide.md, "Rotating the cluster
// secret"). This node's own certificate stays the current secret's.
func TrustRaftSecret(c *tls.Config, secret string) error {
	if secret == "" {
		return nil
	}
	ca, _, err := raftCAFromSecret(secret)
	if err != nil {
		return fmt.Errorf("raft TLS from the next cluster secret: %w", err)
	}
	c.RootCAs = c.RootCAs.Clone()
	c.RootCAs.AddCert(ca)
	return nil
}

// SecretID names a cluster secret without revealing more of it than any
// Raft peer sees: the SHA-256 of the public key of the CA derived from it
// (which every Raft handshake shows), its first 8 bytes in hex. Nodes
// compare the ids of their secrets when one joins.
func SecretID(secret string) (string, error) {
	ca, _, err := raftCAFromSecret(secret)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(ca.RawSubjectPublicKeyInfo)
	return fmt.Sprintf("%x", sum[:8]), nil
}
