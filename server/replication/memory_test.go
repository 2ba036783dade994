package replication

import (
	"context"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/store"
)

// Two managers over loopback TCP, no cluster: the protocol and the fence
// in isolation (the cluster tests cover the wiring).

type peer struct {
	m  *Manager
	st *store.Store
	ln net.Listener
}

func newPeer(t *testing.T, id cluster.NodeID, mode Mode, dial func(ctx context.Context, addr string) (net.Conn, error),
	mutate func(*store.Config)) *peer {
	t.Helper()
	sc := store.DefaultConfig()
	sc.Segments = 4
	if mutate != nil {
		mutate(&sc)
	}
	st, err := store.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Store: st, Self: id, StoreName: "s", Mode: mode, SyncTimeout: testscale.D(time.Second), Dial: dial,
		Heartbeat: 50 * time.Millisecond, PeerTimeout: testscale.D(time.Second), RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
		MaintainEvery: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &peer{m: m, st: st, ln: ln}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() { defer wg.Done(); defer c.Close(); m.ServePeer(c) }()
		}
	}()
	t.Cleanup(func() {
		m.Close()
		_ = ln.Close()
		wg.Wait()
		_ = st.Close()
	})
	return p
}

func (p *peer) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

// tcpDial dials a peer target without the cluster's identity check (these
// managers have no peer mux).
func tcpDial(ctx context.Context, target string) (net.Conn, error) {
	_, addr := cluster.SplitPeerTarget(target)
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}

// pairMap: one partition of four segments owned by owner at generation
// gen, replicated to replica.
func pairMap(version uint64, owner, replica *peer, ownerID, replicaID cluster.NodeID, gen uint64) *cluster.PartitionMap {
	return &cluster.PartitionMap{Version: version, TotalSegments: 4, Store: "s", SegmentToPartition: []int{0, 0, 0, 0},
		Nodes: []cluster.NodeInfo{{ID: ownerID, Host: "127.0.0.1", PeerPort: owner.port()}, {ID: replicaID, Host: "127.0.0.1", PeerPort: replica.port()}},
		Partitions: []cluster.Partition{{ID: 0, Identity: "p", PrimaryNodeID: ownerID, ReplicaNodeIDs: []cluster.NodeID{replicaID},
			ActiveOwner: ownerID, OwnershipGeneration: gen, FirstSegment: 0, LastSegment: 3}}}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, 10*time.Second, 5*time.Millisecond, what, cond)
}

func TestShipAndSyncBarrierInMemory(t *testing.T) {
	a := newPeer(t, "a", Sync, tcpDial, nil)
	b := newPeer(t, "b", Sync, tcpDial, nil)
	m := pairMap(1, a, b, "a", "b", 1)
	a.m.Apply(m)
	b.m.Apply(m)
	for i := range 4 {
		b.st.Segment(uint16(i)).SetOwned(false)
	}
	for i := range 50 {
		k := "k" + strconv.Itoa(i)
		res := a.st.Put(k, []byte("v"), nil)
		seg := a.st.SegmentFor(k).ID()
		if st := a.m.Wait(context.Background(), seg, res.Revision); st.String() != "Success" {
			t.Fatalf("sync wait %v", st)
		}
		if got := b.st.Segment(seg).Revision(); got < res.Revision {
			t.Fatalf("acknowledged at %d, replica at %d", res.Revision, got)
		}
	}
	for i := range 4 {
		if a.st.Segment(uint16(i)).Digest() != b.st.Segment(uint16(i)).Digest() {
			t.Fatalf("segment %d differs", i)
		}
	}
	// Low-water mark: the owner's tombstones go once the replica applied them.
	res := a.st.Delete("k1")
	g := a.st.SegmentFor("k1")
	eventually(t, "the tombstone pruned", func() bool {
		a.st.SweepOnce()
		applied, _ := g.ApplyRecord(store.Record{Revision: res.Revision}.WithVersion(1).With("k1", []byte("z")), store.OpPut)
		return applied
	})
}

func TestADeposedOwnerFencesItselfOnARefusal(t *testing.T) {
	a := newPeer(t, "a", Sync, tcpDial, nil)
	b := newPeer(t, "b", Sync, tcpDial, nil)
	// b already applied the failover (b owns at generation 2); a never
	// heard of it and still believes it owns at generation 1.
	a.m.Apply(pairMap(1, a, b, "a", "b", 1))
	promoted := pairMap(2, b, a, "b", "a", 2)
	promoted.Partitions[0].PrimaryNodeID = "a"
	promoted.Partitions[0].ReplicaNodeIDs = []cluster.NodeID{"b"}
	b.m.Apply(promoted)
	k := "key"
	res := a.st.Put(k, []byte("v"), nil)
	eventually(t, "the deposed owner fenced", func() bool { return !a.st.SegmentFor(k).Owned() })
	if st := a.m.Wait(context.Background(), a.st.SegmentFor(k).ID(), res.Revision); st.String() != "Timeout" {
		t.Fatalf("a fenced owner acknowledged a sync write: %v", st)
	}
	if got := a.st.Put(k, []byte("w"), nil); got.Status.String() != "Moved" {
		t.Fatalf("a fenced owner accepted a write: %v", got.Status)
	}
}

