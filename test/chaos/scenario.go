package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/test/vsredis"
)

// ChaosConfig is one chaos run: a cluster, the workload and the fault
// schedule.
type ChaosConfig struct {
	Cluster  Options
	Workload WorkloadConfig
	Schedule ScheduleConfig // Duration and Seed are taken from here
	Out      io.Writer      // timeline and progress; nil = discard
}

// ChaosReport is the outcome of RunChaos.
type ChaosReport struct {
	Result
	Faults   FaultStats
	Timeline []Event
	Crashes  []string // node exits the harness did not cause
	Problems []string // panics, fatal errors, races in the node logs
	Err      error    // harness trouble: a fault could not be injected, the cluster did not heal
}

// Failed reports whether the run shows a correctness problem that Sync
// replication promises away: a lost or corrupt write, an unverifiable key,
// a crash.
func (r ChaosReport) Failed() bool {
	return len(r.Lost) > 0 || r.Corrupt > 0 || len(r.Unverified) > 0 || len(r.Crashes) > 0 || len(r.Problems) > 0
}

// Lines are the detail lines of the report, the summary line last.
func (r ChaosReport) Lines() []string {
	lines := []string{r.Faults.String()}
	lines = append(lines, r.Details()...)
	for _, s := range r.Crashes {
		lines = append(lines, "crash: "+s)
	}
	for _, s := range r.Problems {
		lines = append(lines, "log problem: "+s)
	}
	if r.Err != nil {
		lines = append(lines, "harness error: "+r.Err.Error())
	}
	return append(lines, r.Summary())
}

// RunChaos starts a cluster, runs the workload under the fault schedule,
// heals the cluster, verifies every key against the ledger and closes the
// cluster. An error means the run could not start; trouble during the run
// is in the report's Err.
func RunChaos(ctx context.Context, cfg ChaosConfig) (ChaosReport, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.Cluster.Log == nil {
		cfg.Cluster.Log = out
	}
	c, err := Start(ctx, cfg.Cluster)
	if err != nil {
		return ChaosReport{}, err
	}
	defer c.Close()
	if err := c.WaitHealthy(ctx); err != nil {
		return ChaosReport{}, err
	}
	cfg.Workload.Seed = cfg.Schedule.Seed
	cfg.Workload.defaults()
	w, err := StartWorkload(ctx, c.ConnString(), cfg.Workload, out)
	if err != nil {
		return ChaosReport{}, err
	}
	defer w.Stop()
	tl := NewTimeline(out)
	tl.Add("workload started: %d keys, %d writers, %d readers, seed %d", cfg.Workload.Keys, cfg.Workload.Writers, cfg.Workload.Readers, cfg.Schedule.Seed)
	_ = sleepCtx(ctx, 2*time.Second) // a fault-free start: acknowledged writes to lose

	sc := cfg.Schedule
	sc.KeyOf, sc.Keys = cfg.Workload.Key, cfg.Workload.Keys
	rep := ChaosReport{}
	rep.Faults, rep.Err = RunSchedule(ctx, c, sc, tl)

	hctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	if err := Heal(hctx, c, tl); err != nil {
		tl.Add("heal failed: %v", err)
		rep.Err = errors.Join(rep.Err, fmt.Errorf("heal: %w", err))
	}
	cancel()
	_ = sleepCtx(ctx, time.Second) // the workload runs on the healed cluster a moment
	tl.Add("verifying")
	vctx, vcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	rep.Result = w.Verify(vctx)
	vcancel()
	tl.Add("verified")
	rep.Timeline = tl.Events()
	rep.Crashes = c.Crashes()
	rep.Problems = c.LogProblems()
	if len(rep.Lost) > 0 || len(rep.Crashes) > 0 {
		for i := range c.N() {
			fmt.Fprintf(out, "---- last lines of %s's log (%s)\n%s\n", NodeID(i), c.LogPath(i), c.LogTail(i, 40))
		}
	}
	return rep, nil
}

