package replication

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

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

func newPeer(t *testing.T, id cluster.NodeID, mode Mode, dial func(ctx context.Context, addr string) (net.Conn, error)) *peer {
	t.Helper()
	sc := store.DefaultConfig()
	sc.Segments = 4
	st, err := store.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{Store: st, Self: id, StoreName: "s", Mode: mode, SyncTimeout: 300 * time.Millisecond, Dial: dial,
		Heartbeat: 50 * time.Millisecond, PeerTimeout: time.Second, RetryMin: 10 * time.Millisecond, RetryMax: 50 * time.Millisecond,
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

func tcpDial(ctx context.Context, addr string) (net.Conn, error) {
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
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestShipAndSyncBarrierInMemory(t *testing.T) {
	a := newPeer(t, "a", Sync, tcpDial)
	b := newPeer(t, "b", Sync, tcpDial)
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
		applied, _ := g.ApplyRecord(store.Record{Key: "k1", Value: []byte("z"), Version: 1, Revision: res.Revision}, store.OpPut)
		return applied
	})
}

func TestADeposedOwnerFencesItselfOnARefusal(t *testing.T) {
	a := newPeer(t, "a", Sync, tcpDial)
	b := newPeer(t, "b", Sync, tcpDial)
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