// The replica against the owner as its oracle (STYLE 6): random writes of
// every kind — values, TTLs, deletes, counters, collections, streams —
// with the replica restarted (empty) at random points and an op-log small
// enough that some catch-ups go by snapshot. After every quiet point the
// replica's copy equals the owner's, segment by segment.
func TestRandomizedReplicaMatchesOwner(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, seed))
			a := newPeer(t, "a", Async, tcpDial, func(c *store.Config) { c.OpLogMaxOps = 16 })
			var b *peer
			startReplica := func() {
				b = newPeer(t, "b", Async, tcpDial, nil)
				m := pairMap(uint64(10+rng.IntN(1000)), a, b, "a", "b", 1)
				for i := range 4 {
					b.st.Segment(uint16(i)).SetOwned(false)
				}
				b.m.Apply(m)
				a.m.Apply(m)
			}
			startReplica()
			keys := func() string { return "k" + strconv.Itoa(rng.IntN(40)) }
			for round := range 6 {
				for range 300 {
					randomWrite(rng, a.st, keys())
				}
				if round%2 == 1 {
					// The replica dies and comes back empty: the owner must
					// bring it level again, by ops or by snapshot.
					b.m.Close()
					startReplica()
				}
				eventually(t, "the replica level with the owner", func() bool {
					for i := range 4 {
						ga, gb := a.st.Segment(uint16(i)), b.st.Segment(uint16(i))
						if ga.Revision() != gb.Revision() || ga.Digest() != gb.Digest() {
							return false
						}
					}
					return true
				})
			}
		})
	}
}

func randomWrite(rng *rand.Rand, st *store.Store, k string) {
	v := []byte(strconv.Itoa(rng.IntN(1000)))
	cmd := func(op kv.CmdOp, key string, args ...string) { st.Exec(kv.NewCmd(op, key, args...)) }
	switch rng.IntN(14) {
	case 0, 1, 2:
		st.Put(k, v, nil)
	case 3:
		st.Put(k, v, &kv.PutOptions{TTL: time.Hour, ContentType: "text/plain", Labels: map[string]string{"l": "x"}})
	case 4:
		st.Delete(k)
	case 5:
		st.Expire(k, time.Hour)
	case 6:
		st.Persist(k)
	case 7:
		cmd(kv.CmdIncrBy, "n"+k, strconv.Itoa(rng.IntN(10)))
	case 8:
		cmd(kv.CmdHSet, "h"+k, "f"+strconv.Itoa(rng.IntN(5)), string(v))
		if rng.IntN(3) == 0 {
			cmd(kv.CmdHDel, "h"+k, "f"+strconv.Itoa(rng.IntN(5)))
		}
	case 9:
		cmd(kv.CmdLPush, "l"+k, string(v))
		if rng.IntN(2) == 0 {
			cmd(kv.CmdRPop, "l"+k)
		}
	case 10:
		cmd(kv.CmdSAdd, "s"+k, string(v))
		cmd(kv.CmdSRem, "s"+k, strconv.Itoa(rng.IntN(1000)))
	case 11:
		cmd(kv.CmdZAdd, "z"+k, strconv.Itoa(rng.IntN(100)), string(v))
		cmd(kv.CmdZIncrBy, "z"+k, "1", string(v))
	case 12:
		cmd(kv.CmdXAdd, "x"+k, "*", "f", string(v))
		if rng.IntN(4) == 0 {
			cmd(kv.CmdXTrim, "x"+k, "MAXLEN", "2")
		}
	case 13:
		cmd(kv.CmdAppend, k, "+")
	}
}

