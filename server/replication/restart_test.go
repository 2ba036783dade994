package replication

import (
	"context"
	"strconv"
	"testing"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/store"
)

// Restart recovery (R-REP-6) between two managers, the leader's moves
// played by hand: a fresh pair certifies at once; an owner that restarts
// empty under its lease holds its segments (Moved, never NotFound), never
// overwrites the replica, reports the held copy, syncs from it when the
// partition is Recovering in place, and certifies when it serves again.
func TestRestartRecoveryInMemory(t *testing.T) {
	a := newPeer(t, "a", Sync, tcpDial, nil)
	b := newPeer(t, "b", Sync, tcpDial, nil)
	m := pairMap(1, a, b, "a", "b", 1)
	b.m.Apply(m)
	a.m.Apply(m)
	eventually(t, "a fresh owner certified (its replica holds nothing more)", func() bool { return a.m.Certified("p") })
	for i := range 4 {
		if a.m.Held(i) || !a.st.Segment(uint16(i)).Owned() {
			t.Fatalf("segment %d held after certification", i)
		}
	}
	const n = 60
	for i := range n {
		k := "k" + strconv.Itoa(i)
		res := a.st.Put(k, []byte("v"+strconv.Itoa(i)), nil)
		if st := a.m.Wait(context.Background(), a.st.SegmentFor(k).ID(), res.Revision); st.String() != "Success" {
			t.Fatalf("sync wait %v", st)
		}
	}
	kept := make([]store.Digest, 4)
	for i := range kept {
		kept[i] = b.st.Segment(uint16(i)).Digest()
	}

	// The owner restarts: memory gone, same lease.
	a.m.Close()
	a2 := newPeer(t, "a", Sync, tcpDial, nil)
	for i := range 4 {
		a2.st.Segment(uint16(i)).SetOwned(false) // the node starts owning nothing
	}
	m2 := pairMap(2, a2, b, "a", "b", 1)
	b.m.Apply(m2)
	applyNode(a2, m2)
	q := cluster.PossessionQuery{Identity: "p", First: 0, Last: 3}
	eventually(t, "the held copy reported", func() bool {
		r := a2.m.Possession(q).Replicas
		return len(r) == 1 && r[0].Held
	})
	if a2.m.Certified("p") {
		t.Fatal("an empty restarted owner certified itself")
	}
	for i := range n {
		if got := a2.st.Get("k" + strconv.Itoa(i)); got.Status.String() != "Moved" {
			t.Fatalf("a held segment answered %v (want a retryable Moved, never NotFound)", got.Status)
		}
	}
	for i := range kept {
		if b.st.Segment(uint16(i)).Digest() != kept[i] {
			t.Fatalf("the replica's segment %d was overwritten by the restarted owner", i)
		}
	}

	// The leader: Recovering in place under a new generation, b the source.
	m3 := pairMap(3, a2, b, "a", "b", 2)
	m3.Partitions[0].Health, m3.Partitions[0].Source = failover.Recovering, "b"
	b.m.Apply(m3)
	applyNode(a2, m3)
	eventually(t, "the owner pulled the replica's copy", func() bool {
		for i := range kept {
			if a2.st.Segment(uint16(i)).Digest() != kept[i] {
				return false
			}
		}
		return true
	})
	for i := range kept {
		// The source's head is recorded per segment (the serve gate's
		// HoldBehindSource needs it).
		if got, want := a2.m.pulledHead(i), b.st.Segment(uint16(i)).Revision(); got != want {
			t.Fatalf("segment %d: recorded source head %d, source at %d", i, got, want)
		}
	}
	// Segment 0's source head is made one revision ahead of what arrived:
	// the source "accepted a write this node has not pulled". Serving the
	// segment now would answer NotFound for that acknowledged write.
	behind := a2.st.Segment(0).Revision() + 1
	a2.m.notePulled(0, behind)

	// Level: the partition serves again.
	m4 := pairMap(4, a2, b, "a", "b", 2)
	m4.Partitions[0].Health = failover.Degraded
	b.m.Apply(m4)
	applyNode(a2, m4)
	if !a2.m.Held(0) || a2.m.Certified("p") {
		t.Fatal("a segment behind its source's head served (HoldBehindSource ignored)")
	}
	for i := 1; i < 4; i++ {
		if a2.m.Held(i) {
			t.Fatalf("segment %d, level with its source, is held", i)
		}
	}
	// The missing revision arrives: the gate opens and the partition certifies.
	if _, err := a2.st.Segment(0).ApplyRecord(store.Record{Revision: behind}.WithVersion(1).With("late", []byte("w")), store.OpPut); err != nil {
		t.Fatal(err)
	}
	eventually(t, "certified after the pull", func() bool { return a2.m.Certified("p") })
	if a2.m.Held(0) {
		t.Fatal("segment 0 still held once level with its source")
	}
	if _, err := b.st.Segment(0).ApplyRecord(store.Record{Revision: behind}.WithVersion(1).With("late", []byte("w")), store.OpPut); err != nil {
		t.Fatal(err)
	}
	for i := range kept {
		kept[i] = b.st.Segment(uint16(i)).Digest()
	}
	for i := range n {
		k := "k" + strconv.Itoa(i)
		if got := a2.st.Get(k); got.Status.String() != "Success" || string(got.Value) != "v"+strconv.Itoa(i) {
			t.Fatalf("get %s after recovery: %v %q", k, got.Status, got.Value)
		}
	}
	eventually(t, "the replica in step with the certified owner", func() bool {
		for i := range kept {
			if b.st.Segment(uint16(i)).Digest() != kept[i] {
				return false
			}
		}
		r := a2.m.Possession(q).Replicas
		return len(r) == 1 && r[0].Streaming && !r[0].Held
	})
}

// applyNode aligns p to pm as the node's wiring does (server.applyMap):
// lost segments stop serving, replication follows, gained segments serve
// unless the serve gate holds them.
func applyNode(p *peer, pm *cluster.PartitionMap) {
	owned := pm.OwnedSegments(p.m.cfg.Self)
	for i, o := range owned {
		if !o {
			p.st.Segment(uint16(i)).SetOwned(false)
		}
	}
	p.m.Apply(pm)
	for i, o := range owned {
		if o && !p.m.Held(i) {
			p.st.Segment(uint16(i)).SetOwned(true)
		}
	}
}
