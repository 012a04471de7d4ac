package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/internal/faults/model"
	"github.com/placementd/placementd/internal/testcluster"
)

// The workload: groups of two providers and four consumers each. Clients
// claim, move (POST /allocations, one or two consumers at once), empty
// and delete the consumers' allocations with consumer generations, and
// read consumers and provider usages, through every node: a linearizable
// read on a follower is answered from the follower's own state after a
// read index, and a quarter of the reads carry a staleness bound (checked
// as reads invoked a bound before they were sent). A consumer only
// ever holds allocations on its group's providers, so the history splits
// by group for the checker.
//
// Every allocation also carries MEMORY_MB with an amount used by no other
// write (a marker): a read then tells exactly which write it sees, so a
// stale read cannot pass for a fresh one, and the final state tells which
// writes took effect.

const (
	vcpuCapacity   = 8
	memoryCapacity = math.MaxInt32 // room for every marker
	consumersPer   = 4
	// microversion: consumer generations (1.28) without consumer types.
	microversion = "placement 1.28"
)

// never is the return time of an operation whose outcome is unknown: it
// may take effect at any time after its invocation.
const never = math.MaxInt64 / 2

type group struct {
	id        int
	providers [2]string
	consumers [consumersPer]string
}

func capacity(provider, class string) int64 {
	if class == "VCPU" {
		return vcpuCapacity
	}
	return memoryCapacity
}

// history records every operation with its invocation and completion.
type history struct {
	start time.Time

	mu        sync.Mutex
	ops       []porcupine.Operation
	clientIDs int
	anomalies []string // answers no correct server gives
	overCap   []string // reads showing more than the capacity allocated
	counts    map[string]int
}

func newHistory() *history {
	return &history{start: time.Now(), counts: map[string]int{}}
}

func (h *history) now() int64 { return int64(time.Since(h.start)) }

func (h *history) newClientID() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.clientIDs++
	return h.clientIDs - 1
}

func (h *history) add(op porcupine.Operation) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, op)
	out := op.Output.(model.Output)
	h.counts[out.Result.String()]++
}

func (h *history) count(key string) {
	h.mu.Lock()
	h.counts[key]++
	h.mu.Unlock()
}

func (h *history) anomaly(format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.anomalies) < 100 {
		h.anomalies = append(h.anomalies, fmt.Sprintf(format, args...))
	}
	h.counts["anomaly"]++
}

// workload runs the clients.
type workload struct {
	h       *history
	nodes   testcluster.Procs
	groups  []group
	http    *http.Client
	timeout time.Duration
	marker  atomic.Int64
	// active is the window of groups clients use; it moves on so each
	// group's history stays short enough to check quickly.
	active     atomic.Int64
	window     int
	opsInGroup []atomic.Int64
	perGroup   int64

	mu    sync.Mutex
	known map[string]*int64 // consumer generation the clients last learnt
}

func newWorkload(h *history, nodes testcluster.Procs, groups []group, timeout time.Duration, window int, perGroup int64) *workload {
	return &workload{
		h: h, nodes: nodes, groups: groups, timeout: timeout, window: window, perGroup: perGroup,
		opsInGroup: make([]atomic.Int64, len(groups)),
		known:      map[string]*int64{},
		http: &http.Client{Transport: &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 2 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 64,
		}},
	}
}

// request sends one Placement request to node n as the admin.
func (w *workload) request(ctx context.Context, n *testcluster.Proc, method, path string, body any) (int, []byte, error) {
	code, raw, _, err := w.send(ctx, n, method, path, body)
	return code, raw, err
}

// staleRead reads from node n's own state, without asking the leader.
func (w *workload) staleRead(ctx context.Context, n *testcluster.Proc, path string) (int, []byte, error) {
	code, raw, _, err := w.send(ctx, n, "GET", path, nil, front.StaleReadHeader, "true")
	return code, raw, err
}

