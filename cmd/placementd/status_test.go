package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
)

// cluster status shows the cluster version and what each member reported
// of its build, a member of 0.9.0 (which reports nothing) as such.
func TestPrintStatusShowsVersions(t *testing.T) {
	st := front.ClusterStatus{
		Leader: "n2", Term: 4,
		ClusterVersion: fsm.ClusterVersion{Formats: fsm.PreviousReleaseFormats, BuildVersion: "0.9.0"},
		Members: []front.MemberStatus{
			{Member: cluster.Member{ID: "n1", Voter: true, Reads: fsm.PreviousReleaseFormats}, Healthy: true,
				Status: &cluster.NodeStatus{State: "Follower"}},
			{Member: cluster.Member{ID: "n2", Voter: true, Leader: true, BuildVersion: "0.10.0+6b5ce74c1d2e", Reads: fsm.BuildFormats}, Healthy: true,
				Status: &cluster.NodeStatus{State: "Leader"}},
		},
	}
	var out bytes.Buffer
	printStatus(&out, st)
	text := out.String()
	for _, want := range []string{
		"cluster version: entry v3, snapshot v1, section v2 (every member reads them; oldest build 0.9.0)",
		"BUILD", "READS",
		"(none reported: 0.9.0)  entry v3, snapshot v1, section v2",
		"0.10.0+6b5ce74c1d2e     entry v4, snapshot v1, section v3",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in:\n%s", want, text)
		}
	}
}
