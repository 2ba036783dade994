// Command chaos runs the chaos harness of package test/chaos against real
// zaris-server processes built from this repository (`make chaos`).
//
//	chaos -scenario chaos -duration 60s -rf 3 -mode sync -quorum majority
//	chaos -scenario failover-time -kills 20 [-fault pause] [-extra --suspect-escalation=3s]
//	chaos -scenario throughput -duration 10s -concurrency 64 [-rounds 3]
//	chaos -scenario slow -duration 10m -rf 1 [-stall 1.5s -stall-every 8s]
//	chaos -scenario elastic -rf 2 -mode sync -quorum all
//	chaos -scenario soak -duration 1h [-fault-every 30s -rate 40]
//
// The chaos scenario prints the fault timeline, detail lines and, last,
// one summary line `acked=N lost=M stale_reads=K unavailable_ms=U`. It
// exits 1 when a Sync run lost a write (or saw a corrupt read, an
// unverifiable key, a crash or a panic), 2 when the harness itself failed.
// The slow scenario (production timings, a CPU hog of 2 × the CPUs, one
// node stopped again and again for less than the dead threshold) prints
// `stalls=N promotions=P unavailable=U …` and exits 1 on any promotion,
// unavailable partition or lost write. The soak scenario (RF 2, sync,
// quorum all unless set; a fault every 30 s) prints its summary tables and
// `soak: PASS|FAIL …`, and exits 1 on any broken assertion.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/test/chaos"
)

type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, " ") }
func (l *listFlag) Set(s string) error {
	for _, f := range strings.Fields(strings.ReplaceAll(s, ",", " ")) {
		*l = append(*l, f)
	}
	return nil
}

