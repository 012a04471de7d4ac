package fsm

import (
	stdjson "encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Cluster metadata entries as package cluster writes them, kept in
// testdata/golden/cluster-entries.json like the placement entries: fsm
// frames them, and cluster's TestClusterEntriesGolden applies the file
// and checks the membership table and cluster version it records. A
// change of what an old entry means needs a new format version.

// goldenClusterEntry is one cluster metadata entry as written.
type goldenClusterEntry struct {
	// Entry is the whole log entry (the framing and the payload).
	Entry string `json:"entry"`
	// EntryVersion is the log entry format that introduced what the entry
	// holds: a build reading less stops at it.
	EntryVersion int `json:"entry_version"`
}

type goldenClusterLog struct {
	About   string               `json:"about"`
	Entries []goldenClusterEntry `json:"entries"`
	// Members and ClusterVersion are the JSON of the membership table
	// and cluster version after every entry, as package cluster reads
	// them (opaque here).
	Members        stdjson.RawMessage `json:"members"`
	ClusterVersion stdjson.RawMessage `json:"cluster_version"`
}

const goldenClusterEntries = "cluster-entries.json"

func readGoldenClusterEntries(t *testing.T) []goldenClusterEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(goldenDir, goldenClusterEntries))
	if err != nil {
		t.Fatal(err)
	}
	var log goldenClusterLog
	if err := stdjson.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Entries) == 0 {
		t.Fatalf("%s holds no entry", goldenClusterEntries)
	}
	return log.Entries
}

// Every golden cluster metadata entry is framed as one, and is not taken
// for placement commands; the entry that raises the cluster version is
// among them.
func TestGoldenClusterEntriesFramed(t *testing.T) {
	raises := false
	for i, e := range readGoldenClusterEntries(t) {
		payload, ok := ClusterEntry([]byte(e.Entry))
		if !ok {
			t.Fatalf("entry %d is not a cluster metadata entry: %q", i, e.Entry)
		}
		if _, err := Decode([]byte(e.Entry)); err == nil {
			t.Fatalf("entry %d decodes as placement commands", i)
		}
		if e.EntryVersion < 1 || e.EntryVersion > EntryVersion {
			t.Fatalf("entry %d: entry version %d", i, e.EntryVersion)
		}
		if strings.Contains(string(payload), `"op":"cluster_version"`) {
			raises = true
			if e.EntryVersion != ClusterVersionEntry {
				t.Fatalf("the cluster version entry is recorded as format v%d, not v%d", e.EntryVersion, ClusterVersionEntry)
			}
		}
	}
	if !raises {
		t.Fatal("no golden entry raises the cluster version")
	}
}
