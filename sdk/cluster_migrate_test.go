package sdk_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// Live migration (R-MIG-1..3, issue #12) from a client's side: nodes join
// and drain while writers run, and every acknowledged write reads back.

// ledger records, per key, the last value a writer had acknowledged.
type ledger struct {
	mu    sync.Mutex
	acked map[string]int
}

func (l *ledger) ack(k string, v int) {
	l.mu.Lock()
	l.acked[k] = v
	l.mu.Unlock()
}

// loadPace spaces each writer's calls: four writers still put a write in
// flight every 1 ms or so through every phase of a move (a fence lasts
// 10–30 ms), without spending the suite's CPU on the load itself.
const loadPace = 4 * time.Millisecond

// writeLoad runs writers until stop: each owns its keys and writes them
// in sequence, so the value read back must be exactly the last acknowledged
// one. Any failed call fails the test: a move costs a client at most a
// redirect or a Migrating retry inside the SDK.
func writeLoad(t *testing.T, c *sdk.Client, writers, keysEach int) (stop func() (ops int64), l *ledger) {
	t.Helper()
	l = &ledger{acked: map[string]int{}}
	var done atomic.Bool
	var wg sync.WaitGroup
	var ops atomic.Int64
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			pace := time.NewTicker(loadPace)
			defer pace.Stop()
			for i := 1; !done.Load(); i++ {
				<-pace.C
				k := fmt.Sprintf("w%d:%d", w, i%keysEach)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				r, err := c.Put(ctx, k, []byte(strconv.Itoa(i)), nil)
				cancel()
				if err != nil || !r.OK() {
					errs <- fmt.Errorf("put %s: %v %v", k, r.Status, err)
					return
				}
				l.ack(k, i)
				ops.Add(1)
			}
		})
	}
	return func() int64 {
		done.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		return ops.Load()
	}, l
}

// verifyLedger reads back every fixed key (exactly its value) and every
// ledger key: at least the value acknowledged before the read (a writer
// still running may have written a later one; an older one is a lost
// write). On a loss explain (when set) is given the lost keys first.
func verifyLedger(t *testing.T, c *sdk.Client, l *ledger, fixed map[string]string, explain func(lost []string)) {
	t.Helper()
	ctx := context.Background()
	lost := 0
	var lostKeys []string
	check := func(k, want string) {
		// Unavailability (a timeout, a redirect the map has not caught up
		// with on a starved machine) is retried for a while; a wrong value
		// or a NotFound is a lost write at once.
		var r sdk.Result
		var err error
		for deadline := time.Now().Add(testscale.D(30 * time.Second)); ; {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			r, err = c.Get(rctx, k)
			cancel()
			if (err == nil && (r.OK() || r.Status == sdk.StatusNotFound)) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond) // poll interval
		}
		ok := err == nil && r.OK() && string(r.Value) == want
		if w, perr := strconv.Atoi(want); perr == nil && err == nil && r.OK() {
			got, gerr := strconv.Atoi(string(r.Value))
			ok = gerr == nil && got >= w
		}
		if !ok {
			if lost < 5 {
				t.Errorf("%s: want %.20q, got %v %.20q %v", k, want, r.Status, r.Value, err)
			}
			lost++
			lostKeys = append(lostKeys, k)
		}
	}
	for k, v := range fixed {
		check(k, v)
	}
	l.mu.Lock()
	acked := make(map[string]int, len(l.acked))
	for k, v := range l.acked {
		acked[k] = v
	}
	l.mu.Unlock()
	for k, v := range acked {
		check(k, strconv.Itoa(v))
	}
	if lost > 0 {
		if explain != nil {
			explain(lostKeys)
		}
		t.Fatalf("%d of %d acknowledged keys lost or stale", lost, len(fixed)+len(acked))
	}
}

// waitSettled waits until no move is in flight, the leader has no
// rebalance left to do, and cond holds of the map. A rebalance moves data
// and pauses while a starved machine's members look suspected, so the
// bound is on progress: it fails once the map has not changed for a
// minute (scaled), or after ten in all, and then explains the stall.
func waitSettled(t *testing.T, cl *clustertest.Cluster, logs *logRing, what string, cond func(*cluster.PartitionMap) bool) *cluster.PartitionMap {
	t.Helper()
	stall, overall := testscale.D(time.Minute), time.Now().Add(testscale.D(10*time.Minute))
	var m *cluster.PartitionMap
	var seen uint64
	since := time.Now()
	for {
		m = cl.Map()
		if settledWith(cl, m, cond) {
			return m
		}
		if m != nil && m.Version != seen {
			seen, since = m.Version, time.Now()
		}
		if now := time.Now(); now.Sub(since) > stall || now.After(overall) {
			explainStall(t, cl, logs)
			t.Fatalf("waiting for %s: no new map for %v (map v%d)", what, now.Sub(since).Round(time.Second), seen)
		}
		time.Sleep(10 * time.Millisecond) // poll interval
	}
}

