package loadgen

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// Verify is what the end-of-run check found. Claims are the consumers the
// run counted as created and not deleted.
type Verify struct {
	Providers int `json:"providers"`
	Claims    int `json:"claims"`
	Deleted   int `json:"deleted"`
	// Missing: a claim absent from a provider it was made on; Wrong: a
	// claim present with other amounts; Unexpected: a consumer on the
	// run's providers that it never counted as created (or that it
	// deleted); Uncertain: consumers whose write got no answer, found in
	// either state (allowed).
	Missing    int `json:"missing"`
	Wrong      int `json:"wrong"`
	Unexpected int `json:"unexpected"`
	Uncertain  int `json:"uncertain"`
	// OverCapacity counts (provider, class) usages above
	// (total - reserved) * allocation_ratio; UsageMismatch those that
	// differ from the sum of the provider's allocations.
	OverCapacity  int      `json:"over_capacity"`
	UsageMismatch int      `json:"usage_mismatch"`
	Errors        int      `json:"errors"`
	Problems      []string `json:"problems,omitempty"`
	OK            bool     `json:"ok"`
}

// Summary is one line about the verification.
func (v Verify) Summary() string {
	s := fmt.Sprintf("%d providers, %d claims present as counted (%d deleted): missing %d, wrong %d, unexpected %d, over capacity %d, usage mismatch %d, errors %d, uncertain %d",
		v.Providers, v.Claims-v.Missing-v.Wrong, v.Deleted, v.Missing, v.Wrong, v.Unexpected, v.OverCapacity, v.UsageMismatch, v.Errors, v.Uncertain)
	if v.OK {
		return "OK: " + s
	}
	return "FAILED: " + s + "\n    " + strings.Join(v.Problems, "\n    ")
}

func (v *Verify) problem(format string, args ...any) {
	if len(v.Problems) < 10 {
		v.Problems = append(v.Problems, fmt.Sprintf(format, args...))
	}
}

// providerState is what the check reads of one provider.
type providerState struct {
	inventories map[string]struct {
		Total           int64   `json:"total"`
		Reserved        int64   `json:"reserved"`
		AllocationRatio float64 `json:"allocation_ratio"`
	}
	usages      map[string]int64
	allocations map[string]map[string]int64 // consumer -> class -> amount
	err         error
}

func (w *worker) readProvider(ctx context.Context, u string) providerState {
	var ps providerState
	var inv struct {
		Inventories map[string]struct {
			Total           int64   `json:"total"`
			Reserved        int64   `json:"reserved"`
			AllocationRatio float64 `json:"allocation_ratio"`
		} `json:"inventories"`
	}
	if ps.err = w.c.do(ctx, "", "GET", "/resource_providers/"+u+"/inventories", nil).expect(200, &inv); ps.err != nil {
		return ps
	}
	ps.inventories = inv.Inventories
	var us struct {
		Usages map[string]int64 `json:"usages"`
	}
	if ps.err = w.c.do(ctx, "", "GET", "/resource_providers/"+u+"/usages", nil).expect(200, &us); ps.err != nil {
		return ps
	}
	ps.usages = us.Usages
	var al struct {
		Allocations map[string]struct {
			Resources map[string]int64 `json:"resources"`
		} `json:"allocations"`
	}
	if ps.err = w.c.do(ctx, "", "GET", "/resource_providers/"+u+"/allocations", nil).expect(200, &al); ps.err != nil {
		return ps
	}
	ps.allocations = map[string]map[string]int64{}
	for c, a := range al.Allocations {
		ps.allocations[c] = a.Resources
	}
	return ps
}

// verify reads every provider back and checks capacity and claims.
func (r *run) verify(ctx context.Context) Verify {
	v := Verify{Providers: len(r.providers)}
	states := make([]providerState, len(r.providers))
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range r.providers {
			next <- i
		}
	}()
	r.parallel(func(w *worker) {
		for i := range next {
			states[i] = w.readProvider(ctx, r.providers[i])
		}
	})

	// actual: consumer -> provider -> class -> amount, as read back.
	actual := map[string]alloc{}
	for i, u := range r.providers {
		ps := states[i]
		if ps.err != nil {
			v.Errors++
			v.problem("reading provider %s: %v", u, ps.err)
			continue
		}
		sums := map[string]int64{}
		for c, res := range ps.allocations {
			if actual[c] == nil {
				actual[c] = alloc{}
			}
			actual[c][u] = res
			for class, n := range res {
				sums[class] += n
			}
		}
		for _, class := range sortedKeys(ps.usages) {
			used := ps.usages[class]
			if used != sums[class] {
				v.UsageMismatch++
				v.problem("provider %s %s: usage %d, allocations sum to %d", u, class, used, sums[class])
			}
			inv, ok := ps.inventories[class]
			if used == 0 {
				continue
			}
			if !ok {
				v.OverCapacity++
				v.problem("provider %s: %d %s used without inventory", u, used, class)
				continue
			}
			if capacity := int64(float64(inv.Total-inv.Reserved) * inv.AllocationRatio); used > capacity {
				v.OverCapacity++
				v.problem("provider %s %s: usage %d over capacity %d", u, class, used, capacity)
			}
		}
	}

	uncertain := map[string]bool{}
	expected := map[string]alloc{}
	deleted := map[string]bool{}
	for _, w := range r.workers {
		for c := range w.uncertain {
			uncertain[c] = true
		}
		for _, c := range w.consumers {
			if c.deleted {
				deleted[c.uuid] = true
			} else {
				expected[c.uuid] = c.alloc
			}
		}
	}
	v.Claims, v.Deleted = len(expected), len(deleted)
	for c, want := range expected {
		got, present := actual[c]
		switch {
		case !present && uncertain[c]:
			v.Uncertain++
		case !present:
			v.Missing++
			v.problem("consumer %s: counted as created, has no allocations", c)
		case !sameAlloc(got, want):
			v.Wrong++
			v.problem("consumer %s: holds %v, claimed %v", c, got, want)
		}
	}
	for c := range actual {
		if _, ok := expected[c]; ok {
			continue
		}
		if uncertain[c] {
			v.Uncertain++
			continue
		}
		v.Unexpected++
		if deleted[c] {
			v.problem("consumer %s: deleted, still has allocations", c)
		} else {
			v.problem("consumer %s: has allocations the run never counted", c)
		}
	}
	v.OK = v.Missing == 0 && v.Wrong == 0 && v.Unexpected == 0 && v.OverCapacity == 0 &&
		v.UsageMismatch == 0 && v.Errors == 0
	return v
}

func sameAlloc(a, b alloc) bool {
	if len(a) != len(b) {
		return false
	}
	for rp, ra := range a {
		rb, ok := b[rp]
		if !ok || len(ra) != len(rb) {
			return false
		}
		for class, n := range ra {
			if m, ok := rb[class]; !ok || m != n {
				return false
			}
		}
	}
	return true
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
