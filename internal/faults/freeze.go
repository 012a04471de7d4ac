package faults

import (
	"context"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/faults/model"
	"github.com/placementd/placementd/internal/testcluster"
)

// The freeze scenario: the leader L is frozen (SIGSTOP) until the others
// have elected a new leader; a write through the new leader is
// acknowledged; plain linearizable reads of what it wrote are sent to L
// while L is still frozen (they start after the acknowledgement); then L
// is woken (SIGCONT). L believes it still leads for a moment after
// waking, with replies to requests it sent before the freeze waiting in
// its sockets: a read barrier that counts them serves the reads from L's
// stale state. Every read that L answers itself must see the write.
//
// Raft links carry a delay drawn per trial (up to FreezeConfig.MaxDelay
// each way), and writers keep the leader busy until the freeze, so that
// heartbeats and appends are in flight when it comes.

// FreezeConfig describes a freeze run over a 3-node cluster.
type FreezeConfig struct {
	Bin, Dir      string
	Trials        int           // freezes (default 10)
	ReadsPerTrial int           // reads sent to the frozen leader (default 8)
	MaxDelay      time.Duration // one-way delay on Raft links, drawn per trial in [0, MaxDelay] (default 12 ms)
	// RecoveryTimeout bounds each wait for the cluster (default 60 s).
	RecoveryTimeout time.Duration
	Seed            int64
	Logf            func(format string, args ...any)
	// TransferBack makes the new leader hand leadership back to the woken
	// leader as soon as it wakes, with the reads queued at it: it leads
	// again in a newer term while its reads were noted in the old one
	// (issue 32: a round of the new term must not confirm them).
	TransferBack bool
}

// FreezeReport is the outcome of a freeze run.
type FreezeReport struct {
	Trials int
	// Reads sent to the frozen leader, and how they ended: answered by the
	// woken leader itself, by another node (forwarded), refused (503), or
	// without an answer (timeout, connection error).
	Reads, ServedByOld, Forwarded, Refused, NoAnswer int
	// Stale: answered with state that misses the acknowledged write.
	Stale        int
	Linearizable string
	Violations   []string
	Dir          string
}

// Failed reports whether the run found a problem.
func (r *FreezeReport) Failed() bool {
	return r.Stale > 0 || r.Linearizable != "yes" || len(r.Violations) > 0
}

func (r *FreezeReport) String() string {
	return fmt.Sprintf("%d freezes, %d reads at the frozen leader: %d answered by it, %d forwarded, %d refused, %d without answer; stale %d; linearizable %s; %d violations",
		r.Trials, r.Reads, r.ServedByOld, r.Forwarded, r.Refused, r.NoAnswer, r.Stale, r.Linearizable, len(r.Violations))
}

// RunFreeze runs the freeze scenario cfg.Trials times and checks every
// read against the history.
func RunFreeze(ctx context.Context, cfg FreezeConfig) (*FreezeReport, error) {
	if cfg.Trials == 0 {
		cfg.Trials = 10
	}
	if cfg.ReadsPerTrial == 0 {
		cfg.ReadsPerTrial = 8
	}
	if cfg.MaxDelay == 0 {
		cfg.MaxDelay = 12 * time.Millisecond
	}
	conf := Config{Nodes: 3, Bin: cfg.Bin, Dir: cfg.Dir, Seed: cfg.Seed, RecoveryTimeout: cfg.RecoveryTimeout, Logf: cfg.Logf}
	conf.setDefaults()
	cfg.Seed, cfg.RecoveryTimeout, cfg.Logf = conf.Seed, conf.RecoveryTimeout, conf.Logf
	if err := ensureDir(cfg.Dir); err != nil {
		return nil, err
	}
	cfg.Logf("freeze: %d trials of %d reads, delay up to %s, seed %d, in %s", cfg.Trials, cfg.ReadsPerTrial, cfg.MaxDelay, cfg.Seed, cfg.Dir)
	c, err := startCluster(ctx, conf)
	if err != nil {
		return nil, err
	}
	defer c.stop()
	rng := rand.New(rand.NewSource(cfg.Seed))
	h := newHistory()
	w := newWorkload(h, c.nodes, nil, 15*time.Second, 1, 1)
	// One group per trial, and one the background writers use.
	groups, err := c.setupGroups(ctx, w, cfg.Trials+1)
	if err != nil {
		return nil, fmt.Errorf("setting up: %w\n%s", err, c.logTails(2000))
	}
	*w = *newWorkload(h, c.nodes, groups, 15*time.Second, 1, 1)
	h.start = time.Now()
	rep := &FreezeReport{Dir: cfg.Dir}
	for i := 0; i < cfg.Trials; i++ {
		delay := time.Duration(rng.Int63n(int64(cfg.MaxDelay) + 1))
		c.net.setDelay(delay, delay/4)
		if err := c.freezeTrial(ctx, cfg, w, &groups[i], &groups[cfg.Trials], rng, rep); err != nil {
			rep.Violations = append(rep.Violations, fmt.Sprintf("trial %d: %v", i, err))
			c.heal()
		}
		rep.Trials++
		if err := c.recovered(ctx); err != nil {
			rep.Violations = append(rep.Violations, fmt.Sprintf("trial %d: cluster did not recover: %v", i, err))
			break
		}
	}
	c.net.setDelay(0, 0)
	h.mu.Lock()
	ops := append([]porcupine.Operation(nil), h.ops...)
	rep.Violations = append(rep.Violations, h.anomalies...)
	h.mu.Unlock()
	rep.Violations = append(rep.Violations, c.crashes()...)
	var viz string
	rep.Linearizable, viz = checkLinearizable(ops, 5*time.Minute, cfg.Dir)
	if viz != "" {
		rep.Violations = append(rep.Violations, "history not linearizable: see "+viz)
	}
	if rep.Failed() {
		cfg.Logf("node logs:\n%s", c.logTails(4000))
	}
	return rep, nil
}

