package hybrid_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// clusterInstance is one application instance on a real cluster: its own
// embedded L1, its own cluster client as L2, and a WatchBackplane on that
// client.
type clusterInstance struct {
	*instance
	bp  *hybrid.WatchBackplane
	rec *recorder
}

func newClusterInstance(t *testing.T, c *clustertest.Cluster) *clusterInstance {
	t.Helper()
	ctx := context.Background()
	l2, err := sdk.Connect(ctx, c.ConnString())
	require.NoError(t, err)
	t.Cleanup(func() { _ = l2.Close() })
	bp, err := hybrid.NewWatchBackplane(ctx, l2, hybrid.WatchBackplaneOptions{Logger: quiet,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 200 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = bp.Close() })
	rec := record(t, bp)
	l1 := connect(t, nil, nil)
	h := hybrid.New(l1, l2, hybrid.Options{Backplane: bp, Logger: quiet})
	t.Cleanup(func() { _ = h.Close() })
	return &clusterInstance{instance: &instance{h: h, l1: l1, l2: l2}, bp: bp, rec: rec}
}

// clusterDeadline bounds every wait of the cluster tests (scaled by
// ZARIS_TEST_TIME_SCALE): below the copies' LocalCacheExpiration (5 min),
// so a copy nobody invalidated cannot pass for one that was.
func clusterDeadline() time.Duration { return testscale.D(60 * time.Second) }

func clusterEventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, 60*time.Second, 5*time.Millisecond, what, cond)
}

