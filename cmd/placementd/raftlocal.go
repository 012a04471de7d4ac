package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/placementd/placementd/cluster"
)

// localRaftSecretFile holds the random Raft secret of a node started
// without --cluster-secret (mode 0600).
const localRaftSecretFile = "raft-local-secret"

// localRaftTLS gives a node without --cluster-secret, Raft certificates or
// --raft-insecure-plaintext (`make run`, a first single node) mutual TLS
// keyed by a random secret of its data dir, which no other process knows:
// a plaintext Raft port, even on loopback, lets any local process forge
// AppendEntries with the term and index /_cluster/health shows and write
// to the state past the API's authentication. Nobody can join such a
// node, which checkRaftPeers enforces as before; giving it
// --cluster-secret later replaces this secret. Run after nodeID, which
// creates the data dir.
func (c *securityFlags) localRaftTLS(dataDir, nodeID string, log *slog.Logger) error {
	if c.raftTLS != nil || c.raftInsecure {
		return nil
	}
	secret, err := localRaftSecret(dataDir, log)
	if err != nil {
		return err
	}
	if c.raftTLS, err = cluster.RaftTLSFromSecret(secret, nodeID); err != nil {
		return err
	}
	c.raftLocalOnly = true
	log.Info("Raft uses TLS keyed by this data dir's own secret (no --cluster-secret): no other node can join; give every node --cluster-secret to grow a cluster",
		"file", filepath.Join(dataDir, localRaftSecretFile))
	return nil
}

// localRaftSecret reads the data dir's Raft secret, or makes one: 32
// random bytes, hex, written with mode 0600 before anything reads it. A
// file others could read is made private again (the secret only guards
// this node, so a copy taken before cannot reach other nodes).
func localRaftSecret(dataDir string, log *slog.Logger) (string, error) {
	path := filepath.Join(dataDir, localRaftSecretFile)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		secret := strings.TrimSpace(string(b))
		if len(secret) < 32 {
			return "", fmt.Errorf("%s holds no secret (%d bytes): delete it and start again, a new one is made", path, len(b))
		}
		if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
			log.Warn("the data dir's Raft secret was readable by others: made 0600", "file", path, "mode", st.Mode().Perm().String())
			if err := os.Chmod(path, 0o600); err != nil {
				return "", err
			}
		}
		return secret, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	secret := hex.EncodeToString(raw)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	if _, err := f.WriteString(secret + "\n"); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", err
	}
	return secret, f.Close()
}
