package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/placementd/placementd/fsm"
)

// release is this tree's semantic version: the next release while
// unreleased work lands, as CHANGELOG.md names it. Raise it with the
// CHANGELOG's new section when a release is cut.
const release = "0.10.0"

// commit is the commit the binary was built from, stamped by `make build`
// (-ldflags "-X main.commit=..."); without it, the one go build recorded
// (a build inside a git checkout), else unknown.
var commit = ""

// buildVersion is the release with the commit as semver build metadata:
// "0.10.0+444b1523d678" ("+...-dirty" for uncommitted changes).
func buildVersion() string {
	c := commit
	if c == "" {
		c = vcsCommit()
	}
	if c == "" {
		return release
	}
	return release + "+" + c
}

// vcsCommit is the commit go build recorded, shortened to 12 digits,
// "-dirty" when the tree had uncommitted changes.
func vcsCommit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev[:min(len(rev), 12)] + dirty
}

// printVersion is `placementd version`: the build, and the newest data
// formats it reads. It writes them only once every member of its cluster
// reads them (the cluster version, docs/operators-guide.md "Upgrades").
func printVersion(w io.Writer) {
	f := fsm.BuildFormats
	fmt.Fprintf(w, "placementd %s\n", buildVersion())
	fmt.Fprintf(w, "  Placement API microversions 1.0-1.39\n")
	fmt.Fprintf(w, "  reads log entry format up to v%d, snapshot format up to v%d, cluster snapshot section up to v%d\n",
		f.Entry, f.Snapshot, f.ClusterSection)
	fmt.Fprintf(w, "  %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
