package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// ElasticConfig is the elastic scenario (issue #12 item 6): a cluster
// scaled out by two nodes and in by a drain, live, while writers keep a
// ledger, with a fault in the middle of the moves.
type ElasticConfig struct {
	Cluster  Options
	Fixed    int // keys written once before scaling and never again; default 2000
	Workload WorkloadConfig
	Out      io.Writer
}

// ElasticReport is the outcome of RunElastic.
type ElasticReport struct {
	Result
	FixedLost  int // fixed keys not read back with their value
	Moves      uint64
	Aborted    uint64
	KeysMoved  int64
	BytesMoved int64
	Faults     []string
	Crashes    []string
	Problems   []string
	Steps      []string // per scaling step: keys moved vs the minimum
}

// Details are the lines printed before the summary: the workload's, then
// one per scaling step.
func (r ElasticReport) Details() []string { return append(r.Result.Details(), r.Steps...) }

// minimumMoved is the fewest keys a scaling step from `from` to `to` nodes
// must copy with rf copies of keys live keys: every copy the joiner will
// hold, or the leaver held, is built once (see the planner's table, D26).
func minimumMoved(keys, rf, from, to int) int {
	share := max(from, to) // the joiner's or the leaver's share is 1/max
	return keys * min(rf, to) / share
}

// Failed reports whether an acknowledged write was lost or a node crashed.
func (r ElasticReport) Failed() bool {
	return r.FixedLost > 0 || len(r.Lost) > 0 || r.Corrupt > 0 || len(r.Unverified) > 0 || len(r.Crashes) > 0 ||
		len(r.Problems) > 0
}

// Summary is the one summary line of a run.
func (r ElasticReport) Summary() string {
	return fmt.Sprintf("moves=%d aborted=%d moved_keys=%d moved_bytes=%d fixed_lost=%d %s", r.Moves, r.Aborted,
		r.KeysMoved, r.BytesMoved, r.FixedLost, r.Result.Summary())
}

