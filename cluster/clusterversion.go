package cluster

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
)

// The cluster version: the formats every member reads, which the leader
// may write. During a rolling upgrade the upgraded nodes read newer
// formats than the others; if one of them leads and writes them, every
// older member stops (it refuses data it cannot read). So every member
// reports its build and the newest formats it reads (memberMeta.Reads:
// when it joins, when it starts, and again while its report is not in the
// table, since a leader of 0.9.0 drops it), and the leader raises the
// cluster version, by a log entry, only once every member in the Raft
// configuration (voters and non-voters) reports more. A member without a
// report (0.9.0 sends none) reads fsm.PreviousReleaseFormats. What is
// gated:
//
//   - the entry raising the cluster version is itself log entry format v4
//     (fsm.ClusterVersionEntry): it is written only when every member
//     reads v4, so a cluster with a 0.9.0 member never has one;
//   - the cluster section of Raft snapshots is v3, with the cluster
//     version, only once the cluster version allows it (clusterSnapshot);
//   - a placement command is proposed only in a log entry format the
//     cluster version allows (Apply);
//   - a node joins only if its build reads every format of the cluster
//     version (AddMember): once raised, an older build cannot come back.
//
// Until the version is raised a downgrade is possible: nothing newer was
// written.

// ClusterVersion is the cluster's version as this node has applied it:
// fsm.PreviousReleaseFormats until raised.
func (n *Node) ClusterVersion() fsm.ClusterVersion { return n.meta.clusterVersion() }

// BuildReport is what this node reports of its build.
func (n *Node) BuildReport() (build string, reads fsm.Formats) {
	return n.cfg.BuildVersion, n.reads()
}

// reads is what this node's build reads: Config.Reads when a test stands
// it for another build, else fsm.BuildFormats.
func (n *Node) reads() fsm.Formats {
	if n.cfg.Reads != (fsm.Formats{}) {
		return n.cfg.Reads
	}
	return fsm.BuildFormats
}

// previousRelease is the build a member that reports nothing runs.
const previousRelease = "0.9.0"

func (c *clusterFSM) clusterVersion() fsm.ClusterVersion {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.version.Formats == (fsm.Formats{}) {
		return fsm.ClusterVersion{Formats: fsm.PreviousReleaseFormats, BuildVersion: previousRelease}
	}
	return c.version
}

// reported is what a member reports, a member without a report counted as
// running the previous release.
func reported(m memberMeta) (build string, reads fsm.Formats) {
	if m.Reads == (fsm.Formats{}) {
		return "", fsm.PreviousReleaseFormats
	}
	return m.BuildVersion, m.Reads
}

// ErrBuildTooOld: a node whose build does not read every format of the
// cluster version asked to join.
var ErrBuildTooOld = errors.New("this node's build is older than the cluster version")

// checkJoinBuild refuses a joining node that cannot read what the cluster
// may already have written.
func (n *Node) checkJoinBuild(req JoinRequest) error {
	build, reads := reported(memberMeta{BuildVersion: req.BuildVersion, Reads: req.Reads})
	cv := n.meta.clusterVersion()
	if reads.Covers(cv.Formats) {
		return nil
	}
	switch {
	case req.Reads == (fsm.Formats{}):
		build = "a build that reports no formats (" + previousRelease + " or older)"
	case build == "":
		build = "an unnamed build"
	}
	need := "placementd " + releaseOf(cv.BuildVersion) + " or later"
	if cv.BuildVersion == "" {
		need = "a build that reads them"
	}
	return fmt.Errorf("%w: %s runs placementd %s, which reads %s; the cluster version is %s: "+
		"upgrade %s to %s (docs/operators-guide.md, Upgrades)",
		ErrBuildTooOld, req.ID, build, reads, cv.Formats, req.ID, need)
}

// releaseOf is a build version without its build metadata ("+commit").
func releaseOf(build string) string {
	r, _, _ := strings.Cut(build, "+")
	return r
}

// raiseClusterVersion raises the cluster version to what every member of
// the latest configuration reads, when that is more than it is and every
// member reads the entry that says so. Only the leader calls it; it holds
// versionMu so that no member joins between the look at the members and
// the raise.
func (n *Node) raiseClusterVersion() error {
	n.versionMu.Lock()
	defer n.versionMu.Unlock()
	fut := n.raft.GetConfiguration()
	if err := fut.Error(); err != nil {
		return err
	}
	target := fsm.ClusterVersion{Formats: n.reads(), BuildVersion: n.cfg.BuildVersion}
	for _, s := range fut.Configuration().Servers {
		m := n.meta.member(string(s.ID))
		if string(s.ID) == n.cfg.NodeID {
			continue
		}
		build, reads := reported(m)
		target.Formats = target.Formats.Min(reads)
		if olderBuild(build, target.BuildVersion) {
			target.BuildVersion = build
		}
	}
	cur := n.meta.clusterVersion()
	if target.Entry < fsm.ClusterVersionEntry || !target.Covers(cur.Formats) || target.Formats == cur.Formats {
		return nil
	}
	n.cfg.Logger.Info("raising the cluster version: every member reads the formats", "from", cur.Formats.String(), "to", target.Formats.String(),
		"oldest_build", target.BuildVersion)
	return n.applyMeta(metaEntry{Op: "cluster_version", ClusterVersion: &target})
}

// olderBuild reports whether build a's release is older than b's, by
// their numeric major.minor.patch ("" or unparsable counts as newest, so
// it is never taken for the oldest).
func olderBuild(a, b string) bool {
	pa, okA := releaseNumbers(a)
	pb, okB := releaseNumbers(b)
	if !okA || !okB {
		return okA && !okB
	}
	for i := range pa {
		if pa[i] != pb[i] {
			return pa[i] < pb[i]
		}
	}
	return false
}

func releaseNumbers(build string) ([3]int, bool) {
	var out [3]int
	r := releaseOf(build)
	r, _, _ = strings.Cut(r, "-") // a pre-release sorts with its release here
	parts := strings.Split(r, ".")
	if len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil {
			return out, false
		}
		out[i] = v
	}
	return out, true
}

// checkEntryFormat refuses to propose a command whose log entry format
// the cluster version does not allow yet.
func (n *Node) checkEntryFormat(version int) error {
	if cv := n.meta.clusterVersion(); version > cv.Entry {
		return fmt.Errorf("%w: this write needs log entry format v%d and the cluster version allows up to v%d: "+
			"upgrade every member first", ErrFormatNotAllowed, version, cv.Entry)
	}
	return nil
}

// ErrFormatNotAllowed: a write needs a format some member cannot read.
var ErrFormatNotAllowed = errors.New("format not allowed by the cluster version")

// ReportDue says whether the leader's table lacks this node's report of
// its build (it joined through a leader of 0.9.0, which drops it, or the
// leader did not take it yet); req is the join that reports it again,
// with this node's current suffrage, which changes nothing else
// (front.KeepReported sends it).
func (n *Node) ReportDue() (req JoinRequest, due bool) {
	build, reads := n.BuildReport()
	if m := n.meta.member(n.cfg.NodeID); n.IsLeader() || !n.IsMember() || m.BuildVersion == build && m.Reads == reads {
		return JoinRequest{}, false
	}
	return n.JoinRequest(!n.isVoter()), true
}

// isVoter says whether this node is a voter of the latest configuration.
func (n *Node) isVoter() bool {
	fut := n.raft.GetConfiguration()
	return fut.Error() == nil && isVoter(fut.Configuration(), raft.ServerID(n.cfg.NodeID))
}
