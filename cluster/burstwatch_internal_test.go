package cluster

import "testing"

// TestBurstWatch: an import's burst is snapshotted once it goes quiet; a
// steady trickle of writes, however much it adds up to, never is (it is
// left to the log-size trigger).
func TestBurstWatch(t *testing.T) {
	const mib = 1 << 20
	w := burstWatch{bytes: 16 * mib}
	since := int64(0)
	for i := 0; i < 1000; i++ { // 0.5 MiB a second for 1000 s: 500 MiB
		since += mib / 2
		if w.ended(since) {
			t.Fatalf("a trickle of 0.5 MiB/s: snapshot due after %d s", i+1)
		}
	}
	w.snapshotted(0)
	since = 0
	for i := 0; i < 5; i++ { // an import, 4 MiB a second
		since += 4 * mib
		if w.ended(since) {
			t.Fatalf("snapshot due during the import (second %d)", i+1)
		}
	}
	if !w.ended(since) {
		t.Fatal("no snapshot due once the 20 MiB import went quiet")
	}
	w.snapshotted(0)
	if w.ended(0) || w.ended(mib/4) {
		t.Fatal("a snapshot due again right after one")
	}
	// A short busy spell below the burst size: not due.
	w = burstWatch{bytes: 16 * mib}
	if w.ended(8*mib) || w.ended(8*mib+1) {
		t.Fatal("8 MiB burst (under 16): snapshot due")
	}
	// A snapshot taken by another trigger in the middle restarts the count.
	w = burstWatch{bytes: 16 * mib}
	w.ended(12 * mib) // busy: 12 MiB
	w.ended(10 * mib) // a snapshot in between: 10 MiB since, all busy
	if w.busy != 10*mib {
		t.Fatalf("after another trigger's snapshot busy = %d, want 10 MiB", w.busy)
	}
	if w.ended(10 * mib) {
		t.Fatal("20 MiB counted across another trigger's snapshot")
	}
}
