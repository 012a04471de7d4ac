package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/placementd/placementd/internal/testcluster"
)

// runBin runs the placementd binary with args and returns its combined
// output and whether it exited 0.
func runBin(t *testing.T, bin string, args ...string) (string, bool) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err == nil
}

// A quorum lost for good: three members under writes, all SIGKILLed; the
// most up-to-date data dir (by `recover --dry-run`'s term and index) is
// recovered as the only voter, serves alone within 15 s with every write
// acknowledged a second before the kill, takes writes, and two fresh nodes
// join it and converge.
func TestClusterRecover(t *testing.T) {
	bin := testcluster.Binary(t)
	c := testcluster.StartProcs(t, bin, 3, "--leave-on-shutdown=false")

	// Refusals, each naming the fix, changing nothing.
	out, ok := runBin(t, bin, "cluster", "recover", "--data-dir", filepath.Join(t.TempDir(), "missing"))
	if ok || !strings.Contains(out, "is not a directory") || !strings.Contains(out, "--data-dir") {
		t.Fatalf("recover of a missing dir: %v %s", ok, out)
	}
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("x"), 0o644)
	out, ok = runBin(t, bin, "cluster", "recover", "--data-dir", foreign)
	if entries, _ := os.ReadDir(foreign); ok || !strings.Contains(out, "not a placementd data dir") || len(entries) != 1 {
		t.Fatalf("recover of a foreign dir: %v %s (%d files after)", ok, out, len(entries))
	}
	out, ok = runBin(t, bin, "cluster", "recover", "--data-dir", c.Nodes[0].DataDir)
	if ok || !strings.Contains(out, "in use by a running placementd") || !strings.Contains(out, "stop the node first") {
		t.Fatalf("recover of a live node's dir: %v %s", ok, out)
	}
	c.Healthy(3)

	load := testcluster.StartWriteLoad("RECOVER", c.Running)
	testcluster.WaitFor(t, 30*time.Second, "writes acknowledged under load", func() error {
		return testcluster.Check(len(load.Acked(time.Time{})) >= 100, "%d acknowledged", len(load.Acked(time.Time{})))
	})
	killAt := time.Now()
	for _, n := range c.Nodes {
		c.Kill(n)
	}
	load.Stop()
	acked := load.Acked(killAt.Add(-time.Second))
	t.Logf("%d writes acknowledged a second before the kill, %d in all", len(acked), len(load.Acked(time.Time{})))

	// Pick the survivor with the highest term, then index.
	re := regexp.MustCompile(`last log index (\d+), term (\d+)`)
	var survivor *testcluster.Proc
	var bestTerm, bestIndex uint64
	for _, n := range c.Nodes {
		out, ok := runBin(t, bin, "cluster", "recover", "--dry-run", "--data-dir", n.DataDir)
		m := re.FindStringSubmatch(out)
		if !ok || m == nil {
			t.Fatalf("dry run on %s: %v %s", n.ID, ok, out)
		}
		index, _ := strconv.ParseUint(m[1], 10, 64)
		term, _ := strconv.ParseUint(m[2], 10, 64)
		if survivor == nil || term > bestTerm || term == bestTerm && index > bestIndex {
			survivor, bestTerm, bestIndex = n, term, index
		}
	}
	out, ok = runBin(t, bin, "cluster", "recover", "--data-dir", survivor.DataDir)
	if !ok || !strings.Contains(out, "recovered "+survivor.ID) || !regexp.MustCompile(`state digest [0-9a-f]{64}`).MatchString(out) {
		t.Fatalf("recover: %v %s", ok, out)
	}
	t.Logf("recover %s:\n%s", survivor.ID, out)

	started := time.Now()
	c.Restart(survivor)
	testcluster.WaitFor(t, 15*time.Second, survivor.ID+" serving alone", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := survivor.Client().Self(ctx)
		return testcluster.Check(err == nil && st.State == "Leader" && st.Ready, "%+v %v", st, err)
	})
	t.Logf("%s serves alone %s after its start", survivor.ID, time.Since(started).Round(time.Millisecond))
	if err := testcluster.Readable(survivor, acked); err != nil {
		t.Fatal(err)
	}
	if r := testcluster.Do(t, "http://"+survivor.HTTPAddr, "PUT", "/traits/CUSTOM_AFTER_RECOVERY", nil); r.Status != 201 {
		t.Fatalf("a write after recovery: %d %s", r.Status, r.Body)
	}

	// The old members never come back with their data: fresh nodes join.
	c.Nodes = testcluster.Procs{survivor}
	for _, id := range []string{"n4", "n5"} {
		c.Start(c.Add(id), survivor.HTTPAddr)
	}
	c.Healthy(3)
	c.Converged()
	for _, n := range c.Nodes {
		if err := testcluster.Readable(n, append(acked, testcluster.AckedWrite{Path: "/traits/CUSTOM_AFTER_RECOVERY"})); err != nil {
			t.Fatal(err)
		}
	}
}
