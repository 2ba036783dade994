package resp_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// A stock go-redis ClusterClient through a live migration (issue #12 item
// 5): a node joins and takes its share while writers run, a node is
// drained; the client follows MOVED (and retries the fence's TRYAGAIN) by
// itself, no call fails, and every key reads back its last acknowledged
// value.
func TestClusterClientThroughALiveMigration(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-node cluster")
	}
	cl := clustertest.Start(t, 3, clustertest.Options{})
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cl.Nodes()[0].RESPAddr().String()},
		DialTimeout: 5 * time.Second, MaxRedirects: 16, MaxRetries: 16,
		MinRetryBackoff: 2 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond})
	t.Cleanup(func() { _ = cc.Close() })
	ctx := context.Background()

	for i := range 1000 {
		require.NoError(t, cc.Set(ctx, fmt.Sprint("fixed:", i), i, 0).Err())
	}
	var mu sync.Mutex
	acked := map[string]int{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for w := range 3 {
		wg.Go(func() {
			for i := 1; !stop.Load(); i++ {
				k := fmt.Sprintf("w%d:%d", w, i%100)
				// A drained node's process exits once it holds nothing: a
				// client whose slot cache still names it gets connection
				// refused until it reloads. An application retries that
				// (SET is idempotent); any other error, or a lost value, fails.
				err := cc.Set(ctx, k, i, 0).Err()
				for try := 0; err != nil && isRefused(err) && try < 50; try++ {
					time.Sleep(20 * time.Millisecond) // a client's retry backoff, not a synchronisation
					err = cc.Set(ctx, k, i, 0).Err()
				}
				if err != nil {
					errs <- fmt.Errorf("set %s: %w", k, err)
					return
				}
				mu.Lock()
				acked[k] = i
				mu.Unlock()
			}
		})
	}

	settled := func(what string, cond func(*cluster.PartitionMap) bool) {
		cl.Eventually(90*time.Second, what, func() bool {
			m := cl.Map()
			for _, p := range m.Partitions {
				if p.Migrating() {
					return false
				}
			}
			return cond(m)
		})
	}
	n4 := cl.AddNode()
	settled("the joiner owns segments", func(m *cluster.PartitionMap) bool {
		return cluster.Holds(m, cluster.NodeID(n4.Config().NodeID))
	})
	cl.Decommission(cl.Node("n2"))
	settled("the drained node is gone from the map", func(m *cluster.PartitionMap) bool {
		_, in := m.Node("n2")
		return !in
	})
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cc.ReloadState(ctx)
	for i := range 1000 {
		v, err := cc.Get(ctx, fmt.Sprint("fixed:", i)).Result()
		require.NoError(t, err)
		require.Equal(t, strconv.Itoa(i), v)
	}
	for k, want := range acked {
		v, err := cc.Get(ctx, k).Int()
		require.NoError(t, err, k)
		require.Equal(t, want, v, k)
	}
}

// A multi-key write or a MULTI/EXEC block over keys of several segments
// (one node) meets a live migration's write fence on one of them: it is
// refused whole with TRYAGAIN — never applied to the keys of the other
// segments only (issue #12 item 5).
func TestFencedSegmentRefusesMultiKeyWritesWhole(t *testing.T) {
	nd := startNode(t)
	c := newClient(t, nd)
	ctx := ctxT(t)
	a, b := "fence-a", "fence-b"
	segA, segB := placement.SegmentOf(a, nd.Store().Segments()), placement.SegmentOf(b, nd.Store().Segments())
	require.NotEqual(t, segA, segB)
	nd.Store().Segment(segB).SetWriteFence(true)
	defer nd.Store().Segment(segB).SetWriteFence(false)

	err := c.MSet(ctx, a, "1", b, "2").Err()
	require.ErrorContains(t, err, "TRYAGAIN")
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, a, "1", 0)
		p.Set(ctx, b, "2", 0)
		return nil
	})
	require.ErrorContains(t, err, "TRYAGAIN")
	for _, k := range []string{a, b} {
		require.ErrorIs(t, c.Get(ctx, k).Err(), redis.Nil, "%s must not be written by a refused command", k)
	}
	// Reads go on under the fence, and a write to the free segment alone works.
	require.NoError(t, c.Set(ctx, a, "solo", 0).Err())
	require.Equal(t, "solo", c.Get(ctx, a).Val())
	require.ErrorContains(t, c.Set(ctx, b, "x", 0).Err(), "TRYAGAIN")
}

func isRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }
