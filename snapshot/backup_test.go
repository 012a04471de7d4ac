package snapshot_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/snapshot"
)

func encoded(t *testing.T, img *state.Image) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := snapshot.Write(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSeedChecksTheFileAndTheDataDir(t *testing.T) {
	img := state.New().Image()
	img.LastIndex = 42
	data := encoded(t, img)

	digest, idx, err := snapshot.Inspect(data)
	if err != nil || idx != 42 || digest != snapshot.Digest(img) {
		t.Fatalf("Inspect: %q %d %v", digest, idx, err)
	}
	if _, _, err := snapshot.Inspect(data[:len(data)-8]); err == nil {
		t.Fatal("a truncated snapshot was accepted")
	}

	dir := t.TempDir()
	got, err := snapshot.Seed(data, dir)
	if err != nil || got != digest {
		t.Fatalf("Seed: %q %v", got, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, snapshot.PendingRestore)); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("pending restore file: %v", err)
	}

	used := t.TempDir()
	os.WriteFile(filepath.Join(used, "raft.db"), []byte("x"), 0o600)
	if _, err := snapshot.Seed(data, used); err == nil {
		t.Fatal("seeded a data dir that holds Raft state")
	}
	if _, err := snapshot.Seed([]byte("not a snapshot\n"), t.TempDir()); err == nil {
		t.Fatal("seeded garbage")
	}
}
