package fsm

import (
	"strings"
	"testing"

	"github.com/hashicorp/raft"
)

// A committed entry that does not decode stops Apply before anything of
// it is applied: OnUndecodable is told the index and the bytes, and the
// message says what to do (a newer build's entry: upgrade).
func TestApplyUndecodableEntry(t *testing.T) {
	for _, tc := range []struct {
		name, data, says string
	}{
		{"garbage", "not a placement command", "did not come from placementd"},
		{"newer format", `{"v":99,"k":"create_resource_class","p":{}}`, "written by a newer placementd: upgrade this node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := New()
			var told *UndecodableEntry
			f.OnUndecodable = func(e *UndecodableEntry) { told = e; panic(e) }
			func() {
				defer func() { recover() }()
				f.Apply(&raft.Log{Index: 42, Type: raft.LogCommand, Data: []byte(tc.data)})
			}()
			if told == nil || told.Index != 42 || string(told.Data) != tc.data {
				t.Fatalf("OnUndecodable was told %+v", told)
			}
			msg := told.Error()
			for _, want := range []string{"entry 42", "nothing after it was applied", `"` + strings.ReplaceAll(tc.data, `"`, `\"`) + `"`, tc.says} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q:\n%s", want, msg)
				}
			}
			if f.Version().LastIndex != 0 {
				t.Errorf("the state moved to index %d", f.Version().LastIndex)
			}
		})
	}
}