// FailoverConfig is the failover-time measurement (issue #8 item 7).
type FailoverConfig struct {
	Cluster Options       // usually DefaultTimings: the production failover time
	Kills   int           // default 20
	Attempt time.Duration // per-attempt deadline of the probe writes; default 250 ms
	// Fault is "kill" (SIGKILL: the process is gone, its ports refuse) or
	// "pause" (SIGSTOP: the owner is silent, its ports accept and never
	// answer — what --suspect-escalation is for). Default "kill".
	Fault string
	Seed  uint64
	Out   io.Writer
}

// RunFailoverTime kills (or pauses) the owner of a probe key's partition
// Kills times and measures, with the monotonic clock, the time from the
// signal to the first acknowledged write of that key. After each fault
// the node is restarted (or resumed) and the cluster healed. It returns
// every measurement.
func RunFailoverTime(ctx context.Context, cfg FailoverConfig) ([]time.Duration, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.Kills <= 0 {
		cfg.Kills = 20
	}
	if cfg.Attempt <= 0 {
		cfg.Attempt = 250 * time.Millisecond
	}
	if cfg.Fault == "" {
		cfg.Fault = "kill"
	}
	if cfg.Fault != "kill" && cfg.Fault != "pause" {
		return nil, fmt.Errorf("chaos: failover fault %q: want kill or pause", cfg.Fault)
	}
	if cfg.Cluster.Log == nil {
		cfg.Cluster.Log = out
	}
	c, err := Start(ctx, cfg.Cluster)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	if err := c.WaitHealthy(ctx); err != nil {
		return nil, err
	}
	cl, err := sdk.Connect(ctx, c.ConnString(), sdk.WithLogger(slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelWarn}))))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xfa11))
	tl := NewTimeline(out)
	// write retries key with short attempts until one is acknowledged or
	// limit passes.
	write := func(key string, limit time.Duration) (time.Time, error) {
		end := time.Now().Add(limit)
		for n := 0; ; n++ {
			sent := time.Now()
			actx, cancel := context.WithTimeout(ctx, cfg.Attempt)
			r, err := cl.Put(actx, key, EncodeValue(key, uint64(n)+1, 64), nil)
			cancel()
			now := time.Now()
			if err == nil && r.Status == sdk.StatusSuccess {
				return now, nil
			}
			if now.After(end) || ctx.Err() != nil {
				return now, fmt.Errorf("no write of %s acknowledged within %v (last: status %s, err %v)", key, limit, r.Status, err)
			}
			if now.Sub(sent) < 10*time.Millisecond {
				_ = sleepCtx(ctx, 10*time.Millisecond) // an immediate refusal: do not spin
			}
		}
	}
	var times []time.Duration
	for k := range cfg.Kills {
		key := fmt.Sprintf("failover:%d:%d", k, rng.IntN(1<<20))
		if _, err := write(key, 30*time.Second); err != nil {
			return times, fmt.Errorf("before kill %d: %w", k+1, err)
		}
		owner, err := c.OwnerOf(ctx, key)
		if err != nil {
			return times, err
		}
		t0 := time.Now()
		if cfg.Fault == "pause" {
			err = c.Pause(owner)
		} else {
			err = c.Kill(owner)
		}
		if err != nil {
			return times, err
		}
		at, err := write(key, 2*time.Minute)
		if err != nil {
			tl.Add("%s %d: %s: %v", cfg.Fault, k+1, NodeID(owner), err)
			return times, err
		}
		d := at.Sub(t0)
		times = append(times, d)
		tl.Add("%s %d/%d: owner %s of %s, first acknowledged write after %v", cfg.Fault, k+1, cfg.Kills, NodeID(owner), key, d.Round(time.Millisecond))
		if cfg.Fault == "pause" {
			err = c.Resume(owner)
		} else {
			err = c.Restart(owner)
		}
		if err != nil {
			return times, err
		}
		hctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		err = c.WaitHealthy(hctx)
		cancel()
		if err != nil {
			return times, err
		}
	}
	if crashes := c.Crashes(); len(crashes) > 0 {
		return times, fmt.Errorf("node crashes: %s", strings.Join(crashes, "; "))
	}
	return times, nil
}

