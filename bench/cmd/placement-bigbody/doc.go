// Command placement-bigbody measures what large invalid request bodies
// cost a running placementd: it sends -clients concurrent PUT
// /allocations/{uuid} requests with -mb MiB bodies of one -kind, and reads
// the server's peak RSS (VmHWM) and CPU time from /proc/<-pid> before and
// after. Start the server fresh for each run: VmHWM never goes down.
//
//	placementd serve --http-addr 127.0.0.1:18778 --raft-addr 127.0.0.1:0 --data-dir /tmp/bb &
//	go run ./bench/cmd/placement-bigbody -url http://127.0.0.1:18778 -pid $! -kind numbers
//
// Kinds: numbers (an unterminated array of small integers: a decode
// error after the whole body was scanned), schema (the same array, closed:
// valid JSON that fails the schema, whose message quotes the document),
// string (one unterminated string).
//
// It imports nothing of placementd and must not: it measures a running
// server over HTTP and /proc only.
package main