// settledWith reports that map m has no move in flight, the leader no
// rebalance left, and cond holds of m.
func settledWith(cl *clustertest.Cluster, m *cluster.PartitionMap, cond func(*cluster.PartitionMap) bool) bool {
	leader := cl.Leader()
	if m == nil || leader == nil || leader.Cluster().RebalanceStatus().Active {
		return false
	}
	for _, p := range m.Partitions {
		if p.Migrating() {
			return false
		}
	}
	return cond(m)
}

func TestLiveMigrationJoinAndDrainLoseNothing(t *testing.T) {
	for _, rf := range []int{1, 2} {
		t.Run(fmt.Sprint("RF", rf), func(t *testing.T) {
			opts := clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(c *server.Config) {
				c.ReplicationFactor = rf
			}}
			logs := newLogRing(50000)
			opts.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
			if os.Getenv("ZARIS_TEST_LOG") != "" {
				opts.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, logs), &slog.HandlerOptions{Level: slog.LevelInfo}))
			}
			cl := clustertest.Start(t, 3, opts)
			explain := func(lost []string) { explainLoss(t, cl, logs, lost) }
			c := realConnect(t, cl.ConnString())
			ctx := context.Background()

			// Keys written once before scaling and never again.
			fixed := map[string]string{}
			for i := range 2000 {
				k, v := fmt.Sprintf("fixed:%d", i), fmt.Sprintf("v%d", i)
				if r, err := c.Put(ctx, k, []byte(v), nil); err != nil || !r.OK() {
					t.Fatalf("put %s: %v %v", k, r.Status, err)
				}
				fixed[k] = v
			}
			stop, l := writeLoad(t, c, 4, 300)

			// A node joins: auto-rebalance gives it its share, live.
			n4 := cl.AddNode()
			waitSettled(t, cl, logs, "the joiner holds partitions and no move is in flight", func(m *cluster.PartitionMap) bool {
				return cluster.Holds(m, cluster.NodeID(n4.Config().NodeID))
			})
			verifyLedger(t, c, l, fixed, explain)

			// A node is drained: its partitions move away, then it leaves.
			victim := cl.Node("n2")
			cl.Decommission(victim)
			waitSettled(t, cl, logs, "the drained node's partitions live elsewhere", func(m *cluster.PartitionMap) bool {
				_, listed := m.Node("n2")
				return !cluster.Holds(m, "n2") && !listed
			})
			ops := stop()
			verifyLedger(t, c, l, fixed, explain)
			var st cluster.RebalanceStatus
			if leader := cl.Leader(); leader != nil {
				st = leader.Cluster().RebalanceStatus()
			}
			t.Logf("RF %d: %d writes through a join and a drain; %d moves completed, %d aborted, last fence pause %v",
				rf, ops, st.Completed, st.Aborted, st.FencePause)
		})
	}
}

// tolerantLoad is writeLoad for runs with faults: a write that fails is
// not acknowledged (a Timeout may still have applied: values only grow,
// so a read must return at least the last acknowledged one).
func tolerantLoad(c *sdk.Client, writers, keysEach int) (stop func() (acked, failed int64), l *ledger) {
	l = &ledger{acked: map[string]int{}}
	var done atomic.Bool
	var wg sync.WaitGroup
	var ok, bad atomic.Int64
	for w := range writers {
		wg.Go(func() {
			pace := time.NewTicker(loadPace)
			defer pace.Stop()
			for i := 1; !done.Load(); i++ {
				<-pace.C
				k := fmt.Sprintf("w%d:%d", w, i%keysEach)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				r, err := c.Put(ctx, k, []byte(strconv.Itoa(i)), nil)
				cancel()
				if err != nil || !r.OK() {
					bad.Add(1)
					continue
				}
				l.ack(k, i)
				ok.Add(1)
			}
		})
	}
	return func() (int64, int64) {
		done.Store(true)
		wg.Wait()
		return ok.Load(), bad.Load()
	}, l
}

// Faults during a move (issue #12 item 6), at RF 2 with sync replication
// to every copy, in each phase of the move: while the snapshot streams
// (copying), once the incoming copy is caught up (the fence comes next),
// with the source fenced and the proof held (the flip comes next), and
// right after the flip. Whichever node dies there — the incoming copy, the
// source, the raft leader — the move completes or aborts, every partition
// keeps one live owner, and no acknowledged write is lost. The leader's
// driver stops in the phase through a test hook (server.Config.
// MigrationPhaseHook), so the fault lands exactly there, not wherever the
// polling happened to catch it.
func TestLiveMigrationFaults(t *testing.T) {
	phases := []string{cluster.MigrationPhaseCopying, cluster.MigrationPhaseCaughtUp, cluster.MigrationPhaseFenced,
		cluster.MigrationPhaseFlipped}
	for _, victim := range []string{"target", "source", "leader"} {
		for _, phase := range phases {
			t.Run(victim+"/"+phase, func(t *testing.T) { migrationFault(t, victim, phase) })
		}
	}
}

