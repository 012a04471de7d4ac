package cluster_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/image"
	"github.com/placementd/placementd/fsm/state"
)

func TestSeedRestoreChecksTheFileAndTheDataDir(t *testing.T) {
	img := state.New().Image()
	img.LastIndex = 42
	var buf bytes.Buffer
	if err := fsm.WriteSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()

	dir := t.TempDir()
	got, err := cluster.SeedRestore(data, dir)
	if err != nil || got != image.Digest(img) {
		t.Fatalf("SeedRestore: %q %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, cluster.PendingRestore)); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("pending restore file: %v", err)
	}

	used := t.TempDir()
	os.WriteFile(filepath.Join(used, "raft.db"), []byte("x"), 0o600)
	if _, err := cluster.SeedRestore(data, used); err == nil {
		t.Fatal("seeded a data dir that holds Raft state")
	}
	for _, bad := range [][]byte{[]byte("not a snapshot\n"), data[:len(data)-8]} {
		empty := t.TempDir()
		if _, err := cluster.SeedRestore(bad, empty); err == nil {
			t.Fatalf("seeded %q", bad[:min(len(bad), 24)])
		}
		if _, err := os.Stat(filepath.Join(empty, cluster.PendingRestore)); err == nil {
			t.Fatal("a refused snapshot was left as the pending restore")
		}
	}
}