// A replica that falls behind the owner's trim floor catches up by
// snapshot (R-REP-1). Its copy followed this very owner's lease, so its
// revisions compare: it reconciles (a revision-bounded merge) instead of
// wiping, and ends level — keys deleted while it was away are gone, keys
// written meanwhile are there. A replica of another history wipes (the
// randomized test above restarts replicas empty: those snapshots are
// skips or wipes, never merges).
func TestAReplicaBehindTheTrimFloorReconciles(t *testing.T) {
	a := newPeer(t, "a", Async, tcpDial, func(c *store.Config) { c.OpLogMaxOps = 8 })
	b := newPeer(t, "b", Async, tcpDial, nil)
	for i := range 4 {
		b.st.Segment(uint16(i)).SetOwned(false)
	}
	level := func() bool {
		for i := range 4 {
			ga, gb := a.st.Segment(uint16(i)), b.st.Segment(uint16(i))
			if ga.Revision() != gb.Revision() || ga.Digest() != gb.Digest() {
				return false
			}
		}
		return true
	}
	m1 := pairMap(1, a, b, "a", "b", 1)
	b.m.Apply(m1)
	a.m.Apply(m1)
	for i := range 100 {
		a.st.Put("k"+strconv.Itoa(i), []byte("v1"), nil)
	}
	eventually(t, "the replica level", level)
	_, reconciled0, _ := b.m.SnapshotApplies()

	// The replica is cut off: the owner's map no longer lists it (same
	// ownership generation: the lease goes on). Far more writes than the
	// op-log keeps happen meanwhile, deletes among them.
	alone := pairMap(2, a, b, "a", "b", 1)
	alone.Partitions[0].ReplicaNodeIDs = nil
	a.m.Apply(alone)
	eventually(t, "the owner stopped shipping", func() bool {
		return len(a.m.Possession(cluster.PossessionQuery{Identity: "p", First: 0, Last: 3}).Replicas) == 0
	})
	for i := range 100 {
		if i%3 == 0 {
			a.st.Delete("k" + strconv.Itoa(i))
		} else {
			a.st.Put("k"+strconv.Itoa(i), []byte("v2"), nil)
		}
		a.st.Put("n"+strconv.Itoa(i), []byte("new"), nil)
	}
	for i := range 4 {
		if b.st.Segment(uint16(i)).Revision() >= a.st.Segment(uint16(i)).TrimFloor() {
			t.Fatalf("segment %d: the replica (revision %d) is not behind the trim floor %d", i,
				b.st.Segment(uint16(i)).Revision(), a.st.Segment(uint16(i)).TrimFloor())
		}
	}

	// Back in the map: catch-up by snapshot, applied as a reconcile.
	m3 := pairMap(3, a, b, "a", "b", 1)
	b.m.Apply(m3)
	a.m.Apply(m3)
	eventually(t, "the replica level again", level)
	if _, reconciled, wiped := b.m.SnapshotApplies(); reconciled < reconciled0+4 {
		t.Fatalf("snapshots applied: %d reconciled (before: %d), %d wiped — want one reconcile per segment", reconciled, reconciled0, wiped)
	}
}

// A node the map no longer lists for a partition (neither its owner nor a
// copy: the map was re-planned without it) drops its copy: nobody asks it
// for that data again, it is memory outside the cap, and a later ownership
// of those segments must not serve it. Listed again, it catches up from
// nothing.
func TestADroppedReplicaReleasesItsCopy(t *testing.T) {
	a := newPeer(t, "a", Sync, tcpDial, nil)
	b := newPeer(t, "b", Sync, tcpDial, nil)
	for i := range 4 {
		b.st.Segment(uint16(i)).SetOwned(false)
	}
	level := func() bool {
		for i := range 4 {
			if a.st.Segment(uint16(i)).Digest() != b.st.Segment(uint16(i)).Digest() {
				return false
			}
		}
		return true
	}
	m1 := pairMap(1, a, b, "a", "b", 1)
	b.m.Apply(m1)
	a.m.Apply(m1)
	for i := range 50 {
		k := "k" + strconv.Itoa(i)
		res := a.st.Put(k, []byte("v"), nil)
		if st := a.m.Wait(context.Background(), a.st.SegmentFor(k).ID(), res.Revision); st.String() != "Success" {
			t.Fatalf("sync wait %v", st)
		}
	}
	if !level() || b.st.Stats().ReplicaItems != 50 {
		t.Fatalf("replica not level before the test: %+v", b.st.Stats())
	}

	without := pairMap(2, a, b, "a", "b", 1)
	without.Partitions[0].ReplicaNodeIDs = nil
	a.m.Apply(without)
	b.m.Apply(without)
	if st := b.st.Stats(); st.ReplicaItems != 0 || st.ReplicaBytes != 0 {
		t.Fatalf("a node outside the partition kept its copy: %+v", st)
	}
	for i := range 4 {
		if b.st.Segment(uint16(i)).Revision() != 0 {
			t.Fatalf("segment %d still at revision %d", i, b.st.Segment(uint16(i)).Revision())
		}
	}
	if a.st.Stats().Items != 50 {
		t.Fatalf("the owner lost data: %+v", a.st.Stats())
	}

	m3 := pairMap(3, a, b, "a", "b", 1)
	a.m.Apply(m3)
	b.m.Apply(m3)
	eventually(t, "the re-listed replica level again", level)
}
