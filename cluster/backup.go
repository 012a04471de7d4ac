package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/placementd/placementd/fsm"
)

// PendingRestore is the file in a data directory that `placementd snapshot
// restore` leaves for `placementd serve`: on its first start the node
// bootstraps a single-node cluster, restores this snapshot through Raft
// (so it lands in the Raft snapshot store and reaches every node that joins
// later), and removes the file, all before it serves requests.
const PendingRestore = "restore-pending.snapshot"

// SeedRestore validates the snapshot file data and places it in dataDir
// as the pending restore. dataDir must not hold a node's Raft state
// already: restoring replaces a cluster's state and belongs to a new
// cluster.
func SeedRestore(data []byte, dataDir string) (digest string, err error) {
	digest, _, err = fsm.InspectSnapshot(data)
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
