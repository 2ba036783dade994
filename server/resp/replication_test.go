package resp_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
	"github.com/zaris-io/zaris/server/resp"
)

// syncCluster starts nodes with replication factor rf under sync
// replication, waits until the owner of the partition of segment 0 streams
// to every replica, and returns that owner, its replicas and a hash tag
// whose keys land in that partition (every node owns some partitions: the
// tests write only keys of this one).
func syncCluster(t *testing.T, nodes, rf int, quorum server.WriteQuorum) (*clustertest.Cluster, *server.Node, []*server.Node, string) {
	t.Helper()
	c := clustertest.Start(t, nodes, clustertest.Options{Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = rf
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, quorum
		cfg.SyncTimeout = testscale.D(time.Second)
		cfg.Timings.MemberGrace = time.Minute
	}})
	m := c.Map()
	require.NotNil(t, m)
	p := m.Partitions[0]
	tag := ""
	for i := 0; tag == ""; i++ {
		cand := "{" + strconv.Itoa(i) + "}"
		if s := int(placement.SegmentOf(cand, m.TotalSegments)); s >= p.FirstSegment && s <= p.LastSegment {
			tag = cand
		}
	}
	owner := c.Node(string(p.ActiveOwner))
	var replicas []*server.Node
	for _, r := range p.ReplicaNodeIDs {
		replicas = append(replicas, c.Node(string(r)))
	}
	require.Len(t, replicas, rf-1)
	c.Eventually(15*time.Second, "every replication session streaming", func() bool {
		st := owner.Replication().ReplicaStatus(p.Identity)
		if len(st) != len(replicas) {
			return false
		}
		for _, s := range st {
			if s.State != "streaming" {
				return false
			}
		}
		return true
	})
	return c, owner, replicas, tag
}

// replicated reports whether replica has applied everything the owner holds
// on key's segment.
func replicated(owner, replica *server.Node, key string) bool {
	seg := owner.Store().SegmentFor(key).ID()
	return replica.Store().Segment(seg).Revision() >= owner.Store().Segment(seg).Revision()
}

// Sync + All over RESP (R-REP-2): a write is answered only once the replica
// applied it — single commands, a pipeline, a transaction; without its
// replica a write answers -TIMEOUT after the sync timeout and stays applied
// on the owner, while reads are answered as usual.
func TestRESPSyncWritesWaitForTheReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	c, owner, replicas, tag := syncCluster(t, 3, 2, server.WriteQuorumAll)
	replica := replicas[0]
	rc := newClient(t, owner)
	ctx := ctxT(t)

	for i := range 50 {
		k := tag + "k" + strconv.Itoa(i)
		require.NoError(t, rc.Set(ctx, k, "v", 0).Err())
		require.True(t, replicated(owner, replica, k), "SET %s acknowledged before the replica applied it", k)
	}
	require.NoError(t, rc.Incr(ctx, tag+"n").Err())
	require.True(t, replicated(owner, replica, tag+"n"), "INCR acknowledged before the replica applied it")
	require.NoError(t, rc.RPush(ctx, tag+"l", "a", "b").Err())
	require.True(t, replicated(owner, replica, tag+"l"), "RPUSH acknowledged before the replica applied it")

	// A pipeline: every reply held until its segment is replicated.
	var keys []string
	_, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 300 {
			k := tag + "p" + strconv.Itoa(i)
			keys = append(keys, k)
			p.Set(ctx, k, i, 0)
			p.Get(ctx, k)
		}
		return nil
	})
	require.NoError(t, err)
	for _, k := range keys {
		require.True(t, replicated(owner, replica, k), "pipelined SET %s acknowledged before the replica applied it", k)
	}

	// A transaction.
	_, err = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, tag+"{t}a", "1", 0)
		p.Incr(ctx, tag+"{t}b")
		return nil
	})
	require.NoError(t, err)
	require.True(t, replicated(owner, replica, tag+"{t}a"), "EXEC acknowledged before the replica applied it")

	// Without the replica: -TIMEOUT after the sync timeout, the write applied.
	c.Stop(replica)
	began := time.Now()
	err = rc.Set(ctx, tag+"unacked", "v", 0).Err()
	require.Error(t, err)
	require.True(t, strings.HasPrefix(err.Error(), "TIMEOUT "), "got %v", err)
	require.GreaterOrEqual(t, time.Since(began), 250*time.Millisecond)
	v, err := rc.Get(ctx, tag+"unacked").Result()
	require.NoError(t, err, "reads are not held")
	require.Equal(t, "v", v, "the unacknowledged write stays applied on the owner")
	require.ErrorContains(t, rc.Incr(ctx, tag+"n").Err(), "TIMEOUT")
	require.Equal(t, "2", rc.Get(ctx, tag+"n").Val())

	// In a pipeline only the writes' replies turn into the error.
	cmds, _ := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, tag+"q1", "x", 0)
		p.Get(ctx, tag+"q1")
		p.Del(ctx, tag+"k1")
		p.Get(ctx, tag+"k2")
		return nil
	})
	require.Len(t, cmds, 4)
	require.ErrorContains(t, cmds[0].Err(), "TIMEOUT")
	require.Equal(t, "x", cmds[1].(*redis.StringCmd).Val())
	require.ErrorContains(t, cmds[2].Err(), "TIMEOUT")
	require.Equal(t, "v", cmds[3].(*redis.StringCmd).Val())

	// In a transaction, the write's element of EXEC's array.
	cmds, _ = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, tag+"{t}a")
		p.Set(ctx, tag+"{t}a", "2", 0)
		return nil
	})
	require.Len(t, cmds, 2)
	require.NoError(t, cmds[0].Err(), "the read in EXEC (the write's reply: %v)", cmds[1].Err())
	require.Equal(t, "1", cmds[0].(*redis.StringCmd).Val())
	require.ErrorContains(t, cmds[1].Err(), "TIMEOUT")

	// A keyless write waits on every owned segment.
	require.ErrorContains(t, rc.FlushAll(ctx).Err(), "TIMEOUT")
	require.Equal(t, int64(0), rc.DBSize(ctx).Val(), "FLUSHALL applied on the owner")
	require.GreaterOrEqual(t, owner.Replication().SyncStats().Timeouts, uint64(4))
}

