package fsm_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"testing"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/statecheck"
)

// FuzzSnapshotRead feeds arbitrary snapshots to fsm.ReadSnapshot and
// state.Load, as a node restoring a snapshot does: neither may panic, and
// a state that loads must be consistent and write a snapshot that reads
// back to the same state. With wrap the input is the JSON image, given a
// header and gzip here so that mutations reach the decoder; without, it is
// the whole file.
//
// Seeds: states the httpapi fuzz seeds reach (go test ./httpapi -run
// '^Fuzz' -fuzz.record-decoder-seeds).
func FuzzSnapshotRead(f *testing.F) {
	f.Add(false, []byte("placementd-snapshot v1\n"))
	f.Add(false, []byte("placementd-snapshot v9\n"))
	f.Add(true, []byte(`{"Providers":[{"ID":1,"UUID":"a","Name":"a","RootUUID":"a"}],"Consumers":[{"UUID":"c","Allocations":[{"ProviderUUID":"a","Class":"VCPU","Used":1}]}]}`))
	f.Fuzz(func(t *testing.T, wrap bool, data []byte) {
		if wrap {
			var b bytes.Buffer
			fmt.Fprintf(&b, "placementd-snapshot v%d\n", fsm.SnapshotVersion)
			zw := gzip.NewWriter(&b)
			zw.Write(data)
			zw.Close()
			data = b.Bytes()
		}
		img, err := fsm.ReadSnapshot(bytes.NewReader(data))
		if err != nil {
			return
		}
		s, err := state.Load(img)
		if err != nil {
			return
		}
		if err := statecheck.Consistent(s); err != nil {
			t.Fatalf("loaded state is inconsistent: %v", err)
		}
		var out bytes.Buffer
		if err := fsm.WriteSnapshot(&out, s.Image()); err != nil {
			t.Fatalf("loaded state does not write: %v", err)
		}
		again, err := fsm.ReadSnapshot(&out)
		if err != nil {
			t.Fatalf("written snapshot does not read: %v", err)
		}
		s2, err := state.Load(again)
		if err != nil {
			t.Fatalf("written snapshot does not load: %v", err)
		}
		if statecheck.Digest(s) != statecheck.Digest(s2) {
			t.Fatal("snapshot round trip changed the state")
		}
	})
}
