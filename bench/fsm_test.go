package bench

// Benchmarks of the replicated state machine: FSM.Apply per command kind
// over a realistic background state, and FSM.Snapshot / FSM.Restore at
// several sizes.
//
//	go test ./bench/ -run '^$' -bench 'BenchmarkApply|BenchmarkSnapshot|BenchmarkRestore' -benchtime 1s
//	go test ./bench/ -run '^$' -bench 'BenchmarkSnapshot|BenchmarkRestore' -bench.large  # adds 100k providers / 1M consumers
//
// They live here rather than in fsm/ because they need large fleets, which
// this package is for, and fsm's own tests should stay quick unit tests.
// The cost is a few lines of in-memory snapshot sink (bufferSink): fsm's
// memSink is in an internal test file and cluster's responseSink is
// unexported, so neither can be reused from here.

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/fsm/state"
)

var benchLarge = flag.Bool("bench.large", false, "also run the snapshot and restore benchmarks at 100k providers / 1M consumers")

// cpuTime is the CPU time the process has used so far: user and system,
// all threads, the garbage collector's included. The benchmarks report it
// per op (cpu-ns/op) beside ns/op, which is wall time: on a shared machine
// waiting for a core inflates ns/op, not cpu-ns/op.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// UUIDs of the objects these benchmarks create; compute nodes use nodeUUID
// and aggregates aggUUID from candidates_test.go.
func instanceUUID(i int) string  { return fmt.Sprintf("1c000000-0000-4000-8000-%012d", i) }
func claimUUID(i int) string     { return fmt.Sprintf("2c000000-0000-4000-8000-%012d", i) }
func migrationUUID(i int) string { return fmt.Sprintf("3c000000-0000-4000-8000-%012d", i) }
func victimUUID(i int) string    { return fmt.Sprintf("4c000000-0000-4000-8000-%012d", i) }
func newNodeUUID(i int) string   { return fmt.Sprintf("d0000000-0000-4000-8000-%012d", i) }

// nodeTraits is what a libvirt compute node typically reports: a few
// dozen standard traits (the COMPUTE_* ones head the list).
var nodeTraits = state.StandardTraits[:40]

// bigInventories is a compute node's VCPU, MEMORY_MB and DISK_GB with
// totals far beyond any real node (within upstream's MAX_INT bound): the
// allocation benchmarks keep adding claims for as long as b.N asks, and
// must never be refused for lack of capacity. The totals do not change the
// cost of a command.
func bigInventories(reserved int64) []state.InventoryValues {
	inv := func(class string, total int64, ratio float64) state.InventoryValues {
		return state.InventoryValues{Class: class, Total: total, Reserved: reserved, MinUnit: 1, MaxUnit: state.MaxInt, StepSize: 1, AllocationRatio: ratio}
	}
	return []state.InventoryValues{
		inv("VCPU", 1_000_000, 16),
		inv("MEMORY_MB", state.MaxInt, 1.5),
		inv("DISK_GB", 1_000_000_000, 1),
	}
}

// instance is the allocation of one consumer: a 2 VCPU, 4 GiB, 20 GB
// flavor on one node.
func instance(node string) []state.AllocationRequest {
	return []state.AllocationRequest{
		{Provider: node, Class: "VCPU", Used: 2},
		{Provider: node, Class: "MEMORY_MB", Used: 4096},
		{Provider: node, Class: "DISK_GB", Used: 20},
	}
}

// newConsumer is a scheduler claim for a consumer that does not exist
// yet: what PUT /allocations/{uuid} sends at 1.38 with consumer_generation
// null.
func newConsumer(uuid string, i int, ctype string, allocs []state.AllocationRequest) state.ConsumerAllocations {
	return state.ConsumerAllocations{
		Consumer:  uuid,
		ProjectID: fmt.Sprintf("project-%03d", i%100), UserID: fmt.Sprintf("user-%04d", i%1000),
		ConsumerType: ctype, CheckGeneration: true, Allocations: allocs,
	}
}

