// Command placement-scale checks placementd's scale targets on one node:
//
//	100,000 providers and 1,000,000 consumers with allocations in ≤ 1.5
//	GiB RSS; a restart (snapshot + log) of that state serves again within
//	10 s (the performance issue's targets).
//
// It generates an export document of that size (snapshot/export), starts
// `placementd serve` as a separate process, loads the document with
// `placementd import --file`, lets Raft take a snapshot, writes more
// allocations through the API so that the log holds entries after the
// snapshot, restarts the node and times how long it takes until it serves
// the expected usages again. It reads VmRSS and VmHWM of the server from
// /proc at each step and prints a table (with RssFile, the part of RSS
// that is the Raft log's BoltDB file mapped in: page cache the kernel may
// reclaim, counted in VmRSS all the same).
//
//	go run ./bench/cmd/placement-scale                                  # full size
//	go run ./bench/cmd/placement-scale -providers 2000 -consumers 20000 # quick check
//
// Run it from the repository (it builds cmd/placementd with go build), or
// give -placementd. Flags: -providers, -consumers, -writes (after the
// snapshot), -placementd (a built binary), -snapshot-wait (run 1 below), -work (default: a temporary
// dir, removed at the end unless -keep; a given dir is left in place),
// -verify (also run `placementd import --verify-only`, which needs about
// as much memory again as the import), -strict (exit 1 when a target is
// missed too). Progress goes to stderr, the table to stdout.
//
// A wrong answer from the server (a usage, the candidates, a failed
// verification) or a failed step exits 1; a missed target only does with
// -strict, since it depends on the machine (the CPU column shows the
// server's own time, which other jobs on the machine do not inflate).
//
// placementd has no command that makes Raft take a snapshot (`placementd
// snapshot save` streams a backup and leaves the log alone); a node takes
// one by itself once an import has ended (--snapshot-burst-mb), and
// otherwise only by --snapshot-threshold/--snapshot-interval, serve
// flags. So the node runs four times on the same data dir:
//
//  1. default settings: the import (about one Raft entry per MiB of
//     document, far below the default threshold of 8192 entries), the
//     verification and reads, then a wait of up to -snapshot-wait (2m)
//     for the node's own snapshot of the import;
//  2. the restart after the import: with that snapshot, default settings
//     (a restart from it); without (a build before --snapshot-burst-mb,
//     or -snapshot-wait too short), --snapshot-threshold 1
//     --snapshot-interval 1s: a restart from the log alone (the import
//     replayed), then the Raft snapshot, taken at the first check;
//  3. default settings: a restart from the snapshot alone, then the
//     writes (fewer than 8192, so they stay in the log) and reads;
//  4. default settings: the restart from snapshot + log of the target.
//
// The restart figures run from the process start until GET
// /resource_providers/{uuid}/usages answers the expected usage for the
// provider the last write goes to.
//
// It imports bench/loadgen, internal/testcluster (to build the server and
// find free ports) and snapshot/export (to write the document it
// imports); it must not import cluster, fsm or httpapi itself: it
// measures the real binary, not an in-process copy.
package main
