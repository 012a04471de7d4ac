// Package wanlab is the project's WAN lab: hosts in network namespaces
// joined through a hub namespace that routes between them, where every
// packet passes the project's userspace delayer (this kernel has no
// netem). Each direction of each pair of hosts has its own one-way delay,
// jitter and cut flag, so tests and `make wan-bench` can give every pair
// its RTT, cut a node or a region off, and heal.
//
//	host ns  eth0 198.18.i.2/24 ─ veth ─ hi 198.18.i.1/24  hub ns
//	                                      iptables FORWARD -j NFQUEUE → wan-delayer
//
// Addresses come from 198.18.0.0/15, the range set aside for benchmarking
// network devices (RFC 2544). Nothing is connected to the machine's own
// namespace: lab traffic cannot leave the lab, and the host's firewall is
// never touched (the iptables rule lives in the hub's namespace).
//
// Everything a lab creates is named pwl<pid>-<n>-..., and Close removes it;
// New first removes what labs of processes that are gone left behind (a
// test killed by its timeout), processes inside included. The delayer reads
// its table on its standard input and exits when the lab's process does.
//
// It needs root, iproute2's ip, iptables and the kernel's nfnetlink_queue;
// New reports what is missing as ErrUnavailable, so that tests skip.
//
// The package imports nothing of placementd's but its own nfqueue: any
// test or benchmark may use it.
package wanlab