// Percentile returns the p-quantile (0..1) of ds by the nearest-rank rule.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p*float64(len(s))+0.999999) - 1
	return s[max(0, min(rank, len(s)-1))]
}

// ThroughputConfig is the replication-cost measurement.
type ThroughputConfig struct {
	Cluster     Options // Binary, Nodes, Extra, Log; RF, Mode and Quorum are set per row
	Concurrency int     // writer goroutines over one client; default 64
	Duration    time.Duration
	ValueSize   int // default 64
	Keys        int // key space; default 100000
	// Rounds is how many times every configuration runs, interleaved
	// (one round runs each once, the order reversed every other round):
	// the machine's noise moves a row by a third between runs, so a
	// ratio of two rows run once each is not a measurement. Default 1.
	Rounds int
	Out    io.Writer
}

// ThroughputRow is one configuration's result.
type ThroughputRow struct {
	Name       string
	Nodes      int // asked: 0 = the cluster's size (ThroughputConfig.Cluster.Nodes); measured: the nodes that ran
	RF         int
	Mode       string
	Quorum     string
	Partitions int // partitions of the map (on 3 nodes: RF 1 plans 3, RF 2 plans 6, two owned by each node)
	Ops        int64
	Errors     int64
	Elapsed    time.Duration
	OpsPerSec  float64
	RatioToRF1 float64
	// ServerCPU and ClientCPU are the CPU time (user + system) per
	// acknowledged write over the measured window: every server process,
	// and this process (the SDK client). On a machine shared by all of them
	// the throughput ratios follow their sum; unlike throughput it barely
	// moves with the machine's noise.
	ServerCPU, ClientCPU time.Duration
	// Over several rounds: OpsPerSec, ServerCPU and ClientCPU are the
	// medians of the rounds', Ops, Errors and Elapsed their sums,
	// RatioToRF1 the median of the rounds' ratios (each to the RF 1 row of
	// its own round), RatioMin and RatioMax their spread, Runs the rounds.
	RatioMin, RatioMax float64
	Runs               []ThroughputRow
}

// RunThroughput measures write throughput for RF 1, RF 2 async and RF 2
// sync+all, each on a fresh cluster, then RF 1 on a single node: the
// baseline of the cluster's aggregate (issue #17 asks 3 nodes >= 2.5x one).
// With cfg.Rounds > 1 it does so Rounds times, interleaved, and returns
// the medians (ThroughputRow).
func RunThroughput(ctx context.Context, cfg ThroughputConfig) ([]ThroughputRow, error) {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 64
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 10 * time.Second
	}
	if cfg.ValueSize <= 0 {
		cfg.ValueSize = 64
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 100000
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	rows := []ThroughputRow{
		{Name: "RF1", RF: 1, Mode: "async"},
		{Name: "RF2 async", RF: 2, Mode: "async"},
		{Name: "RF2 sync+all", RF: 2, Mode: "sync", Quorum: "all"},
	}
	if cfg.Cluster.Nodes != 1 {
		rows = append(rows, ThroughputRow{Name: "RF1 1 node", Nodes: 1, RF: 1, Mode: "async"})
	}
	rounds := max(1, cfg.Rounds)
	for r := range rounds {
		run := slices.Clone(rows)
		order := make([]int, len(run))
		for i := range order {
			order[i] = i
		}
		if r%2 == 1 {
			slices.Reverse(order) // a drift of the machine's load does not favour one end
		}
		ran := make([]bool, len(run))
		for _, i := range order {
			o := cfg.Cluster
			o.RF, o.Mode, o.Quorum = run[i].RF, run[i].Mode, run[i].Quorum
			if run[i].Nodes > 0 {
				o.Nodes = run[i].Nodes
			}
			if o.Log == nil {
				o.Log = out
			}
			if rounds > 1 && o.Dir != "" {
				o.Dir = fmt.Sprintf("%s/round%d", strings.TrimRight(o.Dir, "/"), r+1)
			}
			if err := throughputRow(ctx, o, cfg, &run[i]); err != nil {
				// What was measured is still reported, this round's rows too.
				return finishRounds(rows, run, ran), fmt.Errorf("%s (round %d): %w", run[i].Name, r+1, err)
			}
			ran[i] = true
			fmt.Fprintf(out, "throughput: round %d/%d: %s %.0f ops/s (%d errors)\n", r+1, rounds, run[i].Name, run[i].OpsPerSec, run[i].Errors)
		}
		addRound(rows, run, ran)
	}
	return finishRounds(rows, nil, nil), nil
}