// send sends a request with the given extra headers (name, value, ...).
func (w *workload) send(ctx context.Context, n *testcluster.Proc, method, path string, body any, headers ...string) (int, []byte, http.Header, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, err
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://"+n.HTTPAddr+path, rd)
	if err != nil {
		return 0, nil, nil, err
	}
	req.Header.Set("X-Auth-Token", "admin")
	// The cluster secret: answers name the node that served them
	// (X-Placementd-Served-By) only to callers with it.
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("OpenStack-API-Version", microversion)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := w.http.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, nil, err
	}
	return resp.StatusCode, raw, resp.Header, nil
}

// neverSent tells a request that cannot have reached the node (the
// connection was refused).
func neverSent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// pickGroup returns a group of the active window, moving the window on
// when its first group has had its share of operations.
func (w *workload) pickGroup(rng *rand.Rand) *group {
	base := int(w.active.Load())
	i := base + rng.Intn(w.window)
	if i >= len(w.groups) {
		i = len(w.groups) - 1 - rng.Intn(w.window)
	}
	if w.opsInGroup[i].Add(1) >= w.perGroup && i == base && base+w.window < len(w.groups) {
		w.active.CompareAndSwap(int64(base), int64(base+1))
	}
	return &w.groups[i]
}

func (w *workload) knownGeneration(c string) *int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.known[c]
}

func (w *workload) learn(c string, g *int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if g == nil {
		delete(w.known, c)
	} else {
		v := *g
		w.known[c] = &v
	}
}

// client runs operations until ctx ends.
func (w *workload) client(ctx context.Context, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	id := w.h.newClientID()
	for ctx.Err() == nil {
		g := w.pickGroup(rng)
		n := w.nodes[rng.Intn(len(w.nodes))]
		c := g.consumers[rng.Intn(consumersPer)]
		var in model.Input
		switch r := rng.Intn(100); {
		case r < 35:
			in = w.claim(rng, g, c)
		case r < 50:
			in = w.move(rng, g, c)
		case r < 58:
			gen := w.knownGeneration(c)
			if gen == nil {
				in = w.claim(rng, g, c)
				break
			}
			in = model.Input{Kind: model.PutAllocations, Writes: []model.ConsumerWrite{{Consumer: c, Generation: gen}}}
		case r < 66:
			in = model.Input{Kind: model.DeleteAllocations, Consumer: c}
		case r < 86:
			in = model.Input{Kind: model.ReadConsumer, Consumer: c}
		default:
			in = model.Input{Kind: model.ReadUsages, Provider: g.providers[rng.Intn(2)]}
		}
		in.Group = g.id
		var bound time.Duration
		if (in.Kind == model.ReadConsumer || in.Kind == model.ReadUsages) && rng.Intn(4) == 0 {
			bound = readBounds[rng.Intn(len(readBounds))]
		}
		out, recorded := w.runBounded(ctx, id, n, in, bound)
		if ctx.Err() != nil && !recorded {
			return
		}
		if recorded && out.Result == model.Unknown {
			// This client's operation may still take effect: the next
			// ones are another client's, for the checker.
			id = w.h.newClientID()
		}
		if out.Result == model.GenerationConflict {
			// Learn the consumers' generations again.
			for _, cw := range in.Writes {
				w.run(ctx, id, n, model.Input{Kind: model.ReadConsumer, Group: g.id, Consumer: cw.Consumer})
			}
		}
	}
}

func (w *workload) amounts(rng *rand.Rand, provider string) []model.Amount {
	return []model.Amount{
		{Provider: provider, Class: "VCPU", Used: int64(1 + rng.Intn(3))},
		{Provider: provider, Class: "MEMORY_MB", Used: w.marker.Add(1)},
	}
}

func (w *workload) claim(rng *rand.Rand, g *group, c string) model.Input {
	return model.Input{Kind: model.PutAllocations, Writes: []model.ConsumerWrite{{
		Consumer: c, Generation: w.knownGeneration(c), Allocations: w.amounts(rng, g.providers[rng.Intn(2)]),
	}}}
}