// phaseStop is one stop of the leader's driver in a phase: the partition
// and the node whose driver reached it; the test answers whether that
// driver goes on.
type phaseStop struct {
	p      cluster.Partition
	caller string
	goOn   chan bool
}

func migrationFault(t *testing.T, victim, phase string) {
	var (
		armed  atomic.Bool
		frozen sync.Map // node id → true: that node's driver stops for good (the "dead" leader)
		joiner atomic.Value
	)
	stops := make(chan phaseStop)
	opts := clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(c *server.Config) {
		c.ReplicationFactor = 2
		c.ReplicationMode, c.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		c.MemoryMaxBytes = 512 << 20
		self := c.NodeID
		c.MigrationPhaseHook = func(ph string, p cluster.Partition) bool {
			if _, dead := frozen.Load(self); dead {
				return false
			}
			j, _ := joiner.Load().(string)
			toJoiner := j != "" && (p.MoveTo == cluster.NodeID(j) || slices.Contains(p.Incoming, cluster.NodeID(j)))
			// The source and the leader are different nodes in their own
			// cases (a move whose source is the driver's node would make
			// both the same fault).
			distinct := victim == "target" || p.ActiveOwner != cluster.NodeID(self)
			if ph != phase || !toJoiner || !distinct || !armed.CompareAndSwap(true, false) {
				return true
			}
			st := phaseStop{p: p, caller: self, goOn: make(chan bool)}
			stops <- st
			return <-st.goOn
		}
	}}
	// Every node's log lines are kept: a loss explains itself (explainLoss).
	logs := newLogRing(50000)
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	if os.Getenv("ZARIS_TEST_LOG") != "" {
		opts.Logger = slog.New(slog.NewTextHandler(io.MultiWriter(os.Stderr, logs), nil))
	}
	cl := clustertest.Start(t, 3, opts)
	c := realConnect(t, cl.ConnString())
	ctx := context.Background()
	fixed := map[string]string{}
	val := make([]byte, 256)
	var items []sdk.KV
	for i := range 1500 { // ~37 per partition: a partition served empty loses dozens
		k := fmt.Sprintf("fixed:%d", i)
		v := fmt.Sprintf("v%d:%s", i, val)
		fixed[k] = v
		items = append(items, sdk.KV{Key: k, Value: []byte(v)})
	}
	for i := 0; i < len(items); i += 500 {
		if _, err := c.PutMany(ctx, items[i:min(i+500, len(items))]); err != nil {
			t.Fatal(err)
		}
	}
	stop, l := tolerantLoad(c, 4, 200)

	armed.Store(true)
	joiner.Store("n4")
	n4 := cl.AddNode()
	if n4.Config().NodeID != "n4" {
		t.Fatalf("the joiner is %s, not n4", n4.Config().NodeID)
	}
	var st phaseStop
	select {
	case st = <-stops:
	case <-time.After(testscale.D(90 * time.Second)):
		explainStall(t, cl, logs)
		t.Fatalf("no move towards n4 reached the %s phase", phase)
	}
	var dead string
	switch victim {
	case "target":
		dead = "n4"
	case "source":
		// The partition as the driver saw it before the flip: its owner
		// is the source in every phase.
		dead = string(st.p.ActiveOwner)
	case "leader":
		dead = st.caller
	}
	t.Logf("%s: killing the %s %s while partition %d moves from %s (incoming %v, to %q), driver on %s",
		phase, victim, dead, st.p.ID, st.p.ActiveOwner, st.p.Incoming, st.p.MoveTo, st.caller)
	if dead == st.caller {
		// The driver's own node dies: it goes no further, ever.
		frozen.Store(st.caller, true)
		st.goOn <- false
		cl.Stop(cl.Node(dead))
	} else {
		cl.Stop(cl.Node(dead))
		st.goOn <- true
	}
	deadID := cluster.NodeID(dead)

	// Every partition ends with one live owner and no move stuck.
	cl.Eventually(90*time.Second, "every partition served by a live owner, no move stuck", func() bool {
		leader := cl.Leader()
		if leader == nil {
			return false
		}
		m := leader.Cluster().Map()
		for _, p := range m.Partitions {
			if p.ActiveOwner == deadID || p.ActiveOwner == "" || slices.Contains(p.Incoming, deadID) ||
				(p.MoveTo != "" && p.MoveTo == deadID) {
				return false
			}
		}
		return true
	})
	acked, failed := stop()
	verifyLedger(t, c, l, fixed, func(lost []string) { explainLoss(t, cl, logs, lost) })
	t.Logf("%s killed in phase %s: %d writes acknowledged, %d refused or timed out; nothing lost", victim, phase, acked, failed)
}
