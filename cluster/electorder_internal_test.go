package cluster

import (
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func voterConf(ids ...string) raft.Configuration {
	var c raft.Configuration
	for _, id := range ids {
		c.Servers = append(c.Servers, raft.Server{ID: raft.ServerID(id), Suffrage: raft.Voter})
	}
	return c
}

func TestElectionOrder(t *testing.T) {
	regions := map[raft.ServerID]string{"n1": "a", "n2": "a", "n3": "b", "n4": "b", "n5": "c"}
	byRegion := func(id raft.ServerID) string { return regions[id] }
	noRegion := func(raft.ServerID) string { return "" }
	none := map[raft.ServerID]bool{}
	withLearner := voterConf("n1", "n2", "n3")
	withLearner.Servers = slices.Insert(withLearner.Servers, 1, raft.Server{ID: "l", Suffrage: raft.Nonvoter})
	for _, tc := range []struct {
		name   string
		conf   raft.Configuration
		leader raft.ServerID
		region func(raft.ServerID) string
		down   map[raft.ServerID]bool
		want   []raft.ServerID
	}{
		{"no regions: configuration order without the leader", voterConf("n1", "n2", "n3"), "n2", noRegion, none, []raft.ServerID{"n1", "n3"}},
		{"configuration order, not id order", voterConf("n3", "n1", "n2"), "n2", noRegion, none, []raft.ServerID{"n3", "n1"}},
		{"non-voters take no part", withLearner, "n1", noRegion, none, []raft.ServerID{"n2", "n3"}},
		{"5 voters 2/2/1: the leader's region last", voterConf("n1", "n2", "n3", "n4", "n5"), "n1", byRegion, none, []raft.ServerID{"n3", "n4", "n5", "n2"}},
		{"leader in region b", voterConf("n1", "n2", "n3", "n4", "n5"), "n4", byRegion, none, []raft.ServerID{"n1", "n2", "n5", "n3"}},
		{"the leader's region has no other voter", voterConf("n1", "n2", "n3", "n4", "n5"), "n5", byRegion, none, []raft.ServerID{"n1", "n2", "n3", "n4"}},
		{"a voter that did not answer its probe goes last", voterConf("n1", "n2", "n3"), "n3", noRegion, map[raft.ServerID]bool{"n1": true}, []raft.ServerID{"n2", "n1"}},
		{"up before down, then away before near", voterConf("n1", "n2", "n3", "n4", "n5"), "n1", byRegion, map[raft.ServerID]bool{"n3": true, "n2": true}, []raft.ServerID{"n4", "n5", "n3", "n2"}},
		{"no leader known: every voter", voterConf("n1", "n2", "n3"), "", byRegion, none, []raft.ServerID{"n1", "n2", "n3"}},
	} {
		if got := electionOrder(tc.conf, tc.leader, tc.region, func(id raft.ServerID) bool { return tc.down[id] }); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCampaignTurn(t *testing.T) {
	contact := time.Now()
	at := func(ms int) time.Time { return contact.Add(time.Duration(ms) * time.Millisecond) }
	before := contact.Add(-time.Millisecond)
	three := []raft.ServerID{"b", "c"}          // leader a
	five := []raft.ServerID{"b", "c", "d", "e"} // leader a
	type seen = map[raft.ServerID]time.Time
	for _, tc := range []struct {
		name        string
		order       []raft.ServerID
		self        raft.ServerID
		campaigning seen
		turn        int
		latest      time.Time
		join        bool
	}{
		{"3 voters: the starter campaigns, the other joins at once", three, "c", seen{"b": at(1)}, 0, at(1), true},
		{"3 voters: the other noticed first, the starter joins at once", three, "b", seen{"c": at(1)}, 0, at(1), true},
		{"nobody campaigns", three, "c", seen{}, 0, time.Time{}, false},
		{"a campaign from before the last contact was refused", three, "c", seen{"b": before}, 0, time.Time{}, false},
		{"the leader's own campaign does not count", three, "c", seen{"a": at(1)}, 0, time.Time{}, false},
		{"not in the order (the leader, a non-voter)", three, "a", seen{"b": at(1)}, 0, at(1), false},
		{"5 voters: the starter campaigns, the second joins at once", five, "c", seen{"b": at(1)}, 0, at(1), true},
		{"5 voters: the third waits one turn for the second", five, "d", seen{"b": at(1)}, 1, at(1), true},
		{"5 voters: and joins at once when the second's campaign comes", five, "d", seen{"b": at(1), "c": at(3)}, 0, at(3), true},
		{"5 voters: the last waits for the third", five, "e", seen{"b": at(1), "c": at(3)}, 1, at(3), true},
		{"5 voters: nobody joins once a quorum campaigns", five, "e", seen{"b": at(1), "c": at(3), "d": at(5)}, 0, at(5), false},
		{"5 voters: the starter joins the others' campaign at once", five, "b", seen{"d": at(1)}, 0, at(1), true},
		{"5 voters: later ones count the starter's turn", five, "e", seen{"d": at(1)}, 2, at(1), true},
	} {
		turn, latest, join := campaignTurn(tc.order, tc.self, (len(tc.order)+1)/2+1, contact, tc.campaigning)
		if turn != tc.turn || !latest.Equal(tc.latest) || join != tc.join {
			t.Errorf("%s: got turn %d latest %v join %v, want %d %v %v", tc.name, turn, latest.Sub(contact), join, tc.turn, tc.latest.Sub(contact), tc.join)
		}
	}
}

func TestTurnSlot(t *testing.T) {
	hb := 500 * time.Millisecond
	for _, tc := range []struct{ rtt, want time.Duration }{
		{0, 250 * time.Millisecond},                      // unknown: half a heartbeat timeout
		{time.Millisecond, 51 * time.Millisecond},        // LAN: the round trip and a tenth
		{150 * time.Millisecond, 200 * time.Millisecond}, // 150 ms
		{400 * time.Millisecond, 250 * time.Millisecond}, // at most half a heartbeat timeout
	} {
		if got := turnSlot(hb, tc.rtt); got != tc.want {
			t.Errorf("turnSlot(%v, %v) = %v, want %v", hb, tc.rtt, got, tc.want)
		}
	}
	if got := starterAfter(hb); got != 550*time.Millisecond {
		t.Errorf("starterAfter(%v) = %v, want 550ms", hb, got)
	}
}

func TestLogAhead(t *testing.T) {
	for _, tc := range []struct {
		term, index, otherTerm, otherIndex uint64
		want                               bool
	}{
		{5, 134, 5, 133, true},  // same term, one entry more
		{5, 133, 5, 133, false}, // equal: the other's campaign passes here
		{5, 133, 5, 134, false},
		{6, 10, 5, 200, true}, // a later term wins over a longer log
		{5, 200, 6, 10, false},
	} {
		if got := logAhead(tc.term, tc.index, tc.otherTerm, tc.otherIndex); got != tc.want {
			t.Errorf("logAhead(%d, %d, %d, %d) = %v, want %v", tc.term, tc.index, tc.otherTerm, tc.otherIndex, got, tc.want)
		}
	}
}
