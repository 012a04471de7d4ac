package loadgen

import (
	"fmt"
	"io"
	"strings"
)

// row is one line of the comparison table: how to read the value from a
// report, and whether more is better (throughput) or worse (latency).
type row struct {
	name  string
	ratio ratioKind
	get   func(r *Report) (float64, bool)
}

type ratioKind int

const (
	higherBetter ratioKind = iota // throughput: value / baseline
	lowerBetter                   // latency, cost: baseline / value
	noRatio                       // counts
)

func rate(phase string) func(r *Report) (float64, bool) {
	return func(r *Report) (float64, bool) {
		p := r.Phase(phase)
		if p == nil {
			return 0, false
		}
		return p.PerSec, true
	}
}

func latency(phase, kind string, pct func(Latency) float64) func(r *Report) (float64, bool) {
	return func(r *Report) (float64, bool) {
		var p *Phase
		if phase == "setup" {
			p = &r.Setup
		} else {
			p = r.Phase(phase)
		}
		if p == nil {
			return 0, false
		}
		l, ok := p.Latency[kind]
		if !ok || l.Count == 0 {
			return 0, false
		}
		return pct(l), true
	}
}

func count(phase string, field func(*Phase) int) func(r *Report) (float64, bool) {
	return func(r *Report) (float64, bool) {
		p := r.Phase(phase)
		if p == nil {
			return 0, false
		}
		return float64(field(p)), true
	}
}

// cpuPerOp is the server's CPU milliseconds per operation of a phase.
func cpuPerOp(phase string) func(r *Report) (float64, bool) {
	return func(r *Report) (float64, bool) {
		p := r.Phase(phase)
		if p == nil || p.ServerCPU == 0 || p.Ops == 0 {
			return 0, false
		}
		return p.ServerCPU * 1000 / float64(p.Ops), true
	}
}

func p50(l Latency) float64 { return l.P50 }
func p99(l Latency) float64 { return l.P99 }

var tableRows = []row{
	{"setup requests/s", higherBetter, func(r *Report) (float64, bool) { return r.Setup.PerSec, r.Setup.Ops > 0 }},
	{"scheduler claims/s", higherBetter, rate(PhaseScheduler)},
	{"  candidates GET p50 ms", lowerBetter, latency(PhaseScheduler, KindCandidates, p50)},
	{"  candidates GET p99 ms", lowerBetter, latency(PhaseScheduler, KindCandidates, p99)},
	{"  claim PUT p50 ms", lowerBetter, latency(PhaseScheduler, KindClaimPut, p50)},
	{"  claim PUT p99 ms", lowerBetter, latency(PhaseScheduler, KindClaimPut, p99)},
	{"  whole claim p99 ms", lowerBetter, latency(PhaseScheduler, KindClaim, p99)},
	{"  conflicts (409)", noRatio, count(PhaseScheduler, func(p *Phase) int { return p.Conflicts })},
	{"  retries", noRatio, count(PhaseScheduler, func(p *Phase) int { return p.Retries })},
	{"  no candidate left", noRatio, count(PhaseScheduler, func(p *Phase) int { return p.Failures })},
	{"  server CPU ms per claim", lowerBetter, cpuPerOp(PhaseScheduler)},
	{"raw PUT /allocations/s", higherBetter, rate(PhasePut)},
	{"  PUT p50 ms", lowerBetter, latency(PhasePut, KindPut, p50)},
	{"  PUT p99 ms", lowerBetter, latency(PhasePut, KindPut, p99)},
	{"  server CPU ms per PUT", lowerBetter, cpuPerOp(PhasePut)},
	{"paced PUT /allocations/s (offered rate)", higherBetter, rate(PhasePutPaced)},
	{"  paced PUT p50 ms", lowerBetter, latency(PhasePutPaced, KindPutPaced, p50)},
	{"  paced PUT p99 ms", lowerBetter, latency(PhasePutPaced, KindPutPaced, p99)},
	{"POST /allocations/s (2 consumers)", higherBetter, rate(PhasePost)},
	{"  POST p99 ms", lowerBetter, latency(PhasePost, KindPost, p99)},
	{"usages GETs/s", higherBetter, rate(PhaseUsages)},
	{"  provider usages p99 ms", lowerBetter, latency(PhaseUsages, KindRPUsages, p99)},
	{"  project usages p99 ms", lowerBetter, latency(PhaseUsages, KindUsages, p99)},
	{"DELETE /allocations/s", higherBetter, rate(PhaseDelete)},
	{"  DELETE p99 ms", lowerBetter, latency(PhaseDelete, KindDelete, p99)},
	{"upstream's gate (ab -c 10 -n 500) GETs/s", higherBetter, rate(PhaseGate)},
	{"  gate GET p50 ms", lowerBetter, latency(PhaseGate, KindGate, p50)},
	{"  gate GET p99 ms", lowerBetter, latency(PhaseGate, KindGate, p99)},
	{"  candidates per answer", noRatio, func(r *Report) (float64, bool) {
		p := r.Phase(PhaseGate)
		return float64(answerOf(p)), p != nil
	}},
	{"  server CPU ms per gate GET", lowerBetter, cpuPerOp(PhaseGate)},
	{"the gate, a new connection per GET (ab without -k) GETs/s", higherBetter, rate(PhaseGateNewConn)},
	{"  gate GET p50 ms", lowerBetter, latency(PhaseGateNewConn, KindGate, p50)},
	{"  gate GET p99 ms", lowerBetter, latency(PhaseGateNewConn, KindGate, p99)},
	{"  server CPU ms per gate GET", lowerBetter, cpuPerOp(PhaseGateNewConn)},
}

