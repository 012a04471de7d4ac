package gcfloor

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 256 * mib, 2000},
		{1 * mib, 256 * mib, 2000},  // tiny heap: bounded
		{20 * mib, 256 * mib, 1250}, // 20 MiB may grow by 256 MiB
		{128 * mib, 256 * mib, 200}, // twice the floor ratio
		{256 * mib, 256 * mib, 100}, // at the floor: Go's default
		{300 * mib, 256 * mib, 80},  // past it: grows by the floor, 85% in steps of 10
		{512 * mib, 256 * mib, 50},  // twice the floor: by half the live heap
		{1024 * mib, 256 * mib, 50}, // large states: by half the live heap
		{100 * mib, 256 * mib, 250}, // 256%, in steps of 50
	} {
		if got := Percent(c.live, c.floor); got != c.want {
			t.Errorf("Percent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}

// TestAfterEachGC checks that the hook runs after collection after
// collection (it re-arms itself) and stops once its context ends.
func TestAfterEachGC(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	afterEachGC(ctx, func() { calls.Add(1) })
	deadline := time.Now().Add(10 * time.Second)
	for calls.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the hook ran %d times in 10 s of collections, want 3", calls.Load())
		}
		runtime.GC()
		runtime.Gosched()
	}
	cancel()
	atCancel := calls.Load()
	// Collections after the end, each waited for until cleanups queued
	// by it have run (a marker cleanup of our own): the hook may run once
	// more (armed before the end), never again.
	for i := 0; i < 3; i++ {
		ran := make(chan struct{})
		runtime.AddCleanup(new(gcSentinel), func(c chan struct{}) { close(c) }, ran)
		runtime.GC()
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("a cleanup did not run within 10 s of a collection")
		}
	}
	if got := calls.Load(); got > atCancel+1 {
		t.Errorf("the hook ran %d more times after its context ended", got-atCancel)
	}
}
