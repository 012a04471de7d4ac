package difftest

import (
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	seedFlag   = flag.Int64("difftest.seed", 1, "first seed")
	seedsFlag  = flag.Int("difftest.seeds", 1, "number of seeds, from -difftest.seed on")
	stepsFlag  = flag.Int("difftest.steps", 300, "requests per seed")
	binFlag    = flag.String("difftest.bin", "", "placementd binary (default: built from this tree)")
	shrinkFlag = flag.Duration("difftest.shrink", 3*time.Minute, "time to shrink each divergence")
	groupsFlag = flag.Int("difftest.shrink-groups", 3, "divergence groups shrunk per seed")
)

// TestDifferential runs the seeds' sequences against upstream Placement
// and placementd and fails on any divergence, with a shrunk reproduction
// of each kind. It needs Debian's python3-placement.
func TestDifferential(t *testing.T) {
	if testing.Short() {
		t.Skip("starts upstream Placement and placementd processes")
	}
	if !UpstreamInstalled() {
		if os.Getenv("PLACEMENTD_REQUIRE_UPSTREAM") != "" {
			t.Fatal("python3-placement is not installed")
		}
		t.Skip("python3-placement is not installed (apt-get install -y python3-placement): no upstream to compare with")
	}
	bin := *binFlag
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "placementd")
		cmd := exec.Command("go", "build", "-o", bin, "github.com/placementd/placementd/cmd/placementd")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	r, err := NewRunner(bin, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	total := 0
	for seed := *seedFlag; seed < *seedFlag+int64(*seedsFlag); seed++ {
		var report strings.Builder
		n, err := r.Report(&report, seed, *stepsFlag, *groupsFlag, *shrinkFlag)
		t.Log(report.String())
		if err != nil {
			t.Fatal(err)
		}
		total += n
	}
	if total > 0 {
		t.Errorf("%d divergent answers", total)
	}
}
