package bench

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"testing"

	"github.com/placementd/placementd/cmd/placementd/gcfloor"
)

var benchGCFloor = flag.Int("bench.gcfloor", gcfloor.DefaultFloorMB,
	"MiB the heap may grow between collections while it is small, as `placementd serve --gc-heap-floor-mb` (0: Go's default GOGC)")

// TestMain runs the garbage collector as `placementd serve` does (its
// heap floor): the benchmarks' latencies are those of the process as it
// is served, whose collections come far less often than under Go's
// default with a state of a few tens of megabytes.
func TestMain(m *testing.M) {
	flag.Parse()
	ctx, cancel := context.WithCancel(context.Background())
	go gcfloor.Run(ctx, uint64(*benchGCFloor)<<20, slog.New(slog.DiscardHandler))
	code := m.Run()
	cancel()
	os.Exit(code)
}
