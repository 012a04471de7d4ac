package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// PendingRestore is the file in a data directory that `placementd snapshot
// restore` leaves for `placementd serve`: on its first start the node
// bootstraps a single-node cluster, restores this snapshot through Raft
// (so it lands in the Raft snapshot store and reaches every node that joins
// later), and removes the file, all before it serves requests.
const PendingRestore = "restore-pending.snapshot"

// Inspect reads a snapshot file fully and returns its digest and the last
// log index it covers; an unreadable or truncated file is an error.
func Inspect(data []byte) (digest string, lastIndex uint64, err error) {
	img, err := Read(bytes.NewReader(data))
	if err != nil {
		return "", 0, err
	}
	return Digest(img), img.LastIndex, nil
}

// Seed validates the snapshot data and places it in dataDir as the pending
// restore. dataDir must not hold a node's Raft state already: restoring
// replaces a cluster's state and belongs to a new cluster.
func Seed(data []byte, dataDir string) (digest string, err error) {
	digest, _, err = Inspect(data)
	if err != nil {
		return "", err
	}
	for _, name := range []string{"raft.db", "snapshots"} {
		if _, err := os.Stat(filepath.Join(dataDir, name)); err == nil {
			return "", fmt.Errorf("%s already holds a node's state (%s); restore into an empty data dir", dataDir, name)
		}
	}
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return "", err
	}
	tmp := filepath.Join(dataDir, PendingRestore+".tmp")
	if err := os.WriteFile(tmp, data, 0o640); err != nil {
		return "", err
	}
	if f, err := os.Open(tmp); err == nil {
		f.Sync()
		f.Close()
	}
	return digest, os.Rename(tmp, filepath.Join(dataDir, PendingRestore))
}
