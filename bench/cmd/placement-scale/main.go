package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"

	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/placementd/placementd/bench/loadgen"
	"github.com/placementd/placementd/internal/testcluster"
	"github.com/placementd/placementd/snapshot/export"
)

const (
	secret = "placement-scale"
	// The microversion of the writes and reads: consumer_generation (1.28)
	// and GET /usages (1.9) without the consumer types of 1.38, as a
	// Nova of the Yoga/Zed era sends.
	microversion = "1.36"
	projects     = 20
	usersPerProj = 5
	nodeID       = "scale1"
)

// What every consumer holds, on one provider: a small instance. The same
// amounts are written after the snapshot.
var perConsumer = map[string]int64{"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}

func main() {
	var (
		nProv      = flag.Int("providers", 100000, "compute-node providers")
		nCons      = flag.Int("consumers", 1000000, "consumers with allocations in the imported state")
		nWrites    = flag.Int("writes", 1000, "PUT /allocations of new consumers after the Raft snapshot (stay below 8192, the default snapshot threshold)")
		bin        = flag.String("placementd", "", "placementd binary (default: go build it into the work dir)")
		work       = flag.String("work", "", "work dir for the document, the data dir and the logs (default: a temporary dir); a given dir is not removed")
		keep       = flag.Bool("keep", false, "keep the temporary work dir")
		verify     = flag.Bool("verify", true, "after the import, compare the cluster with the document (placementd import --verify-only)")
		strict     = flag.Bool("strict", false, "exit 1 when a target (RSS, restart time) is missed, not only on wrong answers")
		maxHWM     = flag.Int64("max-hwm-mib", 1536, "target: peak RSS (VmHWM) of the server in MiB")
		maxRestart = flag.Duration("max-restart", 10*time.Second, "target: from process start to serving the expected usage after a restart")
		snapWait   = flag.Duration("snapshot-wait", 2*time.Minute, "after the import, how long to wait for the node's own snapshot of it (--snapshot-burst-mb) before stopping it")
	)
	flag.Parse()
	if *nProv < 1 || *nCons < 0 || *nWrites < 1 || *nWrites >= 8192 {
		fatalf("need -providers ≥ 1, -consumers ≥ 0 and 1 ≤ -writes < 8192")
	}
	b := &bench{nProv: *nProv, nCons: *nCons, nWrites: *nWrites, snapWait: *snapWait}
	dir := *work
	if dir == "" {
		d, err := os.MkdirTemp("", "placement-scale-")
		if err != nil {
			fatalf("%v", err)
		}
		dir = d
	} else if err := os.MkdirAll(dir, 0o750); err != nil {
		fatalf("%v", err)
	}
	b.dir = dir
	code := b.run(*bin, *verify, *strict, *maxHWM<<20, *maxRestart)
	if b.srv != nil && b.srv.running() {
		b.srv.stop(time.Minute)
	}
	// A dir given with -work is the caller's: left as it is.
	if *keep || *work != "" {
		fmt.Printf("work dir kept: %s\n", dir)
	} else {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "placement-scale: "+format+"\n", args...)
	os.Exit(2)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// bench is one run: sizes, the expected usages and what was measured.
type bench struct {
	nProv, nCons, nWrites int
	snapWait              time.Duration
	dir                   string
	allocations           int
	docBytes              int64
	// Consumers (imported or written) per provider and per project: every
	// consumer holds perConsumer, so these give the expected usages.
	provConsumers []int32
	projConsumers [projects]int64

	srv       *server
	api       *loadgen.Client
	restart   time.Duration // run 4: process start to serving
	dataBytes int64         // the data dir at the end
	mem       []memPoint
	timings   []timing
	problems  []string // wrong answers: exit 1
}

type memPoint struct {
	label    string
	rss, hwm int64 // bytes
	// file is the part of rss that maps files (RssFile): the pages of the
	// Raft log's BoltDB file the node has read, which the kernel may
	// reclaim as page cache.
	file int64
	cpu  time.Duration // the process's user+system time so far
}

type timing struct {
	label string
	d     time.Duration
	note  string
}

func (b *bench) problem(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	logf("PROBLEM: %s", msg)
	b.problems = append(b.problems, msg)
}

// timed logs a duration and puts it in the report's table.
func (b *bench) timed(label string, d time.Duration, note string) {
	logf("%s: %s %s", label, d.Round(time.Millisecond), note)
	b.timings = append(b.timings, timing{label, d, note})
}

// sample records the server's memory now.
func (b *bench) sample(label string) {
	rss, hwm, file, err := procMem(b.srv.pid())
	if err != nil {
		b.problem("reading /proc of the server: %v", err)
		return
	}
	cpu, _ := procCPU(b.srv.pid())
	logf("memory %s: RSS %d MiB (file %d), HWM %d MiB, CPU %.1f s", label, rss>>20, file>>20, hwm>>20, cpu.Seconds())
	b.mem = append(b.mem, memPoint{label, rss, hwm, file, cpu})
}

func (b *bench) run(bin string, verify, strict bool, maxHWM int64, maxRestart time.Duration) int {
	var err error
	if bin == "" {
		logf("building placementd into %s", b.dir)
		// go build resolves the package in the module of the current
		// directory: run this from the repository, or give -placementd.
		if bin, err = testcluster.Build(b.dir); err != nil {
			logf("%v", err)
			return 2
		}
	}
	docPath := filepath.Join(b.dir, "export.json")
	t0 := time.Now()
	if err := b.writeDocument(docPath); err != nil {
		logf("writing the document: %v", err)
		return 2
	}
	_, selfHWM, _, _ := procMem(os.Getpid())
	logf("document %s: %d MiB in %s (this process's peak RSS %d MiB)", docPath, b.docBytes>>20, time.Since(t0).Round(time.Millisecond), selfHWM>>20)

	httpAddr, err1 := testcluster.FreeAddr("127.0.0.1")
	raftAddr, err2 := testcluster.FreeAddr("127.0.0.1")
	if err := errors.Join(err1, err2); err != nil {
		logf("%v", err)
		return 2
	}
	b.srv = &server{bin: bin, httpAddr: httpAddr, raftAddr: raftAddr,
		dataDir: filepath.Join(b.dir, "data"), logPath: filepath.Join(b.dir, "placementd.log")}
	// A -work dir used before holds the last run's node: start afresh.
	os.RemoveAll(b.srv.dataDir)
	os.Remove(b.srv.logPath)
	b.api = newAPIClient("http://" + httpAddr)

	if err := b.phases(bin, docPath, verify); err != nil {
		b.problem("%v", err)
		if b.srv.logPath != "" {
			fmt.Fprintf(os.Stderr, "--- end of %s:\n%s\n", b.srv.logPath, tail(b.srv.logPath, 3000))
		}
	}
	fmt.Println()
	missed := b.report(maxHWM, maxRestart)
	switch {
	case len(b.problems) > 0:
		fmt.Printf("FAIL: %d wrong answers or errors (above)\n", len(b.problems))
		return 1
	case missed && strict:
		return 1
	}
	return 0
}

// phases runs the server four times (see the package comment).
func (b *bench) phases(bin, docPath string, verify bool) error {
	ctx := context.Background()

	// Run 1, default settings: the import as an operator runs it. Its
	// ~1 MiB entries stay far below the snapshot threshold, so no
	// snapshot is taken.
	if _, err := b.start(ctx, false); err != nil {
		return err
	}
	b.sample("1: started, empty")
	if err := b.importRun(bin, docPath, "--no-verify", "import (load)", "importer", "import.log"); err != nil {
		return err
	}
	b.sample("1: after import")
	if verify {
		if err := b.importRun(bin, docPath, "--verify-only", "import --verify-only", "verifier", "verify.log"); err != nil {
			return err
		}
		b.sample("1: after verify")
	}
	b.checkReads(ctx, false)
	b.sample("1: after reads")
	// A node that snapshots once an import has ended (--snapshot-burst-mb)
	// does so a second or two after the last chunk.
	st, err := b.self(ctx)
	if err != nil {
		return err
	}
	t0 := time.Now()
	imported := b.waitSnapshot(ctx, st.AppliedIndex, b.snapWait) == nil
	if imported {
		b.timed("snapshot after import", time.Since(t0), fmt.Sprintf("(end of import and reads → last_snapshot_index ≥ %d)", st.AppliedIndex))
		b.sample("1: after its snapshot")
	} else {
		logf("no snapshot of the import within %s", b.snapWait)
	}
	if err := b.stop(); err != nil {
		return err
	}

	// Run 2, the restart after the import: from the node's snapshot of
	// it, or else from the log alone (the import replayed), then the
	// Raft snapshot of the imported state, taken at the first check, 1-2
	// s after the start.
	if imported {
		ready, err := b.start(ctx, true)
		if err != nil {
			return err
		}
		b.timed("restart after import", ready, "(start → expected usage; from its snapshot)")
		b.sample("2: restarted (snapshot)")
	} else {
		ready, err := b.start(ctx, true, "--snapshot-threshold", "1", "--snapshot-interval", "1s")
		if err != nil {
			return err
		}
		// The first snapshot may start while the log is still being
		// applied (it blocks applies while it copies the state): then
		// this figure is an upper bound.
		b.timed("restart after import", ready, "(start → expected usage; from the log, may overlap the snapshot)")
		b.sample("2: restarted (log)")
		st, err := b.self(ctx)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if err := b.waitSnapshot(ctx, st.AppliedIndex, 10*time.Minute); err != nil {
			return err
		}
		b.timed("raft snapshot", time.Since(t0), fmt.Sprintf("(wait for last_snapshot_index ≥ %d)", st.AppliedIndex))
		b.sample("2: after raft snapshot")
	}
	if err := b.stop(); err != nil {
		return err
	}

	// Run 3, default settings: a restart from the snapshot alone, then
	// writes that stay in the log.
	ready, err := b.start(ctx, true)
	if err != nil {
		return err
	}
	b.timed("restart from snapshot", ready, "(start → expected usage)")
	b.sample("3: restarted (snapshot)")
	before, err := b.self(ctx)
	if err != nil {
		return err
	}
	if err := b.writes(ctx); err != nil {
		return err
	}
	b.sample("3: after writes")
	b.checkReads(ctx, true)
	b.sample("3: after reads")
	if st, err := b.self(ctx); err == nil {
		// Group commit puts several writes in one entry: the writes are
		// in the log if no snapshot covers an entry made after they began.
		logf("log after the writes: last index %d (%d before them), last snapshot index %d",
			st.LastLogIndex, before.LastLogIndex, st.LastSnapshotIndex)
		if st.LastSnapshotIndex > before.LastLogIndex || st.LastLogIndex == before.LastLogIndex {
			b.problem("a snapshot was taken after the writes: the restart would not replay them from the log")
		}
	}
	if err := b.stop(); err != nil {
		return err
	}

	// Run 4, default settings: the restart from snapshot + log of the
	// target.
	if ready, err = b.start(ctx, true); err != nil {
		return err
	}
	b.restart = ready
	b.timed("restart from snapshot + log", ready, "(start → expected usage)")
	b.sample("4: restarted (snapshot+log)")
	b.checkReads(ctx, true)
	b.sample("4: after reads")
	b.dataBytes = dirSize(b.srv.dataDir)
	return b.stop()
}

// importRun runs `placementd import --file doc mode` to the end, logging
// to logName in the work dir, and reports its time, peak RSS and CPU
// under label.
func (b *bench) importRun(bin, doc, mode, label, who, logName string) error {
	logPath := filepath.Join(b.dir, logName)
	d, maxrss, cpu, err := runLogged(b.placementdCmd(bin, "import", "--file", doc, mode), logPath)
	if err != nil {
		return fmt.Errorf("placementd import %s: %v\n%s", mode, err, tail(logPath, 2000))
	}
	b.timed(label, d, fmt.Sprintf("(%s: peak RSS %d MiB, CPU %.1f s)", who, maxrss>>20, cpu.Seconds()))
	return nil
}

func (b *bench) placementdCmd(bin string, args ...string) *exec.Cmd {
	args = append(args, "--addr", b.srv.httpAddr, "--cluster-secret", secret, "--timeout", "2h")
	return exec.Command(bin, args...)
}

// start runs the server and waits until it serves: with usage, until it
// answers the expected usage of the provider the last write goes to (its
// imported usage before the writes), which means it has loaded the
// snapshot, replayed the log and has a leader; without (an empty node),
// until /_cluster/health says ready. It returns the time from the process
// start to then.
func (b *bench) start(ctx context.Context, usage bool, extra ...string) (time.Duration, error) {
	if err := b.srv.start(extra...); err != nil {
		return 0, err
	}
	started := b.srv.started
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	listening := false
	for {
		if !b.srv.running() {
			return 0, fmt.Errorf("placementd exited:\n%s", tail(b.srv.logPath, 3000))
		}
		if !listening {
			if r := b.api.Do(ctx, "GET", "/", nil); r.Status() == 200 {
				listening = true
				logf("GET / answers %s after start", time.Since(started).Round(time.Millisecond))
			}
		}
		switch {
		case !listening:
		case usage:
			if ok, _ := b.providerUsageOK(ctx, b.checkProvider()); ok {
				return time.Since(started), nil
			}
		default:
			if r := b.api.Do(ctx, "GET", "/_cluster/health", nil); r.Status() == 200 {
				return time.Since(started), nil
			}
		}
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("placementd does not serve the expected usage 10 minutes after start")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (b *bench) stop() error {
	// Connections the client opened but never sent a request on would
	// hold the graceful stop for 5 s (net/http counts a new connection
	// as idle only after that), which is the client's doing.
	b.api.CloseIdleConnections()
	t0 := time.Now()
	err := b.srv.stop(time.Minute)
	logf("stopped (SIGTERM) in %s", time.Since(t0).Round(time.Millisecond))
	return err
}

// checkProvider is the provider the serving check reads: the one the last
// write goes to, so that after the writes its usage needs the log.
func (b *bench) checkProvider() int { return (b.nWrites - 1) % b.nProv }

// self is GET /_cluster/self without the state digest (a hash of the
// whole state, not needed here).
func (b *bench) self(ctx context.Context) (st struct {
	LastLogIndex      uint64 `json:"last_log_index"`
	AppliedIndex      uint64 `json:"applied_index"`
	LastSnapshotIndex uint64 `json:"last_snapshot_index"`
}, err error) {
	r := b.api.Do(ctx, "GET", "/_cluster/self?digest=false", nil, "Authorization", "Bearer "+secret)
	err = r.Expect(200, &st)
	return st, err
}

func (b *bench) waitSnapshot(ctx context.Context, index uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		st, err := b.self(ctx)
		if err == nil && st.LastSnapshotIndex >= index {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no Raft snapshot of index %d within %s (last: %+v, %v)", index, timeout, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// --- the document -------------------------------------------------------

func providerUUID(i int) string { return fmt.Sprintf("a0000000-0000-4000-8000-%012x", i) }
func consumerUUID(i int) string { return fmt.Sprintf("c0000000-0000-4000-8000-%012x", i) }
func writeUUID(i int) string    { return fmt.Sprintf("d0000000-0000-4000-8000-%012x", i) }
func aggregateUUID(i int) string {
	return fmt.Sprintf("b0000000-0000-4000-8000-%012x", i)
}
func projectID(p int) string { return fmt.Sprintf("%032x", 0x9000+p) }
func userID(p, u int) string { return fmt.Sprintf("%032x", 0x7000000+p*100+u) }

// consumerProvider places consumer i (imported, or written with an index
// past the imported ones) round robin, so that every provider holds the
// same number of consumers give or take one and none runs out.
func (b *bench) consumerProvider(i int) int { return i % b.nProv }

func (b *bench) writeDocument(path string) error {
	doc := export.New("placement-scale")
	doc.ConsumerTypes = append(doc.ConsumerTypes, export.ConsumerType{Name: "INSTANCE"})
	// Size the inventories so that the imported consumers and the writes
	// fit on every provider (the import does not check capacity; the
	// writes do).
	perProv := int64((b.nCons+b.nWrites)/b.nProv + 1)
	inv := func(total, reserved int64, ratio float64) export.Inventory {
		return export.Inventory{Total: total, Reserved: reserved, MinUnit: 1, MaxUnit: total, StepSize: 1, AllocationRatio: ratio}
	}
	vcpu := max(64, perProv)
	mem := max(262144, perProv*perConsumer["MEMORY_MB"]+4096)
	disk := max(2000, perProv*perConsumer["DISK_GB"])
	doc.ResourceProviders = make([]export.ResourceProvider, b.nProv)
	for i := range doc.ResourceProviders {
		traits := []string{"HW_CPU_X86_SSE42"}
		if i%2 == 0 {
			traits = append(traits, "HW_CPU_X86_AVX2")
		}
		if i%100 == 99 {
			traits = append(traits, "COMPUTE_STATUS_DISABLED")
		}
		aggs := []string{}
		if i%4 != 0 {
			aggs = append(aggs, aggregateUUID(i%100))
		}
		doc.ResourceProviders[i] = export.ResourceProvider{
			UUID: providerUUID(i), Name: fmt.Sprintf("compute-%07d.example.org", i), Generation: 1,
			// Optional for the import, but the verification compares it
			// field by field and the cluster fills it in.
			RootProviderUUID: providerUUID(i),
			Inventories: map[string]export.Inventory{
				"VCPU":      inv(vcpu, 0, 4.0),
				"MEMORY_MB": inv(mem, 4096, 1.0),
				"DISK_GB":   inv(disk, 0, 1.0),
			},
			Traits: traits, Aggregates: aggs,
		}
	}
	b.provConsumers = make([]int32, b.nProv)
	doc.Consumers = make([]export.Consumer, b.nCons)
	for i := range doc.Consumers {
		p := b.consumerProvider(i)
		proj := i % projects
		rp := doc.ResourceProviders[p].UUID
		doc.Consumers[i] = export.Consumer{
			UUID: consumerUUID(i), ProjectID: projectID(proj), UserID: userID(proj, (i/projects)%usersPerProj),
			ConsumerType: "INSTANCE", Generation: 1,
			Allocations: []export.Allocation{
				{ResourceProviderUUID: rp, ResourceClass: "VCPU", Used: perConsumer["VCPU"]},
				{ResourceProviderUUID: rp, ResourceClass: "MEMORY_MB", Used: perConsumer["MEMORY_MB"]},
				{ResourceProviderUUID: rp, ResourceClass: "DISK_GB", Used: perConsumer["DISK_GB"]},
			},
		}
		b.provConsumers[p]++
		b.projConsumers[proj]++
	}
	b.allocations = doc.Allocations()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := export.Write(w, doc); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	b.docBytes = fi.Size()
	// The document is hundreds of MiB at full size (no longer used here):
	// give it back before the server and the importer need the memory.
	runtime.GC()
	debug.FreeOSMemory()
	return nil
}

// --- writes and reads ---------------------------------------------------

// writes claims perConsumer for nWrites new consumers, from 8 clients as
// schedulers would, and counts them into the expected usages.
func (b *bench) writes(ctx context.Context) error {
	const clients = 8
	t0 := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := c; j < b.nWrites; j += clients {
				proj := j % projects
				body := map[string]any{
					"allocations": map[string]any{
						providerUUID(b.consumerProvider(j)): map[string]any{"resources": perConsumer},
					},
					"project_id": projectID(proj), "user_id": userID(proj, j%usersPerProj),
					"consumer_generation": nil,
				}
				if err := b.api.Do(ctx, "PUT", "/allocations/"+writeUUID(j), body).Expect(204, nil); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("PUT /allocations/%s: %w", writeUUID(j), err))
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	d := time.Since(t0)
	b.timed("writes", d, fmt.Sprintf("(%d PUT /allocations, %d clients, %.0f/s)", b.nWrites, clients, float64(b.nWrites)/d.Seconds()))
	for j := range b.nWrites {
		b.provConsumers[b.consumerProvider(j)]++
		b.projConsumers[j%projects]++
	}
	return nil
}

// providerUsageOK compares GET /resource_providers/{uuid}/usages with the
// expected usage.
func (b *bench) providerUsageOK(ctx context.Context, p int) (bool, string) {
	var body struct {
		Usages map[string]int64 `json:"usages"`
	}
	if err := b.api.Do(ctx, "GET", "/resource_providers/"+providerUUID(p)+"/usages", nil).Expect(200, &body); err != nil {
		return false, err.Error()
	}
	n := int64(b.provConsumers[p])
	return sameUsage(body.Usages, n), fmt.Sprintf("usages %v, want %d consumers' worth", body.Usages, n)
}

func sameUsage(got map[string]int64, consumers int64) bool {
	for class, amount := range perConsumer {
		if got[class] != amount*consumers {
			return false
		}
	}
	return true
}

// checkReads reads usages of some providers and projects (compared with
// the expected ones) and allocation candidates, timing each.
func (b *bench) checkReads(ctx context.Context, afterWrites bool) {
	tag := ""
	if afterWrites {
		tag = " (with writes)"
	}
	for _, p := range []int{0, b.checkProvider(), b.nProv / 2, b.nProv - 1} {
		if ok, msg := b.providerUsageOK(ctx, p); !ok {
			b.problem("GET /resource_providers/%s/usages%s: %s", providerUUID(p), tag, msg)
		}
	}
	for _, proj := range []int{0, projects - 1} {
		var body struct {
			Usages map[string]int64 `json:"usages"`
		}
		t0 := time.Now()
		err := b.api.Do(ctx, "GET", "/usages?project_id="+projectID(proj), nil).Expect(200, &body)
		d := time.Since(t0)
		switch {
		case err != nil:
			b.problem("GET /usages?project_id=%s: %v", projectID(proj), err)
		case !sameUsage(body.Usages, b.projConsumers[proj]):
			b.problem("GET /usages?project_id=%s%s: %v, want %d consumers' worth", projectID(proj), tag, body.Usages, b.projConsumers[proj])
		default:
			logf("GET /usages?project_id=%s: %s (%d consumers)", projectID(proj), d.Round(time.Microsecond), b.projConsumers[proj])
		}
	}
	var cands struct {
		AllocationRequests []json.RawMessage `json:"allocation_requests"`
	}
	t0 := time.Now()
	err := b.api.Do(ctx, "GET", "/allocation_candidates?resources=VCPU:1&limit=10", nil).Expect(200, &cands)
	d := time.Since(t0)
	switch want := min(10, b.nProv); {
	case err != nil:
		b.problem("GET /allocation_candidates: %v", err)
	case len(cands.AllocationRequests) != want:
		b.problem("GET /allocation_candidates?resources=VCPU:1&limit=10: %d candidates, want %d", len(cands.AllocationRequests), want)
	default:
		logf("GET /allocation_candidates?resources=VCPU:1&limit=10: %s", d.Round(time.Microsecond))
	}
}

// --- report -------------------------------------------------------------

// report prints the table and says whether a target was missed.
func (b *bench) report(maxHWM int64, maxRestart time.Duration) (missed bool) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "providers\t%d\n", b.nProv)
	fmt.Fprintf(tw, "consumers\t%d imported + %d written\n", b.nCons, b.nWrites)
	fmt.Fprintf(tw, "allocations\t%d imported + %d written\n", b.allocations, b.nWrites*len(perConsumer))
	fmt.Fprintf(tw, "export document\t%d MiB\n", b.docBytes>>20)
	if b.dataBytes > 0 {
		fmt.Fprintf(tw, "data dir\t%d MiB\n", b.dataBytes>>20)
	}
	for _, t := range b.timings {
		fmt.Fprintf(tw, "%s\t%.3f s\t%s\n", t.label, t.d.Seconds(), t.note)
	}
	tw.Flush()
	fmt.Println()
	// VmHWM is per process: each run (1, 2, 3) starts again from zero.
	// CPU is the server's own time since its start: unlike the times
	// above, it does not grow when other jobs share the machine.
	fmt.Printf("%-30s %9s %9s %9s %7s\n", "server: run, point", "RSS MiB", "of it file", "HWM MiB", "CPU s")
	var peak int64
	for _, m := range b.mem {
		fmt.Printf("%-30s %9d %9d %9d %7.1f\n", m.label, m.rss>>20, m.file>>20, m.hwm>>20, m.cpu.Seconds())
		peak = max(peak, m.hwm)
	}
	fmt.Println()
	verdict := func(ok bool) string {
		if ok {
			return "PASS"
		}
		missed = true
		return "FAIL"
	}
	fmt.Printf("target: peak RSS (VmHWM, every run) %d MiB ≤ %d MiB: %s\n", peak>>20, maxHWM>>20, verdict(peak > 0 && peak <= maxHWM))
	if b.restart == 0 {
		fmt.Printf("target: restart (snapshot + log) to serving ≤ %s: not measured\n", maxRestart)
		return true
	}
	fmt.Printf("target: restart (snapshot + log) to serving %.2f s ≤ %s: %s\n", b.restart.Seconds(), maxRestart, verdict(b.restart <= maxRestart))
	return missed
}

// --- the server process ---------------------------------------------------

// server is one placementd node; it keeps its addresses and data dir
// across restarts. testcluster.Proc does the same but hides the process id,
// which /proc needs, and the start time, which the restart figure needs.
type server struct {
	bin, httpAddr, raftAddr, dataDir, logPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	started time.Time
}

func (s *server) start(extra ...string) error {
	args := append([]string{"serve", "--node-id", nodeID, "--http-addr", s.httpAddr, "--raft-addr", s.raftAddr,
		"--data-dir", s.dataDir, "--cluster-secret", secret, "--log-level", "warn"}, extra...)
	log, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "=== %s placementd %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(s.bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = time.Now()
	if err := cmd.Start(); err != nil {
		log.Close()
		return err
	}
	s.cmd, s.exited = cmd, make(chan struct{})
	go func(exited chan struct{}) {
		cmd.Wait()
		log.Close()
		close(exited)
	}(s.exited)
	logf("started placementd (pid %d) %s", cmd.Process.Pid, strings.Join(extra, " "))
	return nil
}

func (s *server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

func (s *server) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits up to timeout, then kills the process.
func (s *server) stop(timeout time.Duration) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return nil
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		if st := cmd.ProcessState; st != nil && !st.Success() {
			return fmt.Errorf("placementd exited with %v after SIGTERM", st)
		}
		return nil
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("placementd did not stop within %s after SIGTERM", timeout)
	}
}

// procMem reads VmRSS, VmHWM (peak RSS) and RssFile of a process, in
// bytes.
func procMem(pid int) (rss, hwm, file int64, err error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, 0, err
	}
	for _, line := range strings.Split(string(raw), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = kb << 10
		case "VmHWM:":
			hwm = kb << 10
		case "RssFile:":
			file = kb << 10
		}
	}
	if rss == 0 || hwm == 0 {
		return 0, 0, 0, fmt.Errorf("/proc/%d/status has no VmRSS/VmHWM", pid)
	}
	return rss, hwm, file, nil
}

// procCPU reads the user and system time of a process from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold spaces.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// runLogged runs a command with its output in logPath and returns how
// long it took, its peak RSS and its CPU time.
func runLogged(cmd *exec.Cmd, logPath string) (d time.Duration, maxrss int64, cpu time.Duration, err error) {
	log, err := os.Create(logPath)
	if err != nil {
		return 0, 0, 0, err
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	t0 := time.Now()
	err = cmd.Run()
	d = time.Since(t0)
	if cmd.ProcessState != nil {
		cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			maxrss = ru.Maxrss << 10 // KiB on Linux
		}
	}
	return d, maxrss, cpu, err
}

func tail(path string, n int) string {
	raw, _ := os.ReadFile(path)
	if len(raw) > n {
		raw = raw[len(raw)-n:]
	}
	return string(raw)
}

func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// --- the Placement API client --------------------------------------------

// newAPIClient sends Placement API requests as the noauth2 admin at
// microversion, with bench/loadgen's client.
func newAPIClient(base string) *loadgen.Client {
	return loadgen.NewClient(base, "admin", microversion, &http.Client{Timeout: 5 * time.Minute})
}
