// Command wan-delayer is the WAN lab's packet delayer (see package
// wanlab): run inside the lab's hub namespace, it serves the NFQUEUE that
// the hub's iptables rule feeds, with its link table read from standard
// input. The lab starts and stops it; it is not meant to be run by hand.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/placementd/placementd/internal/wanlab"
)

func main() {
	queue := flag.Uint("queue", 0, "NFQUEUE number to serve")
	flag.Parse()
	if err := wanlab.RunDelayer(uint16(*queue), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "wan-delayer:", err)
		os.Exit(1)
	}
}
