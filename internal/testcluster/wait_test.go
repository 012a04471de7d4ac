package testcluster

import (
	"context"
	"errors"
	"testing"
	"time"
)

// An error made by Abort ends Poll at once with that error; any other
// keeps it polling until its context ends.
func TestPollAbort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	gone := errors.New("the node exited")
	calls := 0
	start := time.Now()
	err := Poll(ctx, func() error {
		calls++
		if calls < 3 {
			return errors.New("not yet")
		}
		return Abort(gone)
	})
	if err != gone || calls != 3 || time.Since(start) > 5*time.Second {
		t.Fatalf("Poll: %v after %d calls and %s, want %v after 3", err, calls, time.Since(start), gone)
	}
}
