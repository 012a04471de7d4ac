// Command wan-bench measures placementd across a WAN: it runs the nodes as
// separate processes in the WAN lab (internal/wanlab: network namespaces
// and the NFQUEUE delayer), with a client whose round trip to every node
// is half the node-to-node RTT unless -client-rtt says otherwise, and for
// each node RTT prints the median latency of writes and reads through the
// leader and a follower, the failover time (leader killed -> next write
// accepted, through a surviving node) and the elections counted while the
// cluster idles.
//
//	make wan-bench [WAN_RTTS=0,20,80,150,80/20] [WAN_REQUESTS=100] ...
//
// With -serve-flags-b the failovers and region cuts of each row alternate
// between two flag sets, with -bin-b between this tree's build and another
// placementd binary (A/B in one run, all nodes restarted in between; a
// trial waits -settle after the restart). With -regions each row also cuts
// the leader's region off -region-cuts times, and logs the client's writes
// after each cut (sent, answered, status) for the timeline.
//
// It needs root (namespaces, iptables). Every figure comes from one run on
// a shared machine: compare rows of one table, not tables of two runs.
//
// It imports cluster (its operator API client), internal/testcluster (its
// process nodes) and internal/wanlab; it must not import fsm or httpapi
// itself: the nodes it measures are real processes.
package main