// addRound adds the configurations a round ran to their rows' runs, each
// with its ratio to the round's RF 1 row (when that ran).
func addRound(rows, run []ThroughputRow, ran []bool) {
	for i := range run {
		if !ran[i] {
			continue
		}
		if ran[0] && run[0].OpsPerSec > 0 {
			run[i].RatioToRF1 = run[i].OpsPerSec / run[0].OpsPerSec
		}
		rows[i].Runs = append(rows[i].Runs, run[i])
	}
}

// finishRounds adds a round cut short (run, ran: nil when none) and folds
// every configuration's runs into its row; configurations that never ran
// are left out.
func finishRounds(rows, run []ThroughputRow, ran []bool) []ThroughputRow {
	if run != nil {
		addRound(rows, run, ran)
	}
	out := make([]ThroughputRow, 0, len(rows))
	for _, row := range rows {
		if len(row.Runs) > 0 {
			out = append(out, summarizeRuns(row))
		}
	}
	return out
}

// summarizeRuns folds a configuration's rounds into one row (medians,
// sums and the ratio's spread: ThroughputRow).
func summarizeRuns(row ThroughputRow) ThroughputRow {
	runs := row.Runs
	if len(runs) == 0 {
		return row
	}
	pick := func(f func(ThroughputRow) float64) []float64 {
		v := make([]float64, len(runs))
		for i, r := range runs {
			v[i] = f(r)
		}
		return v
	}
	out := runs[0]
	out.Ops, out.Errors, out.Elapsed = 0, 0, 0
	for _, r := range runs {
		out.Ops += r.Ops
		out.Errors += r.Errors
		out.Elapsed += r.Elapsed
	}
	out.OpsPerSec = median(pick(func(r ThroughputRow) float64 { return r.OpsPerSec }))
	out.ServerCPU = time.Duration(median(pick(func(r ThroughputRow) float64 { return float64(r.ServerCPU) })))
	out.ClientCPU = time.Duration(median(pick(func(r ThroughputRow) float64 { return float64(r.ClientCPU) })))
	ratios := pick(func(r ThroughputRow) float64 { return r.RatioToRF1 })
	out.RatioToRF1 = median(ratios)
	out.RatioMin, out.RatioMax = slices.Min(ratios), slices.Max(ratios)
	out.Runs = runs
	return out
}

func throughputRow(ctx context.Context, o Options, cfg ThroughputConfig, row *ThroughputRow) error {
	if o.Dir != "" {
		o.Dir = strings.TrimRight(o.Dir, "/") + "/" + strings.NewReplacer(" ", "-", "+", "-").Replace(row.Name)
	}
	c, err := Start(ctx, o)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.WaitHealthy(ctx); err != nil {
		return err
	}
	row.Nodes = c.N()
	if st, err := c.Status(ctx, 0); err == nil {
		row.Partitions = len(st.Partitions)
	}
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		return err
	}
	defer cl.Close()
	value := make([]byte, cfg.ValueSize)
	for i := range value {
		value[i] = 'v'
	}
	var (
		ops, errs atomic.Int64
		counting  atomic.Bool
		wg        sync.WaitGroup
	)
	stop := make(chan struct{})
	for g := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("tp:%d", rng.IntN(cfg.Keys))
				cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
				r, err := cl.Put(cctx, key, value, nil)
				cancel()
				if !counting.Load() {
					continue
				}
				if err == nil && r.Status == sdk.StatusSuccess {
					ops.Add(1)
				} else {
					errs.Add(1)
				}
			}
		}()
	}
	_ = sleepCtx(ctx, time.Second) // warm-up, not counted
	server0, client0 := clusterCPU(c), processCPU(os.Getpid())
	counting.Store(true)
	t0 := time.Now()
	_ = sleepCtx(ctx, cfg.Duration)
	counting.Store(false)
	row.Elapsed = time.Since(t0)
	row.Ops, row.Errors = ops.Load(), errs.Load()
	if row.Ops > 0 {
		row.ServerCPU = (clusterCPU(c) - server0) / time.Duration(row.Ops)
		row.ClientCPU = (processCPU(os.Getpid()) - client0) / time.Duration(row.Ops)
	}
	close(stop)
	wg.Wait()
	row.OpsPerSec = float64(row.Ops) / row.Elapsed.Seconds()
	return nil
}

