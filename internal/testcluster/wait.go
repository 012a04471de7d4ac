package testcluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The first poll comes after minPoll; each wait doubles up to maxPoll, so
// a condition met quickly is seen quickly and a slow one costs little CPU
// on a loaded machine.
const (
	minPoll = time.Millisecond
	maxPoll = 25 * time.Millisecond
)

// WaitFor calls cond until it returns nil; if timeout passes first it fails
// the test with what was awaited and cond's last error.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := Poll(ctx, cond); err != nil {
		t.Fatalf("%s: not within %s: %v", what, timeout, err)
	}
}

// Poll calls cond until it returns nil or ctx is done; then it returns
// cond's last error. An error of cond made by Abort ends it at once. For
// code that cannot fail a test itself (goroutines, the waits of Procs).
func Poll(ctx context.Context, cond func() error) error {
	wait := minPoll
	for {
		err := cond()
		if err == nil {
			return nil
		}
		var a aborted
		if errors.As(err, &a) {
			return a.error
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, maxPoll)
	}
}

// Abort wraps an error that no further waiting can cure (the awaited
// node exited): Poll and WaitFor return it at once instead of waiting
// out their timeout.
func Abort(err error) error { return aborted{err} }

type aborted struct{ error }

// Check turns a condition and a description into an error for WaitFor:
// nil when ok, else an error formatted from format and args.
func Check(ok bool, format string, args ...any) error {
	if ok {
		return nil
	}
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}

// Retry calls op until it succeeds, fails with an error retryable does not
// accept (returned at once), or timeout passes (its last error returned).
// For operations that meet a load-induced election: only errors that say
// the operation did not take effect should be retryable.
func Retry(timeout time.Duration, retryable func(error) bool, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var final error
	err := Poll(ctx, func() error {
		err := op(ctx)
		if err != nil && !retryable(err) {
			final = err
			return nil
		}
		return err
	})
	if final != nil {
		return final
	}
	return err
}
