package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// Membership entries as builds have written them (the labels since
// section v2): a build must write them byte for byte so, and read them to
// the same table.
var goldenMembershipEntries = []struct {
	entry metaEntry
	data  string
}{
	{metaEntry{Op: "set", ID: "n1", HTTPAddr: "10.0.0.1:8778"}, "\x00placementd-cluster {\"op\":\"set\",\"id\":\"n1\",\"http_addr\":\"10.0.0.1:8778\"}"},
	{metaEntry{Op: "set", ID: "n2", HTTPAddr: "[fd00::2]:8778"}, "\x00placementd-cluster {\"op\":\"set\",\"id\":\"n2\",\"http_addr\":\"[fd00::2]:8778\"}"},
	{metaEntry{Op: "set", ID: "n3", HTTPAddr: "10.0.0.3:8778", Region: "east", Zone: "east-a"},
		"\x00placementd-cluster {\"op\":\"set\",\"id\":\"n3\",\"http_addr\":\"10.0.0.3:8778\",\"region\":\"east\",\"zone\":\"east-a\"}"},
	{metaEntry{Op: "set", ID: "n1", HTTPAddr: "10.0.0.9:8778"}, "\x00placementd-cluster {\"op\":\"set\",\"id\":\"n1\",\"http_addr\":\"10.0.0.9:8778\"}"},
	{metaEntry{Op: "delete", ID: "n2"}, "\x00placementd-cluster {\"op\":\"delete\",\"id\":\"n2\"}"},
}

func TestMembershipEntriesAsWritten(t *testing.T) {
	c := newClusterFSM(fsm.New(), 0)
	for i, g := range goldenMembershipEntries {
		if got := encodeMeta(g.entry); string(got) != g.data {
			t.Errorf("%+v encodes as %q, written as %q", g.entry, got, g.data)
		}
		if res := c.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: []byte(g.data)}); res != nil {
			t.Fatalf("entry %d: %v", i, res)
		}
	}
	if want := map[string]memberMeta{"n1": {HTTPAddr: "10.0.0.9:8778"}, "n3": {HTTPAddr: "10.0.0.3:8778", Region: "east", Zone: "east-a"}}; !maps.Equal(c.table(), want) {
		t.Fatalf("table %v, want %v", c.table(), want)
	}
	if digest, _ := c.inner.Digest(); digest != emptyDigest(t) {
		t.Fatal("membership entries changed the placement state")
	}
}

func emptyDigest(t *testing.T) string {
	t.Helper()
	d, _ := fsm.New().Digest()
	return d
}

// An entry the table cannot take (from a newer build, or damaged) stops
// the node, as an undecodable placement entry does (the state machine's
// OnUndecodable is told its index and bytes, then Apply goes no further),
// rather than be skipped on some replicas.
func TestMembershipEntryNotUnderstoodStops(t *testing.T) {
	for _, data := range []string{
		"\x00placementd-cluster {\"op\":\"rename\",\"id\":\"n1\"}",
		"\x00placementd-cluster {not json",
	} {
		inner := fsm.New()
		var told *fsm.UndecodableEntry
		inner.OnUndecodable = func(e *fsm.UndecodableEntry) { told = e }
		func() {
			defer func() {
				if msg := fmt.Sprint(recover()); !strings.Contains(msg, "entry 7 cannot be decoded (membership entry") {
					t.Errorf("%q: panic %q", data, msg)
				}
			}()
			newClusterFSM(inner, 0).Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte(data)})
		}()
		if told == nil || told.Index != 7 || string(told.Data) != data {
			t.Errorf("%q: OnUndecodable was told %+v", data, told)
		}
	}
}

