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
// fail cleanly or yield a command; applying that command to the fixture
// state (testdata/fuzz-fixture.snap, the httpapi fuzz fixture) must not
// panic, must change nothing when the command is rejected, must leave the
// indexes consistent when it is accepted, and must give the same result
// on two replicas (Apply is deterministic).
//
// Seeds: every registered kind with an empty payload, and the entries the
// httpapi fuzz seeds produce (go test ./httpapi -run '^Fuzz'
// -fuzz.record-decoder-seeds).
func FuzzDecodeEntry(f *testing.F) {
	fixture, err := os.ReadFile("testdata/fuzz-fixture.snap")
	if err != nil {
		f.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, kind := range state.CommandKinds() {
		f.Add([]byte(fmt.Sprintf(`{"v":1,"k":%q,"t":"2026-01-02T03:04:05Z","p":{}}`, kind)))
		f.Add([]byte(fmt.Sprintf(`{"v":1,"k":%q,"t":"2026-01-02T03:04:05Z","p":null}`, kind)))
	}
	f.Add([]byte(`{"v":2,"k":"allocations.set","p":{}}`))
	f.Fuzz(func(t *testing.T, entry []byte) {
		cmd, _, err := fsm.Decode(entry)
		if err != nil {
			return
		}
		if _, err := fsm.Encode(cmd, at); err != nil {
			t.Fatalf("decoded %s entry does not encode again: %v", cmd.Kind(), err)
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
		r1 := m1.Apply(log).(fsm.Result)
		r2 := m2.Apply(log).(fsm.Result)
		var d1, d2 string
		var consistent error
		m1.Read(func(s *state.Store) { d1, consistent = statecheck.Digest(s), statecheck.Consistent(s) })
		m2.Read(func(s *state.Store) { d2 = statecheck.Digest(s) })
		if d1 != d2 || fmt.Sprint(r1.Err) != fmt.Sprint(r2.Err) {
			t.Fatalf("%s: replicas differ: %v / %v", entry, r1.Err, r2.Err)
		}
		if r1.Err != nil && d1 != before {
			t.Fatalf("%s: rejected (%v) but changed the state", entry, r1.Err)
		}
		if consistent != nil {
			t.Fatalf("%s: state inconsistent after apply (%v): %v", entry, r1.Err, consistent)
		}
	})
}
