package gcfloor

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Run keeps the garbage collector from running on every few megabytes
// of allocation while the live heap is small. Go sets the next collection
// at live heap × (1 + GOGC/100); with a few tens of megabytes of state (a
// cloud of a thousand hosts) that means a collection every handful of
// requests, each re-marking the whole state. Run raises GOGC so that
// the heap may grow to at least live+floor before a collection, and lowers
// it as the live heap grows past the floor, down to 50 for large states
// (Percent).
//
// It sets GOGC again after every collection, from the live heap that
// collection found, until ctx ends. While a large state is loaded (an
// import, a restore, a log replayed at start) the live heap grows by
// hundreds of MiB a second: a GOGC raised for a small heap and corrected
// only a second later lets the heap run to many times its live size
// (GOGC 2000, set for a heap of a few MiB, gives a goal of 21 times the
// live heap of the next collection).
//
// It also sets a soft memory limit from the same live heap (Limit).
//
// A GOGC or GOMEMLIMIT set in the environment is the operator's choice and
// is left alone, as is floor 0.
func Run(ctx context.Context, floor uint64, log *slog.Logger) {
	if floor == 0 || os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	t := &gcTuner{floor: floor, log: log, current: 100}
	t.adjust()
	afterEachGC(ctx, t.adjust)
	<-ctx.Done()
}

// gcTuner sets GOGC from the live heap.
type gcTuner struct {
	floor   uint64
	log     *slog.Logger
	mu      sync.Mutex
	current int
}

// adjust sets GOGC, and the soft memory limit (Limit), from the live heap
// the last collection found.
func (t *gcTuner) adjust() {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return
	}
	live := sample[0].Value.Uint64()
	t.mu.Lock()
	defer t.mu.Unlock()
	debug.SetMemoryLimit(Limit(live, t.floor))
	if want := Percent(live, t.floor); want != t.current {
		debug.SetGCPercent(want)
		t.log.Debug("gc percent", "percent", want, "live_heap", live)
		t.current = want
	}
}

// Limit is the soft memory limit set with Percent: the live heap, the
// growth Percent allows it, and LimitSlack for what Go holds beside the
// heap. It makes that growth a bound rather than a goal: adjust runs on
// the runtime's cleanup goroutine, which can run collections late, and
// until it does the GOGC set for an earlier, smaller heap is in force.
// Under 100 clients that never read their allocation-candidates answers,
// a GOGC of 2000 set for a 2 MiB heap was still in force after a
// collection that found 26 MiB live, and let the heap run to 540 MiB.
// Near the limit Go collects more often (at most half the CPU), so a live
// heap that grows fast (an import) raises the limit at each collection.
func Limit(live, floor uint64) int64 {
	return int64(live + max(floor, live/2) + LimitSlack)
}

// LimitSlack is what Limit leaves for the runtime's memory beside the
// heap (stacks, metadata, free pages not yet returned).
const LimitSlack = 64 << 20

// gcSentinel is an object only a cleanup refers to: it becomes garbage
// at once, so its cleanup runs after the next collection. It is larger
// than the tiny allocator's 16 bytes, which would batch it with others.
type gcSentinel struct{ _ [32]byte }

// afterEachGC calls fn after every garbage collection until ctx ends: a
// cleanup on an unreachable sentinel, re-armed each time it runs. fn runs
// on the runtime's cleanup goroutine: it must be short and not block.
func afterEachGC(ctx context.Context, fn func()) {
	runtime.AddCleanup(new(gcSentinel), func(struct{}) {
		if ctx.Err() != nil {
			return
		}
		fn()
		afterEachGC(ctx, fn)
	}, struct{}{})
}

// Percent is the GOGC that lets a live heap of live bytes grow by at
// least floor before the next collection, floor/live × 100, and by half
// the live heap once that is larger: at least 50, not Go's default 100.
// A large state (100,000 providers and a million consumers hold about
// 0.6 GB) then peaks at 1.5 times its live heap under a sustained write
// load such as an import or a log replayed at start, not twice. Bounded,
// and rounded to steps of 50 above 100 and of 10 below, so that small
// changes of the live heap do not reset it at every collection.
func Percent(live, floor uint64) int {
	const maxPercent, minPercent = 2000, 50
	if live == 0 {
		return maxPercent
	}
	p := floor * 100 / live
	switch {
	case p <= minPercent:
		return minPercent
	case p < 100:
		return int(p / 10 * 10)
	case p >= maxPercent:
		return maxPercent
	}
	return int(p / 50 * 50)
}

// DefaultFloorMB is serve's --gc-heap-floor-mb default.
const DefaultFloorMB = 256
