// Command placementd-prof runs one placementd node as `placementd serve`
// stacks it (Raft over TCP, BoltDB log with fsync, the same Raft tuning,
// the API behind the cluster front) with net/http/pprof on a second
// address, to profile the server under bench/cmd/placement-load:
//
//	go run ./bench/cmd/placementd-prof -http-addr 127.0.0.1:8778 -pprof-addr 127.0.0.1:6060 -data-dir /tmp/prof
//	go tool pprof http://127.0.0.1:6060/debug/pprof/profile?seconds=20
//
// It wires cluster, fsm and httpapi as cmd/placementd does (that is its
// point); nothing may import it.
package main
