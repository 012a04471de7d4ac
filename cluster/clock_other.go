//go:build !linux

package cluster

import "time"

var clockStart = time.Now()

// sinceBoot falls back to Go's monotonic clock where CLOCK_BOOTTIME does
// not exist; it may not count while the machine is suspended.
func sinceBoot() time.Duration { return time.Since(clockStart) }