// Two cache instances with WatchBackplanes on a real 3-node cluster
// (RF 2, synchronous replication), a plain SDK writer and a go-redis
// writer on the RESP port: every write, whoever makes it, invalidates the
// L1 copies of the instances that did not make it; a partition move and
// an owner's death then cost at worst a flush — after the writes that
// follow each, both instances read the new values within the deadline,
// never an old one kept in L1 (issue #14 item 6).
func TestWatchBackplaneCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("a real cluster")
	}
	ctx := context.Background()
	c := clustertest.Start(t, 3, clustertest.Options{NoHTTP: true, Timeout: 60 * time.Second, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		cfg.AutoRebalance = false
	}})
	a, b := newClusterInstance(t, c), newClusterInstance(t, c)
	writer, err := sdk.Connect(ctx, c.ConnString())
	require.NoError(t, err)
	t.Cleanup(func() { _ = writer.Close() })
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.RESPEndpoints(), DialTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = rdb.Close() })

	// try repeats f until it succeeds: on a loaded machine a call may
	// time out, or meet a slot that is moving (TRYAGAIN).
	try := func(t *testing.T, what string, f func() error) {
		t.Helper()
		var last error
		clusterEventually(t, what+" (last error: see log)", func() bool {
			last = f()
			if last != nil {
				t.Logf("%s: %v", what, last)
			}
			return last == nil
		})
	}
	set := func(t *testing.T, in *clusterInstance, key, value string, tags ...string) {
		t.Helper()
		try(t, "set "+key, func() error { return in.h.Set(ctx, key, value, nil, tags...) })
	}
	// caughtUp reports whether both backplanes delivered the change that
	// made key's current L2 entry.
	caughtUp := func(key string) bool {
		_, l2k := a.h.StoreKeys(key)
		r, err := a.l2.TimeToLive(ctx, l2k)
		return err == nil && r.OK() && a.rec.saw(l2k, r.Revision) && b.rec.saw(l2k, r.Revision)
	}
	// warm gives both instances an L1 copy of key holding value, once
	// every change of the key has come back to both. A flush (a map that
	// moved a segment, seen late) may empty an L1 meanwhile: then again.
	warm := func(t *testing.T, key, value string) {
		t.Helper()
		set(t, a, key, value)
		clusterEventually(t, key+" in both L1s", func() bool {
			if !caughtUp(key) {
				return false
			}
			if !inL1Is(t, a.instance, key, value) {
				set(t, a, key, value)
				return false
			}
			return readsThrough(t, b.instance, key, value) && inL1Is(t, b.instance, key, value)
		})
	}
	evicted := func(t *testing.T, key string, insts ...*clusterInstance) {
		t.Helper()
		clusterEventually(t, key+" evicted from L1", func() bool {
			for _, in := range insts {
				if inL1(t, in.instance, key) {
					return false
				}
			}
			return true
		})
	}
	reads := func(t *testing.T, key, want string, insts ...*clusterInstance) {
		t.Helper()
		for _, in := range insts {
			clusterEventually(t, fmt.Sprintf("%s read as %q", key, want), func() bool { return readsThrough(t, in.instance, key, want) })
		}
	}
	absent := func(t *testing.T, key string, in *clusterInstance) {
		t.Helper()
		clusterEventually(t, key+" a miss", func() bool {
			_, ok, err := hybrid.TryGet[string](ctx, in.h, key, nil)
			return err == nil && !ok
		})
	}
	l2Key := func(key string) string { _, k := a.h.StoreKeys(key); return k }

	// keys are spread over every partition.
	keys := make([]string, 16)
	for i := range keys {
		keys[i] = fmt.Sprintf("spread:%d", i)
	}
	// afterWrites warms every key, runs disrupt, then writes every key
	// through the plain client (retrying until acknowledged) and waits
	// until both instances read every new value.
	afterWrites := func(t *testing.T, round string, disrupt func()) {
		t.Helper()
		for _, k := range keys {
			warm(t, k, "before-"+round)
		}
		env := map[string][]byte{}
		for _, k := range keys {
			env[k] = envelopeOf(t, a.instance, round+":"+k)
		}
		disrupt()
		for _, k := range keys {
			clusterEventually(t, "the write of "+k+" acknowledged", func() bool {
				cctx, cancel := context.WithTimeout(ctx, testscale.D(5*time.Second))
				defer cancel()
				r, err := writer.Put(cctx, l2Key(k), env[k], nil)
				return err == nil && r.OK()
			})
		}
		start := time.Now()
		var stale string
		defer func() { t.Logf("%s: last stale read: %s", round, stale) }()
		fresh := map[*clusterInstance]map[string]bool{a: {}, b: {}}
		testscale.Eventually(t, 60*time.Second, 5*time.Millisecond, "both instances read every value written after "+round, func() bool {
			for _, k := range keys {
				for in, done := range fresh {
					if done[k] {
						continue // no write follows: once fresh, it stays fresh
					}
					if !readsThrough(t, in.instance, k, round+":"+k) {
						v, ok, err := hybrid.TryGet[string](ctx, in.h, k, nil)
						l1v, l1ok, _ := hybrid.TryGet[string](ctx, in.h, k, &hybrid.EntryOptions{Flags: hybrid.DisableDistributedCacheRead})
						stale = fmt.Sprintf("after %v: %s reads %s as %q %v %v (L1 %q %v)", time.Since(start), in.h.InstanceID(), k, v, ok, err, l1v, l1ok)
						return false
					}
					done[k] = true
				}
			}
			return true
		})
		t.Logf("%s: every instance fresh %v after the last write; a %+v; b %+v", round, time.Since(start), a.bp.Stats(), b.bp.Stats())
	}

	// A partition move.
	{
		movesA, movesB := a.bp.Stats().Moves, b.bp.Stats().Moves
		afterWrites(t, "move", func() {
			began := time.Now()
			before := c.Map()
			id := cluster.NodeID(c.AddNode().Config().NodeID)
			c.Eventually(clusterDeadline(), "the joiner in the map", func() bool {
				_, in := c.Map().Node(id)
				return in
			})
			c.Rebalance()
			defer func() {
				if t.Failed() { // where the move stood
					m := c.Map()
					for i, p := range m.Partitions {
						t.Logf("map %d partition %d: owner %s copies %v incoming %v move to %q", m.Version, i, p.ActiveOwner, p.Copies(), p.Incoming, p.MoveTo)
					}
				}
			}()
			c.Eventually(120*time.Second, "the rebalance over: the joiner owns a partition, nothing migrating", func() bool {
				leader := c.Leader()
				if leader == nil {
					return false
				}
				if rs := leader.Cluster().RebalanceStatus(); rs.Active || rs.Pending {
					return false
				}
				owns := false
				for _, p := range c.Map().Partitions {
					if p.Migrating() {
						return false
					}
					owns = owns || p.ActiveOwner == id
				}
				if !owns {
					// A plan made before the leader counted the joiner
					// gave it nothing (as zarisctl add, ask again).
					c.Rebalance()
				}
				return owns
			})
			t.Logf("move: n4 owns partitions after %v", time.Since(began))
			moved := 0
			for i, p := range c.Map().Partitions {
				if i < len(before.Partitions) && p.ActiveOwner != before.Partitions[i].ActiveOwner {
					moved++
				}
			}
			require.NotZero(t, moved, "the rebalance moved no partition's owner")
		})
		clusterEventually(t, "both backplanes saw the move (a flush)", func() bool {
			return a.bp.Stats().Moves > movesA && b.bp.Stats().Moves > movesB
		})
	}

	// Every writer.
	{
		warm(t, "w:a", "v0")
		flushes := a.bp.Stats().Flushes
		set(t, a, "w:a", "set-by-a")
		clusterEventually(t, "w:a's change back at both", func() bool { return caughtUp("w:a") })
		evicted(t, "w:a", b)
		reads(t, "w:a", "set-by-a", b)
		assert.True(t, inL1Is(t, a.instance, "w:a", "set-by-a") || a.bp.Stats().Flushes > flushes, "a's own write evicted its copy")

		warm(t, "w:b", "v0")
		set(t, b, "w:b", "set-by-b")
		evicted(t, "w:b", a)
		reads(t, "w:b", "set-by-b", a)

		warm(t, "w:sdk", "v0")
		env := envelopeOf(t, a.instance, "put-by-sdk")
		try(t, "plain put", func() error { _, err := writer.Put(ctx, l2Key("w:sdk"), env, nil); return err })
		evicted(t, "w:sdk", a, b)
		reads(t, "w:sdk", "put-by-sdk", a, b)

		warm(t, "w:resp", "v0")
		env = envelopeOf(t, a.instance, "set-by-redis")
		try(t, "RESP SET", func() error { return rdb.Set(ctx, l2Key("w:resp"), env, 0).Err() })
		evicted(t, "w:resp", a, b)
		reads(t, "w:resp", "set-by-redis", a, b)

		warm(t, "w:del", "v0")
		try(t, "RESP DEL", func() error { return rdb.Del(ctx, l2Key("w:del")).Err() })
		evicted(t, "w:del", a, b)
		absent(t, "w:del", b)

		// PEXPIRE: the TTL change, then the expiry.
		warm(t, "w:exp", "v0")
		try(t, "RESP PEXPIRE", func() error { return rdb.PExpire(ctx, l2Key("w:exp"), 200*time.Millisecond).Err() })
		evicted(t, "w:exp", a, b)
		clusterEventually(t, "w:exp expired in L2", func() bool {
			n, err := rdb.Exists(ctx, l2Key("w:exp")).Result()
			return err == nil && n == 0
		})
		absent(t, "w:exp", a)

		// A tag invalidated through the other instance.
		set(t, a, "w:tagged", "v", "grp")
		clusterEventually(t, "b holds w:tagged", func() bool {
			return caughtUp("w:tagged") && readsThrough(t, b.instance, "w:tagged", "v") && inL1(t, b.instance, "w:tagged")
		})
		try(t, "RemoveByTag", func() error { return a.h.RemoveByTag(ctx, "grp") })
		evicted(t, "w:tagged", b)
		t.Logf("every writer: a %+v; b %+v", a.bp.Stats(), b.bp.Stats())
	}

	// The owner of partition 0 dies.
	{
		movesA, movesB := a.bp.Stats().Moves, b.bp.Stats().Moves
		afterWrites(t, "kill", func() {
			m := c.Map()
			victim := c.Node(string(m.Partitions[m.SegmentToPartition[0]].ActiveOwner))
			c.Stop(victim)
			c.Eventually(clusterDeadline(), "a new owner of the victim's partitions", func() bool {
				for _, p := range c.Map().Partitions {
					if string(p.ActiveOwner) == victim.Config().NodeID {
						return false
					}
				}
				return true
			})
		})
		clusterEventually(t, "both backplanes saw the failover (a flush)", func() bool {
			return a.bp.Stats().Moves > movesA && b.bp.Stats().Moves > movesB
		})
		assert.True(t, a.bp.Stats().Watching && b.bp.Stats().Watching)
	}
}
