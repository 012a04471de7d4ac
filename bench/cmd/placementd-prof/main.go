package main

import (
	"context"
	"flag"
	"io"
	"log"
	"log/slog"
	"net/http"
	_ "net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"

	"github.com/placementd/placementd/cluster"
	"github.com/placementd/placementd/cluster/front"
	"github.com/placementd/placementd/fsm"
	"github.com/placementd/placementd/httpapi"
)

func main() {
	var (
		httpAddr  = flag.String("http-addr", "127.0.0.1:8778", "Placement API address")
		raftAddr  = flag.String("raft-addr", "127.0.0.1:0", "Raft address")
		pprofAddr = flag.String("pprof-addr", "127.0.0.1:6060", "pprof address")
		dataDir   = flag.String("data-dir", "", "data directory (default: a temporary one)")
		mutexRate = flag.Int("mutex-fraction", 0, "runtime.SetMutexProfileFraction (0: off)")
		blockRate = flag.Int("block-rate", 0, "runtime.SetBlockProfileRate in ns (0: off)")
		randomize = flag.Bool("randomize-allocation-candidates", false, "as placementd serve's flag")
		maxCands  = flag.Int("max-allocation-candidates", 0, "as placementd serve's flag (0: its default)")
	)
	flag.Parse()
	runtime.SetMutexProfileFraction(*mutexRate)
	runtime.SetBlockProfileRate(*blockRate)
	if *dataDir == "" {
		d, err := os.MkdirTemp("", "placementd-prof-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dataDir = d
	}
	node, err := cluster.Open(cluster.Config{
		NodeID: "prof", RaftAddr: *raftAddr, HTTPAddr: *httpAddr, DataDir: *dataDir, Bootstrap: true,
		Logger: hclog.New(&hclog.LoggerOptions{Name: "raft", Level: hclog.Warn, Output: os.Stderr}),
		// As cmd/placementd/run.go tunes it.
		Tune: func(rc *raft.Config) {
			rc.BatchApplyCh = true
			rc.MaxAppendEntries = 256
		},
	}, fsm.New())
	if err != nil {
		log.Fatal(err)
	}
	defer node.Shutdown()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := node.WaitLeader(ctx); err != nil {
		log.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := httpapi.New(node, httpapi.Config{Logger: quiet, RandomizeAllocationCandidates: *randomize,
		MaxAllocationCandidates: *maxCands})
	fr := front.New(node, api, front.Options{Logger: quiet})
	go func() { log.Fatal(http.ListenAndServe(*pprofAddr, nil)) }()
	srv := &http.Server{Addr: *httpAddr, Handler: fr}
	go func() { log.Fatal(srv.ListenAndServe()) }()
	log.Printf("serving on %s, pprof on %s, data in %s", *httpAddr, *pprofAddr, *dataDir)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	<-sig
	srv.Close()
}
