package faults

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/placementd/placementd/internal/faults/model"
)

// Report is the outcome of a run.
type Report struct {
	Nodes    int
	Duration time.Duration
	// Operations recorded in the history, by outcome.
	Ops, OK, Refused, Unknown int
	Counts                    map[string]int
	Events                    []Event
	Nemeses                   int
	// Linearizable: "yes", "no", or "unknown" when the check timed out.
	Linearizable string
	CheckTime    time.Duration
	// Violations of the invariants, anomalies and crashes.
	Violations []string
	Digest     string
	Dir        string
}

// Failed reports whether the run found a problem.
func (r *Report) Failed() bool { return r.Linearizable != "yes" || len(r.Violations) > 0 }

// setDefaults fills in what cfg leaves zero.
func (cfg *Config) setDefaults() {
	if cfg.Regions != nil {
		cfg.Nodes = len(cfg.Regions)
	}
	if cfg.Clients == 0 {
		cfg.Clients = 2 * cfg.Nodes
	}
	if len(cfg.Nemeses) == 0 {
		cfg.Nemeses = AllNemeses
	}
	if cfg.Hold == 0 {
		cfg.Hold = 4 * time.Second
	}
	if cfg.Quiet == 0 {
		cfg.Quiet = time.Second
	}
	if cfg.RecoveryTimeout == 0 {
		cfg.RecoveryTimeout = 60 * time.Second
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = 15 * time.Second
	}
	if cfg.CheckTimeout == 0 {
		cfg.CheckTimeout = 5 * time.Minute
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
}

// Run runs one cluster under the workload and the nemeses, then checks
// the history. An error means the harness itself could not run.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	if err := ensureDir(cfg.Dir); err != nil {
		return nil, err
	}
	cfg.Logf("%d nodes, %s, %d clients, seed %d, in %s", cfg.Nodes, cfg.Duration, cfg.Clients, cfg.Seed, cfg.Dir)

	c, err := startCluster(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	rep := &Report{Nodes: cfg.Nodes, Duration: cfg.Duration, Dir: cfg.Dir}
	h := newHistory()
	const window, perGroup = 3, 300
	groupCount := window + int(cfg.Duration.Seconds()*300/perGroup)
	w := newWorkload(h, c.nodes, nil, cfg.RequestTimeout, window, perGroup)
	groups, err := c.setupGroups(ctx, w, groupCount)
	if err != nil {
		return nil, fmt.Errorf("setting up the workload: %w\n%s", err, c.logTails(2000))
	}
	*w = *newWorkload(h, c.nodes, groups, cfg.RequestTimeout, window, perGroup)
	// The WAN from here on: the set-up above has no faults and nothing to
	// check, only requests that must succeed.
	c.net.setDelay(cfg.RaftOneWay, cfg.RaftJitter)
	h.start = time.Now()

	// Clients run for the whole duration; nemeses follow one another.
	runCtx, stopClients := context.WithTimeout(ctx, cfg.Duration)
	defer stopClients()
	var clients sync.WaitGroup
	for i := 0; i < cfg.Clients; i++ {
		clients.Add(1)
		go func(seed int64) {
			defer clients.Done()
			w.client(runCtx, seed)
		}(cfg.Seed + int64(i))
	}
	for k := 0; runCtx.Err() == nil; k++ {
		select {
		case <-runCtx.Done():
			continue
		case <-time.After(cfg.Quiet):
		}
		kind := cfg.Nemeses[k%len(cfg.Nemeses)]
		if err := c.nemesis(ctx, h.start, kind); err != nil {
			rep.Violations = append(rep.Violations, fmt.Sprintf("nemesis %s: %v", kind, err))
		}
		rep.Nemeses++
		if err := c.heal(); err != nil {
			return nil, err
		}
		if err := c.recovered(ctx); err != nil {
			rep.Violations = append(rep.Violations, fmt.Sprintf("after %s the cluster did not recover within %s: %v",
				kind, cfg.RecoveryTimeout, err))
			c.event(h.start, "recovery", "FAILED: %v", err)
		}
	}
	clients.Wait()
	c.event(h.start, "end", "clients stopped")

	// Heal, let every node catch up, and read the final state.
	if err := c.heal(); err != nil {
		return nil, err
	}
	if err := c.recovered(ctx); err != nil {
		rep.Violations = append(rep.Violations, "after the run the cluster did not recover: "+err.Error())
	}
	final, err := finalReads(ctx, w)
	if err != nil {
		rep.Violations = append(rep.Violations, err.Error())
	}
	rep.Violations = append(rep.Violations, c.checkNodes(ctx, w, rep)...)

	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	rep.Counts = h.counts
	rep.Violations = append(rep.Violations, h.anomalies...)
	rep.Violations = append(rep.Violations, h.overCap...)
	h.mu.Unlock()
	rep.Violations = append(rep.Violations, c.crashes()...)
	c.mu.Lock()
	rep.Events = append([]Event(nil), c.events...)
	c.mu.Unlock()
	for _, op := range ops {
		switch op.Output.(model.Output).Result {
		case model.OK:
			rep.OK++
		case model.Unknown:
			rep.Unknown++
		default:
			rep.Refused++
		}
	}
	rep.Ops = len(ops)
	rep.Violations = append(rep.Violations, checkAcknowledged(ops, final)...)
	rep.Violations = append(rep.Violations, checkUnknownWhole(ops, final)...)

	began := time.Now()
	var viz string
	rep.Linearizable, viz = checkLinearizable(ops, cfg.CheckTimeout, cfg.Dir)
	rep.CheckTime = time.Since(began)
	if viz != "" {
		rep.Violations = append(rep.Violations, "history not linearizable: see "+viz)
	}
	if rep.Failed() {
		cfg.Logf("node logs:\n%s", c.logTails(4000))
	}
	return rep, nil
}

