package cluster

import (
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func TestQuorumCampaigns(t *testing.T) {
	three, five := voterConf("a", "b", "c"), voterConf("a", "b", "c", "d", "e")
	withLearner := voterConf("a", "b", "c")
	withLearner.Servers = append(withLearner.Servers, raft.Server{ID: "l", Suffrage: raft.Nonvoter})
	contact := time.Now()
	after, before := contact.Add(time.Millisecond), contact.Add(-time.Millisecond)
	type seen = map[raft.ServerID]time.Time
	for _, tc := range []struct {
		name        string
		conf        raft.Configuration
		self        raft.ServerID
		campaigning seen
		want        bool
	}{
		{"3 voters, leader a dead, c campaigns: b completes the quorum", three, "b", seen{"c": after}, true},
		{"nobody campaigns", three, "b", seen{}, false},
		{"c campaigned before the leader last spoke", three, "b", seen{"c": before}, false},
		{"the leader's own pre-vote does not count", three, "b", seen{"a": after}, false},
		{"a non-voter's does not count", withLearner, "b", seen{"l": after}, false},
		{"a node that is not a voter never nudges", withLearner, "l", seen{"b": after, "c": after}, false},
		{"5 voters: one campaigner and this node are not a quorum", five, "b", seen{"c": after}, false},
		{"5 voters: two campaigners and this node are", five, "b", seen{"c": after, "d": after}, true},
	} {
		if got := quorumCampaigns(tc.conf, tc.self, "a", contact, tc.campaigning); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
