package fsm

import "fmt"

// Every persisted format carries its version, and every reader checks it
// here, so that a node meeting data written by a newer build stops with
// one clear error instead of misreading it. The versions this build
// writes: EntryVersion (log entries), SnapshotVersion (snapshot files),
// ClusterSectionVersion (the cluster's section of a Raft snapshot).

// VersionError is returned when a log entry or a snapshot is in a format
// version this build does not read: newer than its own (written by a
// newer placementd) or not a version at all.
type VersionError struct {
	Format  string // "log entry", "snapshot" or "cluster snapshot section"
	Version int    // the version found
	Newest  int    // the newest this build reads
}

func (e *VersionError) Error() string {
	if e.Version > e.Newest {
		return fmt.Sprintf("%s format v%d was written by a newer placementd: this build reads up to v%d; upgrade it",
			e.Format, e.Version, e.Newest)
	}
	return fmt.Sprintf("%s format v%d is not a placementd format version (this build reads v1 to v%d)",
		e.Format, e.Version, e.Newest)
}

// checkVersion accepts every version from 1 up to newest: a build reads
// what every older one wrote.
func checkVersion(format string, version, newest int) error {
	if version < 1 || version > newest {
		return &VersionError{Format: format, Version: version, Newest: newest}
	}
	return nil
}
