package testcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The previous release, for mixed-version tests: CHANGELOG.md names each
// release with the commit it was cut from ("## 0.9.0 (commit HASH)"); the
// newest such section below the unreleased one is the release this build
// must upgrade from.

var releaseHeading = regexp.MustCompile(`(?m)^## (\d+\.\d+\.\d+) \(commit ([0-9a-f]{40})\)`)

// PreviousRelease returns the version and commit of the newest release
// CHANGELOG.md names with a commit.
func PreviousRelease(repoRoot string) (version, commit string, err error) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		return "", "", err
	}
	m := releaseHeading.FindSubmatch(b)
	if m == nil {
		return "", "", fmt.Errorf("CHANGELOG.md names no release with its commit (## X.Y.Z (commit HASH))")
	}
	return string(m[1]), string(m[2]), nil
}

// BuildPreviousRelease builds cmd/placementd of the previous release from
// git history (git archive of its commit into a directory of the test,
// then go build there) and returns the binary and the release. The test
// is skipped, saying why, only when the commit is not in this clone's
// history (a shallow clone); CI clones in full.
func BuildPreviousRelease(t testing.TB) (bin, version string) {
	t.Helper()
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): the mixed-version test builds the previous release from git history", err)
	}
	root := strings.TrimSpace(string(out))
	version, commit, err := PreviousRelease(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").Run(); err != nil {
		t.Skipf("the previous release %s (commit %s) is not in this clone's history (a shallow clone? git fetch --unshallow): cannot build it", version, commit)
	}
	src := filepath.Join(t.TempDir(), "placementd-"+version)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	archive := exec.Command("sh", "-c", `git -C "$1" archive "$2" | tar -x -C "$3"`, "sh", root, commit, src)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", commit, err, out)
	}
	bin = filepath.Join(src, "placementd")
	build := exec.Command("go", "build", "-o", bin, "./cmd/placementd")
	build.Dir = src
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the previous release %s (%s): %v\n%s", version, commit, err, out)
	}
	return bin, version
}
