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
