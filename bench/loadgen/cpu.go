package loadgen

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime and stime in /proc/PID/stat (USER_HZ,
// 100 on Linux everywhere in practice).
const clockTick = 10 * time.Millisecond

// treeCPU returns the CPU time (user + system) used so far by the
// processes roots and all their descendants, read from /proc: the server
// side of a run (uwsgi's workers, the MariaDB server, placementd
// nodes). ok is false where /proc cannot be read.
func treeCPU(roots []int) (cpu time.Duration, ok bool) {
	if len(roots) == 0 {
		return 0, false
	}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	type proc struct {
		ppid  int
		ticks int64
	}
	procs := map[int]proc{}
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // exited meanwhile
		}
		// pid (comm) state ppid ... utime(14) stime(15); comm may hold
		// spaces and parentheses, so split after its last ")".
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(s[:strings.IndexByte(s, '(')]))
		if err != nil {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 13 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		procs[pid] = proc{ppid: ppid, ticks: ut + st}
	}
	in := map[int]bool{}
	for _, r := range roots {
		if _, found := procs[r]; found {
			in[r] = true
			ok = true
		}
	}
	// Descendants: repeat until no process joins (trees are shallow).
	for grew := true; grew; {
		grew = false
		for pid, p := range procs {
			if !in[pid] && in[p.ppid] {
				in[pid] = true
				grew = true
			}
		}
	}
	var ticks int64
	for pid := range in {
		ticks += procs[pid].ticks
	}
	return time.Duration(ticks) * clockTick, ok
}
