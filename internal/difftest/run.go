package difftest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Runner replays request sequences against fresh pairs of servers.
type Runner struct {
	Bin      string // the placementd binary
	Work     string // a directory for the servers' data
	upstream *Upstream
	runs     int
	// Log, when set, hears about progress.
	Log io.Writer
}

// NewRunner starts upstream's forking process. It runs a copy of bin, so
// that a rebuild meanwhile does not change the placementd under test.
func NewRunner(bin, work string) (*Runner, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	copied := filepath.Join(work, "placementd")
	if err := os.WriteFile(copied, data, 0o755); err != nil {
		return nil, err
	}
	u, err := StartUpstream(work)
	if err != nil {
		return nil, err
	}
	return &Runner{Bin: copied, Work: work, upstream: u}, nil
}

// Close stops every server.
func (r *Runner) Close() { r.upstream.Close() }

func (r *Runner) logf(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, format+"\n", args...)
	}
}

// pair is a fresh upstream and a fresh placementd.
type pair struct{ up, pd *session }

func (r *Runner) start() (*pair, error) {
	r.runs++
	dir := filepath.Join(r.Work, fmt.Sprintf("run%d", r.runs))
	upDir, pdDir := filepath.Join(dir, "upstream"), filepath.Join(dir, "placementd")
	for _, d := range []string{upDir, pdDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	var up, pd *Target
	var upErr, pdErr error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); up, upErr = r.upstream.New(upDir) }()
	go func() { defer wg.Done(); pd, pdErr = StartPlacementd(r.Bin, pdDir) }()
	wg.Wait()
	if upErr != nil || pdErr != nil {
		if up != nil {
			up.Stop()
		}
		if pd != nil {
			pd.Stop()
		}
		return nil, fmt.Errorf("starting servers: %v %v", upErr, pdErr)
	}
	p := &pair{
		up: &session{target: up, generated: map[string]string{}, named: map[string]bool{}},
		pd: &session{target: pd, generated: map[string]string{}, named: map[string]bool{}},
	}
	if err := p.noteNewerTraits(); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

// noteNewerTraits finds the standard traits placementd knows and upstream
// does not (a newer os-traits), on the fresh servers.
func (p *pair) noteNewerTraits() error {
	names := func(se *session) (map[string]bool, error) {
		resp, err := send(se.target.Addr, "GET", "/traits", adminRead, nil)
		if err != nil {
			return nil, err
		}
		var body struct{ Traits []string }
		if resp.Status != http.StatusOK || json.Unmarshal(resp.Body, &body) != nil {
			return nil, fmt.Errorf("%s: GET /traits: %d %s", se.target.Name, resp.Status, resp.Body)
		}
		out := map[string]bool{}
		for _, t := range body.Traits {
			out[t] = true
		}
		return out, nil
	}
	up, err := names(p.up)
	if err != nil {
		return err
	}
	pd, err := names(p.pd)
	if err != nil {
		return err
	}
	p.pd.newerTraits = map[string]bool{}
	for t := range pd {
		if !up[t] {
			p.pd.newerTraits[t] = true
		}
	}
	return nil
}

func (p *pair) stop() {
	p.up.target.Stop()
	p.pd.target.Stop()
	// A run's data is only needed while it runs.
	os.RemoveAll(filepath.Dir(p.up.target.Dir))
}

// Result is what one replay of a sequence found.
type Result struct {
	Divergences []*Divergence
	// UpstreamLeaks counts the consumers and consumer types upstream kept
	// from allocation writes it refused, which the test removed.
	UpstreamLeaks int
	// UpstreamStatus is upstream's status for each step (0 if not sent).
	UpstreamStatus []int
}

// Replay sends reqs in order to a fresh pair of servers and compares every
// answer. With stopAtFirst it stops at the first divergence.
func (r *Runner) Replay(reqs []*Request, stopAtFirst bool) (*Result, error) {
	p, err := r.start()
	if err != nil {
		return nil, err
	}
	defer p.stop()
	res := &Result{UpstreamStatus: make([]int, len(reqs))}
	for i, req := range reqs {
		var up, pd *Response
		var upErr, pdErr error
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); up, upErr = p.up.do(req) }()
		go func() { defer wg.Done(); pd, pdErr = p.pd.do(req) }()
		wg.Wait()
		if upErr != nil || pdErr != nil {
			return res, fmt.Errorf("step %d (%s %s): upstream: %v; placementd: %v\nupstream log:\n%s\nplacementd log:\n%s",
				i, req.Method, req.Path, upErr, pdErr, p.up.target.LogTail(3000), p.pd.target.LogTail(3000))
		}
		res.UpstreamStatus[i] = up.Status
		res.UpstreamLeaks = p.up.leaks
		if d := compare(req, up, pd, p.up, p.pd); d != nil {
			d.Step = i
			res.Divergences = append(res.Divergences, d)
			if stopAtFirst {
				return res, nil
			}
		}
	}
	return res, nil
}

