package httpguard

import (
	"context"
	"testing"
	"time"
)

// Admission by weight: what fits goes at once, what does not is refused
// after the wait (no request is ever let past the capacity), a weight over
// the capacity runs alone, and a release lets a waiting request in.
func TestAdmissionWeights(t *testing.T) {
	ctx := context.Background()
	a := NewAdmission(100, time.Millisecond)
	r1, ok := a.Acquire(ctx, 60)
	if !ok {
		t.Fatal("60 of 100 refused")
	}
	if _, ok := a.Acquire(ctx, 50); ok {
		t.Fatal("60+50 of 100 admitted")
	}
	r2, ok := a.Acquire(ctx, 40)
	if !ok {
		t.Fatal("60+40 of 100 refused")
	}
	r1()
	r1() // a second release gives nothing back twice
	if got := a.InUse(); got != 40 {
		t.Fatalf("in use after a release: %d, want 40", got)
	}
	r2()
	big, ok := a.Acquire(ctx, 1000)
	if !ok || a.InUse() != 100 {
		t.Fatalf("a request over the capacity: ok %v, in use %d; want it alone, counted as the whole", ok, a.InUse())
	}
	// One waiting (with a wait long enough never to pass here) gets in
	// once the big one is released.
	waiting := NewAdmission(100, time.Hour)
	hold, _ := waiting.Acquire(ctx, 100)
	got := make(chan bool)
	go func() {
		_, ok := waiting.Acquire(ctx, 10)
		got <- ok
	}()
	hold()
	if !<-got {
		t.Fatal("a waiting request was refused after a release")
	}
	big()
	// A cancelled request stops waiting.
	cctx, cancel := context.WithCancel(ctx)
	full, _ := waiting.Acquire(ctx, 90)
	defer full()
	cancel()
	if _, ok := waiting.Acquire(cctx, 20); ok {
		t.Fatal("admitted past the capacity")
	}
	if _, ok := NewAdmission(-1, 0).Acquire(ctx, 1<<40); !ok {
		t.Fatal("no bound refused")
	}
}
