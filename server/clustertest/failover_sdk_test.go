package clustertest_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestSDKRidesThroughAnOwnerKill is issue 8 item 4 on a real cluster (3
// nodes, RF 2, Sync + All): a writer and a reader issue operations through
// the SDK cluster client without pause while a partition's owner is killed.
// Every operation succeeds within its deadline (the client retries the
// typed retryable statuses and dead connections transparently), statuses
// stay typed (never a bare transport error), and every acknowledged sync
// write reads back afterwards.
func TestSDKRidesThroughAnOwnerKill(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
	}})
	ride(t, c, func() {
		// Kill the owner of a partition; wait for its partitions to move.
		victim := c.Node(string(c.Map().Partitions[0].ActiveOwner))
		c.Stop(victim)
		c.Eventually(20*time.Second, "a new owner of the victim's partitions", func() bool {
			for _, p := range c.Map().Partitions {
				if string(p.ActiveOwner) == victim.Config().NodeID {
					return false
				}
			}
			return true
		})
	})
}

// TestSDKRidesThroughAnOwnerRestart: the owner comes back empty before any
// failover (restart recovery, R-REP-6) while the SDK keeps writing and
// reading: its held segments answer a retryable redirect, the client
// retries within its deadline, no acknowledged sync write is lost.
func TestSDKRidesThroughAnOwnerRestart(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		cfg.Timings.MemberGrace = time.Minute // no failover: the owner returns under its lease
		cfg.Timings.GossipSuspicionMult = 20  // nor a dead verdict while a loaded machine restarts it
	}})
	ride(t, c, func() {
		m := c.Map()
		victim := c.Node(string(m.Partitions[0].ActiveOwner))
		back := c.Restart(victim, nil)
		c.Eventually(20*time.Second, "the restarted owner certified", func() bool {
			for _, p := range c.Map().Partitions {
				if string(p.ActiveOwner) == back.Config().NodeID && !back.Replication().Certified(p.Identity) {
					return false
				}
			}
			return true
		})
		var recoveries uint64
		for _, nd := range c.Running() {
			recoveries += nd.Cluster().FailoverStats().Recoveries
		}
		if recoveries == 0 {
			t.Error("no restart recovery was started")
		}
	})
}

// ride runs a writer and a reader through the SDK cluster client while
// disrupt runs, then checks every operation succeeded within its deadline
// and every acknowledged write reads back.
//
// Every key lives in the partition of segment 0 — the one whose owner is
// disrupted: with copies spread over every node the victim also holds
// replicas of other partitions, and under an All quorum their writes wait
// for it (Timeout) until it is back or leaves the map — the documented
// contract, not what these tests are about.
func ride(t *testing.T, c *clustertest.Cluster, disrupt func()) {
	t.Helper()
	tag := partition0Tag(t, c)
	// The SDK's defaults: its attempts span about the default call timeout,
	// longer than a failover, so the calls ride through (R-REP-3 item 4).
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	deadline := testscale.D(10 * time.Second)

	var (
		mu     sync.Mutex
		acked  = map[string]string{}
		fails  []string
		stop   = make(chan struct{})
		wg     sync.WaitGroup
		writes atomic.Int64
		reads  atomic.Int64
		// ambiguous: writes whose connection died in flight
		ambiguous atomic.Int64
	)
	fail := func(s string) {
		mu.Lock()
		fails = append(fails, s)
		mu.Unlock()
	}
	wg.Add(2)
	go func() { // writer
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k, v := tag+"ride:"+strconv.Itoa(i), "v"+strconv.Itoa(i)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			r, err := cl.Put(ctx, k, []byte(v), nil)
			cancel()
			if errors.Is(err, sdk.ErrUnreachable) && !errors.Is(err, context.DeadlineExceeded) {
				// Sent, and the connection died before the answer: the
				// SDK never re-sends a write that may have applied. Not
				// acknowledged, and typed.
				ambiguous.Add(1)
				continue
			}
			if err != nil || !r.OK() {
				fail("put " + k + ": " + r.Status.String() + " " + errString(err))
				continue
			}
			writes.Add(1)
			mu.Lock()
			acked[k] = v
			mu.Unlock()
		}
	}()
	go func() { // reader of acknowledged keys
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n := int(writes.Load())
			if n == 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			k := tag + "ride:" + strconv.Itoa(i%n)
			mu.Lock()
			want, ok := acked[k]
			mu.Unlock()
			if !ok {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			r, err := cl.Get(ctx, k)
			cancel()
			if err != nil || !r.OK() || string(r.Value) != want {
				fail("get " + k + ": " + r.Status.String() + " " + string(r.Value) + " " + errString(err))
				continue
			}
			reads.Add(1)
		}
	}()

	eventually(t, 60*time.Second, "traffic before the disruption", func() bool { return writes.Load() >= 50 && reads.Load() >= 50 })
	killedAt := writes.Load()
	disrupt()
	// Keep going after the disruption: traffic must flow again.
	eventually(t, 20*time.Second, "writes after the disruption", func() bool {
		mu.Lock()
		failed := len(fails) > 0
		mu.Unlock()
		return writes.Load() >= killedAt+50 || failed
	})
	close(stop)
	wg.Wait()
	if writes.Load() <= killedAt {
		t.Fatalf("no write succeeded after the disruption (%d before)", killedAt)
	}
	if len(fails) > 0 {
		t.Fatalf("%d operations failed within their deadline, first: %v", len(fails), fails[:min(5, len(fails))])
	}
	ctx := context.Background()
	for k, v := range acked {
		r, err := cl.Get(ctx, k)
		if err != nil || !r.OK() || string(r.Value) != v {
			t.Fatalf("acknowledged sync write %s lost: %s %q %v", k, r.Status, r.Value, err)
		}
	}
	if ambiguous.Load() > 4 {
		t.Fatalf("%d writes lost their connection in flight (one per connection to the killed node expected)", ambiguous.Load())
	}
	t.Logf("writes=%d reads=%d ambiguous=%d, %d before the kill", writes.Load(), reads.Load(), ambiguous.Load(), killedAt)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// partition0Tag is a Redis hash tag ("{…}") whose keys all land in the
// partition of segment 0.
func partition0Tag(t *testing.T, c *clustertest.Cluster) string {
	t.Helper()
	m := c.Map()
	p := m.Partitions[m.SegmentToPartition[0]]
	for i := range 100000 {
		tag := "{" + strconv.Itoa(i) + "}"
		if s := int(placement.SegmentOf(tag, m.TotalSegments)); s >= p.FirstSegment && s <= p.LastSegment {
			return tag
		}
	}
	t.Fatal("no hash tag lands in partition 0")
	return ""
}
