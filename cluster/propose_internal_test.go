package cluster

import (
	"slices"
	"testing"
)

// take cuts the queue into groups within the command and byte limits,
// and sends an entry too big to batch alone.
func TestTakeRespectsGroupLimits(t *testing.T) {
	for name, tc := range map[string]struct {
		sizes []int
		want  []int // group lengths
	}{
		"small ones":        {sizes: repeat(100, 150), want: []int{maxGroupCommands, maxGroupCommands, 150 - 2*maxGroupCommands}},
		"big one alone":     {sizes: []int{10, 10, maxBatchedEntry + 1, 10}, want: []int{2, 1, 1}},
		"big one first":     {sizes: []int{maxBatchedEntry + 1, 10, 10}, want: []int{1, 2}},
		"bytes limit":       {sizes: repeat(maxBatchedEntry, 40), want: []int{16, 16, 8}},
		"one":               {sizes: []int{5}, want: []int{1}},
		"exactly the limit": {sizes: []int{maxBatchedEntry, maxBatchedEntry}, want: []int{2}},
	} {
		t.Run(name, func(t *testing.T) {
			var p proposer
			for _, size := range tc.sizes {
				p.queue = append(p.queue, &proposal{data: make([]byte, size)})
			}
			var got []int
			taken := 0
			for len(p.queue) > 0 {
				group := p.take()
				for i, prop := range group {
					if len(prop.data) != tc.sizes[taken+i] {
						t.Fatalf("group %d holds commands out of order", len(got))
					}
				}
				taken += len(group)
				got = append(got, len(group))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("groups %v, want %v", got, tc.want)
			}
		})
	}
}

func repeat(size, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = size
	}
	return out
}