// checkLinearizable checks a history against the model within timeout:
// "yes", "no" (with the path of its visualisation, written in dir) or
// "unknown" (the check timed out).
func checkLinearizable(ops []porcupine.Operation, timeout time.Duration, dir string) (verdict, viz string) {
	res, info := porcupine.CheckOperationsVerbose(model.Model(capacity), ops, timeout)
	switch res {
	case porcupine.Ok:
		return "yes", ""
	case porcupine.Illegal:
		viz = filepath.Join(dir, "history.html")
		if porcupine.VisualizePath(model.Model(capacity), info, viz) != nil {
			viz = ""
		}
		return "no", viz
	}
	return "unknown", ""
}

// finalReads reads every consumer and provider of the workload once the
// cluster has healed; the reads join the history (they must agree with
// it) and give the final state.
func finalReads(ctx context.Context, w *workload) (map[string]model.Output, error) {
	final := map[string]model.Output{}
	rng := rand.New(rand.NewSource(1))
	client := w.h.newClientID()
	var failed []string
	for _, g := range w.groups {
		var ins []model.Input
		for _, c := range g.consumers {
			ins = append(ins, model.Input{Kind: model.ReadConsumer, Group: g.id, Consumer: c})
		}
		for _, p := range g.providers {
			ins = append(ins, model.Input{Kind: model.ReadUsages, Group: g.id, Provider: p})
		}
		for _, in := range ins {
			ok := false
			for try := 0; try < 10 && !ok; try++ {
				var out model.Output
				out, ok = w.run(ctx, client, w.nodes[rng.Intn(len(w.nodes))], in)
				if ok && in.Kind == model.ReadConsumer {
					final[in.Consumer] = out
				}
			}
			if !ok {
				failed = append(failed, in.Consumer+in.Provider)
			}
		}
	}
	if len(failed) > 0 {
		return final, fmt.Errorf("final reads failed after the cluster healed: %v", failed)
	}
	return final, nil
}

// checkNodes compares every node's state: the same digest everywhere, and
// on each node (read locally, without the leader) no provider allocated
// beyond its capacity.
func (c *testCluster) checkNodes(ctx context.Context, w *workload, rep *Report) []string {
	var out []string
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	digests := map[string][]string{}
	for _, n := range c.nodes {
		st, err := n.Client().Self(wctx)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", n.ID, err))
			continue
		}
		key := fmt.Sprintf("%s@%d", st.Digest, st.StateIndex)
		digests[key] = append(digests[key], n.ID)
	}
	if len(digests) != 1 {
		out = append(out, fmt.Sprintf("nodes hold different states: %v", digests))
	}
	for k := range digests {
		rep.Digest = k
	}
	for _, n := range c.nodes {
		for _, g := range w.groups {
			for _, p := range g.providers {
				code, raw, err := w.staleRead(wctx, n, "/resource_providers/"+p+"/usages")
				if err != nil || code != 200 {
					out = append(out, fmt.Sprintf("%s: usages of %s: %d %v", n.ID, p, code, err))
					continue
				}
				if o, ok := w.parseRead(model.Input{Kind: model.ReadUsages, Provider: p}, raw); ok {
					for _, u := range o.Usages {
						if u.Used > capacity(p, u.Class) {
							out = append(out, fmt.Sprintf("%s: provider %s has %d %s allocated of %d", n.ID, p, u.Used, u.Class, capacity(p, u.Class)))
						}
					}
				}
			}
		}
	}
	return out
}

