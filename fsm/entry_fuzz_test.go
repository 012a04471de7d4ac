package fsm_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
	"github.com/placementd/placementd/internal/statecheck"
)

// FuzzDecodeEntry feeds arbitrary log entries to the FSM. Decoding must
// fail cleanly or yield commands (one, or several for a batch); applying
// the entry to the fixture state (testdata/fuzz-fixture.snap, the httpapi
// fuzz fixture) must not panic, must change nothing when every command is
// rejected, must leave the indexes consistent, and must give the same
// results on two replicas (Apply is deterministic).
//
// Seeds: every kind in the table (commands.go) with an empty payload, batches of them, and
// the entries the httpapi fuzz seeds produce (go test ./httpapi -run
// '^Fuzz' -fuzz.record-decoder-seeds).
func FuzzDecodeEntry(f *testing.F) {
	fixture, err := os.ReadFile("testdata/fuzz-fixture.snap")
	if err != nil {
		f.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, kind := range fsm.CommandKinds() {
		f.Add([]byte(fmt.Sprintf(`{"v":1,"k":%q,"t":"2026-01-02T03:04:05Z","p":{}}`, kind)))
		f.Add([]byte(fmt.Sprintf(`{"v":1,"k":%q,"t":"2026-01-02T03:04:05Z","p":null}`, kind)))
	}
	f.Add([]byte(`{"v":2,"k":"allocations.set","p":{}}`))
	f.Add([]byte(`{"v":2,"k":"batch","p":[{"v":1,"k":"trait.create","t":"2026-01-02T03:04:05Z","p":{"Name":"CUSTOM_F"}},` +
		`{"v":1,"k":"trait.delete","t":"2026-01-02T03:04:05Z","p":{"Name":"CUSTOM_F"}}]}`))
	f.Add([]byte(`{"v":2,"k":"batch","p":[{"v":1,"k":"trait.delete","t":"2026-01-02T03:04:05Z","p":{"Name":"HW_CPU_X86_AVX"}},` +
		`{"v":1,"k":"resource_class.create","t":"2026-01-02T03:04:05Z","p":{}}]}`))
	f.Fuzz(func(t *testing.T, entry []byte) {
		entries, err := fsm.Decode(entry)
		if err != nil {
			return
		}
		for _, e := range entries {
			if _, err := fsm.Encode(e.Cmd, at); err != nil {
				t.Fatalf("decoded %s entry does not encode again: %v", e.Cmd.Kind(), err)
			}
		}
		replica := func() (*fsm.FSM, string) {
			m := fsm.New()
			if err := m.Restore(io.NopCloser(bytes.NewReader(fixture))); err != nil {
				t.Fatal(err)
			}
			var d string
			m.Read(func(s *state.Store) { d = statecheck.Digest(s) })
			return m, d
		}
		m1, before := replica()
		m2, _ := replica()
		log := &raft.Log{Index: 1000, Type: raft.LogCommand, Data: entry}
		r1, r2 := fsm.Results(m1.Apply(log)), fsm.Results(m2.Apply(log))
		if len(r1) != len(entries) || len(r2) != len(entries) {
			t.Fatalf("%s: %d and %d results for %d commands", entry, len(r1), len(r2), len(entries))
		}
		var d1, d2 string
		var consistent error
		m1.Read(func(s *state.Store) { d1, consistent = statecheck.Digest(s), statecheck.Consistent(s) })
		m2.Read(func(s *state.Store) { d2 = statecheck.Digest(s) })
		rejected := true
		for i := range r1 {
			if fmt.Sprint(r1[i].Err) != fmt.Sprint(r2[i].Err) {
				t.Fatalf("%s: replicas differ on command %d: %v / %v", entry, i, r1[i].Err, r2[i].Err)
			}
			rejected = rejected && r1[i].Err != nil
		}
		if d1 != d2 {
			t.Fatalf("%s: replicas differ", entry)
		}
		if rejected && d1 != before {
			t.Fatalf("%s: rejected (%v) but changed the state", entry, r1[0].Err)
		}
		if consistent != nil {
			t.Fatalf("%s: state inconsistent after apply: %v", entry, consistent)
		}
	})
}