func answerOf(p *Phase) int {
	if p == nil {
		return 0
	}
	return p.Answer
}

// Table prints the reports side by side; every report after the first
// also gets its ratio to the first (higher is better for placementd:
// throughput divided by the baseline's, baseline latency divided by its
// own). Counts (conflicts, retries) get no ratio.
func Table(w io.Writer, reports []*Report) {
	if len(reports) == 0 {
		return
	}
	base := reports[0]
	header := []string{"metric"}
	for i, r := range reports {
		header = append(header, r.Label)
		if i > 0 {
			header = append(header, "ratio")
		}
	}
	lines := [][]string{header}
	for _, rw := range tableRows {
		line := []string{rw.name}
		bv, bok := rw.get(base)
		isCount := rw.ratio == noRatio
		for i, r := range reports {
			v, ok := rw.get(r)
			if isCount && ok {
				line = append(line, fmt.Sprintf("%.0f", v))
			} else {
				line = append(line, format(v, ok))
			}
			if i == 0 {
				continue
			}
			switch {
			case isCount || !ok || !bok || v == 0 || bv == 0:
				line = append(line, "")
			case rw.ratio == higherBetter:
				line = append(line, fmt.Sprintf("%.1f×", v/bv))
			default:
				line = append(line, fmt.Sprintf("%.1f×", bv/v))
			}
		}
		lines = append(lines, line)
	}
	errs := []string{"errors"}
	ver := []string{"verification"}
	for i, r := range reports {
		n := r.Setup.Errors
		for _, p := range r.Phases {
			n += p.Errors
		}
		errs = append(errs, fmt.Sprint(n))
		status := "OK"
		if !r.Verify.OK {
			status = "FAILED"
		}
		ver = append(ver, fmt.Sprintf("%s (%d claims)", status, r.Verify.Claims))
		if i > 0 {
			errs = append(errs, "")
			ver = append(ver, "")
		}
	}
	lines = append(lines, errs, ver)

	widths := make([]int, len(header))
	for _, l := range lines {
		for i, c := range l {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, l := range lines {
		var b strings.Builder
		for i, c := range l {
			pad := widths[i] - len([]rune(c))
			if i == 0 {
				b.WriteString(c + strings.Repeat(" ", pad))
			} else {
				b.WriteString("  " + strings.Repeat(" ", pad) + c)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

func format(v float64, ok bool) string {
	switch {
	case !ok:
		return "-"
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}
