package chaos

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/hog"
)

// SlowConfig is the slow-not-dead scenario (issue #16 item 1): a cluster
// with production timings on a machine made busy by a CPU hog, one node
// stopped (SIGSTOP) again and again for less than the failure detector's
// dead threshold. Nothing of it is a failure: no partition may be promoted
// or declared unavailable, and no acknowledged write may be lost.
type SlowConfig struct {
	Cluster    Options       // DefaultTimings is forced: the production detection is under test
	Duration   time.Duration // default 35 s
	Stall      time.Duration // one SIGSTOP; default 1.5 s (the dead verdict takes about 3 s)
	StallEvery time.Duration // from one stall's start to the next; default 8 s
	Spinners   int           // CPU hog goroutines; default 2 × runtime.NumCPU()
	Workload   WorkloadConfig
	Out        io.Writer
}

// SlowReport is the outcome of RunSlow.
type SlowReport struct {
	Result
	Stalls      int
	Promotions  float64 // zaris_failover_promotions_total summed over the nodes
	Unavailable float64 // zaris_failover_unavailable_total summed over the nodes
	// NotHealthy counts the samples (one per second) in which the leader's
	// map showed a partition that was not healthy.
	NotHealthy int
	Crashes    []string
	Problems   []string
}

// Failed reports whether a slow node was treated as a dead one.
func (r SlowReport) Failed() bool {
	return r.Promotions > 0 || r.Unavailable > 0 || len(r.Lost) > 0 || r.Corrupt > 0 || len(r.Unverified) > 0 ||
		len(r.Crashes) > 0 || len(r.Problems) > 0
}

// Summary is the one summary line of a run.
func (r SlowReport) Summary() string {
	return fmt.Sprintf("stalls=%d promotions=%.0f unavailable=%.0f not_healthy_samples=%d %s",
		r.Stalls, r.Promotions, r.Unavailable, r.NotHealthy, r.Result.Summary())
}

// RunSlow runs the slow-not-dead scenario and returns its report; an error
// means the run itself could not be carried out.
func RunSlow(ctx context.Context, cfg SlowConfig) (SlowReport, error) {
	if cfg.Duration <= 0 {
		cfg.Duration = 35 * time.Second
	}
	if cfg.Stall <= 0 {
		cfg.Stall = 1500 * time.Millisecond
	}
	if cfg.StallEvery <= cfg.Stall {
		cfg.StallEvery = max(8*time.Second, 2*cfg.Stall)
	}
	if cfg.Spinners <= 0 {
		cfg.Spinners = 2 * runtime.NumCPU()
	}
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	o := cfg.Cluster
	o.DefaultTimings = true
	if o.RF == 0 {
		o.RF = 1
	}
	if o.Log == nil {
		o.Log = out
	}
	c, err := Start(ctx, o)
	if err != nil {
		return SlowReport{}, err
	}
	defer c.Close()
	if err := c.WaitHealthy(ctx); err != nil {
		return SlowReport{}, err
	}
	cfg.Workload.defaults()
	w, err := StartWorkload(ctx, c.ConnString(), cfg.Workload, out)
	if err != nil {
		return SlowReport{}, err
	}
	defer w.Stop()
	tl := NewTimeline(out)

	hogCtx, stopHog := context.WithCancel(ctx)
	hogDone := make(chan struct{})
	go func() { defer close(hogDone); hog.Spin(hogCtx, cfg.Spinners) }()
	defer func() { stopHog(); <-hogDone }()
	tl.Add("CPU hog: %d spinners on %d CPUs; stalls of %v every %v for %v", cfg.Spinners, runtime.NumCPU(), cfg.Stall, cfg.StallEvery, cfg.Duration)

	// The stalled node: not the leader (a stalled leader costs an election,
	// which is not what is measured here, though it must not fail anything
	// either), so the control plane keeps judging the slow node.
	victim := 0
	if l, err := c.Leader(ctx); err == nil {
		victim = (l + 1) % c.N()
	}
	rep := SlowReport{}
	end := time.Now().Add(cfg.Duration)
	nextStall := time.Now().Add(cfg.StallEvery / 2)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var runErr error
	for time.Now().Before(end) && runErr == nil {
		if time.Now().After(nextStall) {
			nextStall = nextStall.Add(cfg.StallEvery)
			rep.Stalls++
			if err := pauseFor(ctx, c, tl, victim, cfg.Stall, "slow, not dead"); err != nil {
				runErr = err
				break
			}
			continue
		}
		select {
		case <-ctx.Done():
			runErr = ctx.Err()
		case <-tick.C:
			if st, err := c.view(ctx); err == nil {
				for _, p := range st.Partitions {
					if p.Health != "healthy" {
						rep.NotHealthy++
						tl.Add("partition %d on %s is %s", p.ID, p.ActiveOwner, p.Health)
						break
					}
				}
			}
		}
	}
	stopHog()
	<-hogDone
	tl.Add("hog stopped")
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	if err := Heal(hctx, c, tl); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("heal: %w", err))
	}
	cancel()
	for i := range c.N() {
		p, err := c.metric(ctx, i, "zaris_failover_promotions_total")
		if err != nil {
			runErr = errors.Join(runErr, err)
		}
		u, err := c.metric(ctx, i, "zaris_failover_unavailable_total")
		if err != nil {
			runErr = errors.Join(runErr, err)
		}
		rep.Promotions += p
		rep.Unavailable += u
	}
	vctx, vcancel := context.WithTimeout(ctx, 3*time.Minute)
	rep.Result = w.Verify(vctx)
	vcancel()
	rep.Crashes, rep.Problems = c.Crashes(), c.LogProblems()
	tl.Add("%s", rep.Summary())
	return rep, runErr
}

// metric reads one unlabelled metric from node i's /metrics.
func (c *Cluster) metric(ctx context.Context, i int, name string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+c.HTTPAddr(i)+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("chaos: %s has no metric %s", NodeID(i), name)
}
