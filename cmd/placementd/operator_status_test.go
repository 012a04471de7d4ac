package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
)

// The status table gives a member that could not be asked a short reason
// in its DIGEST column, and points at -o json for the whole error.
func TestStatusTableShortReason(t *testing.T) {
	dial := `Get "http://10.0.0.3:8778/_cluster/self": dial tcp 10.0.0.3:8778: connect: connection refused` + strings.Repeat(" (more detail)", 10)
	st := front.ClusterStatus{Leader: "n1", Term: 3, Members: []front.MemberStatus{
		{Member: cluster.Member{ID: "n1", Voter: true}, Healthy: true, Status: &cluster.NodeStatus{State: "Leader", Leader: "n1", Digest: "0123456789abcdef"}},
		{Member: cluster.Member{ID: "n3", Voter: true}, Error: dial},
		{Member: cluster.Member{ID: "n4", Voter: true}, Error: strings.Repeat("x", 200)},
	}}
	var out bytes.Buffer
	printStatus(&out, st)
	text := out.String()
	for _, line := range strings.Split(text, "\n") {
		if len(line) > 240 { // the BUILD and READS columns take about 70
			t.Errorf("a line of %d characters:\n%s", len(line), line)
		}
	}
	for _, want := range []string{"down: connection refused", "xxx...", "-o json"} {
		if !strings.Contains(text, want) {
			t.Errorf("the table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "dial tcp") {
		t.Errorf("the whole dial error is in the table:\n%s", text)
	}
}
