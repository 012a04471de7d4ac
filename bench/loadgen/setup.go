package loadgen

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Set-up request kinds.
const (
	kindCreate  = "POST /resource_providers"
	kindInv     = "PUT /resource_providers/{u}/inventories"
	kindTraits  = "PUT /resource_providers/{u}/traits"
	kindAggs    = "PUT /resource_providers/{u}/aggregates"
	sharingDisk = 1000000
)

// inventory is one class's inventory in a PUT body.
type inventory struct {
	Total           int64   `json:"total"`
	Reserved        int64   `json:"reserved"`
	MinUnit         int64   `json:"min_unit"`
	MaxUnit         int64   `json:"max_unit"`
	StepSize        int64   `json:"step_size"`
	AllocationRatio float64 `json:"allocation_ratio"`
}

// The inventories of a compute node (split over NUMA children when the
// fleet has them) and of a sharing disk provider. They are large (512
// default flavors per node, 512,000 in the default fleet) so that the
// fleet does not fill up during a run: a full fleet answers every claim
// 409, and the phases after it would measure rejections, and a phase's
// claims/s could not exceed what was left.
var (
	computeVCPU   = inventory{Total: 256, MinUnit: 1, MaxUnit: 256, StepSize: 1, AllocationRatio: 4}
	computeMemory = inventory{Total: 1048576, Reserved: 512, MinUnit: 1, MaxUnit: 1048576, StepSize: 1, AllocationRatio: 1.5}
	computeDisk   = inventory{Total: 20000, MinUnit: 1, MaxUnit: 2000, StepSize: 1, AllocationRatio: 1}
	numaVCPU      = inventory{Total: 128, MinUnit: 1, MaxUnit: 128, StepSize: 1, AllocationRatio: 4}
	numaMemory    = inventory{Total: 524288, Reserved: 256, MinUnit: 1, MaxUnit: 524288, StepSize: 1, AllocationRatio: 1.5}
	sharedDisk    = inventory{Total: sharingDisk, MinUnit: 1, MaxUnit: 2000, StepSize: 1, AllocationRatio: 1}
)

// setup creates the aggregates' sharing providers, then the compute
// nodes, spread over the workers. It fails on the first error: the
// workload needs the whole fleet.
func (r *run) setup(ctx context.Context) (Phase, error) {
	start := time.Now()
	for i := 0; i < r.cfg.Aggregates; i++ {
		r.aggs = append(r.aggs, uuid.NewString())
	}
	for _, w := range r.workers {
		w.c.recorder = newRecorder()
	}
	var total counts
	w0 := r.workers[0]
	for i, agg := range r.aggs {
		u := uuid.NewString()
		if err := w0.makeProvider(ctx, u, fmt.Sprintf("bench-%s-share-%d", r.runID, i), "",
			map[string]inventory{"DISK_GB": sharedDisk}, []string{"MISC_SHARES_VIA_AGGREGATE"}, []string{agg}, &total); err != nil {
			return Phase{}, err
		}
		r.sharing = append(r.sharing, u)
	}

	r.nodes = make([]node, r.cfg.Nodes)
	next := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
	)
	go func() {
		defer close(next)
		for i := range r.nodes {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	r.parallel(func(w *worker) {
		var c counts
		for i := range next {
			mu.Lock()
			failed := firstErr != nil
			mu.Unlock()
			if failed {
				continue
			}
			n, err := w.makeNode(ctx, i, &c)
			mu.Lock()
			if err != nil && firstErr == nil {
				firstErr = err
			}
			r.nodes[i] = n
			mu.Unlock()
		}
		mu.Lock()
		total.add(c)
		mu.Unlock()
	})
	if firstErr != nil {
		return Phase{}, fmt.Errorf("setting up the fleet: %w", firstErr)
	}
	if err := ctx.Err(); err != nil {
		return Phase{}, err
	}
	r.providers = append(r.providers, r.sharing...)
	for _, n := range r.nodes {
		r.providers = append(r.providers, n.uuid)
		r.providers = append(r.providers, n.children...)
	}
	rec := newRecorder()
	for _, w := range r.workers {
		rec.merge(w.c.recorder)
		w.c.recorder = nil
	}
	return makePhase("setup", time.Since(start), total, rec), nil
}

// makeNode creates compute node i: a fifth of them have the bench trait;
// node i is in aggregate i mod the aggregate count.
func (w *worker) makeNode(ctx context.Context, i int, c *counts) (node, error) {
	r := w.r
	n := node{uuid: uuid.NewString()}
	var traits []string
	if i%5 == 0 {
		traits = []string{benchTrait}
	}
	aggs := []string{r.aggs[i%len(r.aggs)]}
	name := fmt.Sprintf("bench-%s-cn-%d", r.runID, i)
	if !r.cfg.NUMA {
		return n, w.makeProvider(ctx, n.uuid, name, "",
			map[string]inventory{"VCPU": computeVCPU, "MEMORY_MB": computeMemory, "DISK_GB": computeDisk}, traits, aggs, c)
	}
	if err := w.makeProvider(ctx, n.uuid, name, "", map[string]inventory{"DISK_GB": computeDisk}, traits, aggs, c); err != nil {
		return n, err
	}
	for k := 0; k < 2; k++ {
		cu := uuid.NewString()
		if err := w.makeProvider(ctx, cu, fmt.Sprintf("%s-numa%d", name, k), n.uuid,
			map[string]inventory{"VCPU": numaVCPU, "MEMORY_MB": numaMemory}, []string{"HW_NUMA_ROOT"}, nil, c); err != nil {
			return n, err
		}
		n.children = append(n.children, cu)
	}
	return n, nil
}

// makeProvider creates one provider with its inventories, traits and
// aggregates, following its generation.
func (w *worker) makeProvider(ctx context.Context, u, name, parent string, inv map[string]inventory, traits, aggs []string, c *counts) error {
	body := map[string]any{"name": name, "uuid": u}
	if parent != "" {
		body["parent_provider_uuid"] = parent
	}
	// POST answers 201 before 1.20 and 200 with the provider from 1.20.
	res := w.c.do(ctx, kindCreate, "POST", "/resource_providers", body)
	if res.err == nil && res.status == 201 {
		res.status = 200
	}
	if err := res.expect(200, nil); err != nil {
		return fmt.Errorf("creating provider %s: %w", name, err)
	}
	c.ops++
	gen := int64(0)
	step := func(kind, path string, body map[string]any) error {
		body["resource_provider_generation"] = gen
		res := w.c.do(ctx, kind, "PUT", "/resource_providers/"+u+path, body)
		if err := res.expect(200, nil); err != nil {
			return fmt.Errorf("%s of %s: %w", kind, name, err)
		}
		g, err := res.generation()
		if err != nil {
			return err
		}
		gen = g
		c.ops++
		return nil
	}
	if len(inv) > 0 {
		if err := step(kindInv, "/inventories", map[string]any{"inventories": inv}); err != nil {
			return err
		}
	}
	if len(traits) > 0 {
		if err := step(kindTraits, "/traits", map[string]any{"traits": traits}); err != nil {
			return err
		}
	}
	if len(aggs) > 0 {
		if err := step(kindAggs, "/aggregates", map[string]any{"aggregates": aggs}); err != nil {
			return err
		}
	}
	return nil
}
