package main

import (
	"fmt"
	"io"
	"runtime"

	"github.com/placementd/placementd/fsm"
)

// printVersion is `placementd version`: the build, and the data formats it
// writes (it reads every older version of them, see docs/operators-guide.md
// on upgrades).
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "placementd %s\n", version)
	fmt.Fprintf(w, "  Placement API microversions 1.0-1.39\n")
	fmt.Fprintf(w, "  snapshot format v%d, log entry format v%d\n", fsm.SnapshotVersion, fsm.EntryVersion)
	fmt.Fprintf(w, "  %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