// Sync + BestEffort: a write is still acknowledged after the sync timeout
// when its replica is gone.
func TestRESPSyncBestEffortAcknowledgesWithoutTheReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	c, owner, replicas, tag := syncCluster(t, 2, 2, server.WriteQuorumBestEffort)
	rc := newClient(t, owner)
	ctx := ctxT(t)
	require.NoError(t, rc.Set(ctx, tag+"a", "v", 0).Err())
	require.True(t, replicated(owner, replicas[0], tag+"a"))
	c.Stop(replicas[0])
	require.NoError(t, rc.Set(ctx, tag+"b", "v", 0).Err())
	require.Equal(t, "v", rc.Get(ctx, tag+"b").Val())
}

// fakeBarrier records the waits and fails those of the segments in fail.
type fakeBarrier struct {
	mu    sync.Mutex
	waits map[uint16][]uint64
	fail  map[uint16]bool
}

func (b *fakeBarrier) Wait(_ context.Context, seg uint16, rev uint64) kv.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waits[seg] = append(b.waits[seg], rev)
	if b.fail[seg] {
		return kv.StatusTimeout
	}
	return kv.StatusSuccess
}

// WaitAll records one wait per entry, as Wait does.
func (b *fakeBarrier) WaitAll(ctx context.Context, writes []kv.SegmentWrite, status []kv.Status) {
	for i, w := range writes {
		status[i] = b.Wait(ctx, w.Segment, w.Revision)
	}
}

func (b *fakeBarrier) reset(fail ...uint16) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.waits, b.fail = map[uint16][]uint64{}, map[uint16]bool{}
	for _, s := range fail {
		b.fail[s] = true
	}
}

func (b *fakeBarrier) snapshot() map[uint16][]uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make(map[uint16][]uint64, len(b.waits))
	for k, v := range b.waits {
		out[k] = append([]uint64(nil), v...)
	}
	return out
}

func (b *fakeBarrier) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := 0
	for _, w := range b.waits {
		n += len(w)
	}
	return n
}

