package state

import (
	"slices"
	"testing"
	"time"
)

// SortByClassID orders by class id, stably (unknown classes, id -1,
// first, in the order given), for a provider's few classes and for longer
// lists alike.
func TestSortByClassID(t *testing.T) {
	s := New()
	for _, c := range []string{"CUSTOM_B", "CUSTOM_A"} {
		if _, err := (&CreateResourceClass{Name: c}).Apply(s, Meta{Time: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	got := []string{"CUSTOM_A", "DISK_GB", "CUSTOM_NONE", "VCPU", "CUSTOM_B", "MEMORY_MB", "CUSTOM_GONE"}
	s.SortByClassID(got)
	want := []string{"CUSTOM_NONE", "CUSTOM_GONE", "VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_B", "CUSTOM_A"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	long := append(slices.Clone(StandardResourceClasses[:12]), "CUSTOM_X")
	slices.Reverse(long)
	s.SortByClassID(long)
	if want := append([]string{"CUSTOM_X"}, StandardResourceClasses[:12]...); !slices.Equal(long, want) {
		t.Errorf("got %v, want %v", long, want)
	}
}
