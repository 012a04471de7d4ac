package model

import (
	"fmt"
	"hash/fnv"
	"sort"
	"strings"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation of the workload.
type Kind uint8

const (
	PutAllocations    Kind = iota // PUT /allocations/{consumer}
	PostAllocations               // POST /allocations
	DeleteAllocations             // DELETE /allocations/{consumer}
	ReadConsumer                  // GET /allocations/{consumer}
	ReadUsages                    // GET /resource_providers/{provider}/usages
)

func (k Kind) String() string {
	return [...]string{"put", "post", "delete", "read-consumer", "read-usages"}[k]
}

// Amount is an amount of one class on one provider.
type Amount struct {
	Provider string
	Class    string
	Used     int64
}

// ConsumerWrite is one consumer's new allocations (none removes them
// all), with the consumer generation the client expects: nil means it
// expects no consumer (JSON null).
type ConsumerWrite struct {
	Consumer    string
	Generation  *int64
	Allocations []Amount
}

// Input is an operation as the client invoked it.
type Input struct {
	Kind  Kind
	Group int
	// Writes: one consumer for PutAllocations, one or more for
	// PostAllocations.
	Writes []ConsumerWrite
	// Consumer of DeleteAllocations and ReadConsumer.
	Consumer string
	// Provider of ReadUsages.
	Provider string
}

// Result is how an operation ended.
type Result uint8

const (
	OK                 Result = iota
	GenerationConflict        // 409 placement.concurrent_update
	CapacityConflict          // 409 for the amounts (capacity or inventory constraints)
	NotFound                  // 404 (DELETE of a consumer without allocations)
	// Unknown: no answer, or 503; the write may or may not have been
	// applied. The harness records such an operation as never returning.
	Unknown
)

func (r Result) String() string {
	return [...]string{"ok", "generation-conflict", "capacity-conflict", "not-found", "unknown"}[r]
}

// Output is what the client saw.
type Output struct {
	Result Result
	// ReadConsumer: the consumer generation (-1 when the answer shows
	// none, as for a consumer without allocations) and its allocations.
	Generation  int64
	Allocations []Amount
	// ReadUsages: the provider's non-zero usages by class.
	Usages []Amount
}

// consumer is one consumer in the model's state.
type consumer struct {
	uuid       string
	generation int64
	allocs     []Amount // sorted, one entry per provider and class
}

// State is a group's consumers, sorted by uuid. It is never modified in
// place: Step returns a new one.
type State struct {
	consumers []consumer
}

func (s State) find(uuid string) (int, bool) {
	i := sort.Search(len(s.consumers), func(i int) bool { return s.consumers[i].uuid >= uuid })
	return i, i < len(s.consumers) && s.consumers[i].uuid == uuid
}

func (s State) key() string {
	var b strings.Builder
	for _, c := range s.consumers {
		fmt.Fprintf(&b, "%s@%d[", c.uuid, c.generation)
		for _, a := range c.allocs {
			fmt.Fprintf(&b, "%s/%s=%d,", a.Provider, a.Class, a.Used)
		}
		b.WriteString("] ")
	}
	return b.String()
}

// usage is a provider class's usage in s.
func (s State) usage(provider, class string) int64 {
	var n int64
	for _, c := range s.consumers {
		for _, a := range c.allocs {
			if a.Provider == provider && a.Class == class {
				n += a.Used
			}
		}
	}
	return n
}

// Usages lists a provider's non-zero usages by class.
func (s State) Usages(provider string) []Amount {
	sum := map[string]int64{}
	for _, c := range s.consumers {
		for _, a := range c.allocs {
			if a.Provider == provider {
				sum[a.Class] += a.Used
			}
		}
	}
	return sortAmounts(provider, sum)
}

func sortAmounts(provider string, sum map[string]int64) []Amount {
	var out []Amount
	for class, n := range sum {
		if n != 0 {
			out = append(out, Amount{provider, class, n})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Class < out[j].Class })
	return out
}

// Normalize merges amounts of the same provider and class and sorts them,
// as the state keeps a consumer's allocations and the harness reports
// what it read.
func Normalize(amounts []Amount) []Amount {
	sum := map[[2]string]int64{}
	for _, a := range amounts {
		sum[[2]string{a.Provider, a.Class}] += a.Used
	}
	var out []Amount
	for k, n := range sum {
		out = append(out, Amount{k[0], k[1], n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Provider != out[j].Provider {
			return out[i].Provider < out[j].Provider
		}
		return out[i].Class < out[j].Class
	})
	return out
}

// Capacity is what may be allocated of a class on a provider.
type Capacity func(provider, class string) int64

// Apply runs in on s and returns the result and the new state (s itself
// when nothing changed), with what a read returns.
func Apply(s State, in Input, capacity Capacity) (Output, State) {
	switch in.Kind {
	case PutAllocations, PostAllocations:
		return applyWrites(s, in.Writes, capacity)
	case DeleteAllocations:
		i, ok := s.find(in.Consumer)
		if !ok || len(s.consumers[i].allocs) == 0 {
			return Output{Result: NotFound}, s
		}
		next := State{consumers: append(append([]consumer(nil), s.consumers[:i]...), s.consumers[i+1:]...)}
		return Output{Result: OK}, next
	case ReadConsumer:
		out := Output{Result: OK, Generation: -1}
		if i, ok := s.find(in.Consumer); ok && len(s.consumers[i].allocs) > 0 {
			out.Generation = s.consumers[i].generation
			out.Allocations = s.consumers[i].allocs
		}
		return out, s
	case ReadUsages:
		return Output{Result: OK, Usages: s.Usages(in.Provider)}, s
	}
	panic(fmt.Sprintf("model: unknown operation kind %d", in.Kind))
}

type slot struct{ provider, class string }

func applyWrites(s State, writes []ConsumerWrite, capacity Capacity) (Output, State) {
	// Consumer generations first, consumer by consumer.
	for _, w := range writes {
		i, exists := s.find(w.Consumer)
		if exists && (w.Generation == nil || *w.Generation != s.consumers[i].generation) ||
			!exists && w.Generation != nil {
			return Output{Result: GenerationConflict}, s
		}
	}
	// Then capacity: the usage of the other consumers plus everything
	// the request asks of a slot must fit, unless the request leaves an
	// over-committed slot no worse than it was.
	removed, added := map[slot]int64{}, map[slot]int64{}
	for _, w := range writes {
		if i, ok := s.find(w.Consumer); ok {
			for _, a := range s.consumers[i].allocs {
				removed[slot{a.Provider, a.Class}] += a.Used
			}
		}
		for _, a := range w.Allocations {
			added[slot{a.Provider, a.Class}] += a.Used
		}
	}
	for k, asked := range added {
		if asked == 0 {
			continue
		}
		prev := s.usage(k.provider, k.class)
		others := prev - removed[k]
		if others+asked > capacity(k.provider, k.class) && !(prev > 0 && others+asked <= prev) {
			return Output{Result: CapacityConflict}, s
		}
	}
	next := State{consumers: append([]consumer(nil), s.consumers...)}
	for _, w := range writes {
		i, exists := next.find(w.Consumer)
		c := consumer{uuid: w.Consumer}
		var old []Amount
		if exists {
			c = next.consumers[i]
			old = c.allocs
		}
		c.allocs = Normalize(w.Allocations)
		if len(w.Allocations) > 0 || len(old) > 0 {
			c.generation++
			if len(c.allocs) == 0 {
				next.consumers = append(next.consumers[:i:i], next.consumers[i+1:]...)
				continue
			}
		}
		// (A new consumer given no allocations is kept without any, at
		// generation 0, as fsm/state and upstream do.)
		if exists {
			next.consumers[i] = c
		} else {
			next.consumers = append(next.consumers[:i:i], append([]consumer{c}, next.consumers[i:]...)...)
		}
	}
	return Output{Result: OK}, next
}

// Equal reports whether two outputs say the same.
func (o Output) Equal(p Output) bool {
	if o.Result != p.Result || o.Generation != p.Generation || len(o.Allocations) != len(p.Allocations) || len(o.Usages) != len(p.Usages) {
		return false
	}
	for i := range o.Allocations {
		if o.Allocations[i] != p.Allocations[i] {
			return false
		}
	}
	for i := range o.Usages {
		if o.Usages[i] != p.Usages[i] {
			return false
		}
	}
	return true
}

// Model returns the porcupine model of a workload over providers with the
// given capacities (fixed for the run).
func Model(capacity Capacity) porcupine.Model {
	return porcupine.Model{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byGroup := map[int][]porcupine.Operation{}
			var groups []int
			for _, op := range history {
				g := op.Input.(Input).Group
				if _, seen := byGroup[g]; !seen {
					groups = append(groups, g)
				}
				byGroup[g] = append(byGroup[g], op)
			}
			sort.Ints(groups)
			out := make([][]porcupine.Operation, 0, len(groups))
			for _, g := range groups {
				out = append(out, byGroup[g])
			}
			return out
		},
		Init: func() interface{} { return State{} },
		Step: func(st, in, out interface{}) (bool, interface{}) {
			s, input, output := st.(State), in.(Input), out.(Output)
			want, next := Apply(s, input, capacity)
			if output.Result == Unknown {
				// Linearized here, it took effect here; one that never
				// took effect is linearized after everything else.
				return true, next
			}
			return want.Equal(output), next
		},
		Equal: func(a, b interface{}) bool { return a.(State).key() == b.(State).key() },
		Hash: func(st interface{}) uint64 {
			h := fnv.New64a()
			h.Write([]byte(st.(State).key()))
			return h.Sum64()
		},
		DescribeOperation: func(in, out interface{}) string {
			return Describe(in.(Input), out.(Output))
		},
		DescribeState: func(st interface{}) string { return st.(State).key() },
	}
}

// Describe renders an operation for reports and visualisations.
func Describe(in Input, out Output) string {
	var b strings.Builder
	b.WriteString(in.Kind.String())
	switch in.Kind {
	case PutAllocations, PostAllocations:
		for _, w := range in.Writes {
			gen := "null"
			if w.Generation != nil {
				gen = fmt.Sprint(*w.Generation)
			}
			fmt.Fprintf(&b, " %s@%s%v", short(w.Consumer), gen, shortAmounts(w.Allocations))
		}
	case DeleteAllocations, ReadConsumer:
		fmt.Fprintf(&b, " %s", short(in.Consumer))
	case ReadUsages:
		fmt.Fprintf(&b, " %s", short(in.Provider))
	}
	fmt.Fprintf(&b, " -> %s", out.Result)
	switch {
	case in.Kind == ReadConsumer && out.Result == OK:
		fmt.Fprintf(&b, " gen %d %v", out.Generation, shortAmounts(out.Allocations))
	case in.Kind == ReadUsages && out.Result == OK:
		fmt.Fprintf(&b, " %v", shortAmounts(out.Usages))
	}
	return b.String()
}

func short(uuid string) string {
	if len(uuid) > 8 {
		return uuid[:8]
	}
	return uuid
}

func shortAmounts(as []Amount) []string {
	out := make([]string, len(as))
	for i, a := range as {
		out[i] = fmt.Sprintf("%s/%s=%d", short(a.Provider), a.Class, a.Used)
	}
	return out
}
