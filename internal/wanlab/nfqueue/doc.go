// Package nfqueue is the little of netfilter's NFQUEUE protocol the WAN
// lab's delayer needs, over a raw netlink socket: bind a queue, receive
// the first bytes of each queued packet with its id, and give verdicts
// (accept or drop) in any order. No library served by the module proxy
// fits (florianl/go-nfqueue is not served), and the protocol is small:
// the message layouts are those of linux/netfilter/nfnetlink_queue.h.
//
// It imports nothing of placementd and runs only on Linux as root (or with
// CAP_NET_ADMIN) in the network namespace whose iptables rules queue the
// packets: a netlink socket belongs to the namespace it was opened in.
package nfqueue