// freezeTrial runs one freeze over group g's first consumer; busy is the
// group the background writers use.
func (c *testCluster) freezeTrial(ctx context.Context, cfg FreezeConfig, w *workload, g, busy *group, rng *rand.Rand, rep *FreezeReport) error {
	old, err := c.leader(ctx)
	if err != nil {
		return err
	}
	consumer := g.consumers[0]
	client := w.h.newClientID()
	claim := func(n *testcluster.Proc) (model.Output, bool) {
		in := w.claim(rng, g, consumer)
		in.Group = g.id
		return w.run(ctx, client, n, in)
	}
	if out, ok := claim(old); !ok || out.Result != model.OK {
		return fmt.Errorf("first write through %s: %+v", old.ID, out)
	}

	// Keep the leader busy until the freeze: appends in flight.
	busyCtx, stopBusy := context.WithCancel(ctx)
	var writers sync.WaitGroup
	for k := 0; k < 2; k++ {
		writers.Add(1)
		go func(k int) {
			defer writers.Done()
			path := "/allocations/" + busy.consumers[k]
			var gen *int64
			for j := int64(1); busyCtx.Err() == nil; j++ {
				body := map[string]any{"allocations": map[string]any{busy.providers[k]: map[string]any{
					"resources": map[string]int64{"MEMORY_MB": j}}}, "project_id": "faults", "user_id": "faults",
					"consumer_generation": gen}
				code, _, _ := w.request(busyCtx, old, "PUT", path, body)
				if code != http.StatusNoContent {
					// Learn the generation again (busyCtx ends at the freeze).
					code, raw, _ := w.request(busyCtx, old, "GET", path, nil)
					if code == http.StatusOK {
						in := model.Input{Kind: model.ReadConsumer, Consumer: busy.consumers[k]}
						if out, ok := w.parseRead(in, raw); ok && out.Generation >= 0 {
							gen = &out.Generation
						}
					}
					continue
				}
				next := int64(1)
				if gen != nil {
					next = *gen + 1
				}
				gen = &next
			}
		}(k)
	}
	// Let a few of them through before the freeze.
	for j := 0; j < 3; j++ {
		w.request(ctx, old, "GET", "/resource_providers/"+busy.providers[0]+"/usages", nil)
	}
	c.event(w.h.start, "freeze", "SIGSTOP leader %s", old.ID)
	if err := old.Pause(); err != nil {
		stopBusy()
		return err
	}
	defer func() {
		if old.Paused() {
			old.Resume()
		}
		stopBusy()
		writers.Wait()
	}()

	// The others elect a new leader and acknowledge a write.
	others := c.followers(old)
	wctx, cancel := context.WithTimeout(ctx, cfg.RecoveryTimeout)
	defer cancel()
	var leader *testcluster.Proc
	for leader == nil {
		st, err := others.Status(wctx)
		if err != nil {
			return fmt.Errorf("no new leader while %s was frozen: %v", old.ID, err)
		}
		if st.Leader != old.ID {
			leader = c.node(st.Leader)
		}
	}
	acked := false
	for !acked {
		if wctx.Err() != nil {
			return fmt.Errorf("no write acknowledged by the new leader %s", leader.ID)
		}
		out, ok := claim(leader)
		switch {
		case ok && out.Result == model.OK:
			acked = true
		case ok && out.Result == model.Unknown:
			client = w.h.newClientID()
		case ok && out.Result == model.GenerationConflict:
			w.run(ctx, client, leader, model.Input{Kind: model.ReadConsumer, Group: g.id, Consumer: consumer})
		}
	}
	c.event(w.h.start, "freeze", "write acknowledged by %s", leader.ID)

	// Reads sent to the frozen leader; it is woken once every one of them
	// has been written to its socket.
	type answer struct {
		code      int
		servedBy  string
		body      []byte
		err       error
		call, ret int64
	}
	answers := make([]answer, cfg.ReadsPerTrial)
	written := make(chan struct{}, cfg.ReadsPerTrial)
	var reads sync.WaitGroup
	for k := range answers {
		reads.Add(1)
		go func(a *answer) {
			defer reads.Done()
			var once sync.Once
			sent := func() { once.Do(func() { written <- struct{}{} }) }
			defer sent()
			trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { sent() }}
			rctx, cancel := context.WithTimeout(httptrace.WithClientTrace(ctx, trace), 30*time.Second)
			defer cancel()
			a.call = w.h.now()
			req, err := http.NewRequestWithContext(rctx, "GET", "http://"+old.HTTPAddr+"/allocations/"+consumer, nil)
			if err != nil {
				a.err = err
				return
			}
			req.Header.Set("X-Auth-Token", "admin")
			// The cluster secret: answers name the node that served them
			// (X-Placementd-Served-By) only to callers with it.
			req.Header.Set("Authorization", "Bearer "+secret)
			req.Header.Set("OpenStack-API-Version", microversion)
			resp, err := w.http.Do(req)
			if err != nil {
				a.err = err
				return
			}
			defer resp.Body.Close()
			a.code, a.servedBy = resp.StatusCode, resp.Header.Get(front.ServedByHeader)
			a.body, a.err = io.ReadAll(resp.Body)
			a.ret = w.h.now()
		}(&answers[k])
	}
	for range answers {
		<-written
	}
	c.event(w.h.start, "freeze", "SIGCONT %s with %d reads waiting", old.ID, len(answers))
	if err := old.Resume(); err != nil {
		return err
	}
	if cfg.TransferBack {
		c.transferBack(wctx, w.h.start, leader, old)
	}
	reads.Wait()

	want := w.knownGeneration(consumer)
	for _, a := range answers {
		rep.Reads++
		switch {
		case a.err != nil:
			rep.NoAnswer++
			continue
		case a.code == http.StatusServiceUnavailable:
			rep.Refused++
			continue
		case a.code != http.StatusOK:
			w.h.anomaly("read of %s at frozen leader %s: %d %s", consumer, old.ID, a.code, a.body)
			continue
		case a.servedBy == "":
			// Only callers with the cluster secret are told.
			w.h.anomaly("read of %s at frozen leader %s: no %s in the answer", consumer, old.ID, front.ServedByHeader)
			continue
		case a.servedBy == old.ID:
			rep.ServedByOld++
		default:
			rep.Forwarded++
		}
		in := model.Input{Kind: model.ReadConsumer, Group: g.id, Consumer: consumer}
		out, ok := w.parseRead(in, a.body)
		if !ok {
			w.h.anomaly("read of %s: unreadable answer %s", consumer, a.body)
			continue
		}
		if want != nil && out.Generation < *want {
			rep.Stale++
			w.h.anomaly("stale read: %s served generation %d of consumer %s after generation %d was acknowledged",
				a.servedBy, out.Generation, consumer, *want)
		}
		// Each read is its own client: they ran concurrently.
		w.h.add(porcupine.Operation{ClientId: w.h.newClientID(), Input: in, Call: a.call, Output: out, Return: a.ret})
	}
	return nil
}

// transferBack asks leader to hand leadership to to, again while it
// refuses (to may not have caught up yet), until it succeeds or ctx ends.
func (c *testCluster) transferBack(ctx context.Context, start time.Time, leader, to *testcluster.Proc) {
	for ctx.Err() == nil {
		res, err := leader.Client().TransferLeadership(ctx, to.ID)
		if err == nil {
			c.event(start, "freeze", "leadership handed back to %s (%+v)", to.ID, res)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}
