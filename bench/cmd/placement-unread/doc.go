// Command placement-unread measures what clients that never read their
// allocation-candidates answers cost a running placementd (issue 35's
// N4): it creates -trees provider trees (a root with -children children
// of VCPU each), then opens -clients connections that each send one
// GET /allocation_candidates for -groups VCPU groups (group_policy none:
// 10,000 candidates at the default max_allocation_candidates, about 11 MB
// of answer for six groups) with
// a small receive buffer, and never read. It samples the server's RSS
// from /proc/<-pid> every 50 ms for -hold, then closes the connections
// and times an ordinary GET. Start the server fresh for each run (VmHWM
// never goes down):
//
//	placementd serve --http-addr 127.0.0.1:18778 --raft-addr 127.0.0.1:0 --data-dir /tmp/unread &
//	go run ./bench/cmd/placement-unread -url http://127.0.0.1:18778 -pid $!
//
// It imports nothing of placementd and must not: it measures a running
// server over HTTP and /proc only.
package main
