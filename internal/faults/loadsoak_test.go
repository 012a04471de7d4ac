package faults

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

var (
	loadSoakDuration = flag.Duration("loadsoak.duration", 0, "run the load soak for this long (make soak)")
	loadSoakKill     = flag.Duration("loadsoak.kill-every", 3*time.Minute, "time between leader kills in the load soak")
	loadSoakDir      = flag.String("loadsoak.dir", "", "where the load soak keeps data dirs and logs (default: a new dir under $TMPDIR)")
)

// TestLoadSoak is `make soak`: the mixed load against a 3-node cluster for
// -loadsoak.duration with a leader kill every -loadsoak.kill-every, then
// the checks and the summary.
func TestLoadSoak(t *testing.T) {
	if *loadSoakDuration == 0 {
		t.Skip("the load soak runs with -loadsoak.duration DURATION (make soak)")
	}
	dir := *loadSoakDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "placementd-loadsoak-"+time.Now().Format("20060102-150405"))
	}
	bin, err := testcluster.Build(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := RunLoadSoak(context.Background(), LoadSoakConfig{Bin: bin, Dir: dir, Duration: *loadSoakDuration,
		KillEvery: *loadSoakKill, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("\n%s(logs and data in %s)\n", rep.Summary(), dir)
	for _, v := range rep.Violations {
		t.Error(v)
	}
}

// TestLoadSoakShort is the load soak in brief: 15 s of the mixed load with
// a leader kill or two, under the same checks.
func TestLoadSoakShort(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a 3-node cluster of processes")
	}
	t.Parallel()
	dir := t.TempDir()
	rep, err := RunLoadSoak(context.Background(), LoadSoakConfig{Bin: testcluster.Binary(t), Dir: dir, Duration: 15 * time.Second,
		KillEvery: 6 * time.Second, Providers: 4, Scratch: 2, Claimers: 2, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s", rep.Summary())
	if rep.LeaderKills == 0 {
		t.Error("no leader kill happened")
	}
	for _, v := range rep.Violations {
		t.Error(v)
	}
}
