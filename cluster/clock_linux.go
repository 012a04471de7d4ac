package cluster

import (
	"time"

	"golang.org/x/sys/unix"
)

// sinceBoot reads CLOCK_BOOTTIME: monotonic like Go's clock
// (CLOCK_MONOTONIC), and also counting while the machine is suspended, so
// that no pause of any kind (the process stopped, the machine suspended)
// makes the age of a confirmation look smaller than it is.
func sinceBoot() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic("cluster: CLOCK_BOOTTIME: " + err.Error())
	}
	return time.Duration(ts.Nano())
}