func main() {
	var (
		duration    = flag.Duration("duration", 60*time.Second, "how long faults are injected (chaos), or measured per configuration (throughput; default there 10s)")
		rf          = flag.Int("rf", 3, "replication factor")
		mode        = flag.String("mode", "sync", "replication mode: async or sync")
		quorum      = flag.String("quorum", "majority", "write quorum: all, majority or besteffort")
		nodes       = flag.Int("nodes", 3, "cluster size")
		seed        = flag.Uint64("seed", uint64(time.Now().UnixNano()), "seed of the fault schedule and the workload")
		keep        = flag.Bool("keep", false, "keep the working directory (node logs and data dirs); it is kept anyway when a run fails")
		scenario    = flag.String("scenario", "chaos", "chaos | failover-time | throughput | slow | elastic | soak")
		faultEvery  = flag.Duration("fault-every", 30*time.Second, "soak: from one fault to the next")
		rate        = flag.Int("rate", 40, "soak: operations per second of each worker goroutine")
		stall       = flag.Duration("stall", 1500*time.Millisecond, "slow: length of one SIGSTOP of the slow node (below the dead threshold)")
		stallEvery  = flag.Duration("stall-every", 8*time.Second, "slow: from one stall to the next")
		kills       = flag.Int("kills", 20, "failover-time: owner faults to measure")
		fault       = flag.String("fault", "kill", "failover-time: kill (SIGKILL the owner) or pause (SIGSTOP it: a silent owner)")
		concurrency = flag.Int("concurrency", 64, "throughput: concurrent writers over one client")
		rounds      = flag.Int("rounds", 1, "throughput: run every configuration this many times, interleaved, and print the medians and the ratios' spread")
		keys        = flag.Int("keys", 200, "chaos: keys the writers overwrite")
		writers     = flag.Int("writers", 4, "chaos: writer goroutines (disjoint key subsets)")
		defaults    = flag.Bool("default-timings", false, "chaos: run the servers with production timings (failover-time always does)")
		binary      = flag.String("binary", "", "zaris-server binary to run (default: go build ./cmd/zaris-server)")
		quiet       = flag.Bool("q", false, "print only the results, not the progress")
		extra       listFlag
	)
	flag.Var(&extra, "extra", "extra server flags for every node, space or comma separated (e.g. --suspect-escalation=3s); repeatable")
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "zaris-chaos-")
	if err != nil {
		fail(err)
	}
	progress := os.Stderr
	if *quiet {
		progress = nil
	}
	bin := *binary
	if bin == "" {
		bin, err = chaos.BuildServer(ctx, dir)
		if err != nil {
			fail(err)
		}
	}
	opts := chaos.Options{Nodes: *nodes, RF: *rf, Mode: *mode, Quorum: *quorum, Binary: bin, Extra: extra, DefaultTimings: *defaults}
	if progress != nil {
		opts.Log = progress
	}
	code := 0
	switch *scenario {
	case "chaos":
		opts.Dir = dir + "/cluster"
		cfg := chaos.ChaosConfig{Cluster: opts,
			Workload: chaos.WorkloadConfig{Keys: *keys, Writers: *writers},
			Schedule: chaos.ScheduleConfig{Seed: *seed, Duration: *duration}}
		if progress != nil {
			cfg.Out = progress
		}
		fmt.Printf("chaos: %d nodes rf=%d mode=%s quorum=%s duration=%v seed=%d timings=%s\n", *nodes, *rf, *mode, *quorum, *duration, *seed, timings(*defaults, extra))
		rep, err := chaos.RunChaos(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			fmt.Fprintln(os.Stderr, "chaos: node logs kept in", dir)
			os.Exit(2)
		}
		for _, e := range rep.Timeline {
			fmt.Println("timeline:", e)
		}
		for _, l := range rep.Lines() {
			fmt.Println(l)
		}
		switch {
		case *mode == "sync" && rep.Failed():
			code = 1
		case rep.Err != nil:
			code = 2
		}
	case "failover-time":
		opts.Dir = dir + "/cluster"
		opts.DefaultTimings = true
		fmt.Printf("failover-time: %d nodes rf=%d mode=%s quorum=%s fault=%s n=%d timings=%s\n", *nodes, *rf, *mode, *quorum, *fault, *kills, timings(true, extra))
		cfg := chaos.FailoverConfig{Cluster: opts, Kills: *kills, Seed: *seed, Fault: *fault}
		if progress != nil {
			cfg.Out = progress
		}
		times, err := chaos.RunFailoverTime(ctx, cfg)
		for i, d := range times {
			fmt.Printf("%s %d: %v\n", *fault, i+1, d.Round(time.Millisecond))
		}
		if len(times) > 0 {
			fmt.Printf("failover: n=%d p50=%v p99=%v max=%v\n", len(times),
				chaos.Percentile(times, 0.50).Round(time.Millisecond), chaos.Percentile(times, 0.99).Round(time.Millisecond),
				chaos.Percentile(times, 1).Round(time.Millisecond))
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			code = 2
		}
	case "throughput":
		d := *duration
		if !set["duration"] {
			d = 10 * time.Second
		}
		opts.Dir = dir
		cfg := chaos.ThroughputConfig{Cluster: opts, Concurrency: *concurrency, Duration: d, Rounds: *rounds}
		if progress != nil {
			cfg.Out = progress
		}
		fmt.Printf("throughput: %d nodes, %d writers over one client, 64-byte values, %v per configuration, %d round(s)\n", *nodes, *concurrency, d, max(1, *rounds))
		rows, err := chaos.RunThroughput(ctx, cfg)
		chaos.PrintThroughput(os.Stdout, rows, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			code = 2
		}
	case "slow":
		opts.Dir = dir + "/cluster"
		if !set["rf"] {
			opts.RF = 1 // the case a false failover costs data
		}
		if !set["mode"] {
			opts.Mode = "async"
		}
		if !set["quorum"] || opts.Mode == "async" {
			opts.Quorum = "" // a quorum is a sync setting
		}
		cfg := chaos.SlowConfig{Cluster: opts, Duration: *duration, Stall: *stall, StallEvery: *stallEvery,
			Workload: chaos.WorkloadConfig{Keys: *keys, Writers: *writers}}
		if progress != nil {
			cfg.Out = progress
		}
		fmt.Printf("slow: %d nodes rf=%d duration=%v stall=%v every %v, CPU hog 2 x CPUs, timings=%s\n",
			*nodes, opts.RF, *duration, *stall, *stallEvery, timings(true, extra))
		rep, err := chaos.RunSlow(ctx, cfg)
		code = report(rep.Details(), rep.Summary(), rep.Failed(), err)
	case "elastic":
		opts.Dir = dir + "/cluster"
		if opts.Mode == "async" || opts.Mode == "" {
			opts.Quorum = "" // a quorum is a sync setting
		}
		cfg := chaos.ElasticConfig{Cluster: opts, Workload: chaos.WorkloadConfig{Keys: *keys, Writers: *writers}}
		if progress != nil {
			cfg.Out = progress
		}
		fmt.Printf("elastic: %d nodes rf=%d mode=%s, +2 nodes, drain n2, a fault mid-move\n", *nodes, opts.RF, opts.Mode)
		rep, err := chaos.RunElastic(ctx, cfg)
		code = report(rep.Details(), rep.Summary(), rep.Failed(), err)
	case "soak":
		opts.Dir = dir + "/cluster"
		if !set["rf"] {
			opts.RF = 2
		}
		if !set["quorum"] {
			opts.Quorum = "all"
		}
		if opts.Mode == "async" {
			opts.Quorum = "" // a quorum is a sync setting
		}
		cfg := chaos.SoakConfig{Cluster: opts, Duration: *duration, FaultEvery: *faultEvery, Seed: *seed, Rate: *rate,
			SamplesFile: fmt.Sprintf("%s/zaris-soak-%d.csv", os.TempDir(), *seed)} // outlives the working directory
		if progress != nil {
			cfg.Out = progress
		}
		fmt.Printf("soak: %d nodes rf=%d mode=%s quorum=%s duration=%v faults every %v seed=%d timings=%s\n",
			*nodes, opts.RF, opts.Mode, opts.Quorum, *duration, *faultEvery, *seed, timings(*defaults, extra))
		rep, err := chaos.RunSoak(ctx, cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chaos:", err)
			code = 2
			break
		}
		rep.Print(os.Stdout)
		fmt.Println("soak: resource samples (CSV) in", cfg.SamplesFile)
		if rep.Failed() {
			code = 1
		}
	default:
		fmt.Fprintf(os.Stderr, "chaos: unknown -scenario %q (chaos, failover-time, throughput, slow, elastic, soak)\n", *scenario)
		os.Exit(2)
	}
	if *keep || code != 0 {
		fmt.Fprintln(os.Stderr, "chaos: working directory (node logs) kept in", dir)
	} else {
		os.RemoveAll(dir)
	}
	stop()
	os.Exit(code)
}

func timings(defaults bool, extra []string) string {
	fl := chaos.TimingFlags(defaults, extra)
	switch {
	case len(fl) == 0:
		return "server defaults"
	case defaults:
		return "server defaults + " + strings.Join(fl, " ")
	}
	return strings.Join(fl, " ")
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "chaos:", err)
	os.Exit(2)
}

// report prints a scenario's detail lines and summary and returns the exit
// code: 2 when the run itself failed, 1 when it shows a correctness
// problem, 0 otherwise.
func report(details []string, summary string, failed bool, err error) int {
	for _, l := range details {
		fmt.Println(l)
	}
	fmt.Println(summary)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "chaos:", err)
		return 2
	case failed:
		return 1
	}
	return 0
}
