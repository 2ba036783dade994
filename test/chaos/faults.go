package chaos

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"
)

// FaultKind is one kind of fault of the schedule.
type FaultKind int

// The schedule cycles through the kinds in this order.
const (
	KillOwner  FaultKind = iota // kill -9 the active owner of a random key's partition, restart it later
	PauseNode                   // SIGSTOP a node (an owner every other time) past the suspect escalation, then SIGCONT
	KillLeader                  // kill -9 the control-plane leader, restart it later
	numFaultKinds
)

func (k FaultKind) String() string {
	switch k {
	case KillOwner:
		return "kill-owner"
	case PauseNode:
		return "pause"
	case KillLeader:
		return "kill-leader"
	}
	return "fault(" + fmt.Sprint(int(k)) + ")"
}

// ScheduleConfig paces the fault schedule. Durations are drawn uniformly
// from [min, max] with the seeded source, so a seed reproduces the
// schedule's choices (not the cluster's timing).
type ScheduleConfig struct {
	Seed     uint64
	Duration time.Duration // no fault starts after this long; at least one full cycle runs
	// DownMin..DownMax is how long a killed node stays down: by default
	// 2–12 s, so that with ChaosTimings some owners return before their
	// failover (restart recovery) and some after it (a demoted copy).
	DownMin, DownMax time.Duration
	// PauseMin..PauseMax is how long a paused node stays stopped: by
	// default 9–13 s, beyond membership detection (about 6 s for 3 nodes on
	// loopback) plus ChaosTimings' suspect escalation (2 s), so a paused
	// owner is failed over and resumes as a deposed owner; below member
	// grace (20 s), so it keeps its place in the map.
	PauseMin, PauseMax time.Duration
	GapMin             time.Duration // healthy time between faults; default 1 s
	GapMax             time.Duration // default 3 s
	HealTimeout        time.Duration // WaitHealthy bound after each fault; default 90 s
	KeyOf              func(i int) string
	Keys               int // KeyOf's domain, to pick a random key
	MinFullCycles      int // default 1
}

func (c *ScheduleConfig) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.DownMin, 2*time.Second)
	def(&c.DownMax, 12*time.Second)
	def(&c.PauseMin, 9*time.Second)
	def(&c.PauseMax, 13*time.Second)
	def(&c.GapMin, time.Second)
	def(&c.GapMax, 3*time.Second)
	def(&c.HealTimeout, 90*time.Second)
	if c.MinFullCycles <= 0 {
		c.MinFullCycles = 1
	}
	if c.KeyOf == nil || c.Keys <= 0 {
		var wc WorkloadConfig
		wc.defaults()
		c.KeyOf, c.Keys = wc.Key, wc.Keys
	}
}

// Event is one line of the fault timeline.
type Event struct {
	At   time.Time
	What string
}

func (e Event) String() string { return e.At.UTC().Format("15:04:05.000") + " " + e.What }

// Timeline collects fault events, printing each as it happens.
type Timeline struct {
	mu     sync.Mutex // guards events
	events []Event
	out    io.Writer
}

// NewTimeline returns a timeline that also prints each event to out (nil =
// nowhere).
func NewTimeline(out io.Writer) *Timeline {
	if out == nil {
		out = io.Discard
	}
	return &Timeline{out: out}
}

// Add records an event now.
func (t *Timeline) Add(format string, args ...any) {
	e := Event{At: time.Now(), What: fmt.Sprintf(format, args...)}
	t.mu.Lock()
	t.events = append(t.events, e)
	t.mu.Unlock()
	fmt.Fprintf(t.out, "%s fault: %s\n", e.At.UTC().Format("15:04:05.000"), e.What)
}

// Events returns the events so far.
func (t *Timeline) Events() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Event(nil), t.events...)
}

// FaultStats counts what a schedule did.
type FaultStats struct {
	Done     [numFaultKinds]int
	Unhealed int // faults after which the cluster did not heal within HealTimeout
}

func (s FaultStats) String() string {
	return fmt.Sprintf("faults: kill-owner=%d pause=%d kill-leader=%d unhealed=%d",
		s.Done[KillOwner], s.Done[PauseNode], s.Done[KillLeader], s.Unhealed)
}

