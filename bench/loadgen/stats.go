package loadgen

import (
	"math"
	"sort"
	"time"
)

// recorder collects request latencies by kind. Each worker owns one (no
// locking); a phase merges them at its end.
type recorder struct {
	lat map[string][]time.Duration
}

func newRecorder() *recorder { return &recorder{lat: map[string][]time.Duration{}} }

func (r *recorder) add(kind string, d time.Duration) { r.lat[kind] = append(r.lat[kind], d) }

func (r *recorder) merge(o *recorder) {
	for k, v := range o.lat {
		r.lat[k] = append(r.lat[k], v...)
	}
}

// Latency summarises one kind of request, in milliseconds.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

func summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(p float64) float64 {
		// Nearest rank: the smallest value with at least p of them at or
		// below it.
		i := int(math.Ceil(p*float64(len(s)))) - 1
		i = max(0, min(i, len(s)-1))
		return ms(s[i])
	}
	return Latency{Count: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(s[len(s)-1])}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }

// Phase is the outcome of one phase of the workload.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
	// Ops counts completed operations: claims made (scheduler), PUTs and
	// POSTs accepted, usage queries answered, consumers deleted.
	Ops    int     `json:"ops"`
	PerSec float64 `json:"per_sec"`
	// Conflicts counts 409 answers; Retries the extra attempts they
	// caused (another candidate, or a new candidates query); Failures the
	// operations given up after their retries; Errors the unexpected
	// answers and transport failures.
	Conflicts int                `json:"conflicts"`
	Retries   int                `json:"retries"`
	Failures  int                `json:"failures"`
	Errors    int                `json:"errors"`
	Latency   map[string]Latency `json:"latency"`
	// ServerCPU is the CPU time (s) the server's processes used during
	// the phase, when their PIDs were given: on a shared machine it
	// measures cost better than throughput does.
	ServerCPU float64 `json:"server_cpu_s,omitempty"`
	// FirstError shows one unexpected answer, to tell what went wrong.
	FirstError string `json:"first_error,omitempty"`
	// Answer is how many candidates an answer of the gate phase held.
	Answer int `json:"answer_candidates,omitempty"`
	// Claims is how many allocations the gate phase claimed before it
	// measured (GateClaims, fewer when the fleet is full); its Ops count
	// only the measured queries.
	Claims int `json:"claims,omitempty"`
}

// counts is what a worker tallies during a phase.
type counts struct {
	ops, conflicts, retries, failures, errors int
	firstError                                string
	answer                                    int
}

func (c *counts) add(o counts) {
	c.ops += o.ops
	c.conflicts += o.conflicts
	c.retries += o.retries
	c.failures += o.failures
	c.errors += o.errors
	if c.firstError == "" {
		c.firstError = o.firstError
	}
}

func (c *counts) fail(msg string) {
	c.errors++
	if c.firstError == "" {
		c.firstError = msg
	}
}

func makePhase(name string, elapsed time.Duration, c counts, rec *recorder) Phase {
	p := Phase{
		Name: name, Seconds: elapsed.Seconds(), Ops: c.ops,
		Conflicts: c.conflicts, Retries: c.retries, Failures: c.failures, Errors: c.errors,
		FirstError: c.firstError, Latency: map[string]Latency{}, Answer: c.answer,
	}
	if elapsed > 0 {
		p.PerSec = float64(c.ops) / elapsed.Seconds()
	}
	for k, v := range rec.lat {
		p.Latency[k] = summarize(v)
	}
	return p
}
