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

// Membership entries as every build so far has written them: a build
// must write them byte for byte so, and read them to the same table.
var goldenMembershipEntries = []struct {
	entry metaEntry
	data  string
}{
	{metaEntry{Op: "set", ID: "n1", HTTPAddr: "10.0.0.1:8778"}, "\x00placementd-cluster {\"op\":\"set\",\"id\":\"n1\",\"http_addr\":\"10.0.0.1:8778\"}"},
	{metaEntry{Op: "set", ID: "n2", HTTPAddr: "[fd00::2]:8778"}, "\x00placementd-cluster {\"op\":\"set\",\"id\":\"n2\",\"http_addr\":\"[fd00::2]:8778\"}"},
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
	if want := map[string]string{"n1": "10.0.0.9:8778"}; !maps.Equal(c.table(), want) {
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
// the node, as an undecodable placement entry does, rather than be
// skipped on some replicas.
func TestMembershipEntryNotUnderstoodStops(t *testing.T) {
	for _, data := range []string{
		"\x00placementd-cluster {\"op\":\"rename\",\"id\":\"n1\"}",
		"\x00placementd-cluster {not json",
	} {
		func() {
			defer func() {
				if msg := fmt.Sprint(recover()); !strings.Contains(msg, "cannot apply membership entry 7") {
					t.Errorf("%q: panic %q", data, msg)
				}
			}()
			newClusterFSM(fsm.New(), 0).Apply(&raft.Log{Index: 7, Type: raft.LogCommand, Data: []byte(data)})
		}()
	}
}

// The golden Raft snapshot (fsm/testdata/golden, written as this package
// writes them) restores the membership table in its section and the
// placement state after it; what Persist writes reads back the same.
func TestClusterSnapshotGolden(t *testing.T) {
	const golden = "../fsm/testdata/golden/raft-snapshot-cluster-v1-snapshot-v1"
	data, err := os.ReadFile(golden + ".snap")
	if err != nil {
		t.Fatal(err)
	}
	var want struct {
		Digest         string `json:"digest"`
		ClusterSection string `json:"cluster_section"`
	}
	side, err := os.ReadFile(golden + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(side, &want); err != nil {
		t.Fatal(err)
	}
	var wantTable map[string]string
	if err := json.Unmarshal([]byte(want.ClusterSection), &wantTable); err != nil {
		t.Fatal(err)
	}

	c := newClusterFSM(fsm.New(), 0)
	if err := c.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(c.table(), wantTable) || len(wantTable) == 0 {
		t.Fatalf("table %v, want %v", c.table(), wantTable)
	}
	if digest, _ := c.inner.Digest(); digest != want.Digest {
		t.Fatalf("restored digest %s, want %s", digest, want.Digest)
	}

	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	sink := &bufferSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatal(err)
	}
	again := newClusterFSM(fsm.New(), 0)
	if err := again.Restore(io.NopCloser(bytes.NewReader(sink.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if digest, _ := again.inner.Digest(); !maps.Equal(again.table(), wantTable) || digest != want.Digest {
		t.Fatalf("written again, it restores to %v %s", again.table(), digest)
	}

	// A section from a newer build is refused, and the table kept.
	newer := bytes.Replace(data, []byte("placementd-cluster v1 "), []byte("placementd-cluster v2 "), 1)
	err = again.Restore(io.NopCloser(bytes.NewReader(newer)))
	if err == nil || !strings.Contains(err.Error(), "cluster snapshot section format v2 was written by a newer placementd") {
		t.Fatalf("restore of a newer section: %v", err)
	}
	if !maps.Equal(again.table(), wantTable) {
		t.Fatal("a refused restore changed the table")
	}
}

type bufferSink struct{ bytes.Buffer }

func (s *bufferSink) ID() string    { return "test" }
func (s *bufferSink) Cancel() error { return nil }
func (s *bufferSink) Close() error  { return nil }
