package main

import "testing"

func TestGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		live, floor uint64
		want        int
	}{
		{0, 256 * mib, 2000},
		{1 * mib, 256 * mib, 2000},   // tiny heap: bounded
		{20 * mib, 256 * mib, 1250},  // 20 MiB may grow by 256 MiB
		{128 * mib, 256 * mib, 200},  // twice the floor ratio
		{256 * mib, 256 * mib, 100},  // at the floor: Go's default
		{1024 * mib, 256 * mib, 100}, // large states: default bound
		{100 * mib, 256 * mib, 250},  // 256%, in steps of 50
	} {
		if got := gcPercent(c.live, c.floor); got != c.want {
			t.Errorf("gcPercent(%d MiB, %d MiB) = %d, want %d", c.live/mib, c.floor/mib, got, c.want)
		}
	}
}
