package cluster

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// A placement command is proposed only in a log entry format the cluster
// version allows: the previous release's v3 always, v4 once raised.
func TestEntryFormatGate(t *testing.T) {
	n := &Node{meta: newClusterFSM(fsm.New(), 0)}
	if err := n.checkEntryFormat(3); err != nil {
		t.Fatalf("v3 before the raise: %v", err)
	}
	if err := n.checkEntryFormat(4); !errors.Is(err, ErrFormatNotAllowed) {
		t.Fatalf("v4 before the raise: %v", err)
	}
	raise := encodeMeta(metaEntry{Op: "cluster_version", ClusterVersion: &fsm.ClusterVersion{Formats: fsm.Formats{Entry: 4, Snapshot: 1, ClusterSection: 3}}})
	n.meta.Apply(&raft.Log{Index: 1, Type: raft.LogCommand, Data: raise})
	if err := n.checkEntryFormat(4); err != nil {
		t.Fatalf("v4 after the raise: %v", err)
	}
	if err := n.checkEntryFormat(5); !errors.Is(err, ErrFormatNotAllowed) {
		t.Fatalf("v5 after the raise to v4: %v", err)
	}
}

func TestOlderBuild(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"0.9.0", "0.10.0", true},
		{"0.10.0+abc", "0.9.0", false},
		{"0.10.0", "0.10.0+abc", false},
		{"1.0.0-rc1", "1.0.1", true},
		{"0.9.0", "", true},  // an unnamed build is never the oldest
		{"", "0.9.0", false}, // nor older than a named one
		{"junk", "0.9.0", false},
	} {
		if got := olderBuild(tc.a, tc.b); got != tc.want {
			t.Errorf("olderBuild(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}
