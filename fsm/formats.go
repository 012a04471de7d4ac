package fsm

import "fmt"

// Formats are the newest version of each persisted format a build reads.
// A build reads every older version too, and writes a version only when
// every member of its cluster reads it (package cluster's cluster
// version), so that a rolling upgrade never hands an older member data it
// cannot read.
type Formats struct {
	Entry          int `json:"entry_version"`           // log entries (EntryVersion)
	Snapshot       int `json:"snapshot_version"`        // snapshot files (SnapshotVersion)
	ClusterSection int `json:"cluster_section_version"` // the cluster's section of a Raft snapshot (ClusterSectionVersion)
}

// BuildFormats are the formats this build reads.
var BuildFormats = Formats{Entry: EntryVersion, Snapshot: SnapshotVersion, ClusterSection: ClusterSectionVersion}

// PreviousReleaseFormats are the formats placementd 0.9.0 reads, the last
// release before members reported theirs: a member that reports nothing
// reads exactly these, and a cluster whose version was never raised
// writes nothing newer.
var PreviousReleaseFormats = Formats{Entry: 3, Snapshot: 1, ClusterSection: 2}

// Covers reports whether a reader of f reads everything a reader of g
// does.
func (f Formats) Covers(g Formats) bool {
	return f.Entry >= g.Entry && f.Snapshot >= g.Snapshot && f.ClusterSection >= g.ClusterSection
}

// Min is what readers of f and of g both read.
func (f Formats) Min(g Formats) Formats {
	return Formats{Entry: min(f.Entry, g.Entry), Snapshot: min(f.Snapshot, g.Snapshot), ClusterSection: min(f.ClusterSection, g.ClusterSection)}
}

func (f Formats) String() string {
	return fmt.Sprintf("log entries v%d, snapshots v%d, cluster snapshot sections v%d", f.Entry, f.Snapshot, f.ClusterSection)
}

// ClusterVersion is what every member of a cluster reads: the formats the
// leader may write. Package cluster keeps it in the Raft log (a cluster
// metadata entry, op "cluster_version", log entry format v4) and in its
// snapshot section (v3); a cluster that never raised it is at
// PreviousReleaseFormats.
type ClusterVersion struct {
	Formats
	// BuildVersion is the oldest build among the members when the version
	// was raised: a member joining later needs at least as new a build.
	BuildVersion string `json:"build_version,omitempty"`
}

// ClusterVersionEntry is the log entry format of the entry that raises
// the cluster version: it may be written only once every member reads it.
const ClusterVersionEntry = 4

// ClusterVersionSection is the first cluster section version that holds
// the cluster version.
const ClusterVersionSection = 3