// The golden Raft snapshots (fsm/testdata/golden, written as this
// package writes them, one per section version) restore the membership
// table in their section and the placement state after it; what Persist
// writes reads back the same.
func TestClusterSnapshotGolden(t *testing.T) {
	for file, wantTable := range map[string]map[string]memberMeta{
		"raft-snapshot-cluster-v1-snapshot-v1": {
			"n1": {HTTPAddr: "10.0.0.1:8778"}, "n2": {HTTPAddr: "10.0.0.2:8778"}, "n3": {HTTPAddr: "[fd00::3]:8778"}},
		"raft-snapshot-cluster-v2-snapshot-v1": {
			"n1": {HTTPAddr: "10.0.0.1:8778", Region: "east", Zone: "east-a"}, "n2": {HTTPAddr: "10.0.0.2:8778", Region: "west"},
			"n3": {HTTPAddr: "[fd00::3]:8778"}},
		"raft-snapshot-cluster-v3-snapshot-v1": {
			"n1": {HTTPAddr: "10.0.0.1:8778", Region: "east", Zone: "east-a", BuildVersion: "0.10.0+444b1523d678", Reads: fsm.Formats{Entry: 4, Snapshot: 1, ClusterSection: 3}},
			"n2": {HTTPAddr: "10.0.0.2:8778", Region: "west", BuildVersion: "0.10.0", Reads: fsm.Formats{Entry: 4, Snapshot: 1, ClusterSection: 3}},
			"n3": {HTTPAddr: "[fd00::3]:8778", BuildVersion: "0.11.0", Reads: fsm.Formats{Entry: 5, Snapshot: 2, ClusterSection: 3}}},
	} {
		t.Run(file, func(t *testing.T) {
			golden := "../fsm/testdata/golden/" + file
			data, err := os.ReadFile(golden + ".snap")
			if err != nil {
				t.Fatal(err)
			}
			var want struct {
				Digest string `json:"digest"`
			}
			side, err := os.ReadFile(golden + ".json")
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(side, &want); err != nil {
				t.Fatal(err)
			}

			c := newClusterFSM(fsm.New(), 0)
			if err := c.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(c.table(), wantTable) {
				t.Fatalf("table %v, want %v", c.table(), wantTable)
			}
			// Sections before v3 come from clusters that never raised the
			// cluster version; v3 holds it.
			wantVersion := fsm.ClusterVersion{Formats: fsm.PreviousReleaseFormats, BuildVersion: previousRelease}
			if strings.Contains(file, "cluster-v3") {
				wantVersion = fsm.ClusterVersion{Formats: fsm.Formats{Entry: 4, Snapshot: 1, ClusterSection: 3}, BuildVersion: "0.10.0"}
			}
			if got := c.clusterVersion(); got != wantVersion {
				t.Fatalf("cluster version %+v, want %+v", got, wantVersion)
			}
			if digest, _ := c.inner.Digest(); digest != want.Digest {
				t.Fatalf("restored digest %s, want %s", digest, want.Digest)
			}

			snap, err := c.Snapshot()
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
				t.Fatal(err)
			}
			again := newClusterFSM(fsm.New(), 0)
			if err := again.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
				t.Fatal(err)
			}
			if digest, _ := again.inner.Digest(); !maps.Equal(again.table(), wantTable) || digest != want.Digest || again.clusterVersion() != wantVersion {
				t.Fatalf("written again, it restores to %v %s %+v", again.table(), digest, again.clusterVersion())
			}
			// Written again in the version the cluster version allows: v2
			// (which 0.9.0 reads) until it is raised.
			if got, wantHead := buf.String(), fmt.Sprintf("placementd-cluster v%d ", max(2, wantVersion.ClusterSection)); !strings.HasPrefix(got, wantHead) {
				t.Fatalf("written again as %q, want %q", got[:30], wantHead)
			}

			// A section from a newer build is refused, and the table kept.
			newer := fmt.Sprintf("placementd-cluster v%d ", fsm.ClusterSectionVersion+1)
			data = append([]byte(newer), data[len("placementd-cluster v1 "):]...)
			err = again.Restore(io.NopCloser(bytes.NewReader(data)))
			if want := fmt.Sprintf("cluster snapshot section format v%d was written by a newer placementd", fsm.ClusterSectionVersion+1); err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("restore of a newer section: %v", err)
			}
			if !maps.Equal(again.table(), wantTable) {
				t.Fatal("a refused restore changed the table")
			}
		})
	}
}
