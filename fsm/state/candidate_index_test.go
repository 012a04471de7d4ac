package state

import (
	"fmt"
	"iter"
	"testing"
	"time"
)

func orderNames(ps iter.Seq[*Provider]) []string {
	var out []string
	for p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestProvidersInOrderFollowsCreatesAndDeletes(t *testing.T) {
	s := New()
	m := Meta{Time: time.Unix(0, 0)}
	uuid := func(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }
	for i := 0; i < 5; i++ {
		if _, err := (&CreateProvider{UUID: uuid(i), Name: fmt.Sprint("p", i)}).Apply(s, m); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string) {
		t.Helper()
		if got := fmt.Sprint(orderNames(s.ProvidersInOrder())); got != want {
			t.Fatalf("order %s, want %s", got, want)
		}
	}
	check("[p0 p1 p2 p3 p4]")
	check("[p0 p1 p2 p3 p4]") // the list the first walk kept
	var cursor []string
	c := s.ProviderCursor()
	for p := c.Next(); p != nil; p = c.Next() {
		cursor = append(cursor, p.Name)
	}
	if fmt.Sprint(cursor) != "[p0 p1 p2 p3 p4]" {
		t.Fatalf("cursor over the kept list: %v", cursor)
	}
	if _, err := (&DeleteProvider{UUID: uuid(2)}).Apply(s, m); err != nil {
		t.Fatal(err)
	}
	check("[p0 p1 p3 p4]")
	// A delete then a create keeps the count but moves NextProviderID.
	(&DeleteProvider{UUID: uuid(0)}).Apply(s, m)
	(&CreateProvider{UUID: uuid(9), Name: "p9"}).Apply(s, m)
	check("[p1 p3 p4 p9]")

	// Changing a provider keeps its place and shows the new record.
	(&UpdateProvider{UUID: uuid(3), Name: "p3b"}).Apply(s, m)
	check("[p1 p3b p4 p9]")
}

func TestTraitsInIDOrder(t *testing.T) {
	s := New()
	m := Meta{Time: time.Unix(0, 0)}
	(&CreateProvider{UUID: "00000000-0000-4000-8000-000000000001", Name: "p"}).Apply(s, m)
	p := s.Providers.Get("00000000-0000-4000-8000-000000000001")
	s.Traits = s.Traits.set("CUSTOM_B", &Trait{Name: "CUSTOM_B", Created: time.Unix(1, 0)})
	s.Traits = s.Traits.set("CUSTOM_A", &Trait{Name: "CUSTOM_A", Created: time.Unix(2, 0)})
	for _, tr := range []string{"CUSTOM_A", "HW_NUMA_ROOT", "CUSTOM_B", "COMPUTE_VOLUME_MULTI_ATTACH"} {
		p.Traits[tr] = true
	}
	// Appended after what the slice holds, which stays first.
	got := fmt.Sprint(s.AppendTraitsInIDOrder([]string{"ZZ"}, p))
	if want := "[ZZ COMPUTE_VOLUME_MULTI_ATTACH HW_NUMA_ROOT CUSTOM_B CUSTOM_A]"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}