// The barrier's contract over RESP, with a fake barrier: a pipeline waits
// once per segment at the highest revision written there; reads wait for
// nothing; a failed segment turns only its writes' replies into -TIMEOUT.
func TestRESPWriteBarrierBatchesPerSegment(t *testing.T) {
	b := &fakeBarrier{}
	b.reset()
	n, _ := startCustom(t, resp.Config{WriteBarrier: b})
	rc := newClient(t, n)
	ctx := ctxT(t)
	st := n.Store()

	require.NoError(t, rc.Set(ctx, "a", "1", 0).Err())
	segA := st.SegmentFor("a").ID()
	require.Equal(t, map[uint16][]uint64{segA: {st.Segment(segA).Revision()}}, b.snapshot())

	b.reset()
	require.Equal(t, "1", rc.Get(ctx, "a").Val())
	require.Equal(t, int64(0), rc.Exists(ctx, "zz").Val())
	require.Zero(t, b.count(), "reads wait for nothing")

	// A pipeline: one wait per segment, at its highest revision.
	b.reset()
	segs := map[uint16]bool{}
	cmds, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 200 {
			k := "k" + strconv.Itoa(i)
			segs[st.SegmentFor(k).ID()] = true
			p.Set(ctx, k, i, 0)
		}
		return nil
	})
	require.NoError(t, err)
	require.Len(t, cmds, 200)
	waits := b.snapshot()
	require.Len(t, waits, len(segs))
	for seg, revs := range waits {
		require.Len(t, revs, 1, "one wait per segment")
		require.Equal(t, st.Segment(seg).Revision(), revs[0], "at the highest revision")
	}

	// A failed segment: its writes answer -TIMEOUT, the rest is untouched.
	b.reset(segA)
	var other string
	for i := 0; ; i++ {
		if other = "o" + strconv.Itoa(i); st.SegmentFor(other).ID() != segA {
			break
		}
	}
	cmds, _ = rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, other, "x", 0)
		p.Incr(ctx, "a")
		p.Get(ctx, "a")
		p.Set(ctx, other, "y", 0)
		return nil
	})
	require.NoError(t, cmds[0].Err())
	require.EqualError(t, cmds[1].Err(), "TIMEOUT write not acknowledged by the replicas in time; it stays applied on the owner")
	require.Equal(t, "2", cmds[2].(*redis.StringCmd).Val(), "the write stays applied")
	require.NoError(t, cmds[3].Err())

	// A blocking write is held too; CLIENT REPLY OFF holds nothing.
	require.NoError(t, rc.RPush(ctx, "a-list", "e").Err())
	b.reset(st.SegmentFor("a-list").ID())
	require.ErrorContains(t, rc.BLPop(ctx, time.Second, "a-list").Err(), "TIMEOUT")
	b.reset()
	r := dialRaw(t, n.RESPAddr().String())
	r.send(cmd("CLIENT", "REPLY", "OFF") + cmd("SET", "q", "v") + cmd("CLIENT", "REPLY", "ON"))
	require.Equal(t, "+OK\r\n", r.reply())
	require.Zero(t, b.count(), "no reply, nothing held")
}

// A ZRANDMEMBER whose reply is streamed (a large negative count) inside
// EXEC after a write, under sync replication: the stream's flush waited
// for the barrier of the transaction's own write, which the shipper cannot
// read before EXEC releases the segment's lock — the connection hung with
// that lock held for good. Inside EXEC the reply is built whole, up to a
// bound; a larger count is refused, the other commands run.
func TestRESPStreamedReplyInsideExecUnderSyncReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	_, owner, replicas, tag := syncCluster(t, 3, 2, server.WriteQuorumAll)
	rc := newClient(t, owner)
	ctx := ctxT(t)
	for i := range 10 {
		require.NoError(t, rc.ZAdd(ctx, tag+"z", redis.Z{Score: float64(i), Member: "m" + strconv.Itoa(i)}).Err())
	}
	var draw *redis.StringSliceCmd
	_, err := rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, tag+"k1", "v", 0)
		draw = p.ZRandMember(ctx, tag+"z", -200000)
		p.Set(ctx, tag+"k2", "v", 0)
		return nil
	})
	require.NoError(t, err)
	require.Len(t, draw.Val(), 200000)
	require.True(t, replicated(owner, replicas[0], tag+"k2"), "EXEC acknowledged before the replica applied its writes")

	var set *redis.StatusCmd
	_, err = rc.TxPipelined(ctx, func(p redis.Pipeliner) error {
		draw = p.ZRandMember(ctx, tag+"z", -(1<<20 + 1))
		set = p.Set(ctx, tag+"k3", "v", 0)
		return nil
	})
	require.ErrorContains(t, err, "out of range inside a transaction")
	require.ErrorContains(t, draw.Err(), "out of range inside a transaction")
	require.NoError(t, set.Err())
	require.NoError(t, rc.Set(ctx, tag+"k4", "v", 0).Err(), "the segment stayed usable")
}
