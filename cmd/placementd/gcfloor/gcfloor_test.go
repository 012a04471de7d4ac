package gcfloor

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
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

func TestLimit(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int64
	}{
		{0, 256 * mib, (256 + 64) * mib},                 // an empty heap may grow by the floor
		{20 * mib, 256 * mib, (20 + 256 + 64) * mib},     // a small one too
		{1024 * mib, 256 * mib, (1024 + 512 + 64) * mib}, // a large one by half itself, as GOGC 50
	} {
		if got := Limit(c.live, c.floor); got != c.want {
			t.Errorf("Limit(%d MiB, %d MiB) = %d MiB, want %d MiB", c.live/mib, c.floor/mib, got/mib, c.want/mib)
		}
	}
}

// adjust sets the memory limit with GOGC, from the live heap: a GOGC
// left high for a smaller heap can no longer let the heap run past it.
func TestAdjustSetsTheLimit(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	const floor = 8 << 20
	tuner := &gcTuner{floor: floor, log: slog.New(slog.DiscardHandler), current: 100}
	runtime.GC()
	tuner.adjust()
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		t.Fatal("no memory limit set")
	}
	// The live heap of this test binary is a few MiB: the limit is its
	// live heap, the floor and the slack.
	if low, high := int64(floor+LimitSlack), int64(floor+LimitSlack+64<<20); limit < low || limit > high {
		t.Fatalf("limit %d MiB, want between %d and %d MiB", limit>>20, low>>20, high>>20)
	}
}