// RunSchedule injects faults into c until cfg.Duration has passed (and at
// least cfg.MinFullCycles full cycles ran) or ctx ends. Only one node is
// faulty at a time: each fault is repaired (restart, SIGCONT) and the
// cluster must be healthy again before the next one. A cluster that does
// not heal within HealTimeout stops the schedule (injecting more would
// stack faults) with an error.
func RunSchedule(ctx context.Context, c *Cluster, cfg ScheduleConfig, tl *Timeline) (FaultStats, error) {
	cfg.defaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x636861_6f73))
	between := func(lo, hi time.Duration) time.Duration {
		if hi <= lo {
			return lo
		}
		return lo + time.Duration(rng.Int64N(int64(hi-lo)+1))
	}
	var st FaultStats
	start := time.Now()
	tl.Add("schedule starts; %s", c.Describe(ctx))
	for n := 0; ; n++ {
		kind := FaultKind(n % int(numFaultKinds))
		if ctx.Err() != nil {
			return st, nil
		}
		if time.Since(start) >= cfg.Duration && n >= cfg.MinFullCycles*int(numFaultKinds) {
			return st, nil
		}
		if err := sleepCtx(ctx, between(cfg.GapMin, cfg.GapMax)); err != nil {
			return st, nil
		}
		var err error
		switch kind {
		case KillOwner:
			key := cfg.KeyOf(rng.IntN(cfg.Keys))
			var owner int
			owner, err = c.OwnerOf(ctx, key)
			if err == nil {
				err = killFor(ctx, c, tl, owner, between(cfg.DownMin, cfg.DownMax), fmt.Sprintf("owner of %s", key))
			}
		case PauseNode:
			victim, why := rng.IntN(c.N()), "random node"
			if n/int(numFaultKinds)%2 == 0 {
				key := cfg.KeyOf(rng.IntN(cfg.Keys))
				victim, err = c.OwnerOf(ctx, key)
				why = "owner of " + key
			}
			if err == nil {
				err = pauseFor(ctx, c, tl, victim, between(cfg.PauseMin, cfg.PauseMax), why)
			}
		case KillLeader:
			var leader int
			leader, err = c.Leader(ctx)
			if err == nil {
				err = killFor(ctx, c, tl, leader, between(cfg.DownMin, cfg.DownMax), "raft leader")
			}
		}
		if err != nil {
			tl.Add("%s failed: %v", kind, err)
			return st, err
		}
		st.Done[kind]++
		hctx, cancel := context.WithTimeout(ctx, cfg.HealTimeout)
		t0 := time.Now()
		err = c.WaitHealthy(hctx)
		cancel()
		if err != nil {
			st.Unhealed++
			tl.Add("cluster not healthy %v after %s: %v", cfg.HealTimeout, kind, err)
			return st, fmt.Errorf("chaos: cluster did not heal after %s: %w", kind, err)
		}
		tl.Add("healthy again %v after the repair; %s", time.Since(t0).Round(time.Millisecond), c.Describe(ctx))
	}
}

func killFor(ctx context.Context, c *Cluster, tl *Timeline, i int, down time.Duration, why string) error {
	tl.Add("kill -9 %s (%s), down for %v", NodeID(i), why, down)
	if err := c.Kill(i); err != nil {
		return err
	}
	_ = sleepCtx(ctx, down) // the fault's length; on ctx end restart at once
	tl.Add("restart %s", NodeID(i))
	return c.Restart(i)
}

func pauseFor(ctx context.Context, c *Cluster, tl *Timeline, i int, d time.Duration, why string) error {
	tl.Add("SIGSTOP %s (%s) for %v", NodeID(i), why, d)
	if err := c.Pause(i); err != nil {
		return err
	}
	_ = sleepCtx(ctx, d)
	tl.Add("SIGCONT %s", NodeID(i))
	return c.Resume(i)
}

// Heal undoes every fault still in place — resumes paused nodes, restarts
// killed ones — and waits until the cluster is healthy.
func Heal(ctx context.Context, c *Cluster, tl *Timeline) error {
	for i := range c.N() {
		switch {
		case c.Gone(i):
		case c.Paused(i):
			tl.Add("heal: SIGCONT %s", NodeID(i))
			if err := c.Resume(i); err != nil {
				return err
			}
		case !c.Running(i):
			tl.Add("heal: restart %s", NodeID(i))
			if err := c.Restart(i); err != nil {
				return err
			}
		}
	}
	if err := c.WaitHealthy(ctx); err != nil {
		return err
	}
	tl.Add("heal: cluster healthy")
	return nil
}

// sleepCtx sleeps d or until ctx ends (then it returns ctx's error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
