package cluster

import (
	"bytes"
	"io"
	"reflect"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// The membership table survives a snapshot with its labels, and a
// snapshot written before labels (header v1: addresses only) still
// restores its addresses.
func TestMembershipSnapshotVersions(t *testing.T) {
	c := newClusterFSM(fsm.New(), 0)
	for i, e := range []metaEntry{
		setEntry("n1", memberMeta{HTTPAddr: "10.0.0.1:8778", Region: "east", Zone: "a"}),
		setEntry("n2", memberMeta{HTTPAddr: "10.0.0.2:8778"}),
	} {
		c.Apply(&raft.Log{Index: uint64(i + 1), Type: raft.LogCommand, Data: encodeMeta(e)})
	}
	snap, err := c.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := snap.Persist(&bufSink{Buffer: &buf}); err != nil {
		t.Fatal(err)
	}
	placement := buf.Bytes()[bytes.IndexByte(buf.Bytes(), '\n')+1:]

	restored := newClusterFSM(fsm.New(), 0)
	if err := restored.Restore(io.NopCloser(bytes.NewReader(buf.Bytes()))); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(restored.table(), c.table()) {
		t.Fatalf("restored %+v, want %+v", restored.table(), c.table())
	}

	v1 := append([]byte(`placementd-cluster v1 {"n1":"10.0.0.1:8778"}`+"\n"), placement...)
	old := newClusterFSM(fsm.New(), 0)
	if err := old.Restore(io.NopCloser(bytes.NewReader(v1))); err != nil {
		t.Fatal(err)
	}
	if got := old.table(); !reflect.DeepEqual(got, map[string]memberMeta{"n1": {HTTPAddr: "10.0.0.1:8778"}}) {
		t.Fatalf("v1 header restored %+v", got)
	}
}

type bufSink struct{ *bytes.Buffer }

func (bufSink) ID() string    { return "test" }
func (bufSink) Cancel() error { return nil }
func (bufSink) Close() error  { return nil }
