package faults

import (
	"context"
	"flag"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

var freezeTrials = flag.Int("faults.freeze", 0,
	"run the freeze scenario this many times (make freeze-check) instead of the short run")

// TestFreeze: a leader frozen past the election timeout and woken with
// reads waiting must not answer any of them from its stale state. The
// short run (CI) does 6 freezes of 8 reads; make freeze-check does more.
func TestFreeze(t *testing.T) {
	rep := runFreezeChecked(t, 6, FreezeConfig{MaxDelay: 25 * time.Millisecond})
	if rep.Reads == 0 || rep.ServedByOld+rep.Forwarded == 0 {
		t.Fatalf("no read was answered: the scenario did not run (%s)", rep)
	}
}

// TestFreezeTransferBack: the same freeze, and the woken leader is made
// the leadership-transfer target at once, with the reads queued at it: it
// leads again in a newer term, and none of the reads it noted an index
// for in its old term may be answered from that index (issue 32).
func TestFreezeTransferBack(t *testing.T) {
	rep := runFreezeChecked(t, 4, FreezeConfig{ReadsPerTrial: 25, MaxDelay: 25 * time.Millisecond, TransferBack: true})
	if rep.ServedByOld == 0 {
		t.Fatalf("the woken leader answered no read itself: the scenario did not run (%s)", rep)
	}
}

// runFreezeChecked runs the freeze scenario with cfg (trials of them, or
// -faults.freeze's) on this build, in parallel with the other fault
// tests, and fails t on any violation.
func runFreezeChecked(t *testing.T, trials int, cfg FreezeConfig) *FreezeReport {
	if testing.Short() {
		t.Skip("fault injection: runs a placementd cluster")
	}
	t.Parallel()
	if *freezeTrials > 0 {
		trials = *freezeTrials
	}
	cfg.Bin, cfg.Dir, cfg.Trials, cfg.Logf = testcluster.Binary(t), t.TempDir(), trials, t.Logf
	rep, err := RunFreeze(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	for _, v := range rep.Violations {
		t.Error(v)
	}
	if rep.Failed() {
		t.Fatalf("freeze: %s", rep)
	}
	return rep
}

// TestFreezeCatchesStaleReads proves the freeze check can fail: in the
// faults_broken_reads build every node answers reads from its own state,
// so the woken leader serves reads that miss the new leader's write.
func TestFreezeCatchesStaleReads(t *testing.T) {
	if testing.Short() {
		t.Skip("fault injection: runs a placementd cluster")
	}
	t.Parallel()
	rep, err := RunFreeze(context.Background(), FreezeConfig{
		Bin: testcluster.Binary(t, "faults_broken_reads"), Dir: t.TempDir(), Trials: 1, Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Stale == 0 || rep.Linearizable != "no" {
		t.Fatalf("stale reads went unnoticed: %s", rep)
	}
}