// stateFleet builds, with the real commands applied directly to a new FSM
// (no Raft, no log encoding), providers compute nodes with bigInventories,
// the nodeTraits and one of aggCount aggregates each, and consumers
// instances spread round-robin over the nodes, across 100 projects and
// 1,000 users. It is not cached: BenchmarkApply changes what it gets.
func stateFleet(tb testing.TB, providers, consumers int) *fsm.FSM {
	f := fsm.New()
	m := state.Meta{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	apply := func(cmd state.Command) {
		if _, err := f.ApplyCommand(cmd, m); err != nil {
			tb.Fatalf("%s: %v", cmd.Kind(), err)
		}
	}
	for i := 0; i < providers; i++ {
		u := nodeUUID(i)
		apply(&state.CreateProvider{UUID: u, Name: fmt.Sprintf("cn-%d", i)})
		apply(&state.SetInventories{Provider: u, Generation: 0, Inventories: bigInventories(0)})
		apply(&state.SetProviderTraits{Provider: u, Generation: 1, Traits: nodeTraits})
		apply(&state.SetAggregates{UUID: u, Aggregates: []string{aggUUID(i % aggCount)}})
	}
	// Consumers go in as POSTs of 1,000 at a time: much quicker to build
	// than one command each, and the same state.
	const chunk = 1000
	for start := 0; start < consumers; start += chunk {
		post := &state.SetAllocations{Post: true}
		for i := start; i < consumers && i < start+chunk; i++ {
			post.Consumers = append(post.Consumers,
				newConsumer(instanceUUID(i), i, "INSTANCE", instance(nodeUUID(i%providers))))
		}
		apply(post)
	}
	return f
}

// applyCase is one command kind measured by BenchmarkApply.
type applyCase struct {
	name string
	// cmd returns the kind's n-th command. It runs untimed, under the
	// FSM's read lock, before the batch holding it is applied, and reads
	// the generations and placements it needs from s: a batch never names
	// one provider or consumer twice (targets rotate over at least
	// applyBatch of them), so what it reads still holds when the command
	// is applied.
	cmd func(s *state.Store, n int) state.Command
	// setup and cleanup, when set, return a command applied untimed
	// (through ApplyCommand) before and after the n-th command: setup
	// creates what the command needs, cleanup removes what it added, so
	// that the background state keeps its size however large b.N grows.
	setup, cleanup func(n int) state.Command
}

// applyBatch is how many log entries are encoded, untimed, between timed
// runs of FSM.Apply. Encoding is the proposer's work and runs once in the
// HTTP handler, not on every replica, so it is kept out of the figure;
// batching keeps the cost of stopping the timer (a stop-the-world memory
// statistics read) rare, and the entries few enough to hold in memory.
const applyBatch = 1024

// benchApply applies b.N commands of case c to f through the real path:
// fsm.Encode, a raft.Log with the next index, FSM.Apply. Any rejection
// fails the benchmark: it measures successes. next counts the case's
// commands across the rounds the testing package runs, so names stay
// unique and targets keep rotating.
func benchApply(b *testing.B, f *fsm.FSM, index *uint64, c *applyCase, next *int) {
	t0 := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	run := func(cmd state.Command) {
		if _, err := f.ApplyCommand(cmd, state.Meta{Time: t0}); err != nil {
			b.Fatalf("%s (untimed): %v", cmd.Kind(), err)
		}
	}
	entries := make([]raft.Log, 0, applyBatch)
	first := 0 // the n of entries[0]
	var cpu time.Duration
	cleanup := func() {
		if c.cleanup != nil {
			for j := range entries {
				run(c.cleanup(first + j))
			}
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(entries) {
		b.StopTimer()
		cleanup()
		entries = entries[:0]
		first = *next
		for j := 0; j < applyBatch && done+j < b.N; j++ {
			n := *next
			*next++
			if c.setup != nil {
				run(c.setup(n))
			}
			var cmd state.Command
			f.Read(func(s *state.Store) { cmd = c.cmd(s, n) })
			if n == 0 && !strings.HasPrefix(c.name, cmd.Kind()) {
				b.Fatalf("case %s makes %s commands", c.name, cmd.Kind())
			}
			*index++
			data, err := fsm.Encode(cmd, t0.Add(time.Duration(*index)*time.Millisecond))
			if err != nil {
				b.Fatal(err)
			}
			entries = append(entries, raft.Log{Type: raft.LogCommand, Index: *index, Data: data})
		}
		b.StartTimer()
		cpu0 := cpuTime(b)
		for j := range entries {
			if res := f.Apply(&entries[j]).(fsm.Result); res.Err != nil {
				b.Fatalf("%s #%d: %v", c.name, first+j, res.Err)
			}
		}
		cpu += cpuTime(b) - cpu0
	}
	b.StopTimer()
	cleanup()
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkApply measures FSM.Apply (log entry decoding included) per
// command kind, on 10,000 compute nodes holding 100,000 instances. The
// sub-benchmarks share one state, which each leaves as it found it (bar
// generations, and the custom classes and traits, which accumulate).
func BenchmarkApply(b *testing.B) {
	const providers, consumers = 10_000, 100_000
	if providers < applyBatch || consumers < applyBatch {
		b.Fatal("a batch would name some provider or consumer twice; see applyCase.cmd")
	}
	f := stateFleet(b, providers, consumers)
	var index uint64 // the Raft log index, increasing across all cases
	node := func(n int) string { return nodeUUID(n % providers) }
	gen := func(s *state.Store, u string) int64 { return s.Providers.Get(u).Generation }

	cases := []applyCase{{
		// The scheduler's claim: PUT /allocations/{c} for a new consumer.
		name: "allocations.set-claim",
		cmd: func(_ *state.Store, n int) state.Command {
			return putAllocations(newConsumer(claimUUID(n), n, "INSTANCE", instance(node(n))))
		},
		cleanup: func(n int) state.Command { return &state.DeleteConsumerAllocations{Consumer: claimUUID(n)} },
	}, {
		// A move: PUT /allocations/{c} replacing an instance's allocations
		// with the same on another node, at its current generation.
		name: "allocations.set-move",
		cmd: func(s *state.Store, n int) state.Command {
			con := s.Consumers.Get(instanceUUID(n % consumers))
			ca := movedTo(con, otherNode(con, node(n), node(n+1)))
			return putAllocations(ca)
		},
	}, {
		// POST /allocations for two consumers, as nova's migrations do:
		// the instance's allocations go to a new migration consumer and
		// the instance gets new ones on the destination. The cleanup is
		// the confirmation dropping the migration's allocations.
		name: "allocations.set-post2",
		cmd: func(s *state.Store, n int) state.Command {
			con := s.Consumers.Get(instanceUUID(n % consumers))
			src := con.Allocations[0].ProviderUUID
			mig := newConsumer(migrationUUID(n), n, "MIGRATION", instance(src))
			mig.ProjectID, mig.UserID = con.ProjectID, con.UserID
			return &state.SetAllocations{Post: true, Consumers: []state.ConsumerAllocations{
				mig, movedTo(con, otherNode(con, node(n), node(n+1))),
			}}
		},
		cleanup: func(n int) state.Command { return &state.DeleteConsumerAllocations{Consumer: migrationUUID(n)} },
	}, {
		// DELETE /allocations/{c} of a consumer the setup claims for it.
		name: "allocations.delete",
		setup: func(n int) state.Command {
			return putAllocations(newConsumer(victimUUID(n), n, "INSTANCE", instance(node(n))))
		},
		cmd: func(_ *state.Store, n int) state.Command {
			return &state.DeleteConsumerAllocations{Consumer: victimUUID(n)}
		},
	}, {
		// PUT /resource_providers/{u}/inventories, as nova's periodic
		// update sends it when something changed (here the reserved
		// amounts flip, which keeps them valid with the usage).
		name: "inventory.set",
		cmd: func(s *state.Store, n int) state.Command {
			u := node(n)
			return &state.SetInventories{Provider: u, Generation: gen(s, u), Inventories: bigInventories(int64(n / providers % 2)), ReservedCanBeTotal: true}
		},
	}, {
		// POST /resource_providers; the cleanup deletes the provider.
		name: "provider.create",
		cmd: func(_ *state.Store, n int) state.Command {
			return &state.CreateProvider{UUID: newNodeUUID(n), Name: fmt.Sprintf("new-cn-%d", n)}
		},
		cleanup: func(n int) state.Command { return &state.DeleteProvider{UUID: newNodeUUID(n)} },
	}, {
		// PUT /resource_providers/{u}/traits with a node's full list,
		// one trait added or removed each time.
		name: "provider.set_traits",
		cmd: func(s *state.Store, n int) state.Command {
			u := node(n)
			traits := nodeTraits
			if !s.Providers.Get(u).Traits[benchTrait] {
				traits = append(traits[:len(traits):len(traits)], benchTrait)
			}
			return &state.SetProviderTraits{Provider: u, Generation: gen(s, u), Traits: traits}
		},
	}, {
		// PUT /resource_providers/{u}/aggregates at 1.19+ (with the
		// generation), a second aggregate added or removed each time.
		name: "provider.set_aggregates",
		cmd: func(s *state.Store, n int) state.Command {
			u := node(n)
			aggs := []string{aggUUID(n % providers % aggCount)}
			if !s.Providers.Get(u).Aggregates[aggUUID(aggCount)] {
				aggs = append(aggs, aggUUID(aggCount))
			}
			g := gen(s, u)
			return &state.SetAggregates{UUID: u, Aggregates: aggs, Generation: &g}
		},
	}, {
		// PUT /resource_classes/CUSTOM_... (1.7+). The classes are not
		// deleted afterwards: DeleteResourceClass scans every provider's
		// inventory, which would make the untimed part far longer than
		// the timed one.
		name: "resource_class.create",
		cmd: func(_ *state.Store, n int) state.Command {
			return &state.CreateResourceClass{Name: fmt.Sprintf("CUSTOM_BENCH_%d", n), IfMissing: true}
		},
	}, {
		// PUT /traits/CUSTOM_...; the cleanup deletes the trait.
		name: "trait.create",
		cmd: func(_ *state.Store, n int) state.Command {
			return &state.CreateTrait{Name: fmt.Sprintf("CUSTOM_BENCH_%d", n)}
		},
		cleanup: func(n int) state.Command { return &state.DeleteTrait{Name: fmt.Sprintf("CUSTOM_BENCH_%d", n)} },
	}}
	for i := range cases {
		c := &cases[i]
		next := 0
		b.Run(c.name, func(b *testing.B) { benchApply(b, f, &index, c, &next) })
	}
}

func putAllocations(ca state.ConsumerAllocations) *state.SetAllocations {
	return &state.SetAllocations{Consumers: []state.ConsumerAllocations{ca}}
}

// otherNode is a or, if the consumer is on a already, b.
func otherNode(con *state.Consumer, a, b string) string {
	if con.Allocations[0].ProviderUUID == a {
		return b
	}
	return a
}

// movedTo is the PUT of an existing instance's allocations on node, at the
// instance's current generation (1.28+).
func movedTo(con *state.Consumer, node string) state.ConsumerAllocations {
	g := con.Generation
	return state.ConsumerAllocations{
		Consumer: con.UUID, ProjectID: con.ProjectID, UserID: con.UserID, ConsumerType: con.Type,
		CheckGeneration: true, Generation: &g, Allocations: instance(node),
	}
}

// bufferSink is a raft.SnapshotSink writing to memory.
type bufferSink struct{ bytes.Buffer }

func (s *bufferSink) ID() string    { return "bench" }
func (s *bufferSink) Cancel() error { return nil }
func (s *bufferSink) Close() error  { return nil }

var _ raft.SnapshotSink = (*bufferSink)(nil)

// snapSize is a state size for the snapshot benchmarks.
type snapSize struct {
	name                 string
	providers, consumers int
	large                bool // only with -bench.large
}

var snapSizes = []snapSize{
	{"1k-10k", 1_000, 10_000, false},
	{"10k-100k", 10_000, 100_000, false},
	{"100k-1M", 100_000, 1_000_000, true},
}

// snapFleets caches the states and their snapshots across rounds and
// between BenchmarkSnapshot and BenchmarkRestore, which only read them.
var snapFleets = map[string]*struct {
	f        *fsm.FSM
	snapshot []byte
}{}

func snapFleet(b *testing.B, size snapSize) (*fsm.FSM, []byte) {
	if size.large && !*benchLarge {
		b.Skip("run with -bench.large")
	}
	if c := snapFleets[size.name]; c != nil {
		return c.f, c.snapshot
	}
	f := stateFleet(b, size.providers, size.consumers)
	data := persist(b, f)
	snapFleets[size.name] = &struct {
		f        *fsm.FSM
		snapshot []byte
	}{f, data}
	return f, data
}

func persist(b *testing.B, f *fsm.FSM) []byte {
	snap, err := f.Snapshot()
	if err != nil {
		b.Fatal(err)
	}
	defer snap.Release()
	var sink bufferSink
	if err := snap.Persist(&sink); err != nil {
		b.Fatal(err)
	}
	return sink.Bytes()
}

// BenchmarkSnapshot measures FSM.Snapshot and Persist into memory. The
// image-ms metric is the part spent in FSM.Snapshot, which runs in Raft's
// FSM goroutine and so stalls Apply for that long (it only takes the
// current version); Persist (image, JSON and gzip) runs beside Apply.
func BenchmarkSnapshot(b *testing.B) {
	for _, size := range snapSizes {
		b.Run(size.name, func(b *testing.B) {
			f, data := snapFleet(b, size)
			var sink bufferSink
			sink.Grow(len(data) + len(data)/8)
			var locked time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				sink.Reset()
				start := time.Now()
				snap, err := f.Snapshot()
				locked += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if err := snap.Persist(&sink); err != nil {
					b.Fatal(err)
				}
				snap.Release()
			}
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			b.ReportMetric(float64(sink.Len()), "snapshot-bytes")
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(locked)/1e6/float64(b.N), "image-ms")
		})
	}
}

// restoreChecked records the sizes whose restore was checked.
var restoreChecked = map[string]bool{}

// BenchmarkRestore measures FSM.Restore from a snapshot in memory: reading
// and decoding it, and rebuilding the store with its indexes. It checks
// once per size that the restored state is the source's.
func BenchmarkRestore(b *testing.B) {
	for _, size := range snapSizes {
		b.Run(size.name, func(b *testing.B) {
			f, data := snapFleet(b, size)
			restore := func() *fsm.FSM {
				g := fsm.New()
				if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					b.Fatal(err)
				}
				return g
			}
			if !restoreChecked[size.name] {
				g := restore()
				var want, got state.Contents
				f.Read(func(s *state.Store) { want = s.Contents() })
				g.Read(func(s *state.Store) { got = s.Contents() })
				if got != want || got.Providers != size.providers || got.Consumers != size.consumers {
					b.Fatalf("restored %v, want %v", got, want)
				}
				wantDigest, _ := f.Digest()
				gotDigest, _ := g.Digest()
				if gotDigest != wantDigest {
					b.Fatal("restored state's digest differs from the source's")
				}
				restoreChecked[size.name] = true
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime(b)
			for i := 0; i < b.N; i++ {
				restore()
			}
			cpu := cpuTime(b) - cpu0
			b.StopTimer()
			b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(len(data)), "snapshot-bytes")
		})
	}
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkStateHeap reports the live heap of a state: built by Apply
// (applied-MB) and restored from its snapshot (restored-MB), as a node
// holds it after an import and after a restart. Run it alone (the other
// benchmarks' cached states would count): -bench StateHeap, with
// -bench.large for 100k providers / 1M consumers.
func BenchmarkStateHeap(b *testing.B) {
	for _, size := range snapSizes {
		b.Run(size.name, func(b *testing.B) {
			if size.large && !*benchLarge {
				b.Skip("run with -bench.large")
			}
			for i := 0; i < b.N; i++ {
				base := liveHeap()
				f := stateFleet(b, size.providers, size.consumers)
				applied := liveHeap() - base
				data := persist(b, f)
				f = nil
				base = liveHeap()
				g := fsm.New()
				if err := g.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
					b.Fatal(err)
				}
				data = nil
				restored := liveHeap() - base
				b.ReportMetric(float64(applied)/1e6, "applied-MB")
				b.ReportMetric(float64(restored)/1e6, "restored-MB")
				runtime.KeepAlive(g)
			}
		})
	}
}
