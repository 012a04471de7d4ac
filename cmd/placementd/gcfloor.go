package main

import (
	"context"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// gcFloor keeps the garbage collector from running on every few megabytes
// of allocation while the live heap is small. Go sets the next collection
// at live heap × (1 + GOGC/100); with a few tens of megabytes of state (a
// cloud of a thousand hosts) that means a collection every handful of
// requests, each re-marking the whole state. gcFloor raises GOGC so that
// the heap may grow to at least live+floor before a collection, and lowers
// it back to the default as the live heap grows past the floor, so large
// states keep Go's usual memory bound of twice the live heap.
//
// A GOGC or GOMEMLIMIT set in the environment is the operator's choice and
// is left alone, as is floor 0.
func gcFloor(ctx context.Context, floor uint64, log *slog.Logger) {
	if floor == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	current := 100
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if want := gcPercent(sample[0].Value.Uint64(), floor); want != current {
				debug.SetGCPercent(want)
				log.Debug("gc percent", "percent", want, "live_heap", sample[0].Value.Uint64())
				current = want
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// gcPercent is the GOGC that lets a live heap of live bytes grow by at
// least floor before the next collection: floor/live × 100, never below
// Go's default 100, bounded (and rounded to steps of 50, so that small
// changes of the live heap do not reset it every second).
func gcPercent(live, floor uint64) int {
	const maxPercent = 2000
	if live == 0 {
		return maxPercent
	}
	p := floor * 100 / live
	switch {
	case p <= 100:
		return 100
	case p >= maxPercent:
		return maxPercent
	}
	return int(p / 50 * 50)
}
