package clustertest_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/clustertest"
)

// A partition whose active owner is not its preferred primary (a failover
// moved it to the replica, the former owner stayed as the copy) loses that
// owner for good before the failover moves it back: the map change of the
// lost member must give the partition to the copy that holds its data —
// the primary — not to an empty spare, nor merge its range into a
// neighbour whose owner holds none of it (which then also replaced the
// surviving copy by its emptiness: issue #16, TestLiveMigrationFaults lost
// whole partitions in a slow run). The leader's failover is held back for
// that partition through a test hook (server.Config.FailoverHook), so the
// map change decides, deterministically.
func TestLostOwnersPartitionGoesToTheCopyThatHoldsIt(t *testing.T) {
	var held atomic.Value // identity of the partition whose failover is held back
	held.Store("")
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, NoHTTP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		cfg.Timings.MemberGrace = testscale.D(2 * time.Second)
		cfg.FailoverHook = func(p cluster.Partition) bool { return p.Identity != held.Load().(string) }
	}})
	m := c.WaitMap()
	// The partition: one whose range, merged into the previous partition,
	// would be served by a node that holds none of it (its owner is
	// neither x's owner nor its replica) — what the map change did before.
	var x cluster.Partition
	for i, p := range m.Partitions {
		if i > 0 && len(p.ReplicaNodeIDs) == 1 {
			if prev := m.Partitions[i-1].ActiveOwner; prev != p.ActiveOwner && prev != p.ReplicaNodeIDs[0] {
				x = p
				break
			}
		}
	}
	if x.Identity == "" {
		t.Fatalf("no partition whose previous one another node owns: %+v", m.Partitions)
	}
	a, b := x.ActiveOwner, x.ReplicaNodeIDs[0]
	var keys []string
	for i := 0; len(keys) < 60; i++ {
		k := fmt.Sprintf("held:%d", i)
		if s := int(placement.SegmentOf(k, m.TotalSegments)); s >= x.FirstSegment && s <= x.LastSegment {
			keys = append(keys, k)
		}
	}
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	put := func(ks []string) {
		for _, k := range ks {
			ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
			r, err := cl.Put(ctx, k, []byte("v:"+k), nil)
			cancel()
			if err != nil || !r.OK() {
				t.Fatalf("put %s: %v %v", k, r.Status, err)
			}
		}
	}
	put(keys[:30])

	// A failover moves the partition to its replica b while a stays up
	// (what the leader does to an owner that is only slow): a is demoted,
	// then follows b as the copy, and the partition heals.
	ctx, cancel := context.WithTimeout(context.Background(), testscale.D(10*time.Second))
	err = c.WaitLeader().Cluster().CommitOwnership(ctx, cluster.OwnershipChange{Partition: x.ID, Identity: x.Identity, Owner: b,
		Generation: x.OwnershipGeneration + 1, Epoch: x.Epoch + 1, Health: failover.Degraded, Demoted: []cluster.NodeID{a}})
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	// Healthy in b's own map: from then on b's sync writes wait for a
	// again (a demoted copy counts for no quorum).
	c.Eventually(30*time.Second, "the partition owned by its replica, healthy again", func() bool {
		p := partitionOf(c.Node(string(b)).Cluster().Map(), x.Identity)
		return p != nil && p.ActiveOwner == b && p.PrimaryNodeID == a && p.HealthState() == failover.Healthy
	})
	put(keys[30:])

	// b dies and stays dead; its failover of x is held back: the map
	// change that removes the lost member decides where x goes.
	held.Store(x.Identity)
	c.Stop(c.Node(string(b)))
	c.Eventually(60*time.Second, "the lost member out of the map, every segment owned", func() bool {
		m := c.Map()
		if _, in := m.Node(b); in {
			return false
		}
		for _, p := range m.Partitions {
			if p.ActiveOwner == "" || p.ActiveOwner == b {
				return false
			}
		}
		return true
	})
	for _, k := range keys {
		var r sdk.Result
		var err error
		// Unavailability (a redirect the client's map has not caught up
		// with) is retried; NotFound or another value is a lost write.
		for deadline := time.Now().Add(testscale.D(30 * time.Second)); ; {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			r, err = cl.Get(ctx, k)
			cancel()
			if (err == nil && (r.OK() || r.Status == sdk.StatusNotFound)) || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond) // poll interval
		}
		if err != nil || !r.OK() || string(r.Value) != "v:"+k {
			m := c.Map()
			seg := int(placement.SegmentOf(k, m.TotalSegments))
			p := m.Partitions[m.SegmentToPartition[seg]]
			t.Fatalf("%s (segment %d, now partition %s owned by %s, copies %v; it was %s, owned by %s, primary %s): got %v %q %v",
				k, seg, p.Identity, p.ActiveOwner, p.Copies(), x.Identity, b, a, r.Status, r.Value, err)
		}
	}
	if p := partitionOf(c.Map(), x.Identity); p == nil || !slices.Contains(append(p.Copies(), p.ActiveOwner), a) {
		t.Fatalf("the partition left the copy that holds its data: %+v", p)
	}
}

// partitionOf is the partition of m with identity id (nil when none).
func partitionOf(m *cluster.PartitionMap, id string) *cluster.Partition {
	if m == nil {
		return nil
	}
	for i := range m.Partitions {
		if m.Partitions[i].Identity == id {
			return &m.Partitions[i]
		}
	}
	return nil
}
