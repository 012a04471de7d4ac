package candidates_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/placementd/placementd/fsm/candidates"
)

// A released answer's memory goes to later searches: answers built in
// reused memory are right (the brute force's), and an answer not released
// is untouched by every search after it.
func TestReleasedMemoryIsReused(t *testing.T) {
	type kept struct {
		res  *candidates.Result
		want []string
		nm   map[string]string
	}
	var keep []kept
	nonEmpty := 0
	for seed := 0; seed < 600; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 7))
		b, names := randomForest(t, r)
		req := randomRequest(r, names, b)
		nm := b.names()
		wantC, wantS := bruteForce(b.st, req)
		want := append(renderAll(wantC, nm), renderSummaries(wantS, nm)...)
		if len(wantC) > 0 {
			nonEmpty++
		}
		rendered := func(res *candidates.Result, nm map[string]string) []string {
			return append(renderAll(res.Candidates, nm), renderSummaries(res.Summaries, nm)...)
		}
		for i := range 2 {
			res, err := candidates.Search(context.Background(), b.st, req, candidates.Options{})
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			if got := rendered(res, nm); !slices.Equal(got, want) {
				t.Fatalf("seed %d, search %d:\n%q\nwant\n%q", seed, i, got, want)
			}
			if i == 0 && seed%5 == 0 {
				keep = append(keep, kept{res, want, nm})
			} else {
				res.Release()
			}
		}
	}
	for i, k := range keep {
		if got := append(renderAll(k.res.Candidates, k.nm), renderSummaries(k.res.Summaries, k.nm)...); !slices.Equal(got, k.want) {
			t.Fatalf("kept answer %d changed under later searches:\n%q\nwant\n%q", i, got, k.want)
		}
	}
	if nonEmpty < 50 {
		t.Fatalf("only %d requests with candidates: the test proves little", nonEmpty)
	}
}
