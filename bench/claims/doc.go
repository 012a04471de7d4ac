// Command claims measures placementd's claim throughput and write latency
// (or, with -reads, linearizable read throughput and latency):
// it starts a cluster of placementd processes on loopback (Raft over TCP,
// logs fsynced in a temporary directory), creates providers, then makes
// claims (PUT /allocations/{new consumer}, consumer_generation null) from
// concurrent clients for a while, spread over every node.
//
//	go run ./bench/claims -nodes 1
//	go run ./bench/claims -nodes 3
//
// Results are in bench/claims/README.md.
//
// It owns nothing the server uses. It imports cluster/front only for its
// operator API client (front.Client) and the header names it sends over
// HTTP, and must not import fsm or httpapi: it measures the real processes.
package main
