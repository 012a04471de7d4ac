// Command wan-delayer is the WAN lab's packet delayer (see package
// wanlab): run inside the lab's hub namespace, it serves the NFQUEUE that
// the hub's iptables rule feeds, with its link table read from standard
// input. The lab starts and stops it; it is not meant to be run by hand.
//
// It imports only internal/wanlab (whose nfqueue it serves) and nothing
// else of placementd.
package main