// reproduces reports whether reqs end with a divergence of signature sig.
func (r *Runner) reproduces(reqs []*Request, sig string) (bool, error) {
	res, err := r.Replay(reqs, false)
	if err != nil {
		return false, err
	}
	for _, d := range res.Divergences {
		if d.Step == len(reqs)-1 && d.Signature() == sig {
			return true, nil
		}
	}
	return false, nil
}

// Shrink reduces the sequence that led to d to a short one that still
// ends with a divergence of the same signature: first every step before
// it that upstream answered with an error or that only reads, then
// chunks of the rest (delta debugging), within budget.
func (r *Runner) Shrink(reqs []*Request, res *Result, d *Divergence, budget time.Duration) ([]*Request, error) {
	deadline := time.Now().Add(budget)
	sig := d.Signature()
	cur := append([]*Request(nil), reqs[:d.Step+1]...)
	var writes []*Request
	for i, q := range reqs[:d.Step] {
		if q.Method != "GET" && q.Method != "HEAD" && res.UpstreamStatus[i] < 300 {
			writes = append(writes, q)
		}
	}
	writes = append(writes, reqs[d.Step])
	if len(writes) < len(cur) {
		ok, err := r.reproduces(writes, sig)
		if err != nil {
			return cur, err
		}
		if ok {
			cur = writes
		}
	}
	for chunk := len(cur) / 2; chunk >= 1; chunk /= 2 {
		for start := 0; start+chunk < len(cur) && time.Now().Before(deadline); {
			cand := append(append([]*Request(nil), cur[:start]...), cur[start+chunk:]...)
			ok, err := r.reproduces(cand, sig)
			if err != nil {
				return cur, err
			}
			if ok {
				cur = cand
				r.logf("  shrunk to %d steps", len(cur))
			} else {
				start += chunk
			}
		}
	}
	return cur, nil
}

// Report runs a seed's sequence, groups its divergences by signature and
// shrinks the first of each group (at most maxShrink of them), writing a
// report to w. It returns the number of divergent steps.
func (r *Runner) Report(w io.Writer, seed int64, steps int, maxShrink int, shrinkBudget time.Duration) (int, error) {
	reqs := Generate(seed, steps)
	start := time.Now()
	res, err := r.Replay(reqs, false)
	if err != nil {
		return 0, err
	}
	var divergent, deliberate []*Divergence
	for _, d := range res.Divergences {
		if d.Deliberate {
			deliberate = append(deliberate, d)
		} else {
			divergent = append(divergent, d)
		}
	}
	fmt.Fprintf(w, "seed %d: %d steps in %s, %d divergent, %d deliberate differences (docs/api-compat.md)\n",
		seed, len(reqs), time.Since(start).Round(time.Millisecond), len(divergent), len(deliberate))
	if res.UpstreamLeaks > 0 {
		fmt.Fprintf(w, "  deliberate: %d consumers or consumer types that upstream kept from refused allocation writes, removed\n", res.UpstreamLeaks)
	}
	for _, d := range deliberate {
		fmt.Fprintf(w, "  deliberate, step %d: %s: %s\n", d.Step, d.Signature(), truncate(d.Detail, 300))
	}
	groups := map[string][]*Divergence{}
	var sigs []string
	for _, d := range divergent {
		s := d.Signature()
		if groups[s] == nil {
			sigs = append(sigs, s)
		}
		groups[s] = append(groups[s], d)
	}
	sort.SliceStable(sigs, func(i, j int) bool { return groups[sigs[i]][0].Step < groups[sigs[j]][0].Step })
	for i, s := range sigs {
		ds := groups[s]
		fmt.Fprintf(w, "\n== %s (%d steps, first at step %d)\n%s\n", s, len(ds), ds[0].Step, ds[0].Detail)
		if i >= maxShrink {
			continue
		}
		short, err := r.Shrink(reqs, res, ds[0], shrinkBudget)
		if err != nil {
			return len(divergent), err
		}
		last, err := r.Replay(short, false)
		if err != nil {
			return len(divergent), err
		}
		fmt.Fprintf(w, "minimal reproduction (%d requests, then compare the last answer; {{...}} placeholders are each target's own values, see request.go):\n", len(short))
		for j, q := range short {
			fmt.Fprintf(w, "  %d. %s\n", j+1, indent(q.String()))
		}
		for _, d := range last.Divergences {
			if d.Step == len(short)-1 {
				fmt.Fprintf(w, "  upstream:\n    %s\n  placementd:\n    %s\n", indent(d.Upstream), indent(d.Placementd))
				break
			}
		}
	}
	return len(divergent), nil
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n  ") }