// writesOf indexes the writes of a history by consumer.
func writesOf(ops []porcupine.Operation) map[string][]porcupine.Operation {
	by := map[string][]porcupine.Operation{}
	for _, op := range ops {
		in := op.Input.(model.Input)
		switch in.Kind {
		case model.PutAllocations, model.PostAllocations:
			for _, cw := range in.Writes {
				by[cw.Consumer] = append(by[cw.Consumer], op)
			}
		case model.DeleteAllocations:
			by[in.Consumer] = append(by[in.Consumer], op)
		}
	}
	return by
}

// refused: the write was answered with a refusal, so changed nothing.
func refused(op porcupine.Operation) bool {
	r := op.Output.(model.Output).Result
	return r != model.OK && r != model.Unknown
}

// effect is what a write leaves a consumer with.
func effect(op porcupine.Operation, consumer string) []model.Amount {
	for _, cw := range op.Input.(model.Input).Writes {
		if cw.Consumer == consumer {
			return model.Normalize(cw.Allocations)
		}
	}
	return nil // a delete
}

func sameAmounts(a, b []model.Amount) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// checkAcknowledged: for each consumer whose last acknowledged write
// followed every other write that may have taken effect, the final state
// is that write's.
func checkAcknowledged(ops []porcupine.Operation, final map[string]model.Output) []string {
	var out []string
	for consumer, writes := range writesOf(ops) {
		fin, read := final[consumer]
		if !read {
			continue
		}
		var last *porcupine.Operation
		for i := range writes {
			op := &writes[i]
			if op.Output.(model.Output).Result != model.OK {
				continue
			}
			clean := true
			for _, other := range writes {
				if other.Call != op.Call && !refused(other) && other.Return >= op.Call {
					clean = false
					break
				}
			}
			if clean {
				last = op
			}
		}
		if last == nil {
			continue
		}
		if want := effect(*last, consumer); !sameAmounts(want, fin.Allocations) {
			out = append(out, fmt.Sprintf("acknowledged write lost: consumer %s should hold %v after %s, holds %v",
				consumer, want, model.Describe(last.Input.(model.Input), last.Output.(model.Output)), fin.Allocations))
		}
	}
	sort.Strings(out)
	return out
}

// checkUnknownWhole: a write of several consumers whose outcome is unknown
// took effect on all of them or on none, as far as the final state shows
// (consumers no other write touched after it began).
func checkUnknownWhole(ops []porcupine.Operation, final map[string]model.Output) []string {
	by := writesOf(ops)
	var out []string
	for _, op := range ops {
		in := op.Input.(model.Input)
		if op.Output.(model.Output).Result != model.Unknown || len(in.Writes) < 2 {
			continue
		}
		var applied []string
		var notApplied []string
		for _, cw := range in.Writes {
			fin, read := final[cw.Consumer]
			if !read {
				continue
			}
			clean := true
			for _, other := range by[cw.Consumer] {
				if other.Call != op.Call && !refused(other) && other.Return >= op.Call {
					clean = false
					break
				}
			}
			if !clean {
				continue
			}
			if sameAmounts(model.Normalize(cw.Allocations), fin.Allocations) {
				applied = append(applied, cw.Consumer)
			} else {
				notApplied = append(notApplied, cw.Consumer)
			}
		}
		if len(applied) > 0 && len(notApplied) > 0 {
			out = append(out, fmt.Sprintf("write of unknown outcome applied in part: %s took effect for %v, not for %v",
				model.Describe(in, op.Output.(model.Output)), applied, notApplied))
		}
	}
	return out
}

// Table renders reports as the summary table.
func Table(reports []*Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-7s %-9s %10s %9s %9s %8s %8s %-12s %-10s %s\n",
		"nodes", "duration", "operations", "ok", "failed", "unknown", "nemeses", "linearizable", "invariants", "check time")
	for _, r := range reports {
		inv := "ok"
		if len(r.Violations) > 0 {
			inv = fmt.Sprintf("%d broken", len(r.Violations))
		}
		fmt.Fprintf(&b, "%-7d %-9s %10d %9d %9d %8d %8d %-12s %-10s %s\n",
			r.Nodes, r.Duration, r.Ops, r.OK, r.Refused, r.Unknown, r.Nemeses, r.Linearizable, inv, r.CheckTime.Round(time.Millisecond))
	}
	return b.String()
}
