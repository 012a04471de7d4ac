package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/placementd/placementd/bench/loadgen"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "table" {
		if err := table(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "placement-load:", err)
			os.Exit(2)
		}
		return
	}
	var (
		cfg       loadgen.Config
		endpoints = flag.String("endpoints", "http://127.0.0.1:8778", "comma-separated base URLs; clients are spread over them")
		phases    = flag.String("phases", strings.Join(loadgen.AllPhases, ","), "phases to run, in order")
		jsonOut   = flag.String("json", "", "write the report as JSON to this file")
		pids      = flag.String("server-pids", "", "comma-separated PIDs of the server's processes (with descendants), whose CPU time each phase reports")
		cpuProf   = flag.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	)
	flag.StringVar(&cfg.Label, "label", "target", "name of the target in the report")
	flag.StringVar(&cfg.Token, "token", "admin", "noauth2 X-Auth-Token")
	flag.StringVar(&cfg.Microversion, "microversion", "1.36", "placement microversion of every request")
	flag.IntVar(&cfg.Nodes, "nodes", 1000, "compute nodes to create")
	flag.BoolVar(&cfg.NUMA, "numa", false, "give each compute node two NUMA children holding VCPU and MEMORY_MB")
	flag.IntVar(&cfg.Aggregates, "aggregates", 10, "aggregates, each with a sharing DISK_GB provider")
	flag.IntVar(&cfg.Clients, "clients", 16, "concurrent clients")
	flag.DurationVar(&cfg.Duration, "duration", 20*time.Second, "length of each measured phase")
	flag.IntVar(&cfg.MaxOps, "max-ops", 0, "also stop each phase after this many operations (0: no bound)")
	flag.IntVar(&cfg.Limit, "limit", 50, "allocation candidates limit")
	flag.Float64Var(&cfg.PacedRate, "paced-rate", 500, "offered PUTs per second in the put-paced phase (all clients together)")
	flag.Int64Var(&cfg.Flavor.VCPU, "vcpu", 2, "VCPU per consumer")
	flag.Int64Var(&cfg.Flavor.MemoryMB, "memory-mb", 2048, "MEMORY_MB per consumer")
	flag.Int64Var(&cfg.Flavor.DiskGB, "disk-gb", 20, "DISK_GB per consumer")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the clients' random choices")
	flag.DurationVar(&cfg.Timeout, "timeout", 60*time.Second, "bound on each request")
	flag.Parse()
	cfg.Endpoints = strings.Split(*endpoints, ",")
	cfg.Phases = strings.Split(*phases, ",")
	cfg.Log = os.Stderr
	for _, p := range strings.Split(*pids, ",") {
		if p = strings.TrimSpace(p); p != "" {
			pid, err := strconv.Atoi(p)
			if err != nil {
				fmt.Fprintln(os.Stderr, "placement-load: -server-pids:", err)
				os.Exit(2)
			}
			cfg.ServerPIDs = append(cfg.ServerPIDs, pid)
		}
	}

	if *cpuProf != "" {
		f, err := os.Create(*cpuProf)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "placement-load: -cpuprofile:", err)
			os.Exit(2)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := loadgen.Run(ctx, cfg)
	pprof.StopCPUProfile() // a no-op without -cpuprofile
	if err != nil {
		fmt.Fprintln(os.Stderr, "placement-load:", err)
		os.Exit(2)
	}
	if *jsonOut != "" {
		b, _ := json.MarshalIndent(rep, "", "  ")
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "placement-load:", err)
			os.Exit(2)
		}
	}
	loadgen.Table(os.Stdout, []*loadgen.Report{rep})
	if !rep.Verify.OK {
		os.Exit(1)
	}
}

// table prints the reports in the given JSON files side by side.
func table(files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("table needs report files (the first is the baseline)")
	}
	var reports []*loadgen.Report
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		var r loadgen.Report
		if err := json.Unmarshal(b, &r); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		reports = append(reports, &r)
	}
	loadgen.Table(os.Stdout, reports)
	return nil
}