// move gives one or two consumers new allocations at once, each on one
// of the group's providers.
func (w *workload) move(rng *rand.Rand, g *group, c string) model.Input {
	in := model.Input{Kind: model.PostAllocations}
	cs := []string{c}
	if rng.Intn(3) > 0 {
		if other := g.consumers[rng.Intn(consumersPer)]; other != c {
			cs = append(cs, other)
		}
	}
	for _, c := range cs {
		in.Writes = append(in.Writes, model.ConsumerWrite{
			Consumer: c, Generation: w.knownGeneration(c), Allocations: w.amounts(rng, g.providers[rng.Intn(2)]),
		})
	}
	return in
}

// readBounds are the staleness bounds of the workload's bounded reads (a
// quarter of its reads; the others are linearizable).
var readBounds = []time.Duration{20 * time.Millisecond, 200 * time.Millisecond, time.Second}

// run sends one operation and records it; recorded is false when the
// operation carries no information (a read without an answer, or a
// request that never left).
func (w *workload) run(ctx context.Context, client int, n *testcluster.Proc, in model.Input) (model.Output, bool) {
	return w.runBounded(ctx, client, n, in, 0)
}

// runBounded is run with, for a read, a staleness bound (0: linearizable).
// A bounded read promises every write acknowledged a bound before it
// reached the node, and a state that existed while it ran: it is
// checked as a linearizable read invoked a bound earlier than it was.
func (w *workload) runBounded(ctx context.Context, client int, n *testcluster.Proc, in model.Input, bound time.Duration) (model.Output, bool) {
	method, path, body := requestOf(in)
	var headers []string
	if bound > 0 {
		headers = []string{front.MaxStalenessHeader, bound.String()}
	}
	call := w.h.now()
	code, raw, hdr, err := w.send(ctx, n, method, path, body, headers...)
	ret := w.h.now()
	call = max(call-int64(bound), 0)
	if err != nil && neverSent(err) {
		// The node is down: nothing was sent. Do not spin on it.
		w.h.count("not sent")
		time.Sleep(10 * time.Millisecond)
		return model.Output{}, false
	}
	isRead := in.Kind == model.ReadConsumer || in.Kind == model.ReadUsages
	var out model.Output
	switch {
	case err != nil || code >= 500:
		if code >= 500 && code != http.StatusServiceUnavailable {
			w.h.anomaly("%s %s via %s: %d %s", method, path, n.ID, code, raw)
		}
		if isRead {
			w.h.count("read without answer")
			return model.Output{}, false
		}
		out.Result = model.Unknown
		ret = never
	case isRead && code == http.StatusOK:
		var ok bool
		if out, ok = w.parseRead(in, raw); !ok {
			w.h.anomaly("%s %s via %s: unreadable answer %s", method, path, n.ID, raw)
			return model.Output{}, false
		}
		// Which level answered, and whether the node asked did.
		where := "forwarded"
		if hdr.Get(front.ServedByHeader) == n.ID {
			where = "local"
		}
		w.h.count(fmt.Sprintf("read %s %s", hdr.Get(front.ReadLevelHeader), where))
	case !isRead && code == http.StatusNoContent:
		out.Result = model.OK
	case in.Kind == model.DeleteAllocations && code == http.StatusNotFound:
		out.Result = model.NotFound
	case !isRead && code == http.StatusConflict:
		out.Result = model.CapacityConflict
		if errorCode(raw) == "placement.concurrent_update" {
			out.Result = model.GenerationConflict
		}
	default:
		w.h.anomaly("%s %s via %s: %d %s", method, path, n.ID, code, raw)
		return model.Output{}, false
	}
	w.h.add(porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
	w.learnFrom(in, out)
	return out, true
}

// learnFrom keeps the clients' view of consumer generations current, so
// that most writes expect the right generation.
func (w *workload) learnFrom(in model.Input, out model.Output) {
	switch {
	case in.Kind == model.ReadConsumer:
		if out.Generation >= 0 {
			g := out.Generation
			w.learn(in.Consumer, &g)
		} else {
			w.learn(in.Consumer, nil)
		}
	case in.Kind == model.DeleteAllocations && out.Result == model.OK:
		w.learn(in.Consumer, nil)
	case out.Result == model.OK:
		for _, cw := range in.Writes {
			if len(cw.Allocations) == 0 {
				w.learn(cw.Consumer, nil)
				continue
			}
			g := int64(1)
			if cw.Generation != nil {
				g = *cw.Generation + 1
			}
			w.learn(cw.Consumer, &g)
		}
	}
}

// requestOf is the Placement request of an operation.
func requestOf(in model.Input) (method, path string, body any) {
	allocs := func(cw model.ConsumerWrite) map[string]any {
		byProvider := map[string]map[string]int64{}
		for _, a := range cw.Allocations {
			if byProvider[a.Provider] == nil {
				byProvider[a.Provider] = map[string]int64{}
			}
			byProvider[a.Provider][a.Class] += a.Used
		}
		out := map[string]any{}
		for p, res := range byProvider {
			out[p] = map[string]any{"resources": res}
		}
		return map[string]any{"allocations": out, "project_id": "faults", "user_id": "faults",
			"consumer_generation": cw.Generation}
	}
	switch in.Kind {
	case model.PutAllocations:
		return "PUT", "/allocations/" + in.Writes[0].Consumer, allocs(in.Writes[0])
	case model.PostAllocations:
		b := map[string]any{}
		for _, cw := range in.Writes {
			b[cw.Consumer] = allocs(cw)
		}
		return "POST", "/allocations", b
	case model.DeleteAllocations:
		return "DELETE", "/allocations/" + in.Consumer, nil
	case model.ReadConsumer:
		return "GET", "/allocations/" + in.Consumer, nil
	default:
		return "GET", "/resource_providers/" + in.Provider + "/usages", nil
	}
}

// parseRead turns a read's answer into the model's output, and checks it
// against the capacity.
func (w *workload) parseRead(in model.Input, raw []byte) (model.Output, bool) {
	out := model.Output{Result: model.OK}
	if in.Kind == model.ReadConsumer {
		var body struct {
			Allocations map[string]struct {
				Resources map[string]int64 `json:"resources"`
			} `json:"allocations"`
			ConsumerGeneration *int64 `json:"consumer_generation"`
		}
		if json.Unmarshal(raw, &body) != nil {
			return out, false
		}
		out.Generation = -1
		if body.ConsumerGeneration != nil {
			out.Generation = *body.ConsumerGeneration
		}
		for p, r := range body.Allocations {
			for class, n := range r.Resources {
				out.Allocations = append(out.Allocations, model.Amount{Provider: p, Class: class, Used: n})
			}
		}
		out.Allocations = model.Normalize(out.Allocations)
		return out, true
	}
	var body struct {
		Usages map[string]int64 `json:"usages"`
	}
	if json.Unmarshal(raw, &body) != nil || body.Usages == nil {
		return out, false
	}
	var classes []string
	for class, n := range body.Usages {
		if n > capacity(in.Provider, class) {
			w.h.mu.Lock()
			w.h.overCap = append(w.h.overCap, fmt.Sprintf("provider %s: %d %s used of %d", in.Provider, n, class, capacity(in.Provider, class)))
			w.h.mu.Unlock()
		}
		if n != 0 {
			classes = append(classes, class)
		}
	}
	sort.Strings(classes)
	for _, class := range classes {
		out.Usages = append(out.Usages, model.Amount{Provider: in.Provider, Class: class, Used: body.Usages[class]})
	}
	return out, true
}

func errorCode(raw []byte) string {
	var body struct {
		Errors []struct {
			Code string `json:"code"`
		} `json:"errors"`
	}
	if json.Unmarshal(raw, &body) != nil || len(body.Errors) == 0 {
		return ""
	}
	return body.Errors[0].Code
}
