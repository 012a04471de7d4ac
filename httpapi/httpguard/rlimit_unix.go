//go:build unix

package httpguard

import "syscall"

// fdLimit is the process's soft limit on open files (0: unknown).
func fdLimit() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur > 1<<30 {
		return 0
	}
	return int(rl.Cur)
}