// RunElastic starts Cluster.Nodes nodes, writes the fixed keys, starts the
// workload, adds two nodes (each given its share by auto-rebalance), drains
// the second node, and verifies every acknowledged write. A fault hits the
// moves of the second join: at RF ≥ 2 a 3 s SIGSTOP of the joiner (the
// incoming side), then a SIGKILL of an original non-leader node (restarted
// at once); at RF 1 a 1 s SIGSTOP of an original node (a slow node: at RF 1
// a kill loses that node's data by definition).
func RunElastic(ctx context.Context, cfg ElasticConfig) (ElasticReport, error) {
	out := cfg.Out
	if out == nil {
		out = io.Discard
	}
	if cfg.Fixed <= 0 {
		cfg.Fixed = 2000
	}
	o := cfg.Cluster
	if o.Log == nil {
		o.Log = out
	}
	c, err := Start(ctx, o)
	if err != nil {
		return ElasticReport{}, err
	}
	defer c.Close()
	if err := c.WaitHealthy(ctx); err != nil {
		return ElasticReport{}, err
	}
	tl := NewTimeline(out)
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		return ElasticReport{}, err
	}
	defer cl.Close()
	fixed := make([]sdk.KV, cfg.Fixed)
	for i := range fixed {
		fixed[i] = sdk.KV{Key: fmt.Sprintf("fixed:%d", i), Value: fmt.Appendf(nil, "v%d", i)}
	}
	for i := 0; i < len(fixed); i += 500 {
		res, err := cl.PutMany(ctx, fixed[i:min(i+500, len(fixed))])
		if err != nil {
			return ElasticReport{}, fmt.Errorf("chaos: writing the fixed keys: %w", err)
		}
		for _, r := range res {
			if !r.OK() {
				return ElasticReport{}, fmt.Errorf("chaos: writing the fixed keys: %v", r.Status)
			}
		}
	}
	tl.Add("%d fixed keys written", len(fixed))
	cfg.Workload.defaults()
	w, err := StartWorkload(ctx, c.ConnString(), cfg.Workload, out)
	if err != nil {
		return ElasticReport{}, err
	}
	defer w.Stop()

	rep := ElasticReport{}
	var runErr error
	step := func(what string, fn func() error) {
		if runErr != nil {
			return
		}
		tl.Add("%s", what)
		if err := fn(); err != nil {
			runErr = fmt.Errorf("%s: %w", what, err)
			tl.Add("failed: %v", err)
		}
	}
	// The leader's counters run since it leads (a drained or killed
	// leader's successor starts from zero): the last reading of each.
	type counters struct {
		moves, aborted   uint64
		keys, bytesMoved int64
	}
	byLeader := map[int]counters{}
	var stepStart int64 // keys moved before the step
	settled := func(cond func(*Status) bool) error {
		sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		return c.poll(sctx, "the rebalance settled", func() (bool, error) {
			l, err := c.Leader(sctx)
			if err != nil {
				return false, nil
			}
			st, err := c.Status(sctx, l)
			if err != nil || st.Rebalance == nil || st.Rebalance.Active || st.Rebalance.Pending {
				return false, nil
			}
			for _, p := range st.Partitions {
				if len(p.Incoming) > 0 || p.MoveTo != "" {
					return false, nil
				}
			}
			if cond(st) {
				// The leader's counters since it leads (a leader change
				// restarts them): the last reading.
				byLeader[l] = counters{st.Rebalance.Completed, st.Rebalance.Aborted, st.Rebalance.KeysMoved, st.Rebalance.BytesMoved}
				rep.Moves, rep.Aborted, rep.KeysMoved, rep.BytesMoved = 0, 0, 0, 0
				for _, c := range byLeader {
					rep.Moves, rep.Aborted = rep.Moves+c.moves, rep.Aborted+c.aborted
					rep.KeysMoved, rep.BytesMoved = rep.KeysMoved+c.keys, rep.BytesMoved+c.bytesMoved
				}
				return true, nil
			}
			return false, nil
		})
	}
	holds := func(st *Status, id string) bool {
		for _, p := range st.Partitions {
			if p.ActiveOwner == id || slices.Contains(p.Replicas, id) {
				return true
			}
		}
		return false
	}
	original := c.N()
	var added []int
	liveKeys := cfg.Fixed + cfg.Workload.Keys
	account := func(from, to int) {
		moved := rep.KeysMoved - stepStart
		stepStart = rep.KeysMoved
		rep.Steps = append(rep.Steps, fmt.Sprintf("step %d → %d nodes: moved_keys=%d (even-spread minimum ≈ %d of %d live keys at RF %d)",
			from, to, moved, minimumMoved(liveKeys, max(o.RF, 1), from, to), liveKeys, max(o.RF, 1)))
	}
	for k := range 2 {
		step(fmt.Sprintf("add node %d", k+1), func() error {
			i, err := c.AddNode(ctx)
			if err != nil {
				return err
			}
			added = append(added, i)
			if k == 1 {
				// A fault in the middle of the moves towards the new node
				// (when they are quicker than the poll, it hits the end of
				// the rebalance instead).
				if err := waitMoving(ctx, c); err != nil {
					tl.Add("no move seen in flight: %v", err)
				}
				victim := 0
				if l, err := c.Leader(ctx); err == nil && l == victim {
					victim = 1
				}
				if o.RF >= 2 {
					// The incoming side stalls first (a SIGSTOP past the
					// suspect escalation of these timings), then an
					// original node dies and comes straight back.
					rep.Faults = append(rep.Faults, "SIGSTOP 3s "+NodeID(i))
					if err := pauseFor(ctx, c, tl, i, 3*time.Second, "the joiner stalls mid-move"); err != nil {
						return err
					}
					rep.Faults = append(rep.Faults, "SIGKILL "+NodeID(victim))
					tl.Add("SIGKILL %s mid-move", NodeID(victim))
					if err := c.Kill(victim); err != nil {
						return err
					}
					if err := c.Restart(victim); err != nil {
						return err
					}
				} else {
					rep.Faults = append(rep.Faults, "SIGSTOP 1s "+NodeID(victim))
					if err := pauseFor(ctx, c, tl, victim, time.Second, "slow mid-move"); err != nil {
						return err
					}
				}
			}
			return settled(func(st *Status) bool { return holds(st, NodeID(i)) })
		})
		if runErr == nil {
			account(original+k, original+k+1)
		}
	}
	step("drain "+NodeID(1), func() error {
		dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		if err := c.Decommission(dctx, 1); err != nil {
			return err
		}
		return settled(func(st *Status) bool {
			for _, n := range st.Nodes {
				if n.ID == NodeID(1) && n.InMap {
					return false
				}
			}
			return !holds(st, NodeID(1))
		})
	})
	if runErr == nil {
		account(original+2, original+1)
	}
	tl.Add("%d original nodes, %d added, 1 drained", original, len(added))
	hctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	if err := Heal(hctx, c, tl); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("heal: %w", err))
	}
	cancel()
	vctx, vcancel := context.WithTimeout(ctx, 3*time.Minute)
	rep.Result = w.Verify(vctx)
	for _, kv := range fixed {
		r, err := cl.Get(vctx, kv.Key)
		if err != nil || !r.OK() || string(r.Value) != string(kv.Value) {
			rep.FixedLost++
		}
	}
	vcancel()
	rep.Crashes, rep.Problems = c.Crashes(), c.LogProblems()
	tl.Add("%s", rep.Summary())
	return rep, runErr
}

// waitMoving waits until the leader's map shows a move in flight.
func waitMoving(ctx context.Context, c *Cluster) error {
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return c.poll(mctx, "a move in flight", func() (bool, error) {
		st, err := c.view(mctx)
		if err != nil {
			return false, nil
		}
		for _, p := range st.Partitions {
			if len(p.Incoming) > 0 || p.MoveTo != "" {
				return true, nil
			}
		}
		return false, nil
	})
}