// PrintThroughput writes rows as one table; rows of several rounds also
// get the spread of their ratio and each round's ops/s.
func PrintThroughput(w io.Writer, rows []ThroughputRow, cfg ThroughputConfig) {
	rounds := 0
	if len(rows) > 0 {
		rounds = len(rows[0].Runs)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	if rounds > 1 {
		fmt.Fprintf(tw, "config\tpartitions\tops/s (median)\tvs RF1 (median)\tvs RF1 range\terrors\tserver CPU µs/op\tclient CPU µs/op\trounds' ops/s\t\n")
	} else {
		fmt.Fprintf(tw, "config\tpartitions\tops/s\tvs RF1\terrors\tserver CPU µs/op\tclient CPU µs/op\t\n")
	}
	var single *ThroughputRow
	for i, r := range rows {
		if rounds > 1 {
			each := make([]string, len(r.Runs))
			for k, run := range r.Runs {
				each[k] = fmt.Sprintf("%.0f", run.OpsPerSec)
			}
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%.2f–%.2f\t%d\t%.1f\t%.1f\t%s\t\n", r.Name, r.Partitions, r.OpsPerSec, r.RatioToRF1,
				r.RatioMin, r.RatioMax, r.Errors, float64(r.ServerCPU)/1e3, float64(r.ClientCPU)/1e3, strings.Join(each, " "))
		} else {
			fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.2f\t%d\t%.1f\t%.1f\t\n", r.Name, r.Partitions, r.OpsPerSec, r.RatioToRF1, r.Errors,
				float64(r.ServerCPU)/1e3, float64(r.ClientCPU)/1e3)
		}
		if r.Nodes == 1 && i > 0 {
			single = &rows[i]
		}
	}
	tw.Flush()
	if single == nil || len(rows) == 0 {
		return
	}
	if rounds > 1 {
		// Each round's 3-node RF 1 row over its own single node.
		agg := make([]float64, 0, rounds)
		for k := range min(len(rows[0].Runs), len(single.Runs)) {
			if s := single.Runs[k].OpsPerSec; s > 0 {
				agg = append(agg, rows[0].Runs[k].OpsPerSec/s)
			}
		}
		if len(agg) > 0 {
			lo, hi := slices.Min(agg), slices.Max(agg)
			fmt.Fprintf(w, "cluster aggregate (RF1, %d nodes) / one node: %.2f (median of %d rounds; %.2f–%.2f)\n", rows[0].Nodes, median(agg), len(agg), lo, hi)
		}
		return
	}
	if single.OpsPerSec > 0 {
		fmt.Fprintf(w, "cluster aggregate (RF1, %d nodes) / one node: %.2f\n", rows[0].Nodes, rows[0].OpsPerSec/single.OpsPerSec)
	}
}

// clusterCPU is the CPU time the cluster's running server processes have
// used so far.
func clusterCPU(c *Cluster) time.Duration {
	var total time.Duration
	for i := range c.N() {
		if pid := c.Pid(i); pid > 0 {
			total += processCPU(pid)
		}
	}
	return total
}

// processCPU is the user + system time of process pid (every thread), 0
// when it cannot be read.
func processCPU(pid int) time.Duration {
	sec, err := vsredis.CPUSeconds(pid)
	if err != nil {
		return 0
	}
	return time.Duration(sec * float64(time.Second))
}
