package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm/state"
)

// wantVersionError requires err to be the refusal of format at version.
func wantVersionError(t *testing.T, err error, format string, version, newest int) {
	t.Helper()
	var ve *VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v, want a VersionError", err)
	}
	if ve.Format != format || ve.Version != version || ve.Newest != newest {
		t.Fatalf("refused %+v, want %s v%d (newest v%d)", *ve, format, version, newest)
	}
	if version > newest {
		want := fmt.Sprintf("%s format v%d was written by a newer placementd: this build reads up to v%d; upgrade it", format, version, newest)
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not say %q", err, want)
		}
	}
}

// A log entry of a version newer than this build's is refused with an
// error saying so, alone or inside a batch, and the FSM stops on it
// (panics, with that error) rather than apply anything.
func TestNewerEntryVersionIsRefused(t *testing.T) {
	newer := EntryVersion + 1
	single := fmt.Appendf(nil, `{"v":%d,"k":"trait.create","t":"2026-01-02T03:04:05Z","p":{"Name":"CUSTOM_NEW"}}`, newer)
	_, err := Decode(single)
	wantVersionError(t, err, "log entry", newer, EntryVersion)

	known, err := Encode(&state.CreateTrait{Name: "CUSTOM_OLD"}, t0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Decode(EncodeBatch([][]byte{known, single}))
	wantVersionError(t, err, "log entry", newer, EntryVersion)
	if !strings.HasPrefix(err.Error(), "batch element 1: ") {
		t.Fatalf("error %q does not name the batch element", err)
	}

	_, err = Decode([]byte(`{"v":0,"k":"trait.create","t":"2026-01-02T03:04:05Z","p":{"Name":"CUSTOM_NEW"}}`))
	wantVersionError(t, err, "log entry", 0, EntryVersion)

	f := New()
	before, _ := f.Digest()
	func() {
		defer func() {
			msg := fmt.Sprint(recover())
			if !strings.Contains(msg, "was written by a newer placementd") {
				t.Fatalf("Apply of a newer entry: panic %q", msg)
			}
		}()
		f.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: single})
	}()
	if after, _ := f.Digest(); after != before {
		t.Fatal("a refused entry changed the state")
	}
}

// withHeader replaces the first line of a golden file.
func withHeader(t *testing.T, path, from, to string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte(from)) {
		t.Fatalf("%s does not start with %q", path, from)
	}
	return append([]byte(to), data[len(from):]...)
}

// A snapshot file of a newer format is refused with an error saying so,
// by every reader (restore, inspect), and a refused restore leaves the
// state as it was.
func TestNewerSnapshotVersionIsRefused(t *testing.T) {
	newer := SnapshotVersion + 1
	data := withHeader(t, goldenDir+"/snapshot-v1.snap", "placementd-snapshot v1\n", fmt.Sprintf("placementd-snapshot v%d\n", newer))
	_, err := ReadSnapshot(bytes.NewReader(data))
	wantVersionError(t, err, "snapshot", newer, SnapshotVersion)
	_, _, err = InspectSnapshot(data)
	wantVersionError(t, err, "snapshot", newer, SnapshotVersion)

	f := New()
	if _, err := f.ApplyCommand(&state.CreateTrait{Name: "CUSTOM_KEPT"}, state.Meta{Index: 1, Time: t0}); err != nil {
		t.Fatal(err)
	}
	before, _ := f.Digest()
	wantVersionError(t, f.Restore(io.NopCloser(bytes.NewReader(data))), "snapshot", newer, SnapshotVersion)
	if after, _ := f.Digest(); after != before {
		t.Fatal("a refused restore changed the state")
	}

	for _, foreign := range []string{"", "something else\n", "placementd-snapshot vX\n"} {
		_, err := ReadSnapshot(strings.NewReader(foreign))
		var ve *VersionError
		if err == nil || errors.As(err, &ve) {
			t.Errorf("read %q: %v, want a plain refusal", foreign, err)
		}
	}
}

