package cluster

import (
	"bytes"
	"testing"

	"github.com/hashicorp/raft"
)

// The cache answers what the store holds, keeps small entries only, and
// never answers with an entry a later write or a truncation replaced.
func TestLogCache(t *testing.T) {
	store := raft.NewInmemStore()
	c := newLogCache(4, 8, store)
	entry := func(i uint64, data string) *raft.Log {
		return &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte(data)}
	}
	check := func(i uint64, want string) {
		t.Helper()
		var got raft.Log
		if err := c.GetLog(i, &got); err != nil {
			t.Fatalf("GetLog(%d): %v", i, err)
		}
		if got.Index != i || !bytes.Equal(got.Data, []byte(want)) {
			t.Fatalf("GetLog(%d) = %d %q, want %q", i, got.Index, got.Data, want)
		}
	}
	cached := func(i uint64) bool {
		l := c.cache[i%uint64(len(c.cache))]
		return l != nil && l.Index == i
	}
	if err := c.StoreLogs([]*raft.Log{entry(1, "small"), entry(2, "much too large"), entry(3, "s3")}); err != nil {
		t.Fatal(err)
	}
	check(1, "small")
	check(2, "much too large")
	check(3, "s3")
	if !cached(1) || cached(2) || !cached(3) {
		t.Errorf("cached 1 %v 2 %v 3 %v: want only the small entries", cached(1), cached(2), cached(3))
	}
	// A follower's conflicting tail is deleted, then rewritten larger.
	if err := c.DeleteRange(3, 3); err != nil {
		t.Fatal(err)
	}
	if cached(1) || cached(3) {
		t.Error("DeleteRange left entries in the cache")
	}
	if err := c.StoreLog(entry(3, "rewritten, larger")); err != nil {
		t.Fatal(err)
	}
	check(3, "rewritten, larger")
	// A large entry landing in a slot drops what was cached there for its
	// index; older indexes in the slot are simply not matched.
	c.StoreLogs([]*raft.Log{entry(4, "s4"), entry(5, "s5"), entry(6, "s6"), entry(7, "s7")})
	c.cache[8%4] = entry(8, "stale")
	c.StoreLog(entry(8, "large entry 8"))
	check(8, "large entry 8")
	check(4, "s4")
	if first, _ := c.FirstIndex(); first != 1 {
		t.Errorf("FirstIndex = %d", first)
	}
	if last, _ := c.LastIndex(); last != 8 {
		t.Errorf("LastIndex = %d", last)
	}
}
