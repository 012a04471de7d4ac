package cluster

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// fsm/testdata/golden/cluster-entries.json holds cluster metadata entries
// as this package writes them, with the table and cluster version they
// apply to (fsm checks their framing). It is written once, when missing,
// by
//
//	PLACEMENTD_WRITE_GOLDEN=1 go test ./cluster -run TestClusterEntriesGolden
//
// and never rewritten: what an old entry means must not change.
const clusterEntriesGolden = "../fsm/testdata/golden/cluster-entries.json"

type clusterEntriesFile struct {
	About   string `json:"about"`
	Entries []struct {
		Entry        string `json:"entry"`
		EntryVersion int    `json:"entry_version"`
	} `json:"entries"`
	Members        json.RawMessage `json:"members"`
	ClusterVersion json.RawMessage `json:"cluster_version"`
}

func goldenClusterEntries() []struct {
	e       metaEntry
	version int
} {
	v := func(e, s, c int) fsm.Formats { return fsm.Formats{Entry: e, Snapshot: s, ClusterSection: c} }
	return []struct {
		e       metaEntry
		version int
	}{
		// As 0.9.0 writes them.
		{metaEntry{Op: "set", ID: "n1", HTTPAddr: "10.0.0.1:8778"}, 1},
		{metaEntry{Op: "set", ID: "n2", HTTPAddr: "10.0.0.2:8778", Region: "west", Zone: "west-a"}, 1},
		{metaEntry{Op: "set", ID: "n3", HTTPAddr: "[fd00::3]:8778"}, 1},
		// Members reporting their build: 0.9.0 ignores the report.
		{metaEntry{Op: "set", ID: "n1", HTTPAddr: "10.0.0.1:8778", BuildVersion: "0.10.0+444b1523d678", Reads: v(4, 1, 3)}, 1},
		{metaEntry{Op: "set", ID: "n2", HTTPAddr: "10.0.0.2:8778", Region: "west", Zone: "west-a", BuildVersion: "0.10.0", Reads: v(4, 1, 3)}, 1},
		{metaEntry{Op: "delete", ID: "n3"}, 1},
		// The raise, then a lower one (proposed by a leader that lost
		// the race): ignored.
		{metaEntry{Op: "cluster_version", ClusterVersion: &fsm.ClusterVersion{Formats: v(4, 1, 3), BuildVersion: "0.10.0"}}, fsm.ClusterVersionEntry},
		{metaEntry{Op: "cluster_version", ClusterVersion: &fsm.ClusterVersion{Formats: v(3, 1, 2), BuildVersion: "0.9.0"}}, fsm.ClusterVersionEntry},
	}
}

func marshalIndent(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestClusterEntriesGolden(t *testing.T) {
	data, err := os.ReadFile(clusterEntriesGolden)
	if os.IsNotExist(err) && os.Getenv("PLACEMENTD_WRITE_GOLDEN") != "" {
		var f clusterEntriesFile
		f.About = "cluster metadata entries as package cluster writes them (membership with and without the members' reports, the cluster version's raise and a lower one ignored), and the table and cluster version they apply to"
		c := newClusterFSM(fsm.New(), 0)
		for i, g := range goldenClusterEntries() {
			data := encodeMeta(g.e)
			f.Entries = append(f.Entries, struct {
				Entry        string `json:"entry"`
				EntryVersion int    `json:"entry_version"`
			}{string(data), g.version})
			c.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: data})
		}
		f.Members, _ = json.Marshal(c.table())
		f.ClusterVersion, _ = json.Marshal(c.clusterVersion())
		if err := os.WriteFile(clusterEntriesGolden, append(marshalIndent(t, f), '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", clusterEntriesGolden)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	var f clusterEntriesFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	g := goldenClusterEntries()
	if len(f.Entries) != len(g) {
		t.Fatalf("the golden file has %d entries, goldenClusterEntries %d", len(f.Entries), len(g))
	}
	c := newClusterFSM(fsm.New(), 0)
	for i, e := range f.Entries {
		// This build writes them byte for byte as recorded.
		if got := encodeMeta(g[i].e); string(got) != e.Entry {
			t.Errorf("entry %d: %+v encodes as %q, recorded as %q", i, g[i].e, got, e.Entry)
		}
		if res := c.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: []byte(e.Entry)}); res != nil {
			t.Fatalf("entry %d: %v", i, res)
		}
	}
	members, _ := json.Marshal(c.table())
	version, _ := json.Marshal(c.clusterVersion())
	if !jsonEqual(t, members, f.Members) || !jsonEqual(t, version, f.ClusterVersion) {
		t.Fatalf("applied to table %s version %s, recorded %s %s", members, version, f.Members, f.ClusterVersion)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y bytes.Buffer
	if err := json.Compact(&x, a); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&y, b); err != nil {
		t.Fatal(err)
	}
	return x.String() == y.String()
}