// A Raft snapshot whose cluster section is of a newer version is refused
// with an error saying so.
func TestNewerClusterSectionVersionIsRefused(t *testing.T) {
	newer := ClusterSectionVersion + 1
	data := withHeader(t, goldenDir+"/raft-snapshot-cluster-v1-snapshot-v1.snap", "placementd-cluster v1 ", fmt.Sprintf("placementd-cluster v%d ", newer))
	_, _, _, err := ReadClusterSection(bytes.NewReader(data))
	wantVersionError(t, err, "cluster snapshot section", newer, ClusterSectionVersion)
}

func TestSnapshotFileRoundTrip(t *testing.T) {
	f := New()
	if _, err := f.ApplyCommand(&state.CreateTrait{Name: "CUSTOM_T"}, state.Meta{Index: 1, Time: t0}); err != nil {
		t.Fatal(err)
	}
	img := f.Version().Image()
	img.LastIndex = 42
	var buf bytes.Buffer
	if err := WriteSnapshot(&buf, img); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if !bytes.HasPrefix(data, []byte("placementd-snapshot v1\n")) {
		t.Fatalf("header %q", data[:min(len(data), 24)])
	}
	want, _ := f.Digest()
	digest, index, err := InspectSnapshot(data)
	if err != nil || digest != want || index != 42 {
		t.Fatalf("InspectSnapshot: %s@%d %v, want %s@42", digest, index, err, want)
	}
	if _, _, err := InspectSnapshot(data[:len(data)-8]); err == nil {
		t.Fatal("a truncated snapshot was accepted")
	}
}

// A snapshot without a cluster section (a backup) reads whole after
// ReadClusterSection; a section round-trips.
func TestClusterSection(t *testing.T) {
	snap, err := os.ReadFile(goldenDir + "/snapshot-v1.snap")
	if err != nil {
		t.Fatal(err)
	}
	version, section, rest, err := ReadClusterSection(bytes.NewReader(snap))
	if err != nil || section != nil || version != 0 {
		t.Fatalf("a backup has a cluster section %q (%v)", section, err)
	}
	if _, err := ReadSnapshot(rest); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if err := WriteClusterSection(&buf, ClusterSectionVersion, []byte(`{"n1":"a:1"}`)); err != nil {
		t.Fatal(err)
	}
	buf.Write(snap)
	version, section, rest, err = ReadClusterSection(&buf)
	if err != nil || string(section) != `{"n1":"a:1"}` || version != ClusterSectionVersion {
		t.Fatalf("section v%d %q %v", version, section, err)
	}
	if _, err := ReadSnapshot(rest); err != nil {
		t.Fatal(err)
	}
	if err := WriteClusterSection(io.Discard, ClusterSectionVersion, []byte("a\nb")); err == nil {
		t.Fatal("a section payload with a newline was written")
	}
	// An older version is written as asked (the cluster writes the one
	// its members all read); one this build does not know is refused.
	buf.Reset()
	if err := WriteClusterSection(&buf, 2, []byte(`{}`)); err != nil || buf.String() != "placementd-cluster v2 {}\n" {
		t.Fatalf("section v2: %q %v", buf.String(), err)
	}
	if err := WriteClusterSection(io.Discard, ClusterSectionVersion+1, []byte(`{}`)); err == nil {
		t.Fatal("a section in a version this build does not know was written")
	}
}

// Cluster metadata entries are framed as they always were, and are not
// placement entries.
func TestClusterEntry(t *testing.T) {
	payload := []byte(`{"op":"set","id":"n1","http_addr":"10.0.0.1:8778"}`)
	data := EncodeClusterEntry(payload)
	if want := "\x00placementd-cluster " + string(payload); string(data) != want {
		t.Fatalf("framed as %q, want %q", data, want)
	}
	got, ok := ClusterEntry(data)
	if !ok || !bytes.Equal(got, payload) {
		t.Fatalf("ClusterEntry: %q %v", got, ok)
	}
	if _, ok := ClusterEntry([]byte(`{"v":1}`)); ok {
		t.Fatal("a placement entry taken for a cluster entry")
	}
	if _, err := Decode(data); err == nil || !strings.Contains(err.Error(), "cluster metadata entry") {
		t.Fatalf("Decode of a cluster entry: %v", err)
	}
}
