package replication

import (
	"bufio"
	"context"
	"net"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/store"
)

// barrierOnTwoPartitions is a Sync manager (quorum All) owning segments
// 0–3 as partition A and 4–7 as partition B, each with one replica whose
// shipper runs no session: the test plays the replica's acks.
func barrierOnTwoPartitions(t *testing.T, timeout time.Duration) (m *Manager, a, b *shipper) {
	t.Helper()
	return shippersOnTwoPartitions(t, Sync, timeout)
}

// shippersOnTwoPartitions is barrierOnTwoPartitions in mode.
func shippersOnTwoPartitions(t *testing.T, mode Mode, timeout time.Duration) (m *Manager, a, b *shipper) {
	t.Helper()
	sc := store.DefaultConfig()
	sc.Segments = 8
	st, err := store.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	m, err = New(Config{Self: "n1", Store: st, StoreName: "default", Mode: mode, Quorum: All, SyncTimeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	route := make([]*partState, 8)
	ships := make([]*shipper, 2)
	for i, name := range []string{"A", "B"} {
		p := &cluster.Partition{ID: i, Identity: name, OwnershipGeneration: 1, FirstSegment: 4 * i, LastSegment: 4*i + 3}
		ships[i] = newShipper(m, keyOf(p, "n2"), p)
		ps := newPartState(p, ships[i:i+1])
		ships[i].ps.Store(ps)
		for seg := p.FirstSegment; seg <= p.LastSegment; seg++ {
			route[seg] = ps
		}
	}
	m.route.Store(&route)
	return m, ships[0], ships[1]
}

// ack plays the replica: it applied rev of seg.
func (s *shipper) ackForTest(seg int, rev uint64) {
	s.applied[seg-s.first].Store(rev)
	s.notify()
}

// pollFor polls cond until it holds (true) or 30 s pass (false).
func pollFor(cond func() bool) bool {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return true
		}
	}
	return false
}

// A batch that wrote in two partitions asks both partitions' replicas
// before waiting on either: the failure it prevents is the second
// partition's shipper gathering (a sync shipper ships when a barrier asks)
// until the first partition had answered — two round trips a batch, and
// here, where partition A's replica answers only once B's shipper was
// asked, a timeout for a write both replicas would have applied.
func TestWaitAllAsksEveryPartitionBeforeWaiting(t *testing.T) {
	m, a, b := barrierOnTwoPartitions(t, time.Minute)
	go func() {
		if !pollFor(func() bool { return b.waited.Load() }) { // B asked to ship: only then does A's replica answer
			return
		}
		a.ackForTest(1, 7)
		b.ackForTest(5, 9)
	}()
	writes := []kv.SegmentWrite{{Segment: 1, Revision: 7}, {Segment: 5, Revision: 9}}
	status := make([]kv.Status, 2)
	m.WaitAll(context.Background(), writes, status)
	if status[0] != kv.StatusSuccess || status[1] != kv.StatusSuccess {
		t.Fatalf("statuses %v, want both Success", status)
	}
	if !a.dirty[1].Load() || !b.dirty[1].Load() {
		t.Fatal("the written segments were not marked for shipping")
	}
}

// One SyncTimeout bounds the whole batch: with no replica answering, a
// batch over two partitions answers Timeout for both after one timeout,
// not one per partition (the native front end waited segment after
// segment: k partitions with a dead replica held a batch k timeouts).
func TestWaitAllTimesOutOnceForTheBatch(t *testing.T) {
	const timeout = time.Second
	m, _, _ := barrierOnTwoPartitions(t, timeout)
	writes := []kv.SegmentWrite{{Segment: 0, Revision: 1}, {Segment: 4, Revision: 1}, {Segment: 6, Revision: 2}}
	status := make([]kv.Status, len(writes))
	began := time.Now()
	m.WaitAll(context.Background(), writes, status)
	took := time.Since(began)
	for i, s := range status {
		if s != kv.StatusTimeout {
			t.Fatalf("write %d: %v, want Timeout", i, s)
		}
	}
	if took >= 2*timeout {
		t.Fatalf("the batch waited %v: one timeout per partition, not one for the batch (%v)", took, timeout)
	}
	if got := m.syncTimeouts.Load(); got != 3 {
		t.Fatalf("%d timeouts counted, want 3 (one per write)", got)
	}
}

// A partition already acknowledged answers at once and its shipper is not
// asked again; the other partition's write still waits for its replica.
func TestWaitAllMixesAnsweredAndPendingPartitions(t *testing.T) {
	m, a, b := barrierOnTwoPartitions(t, time.Minute)
	a.ackForTest(2, 5)
	go func() {
		if !pollFor(func() bool { return b.waited.Load() }) {
			return
		}
		b.ackForTest(7, 3)
	}()
	status := make([]kv.Status, 2)
	m.WaitAll(context.Background(), []kv.SegmentWrite{{Segment: 2, Revision: 4}, {Segment: 7, Revision: 3}}, status)
	if status[0] != kv.StatusSuccess || status[1] != kv.StatusSuccess {
		t.Fatalf("statuses %v", status)
	}
	if a.waited.Load() {
		t.Fatal("the answered partition's shipper was asked to ship")
	}
}

// takeWake takes a pending wake-up of s's run goroutine, if any.
func takeWake(s *shipper) bool {
	select {
	case <-s.wake:
		return true
	default:
		return false
	}
}

// TestGatheringShipperIsNotWokenByWrites: a shipper in its gathering
// pause is not woken by the writes that mark its segments (the pass after
// the pause ships them), one outside it is, once per clean segment, and a
// write that finds its segment marked already wakes nobody. The failure
// it prevents: a goroutine wake-up per write to a clean segment — most
// writes, a partition's spreading over its segments.
func TestGatheringShipperIsNotWokenByWrites(t *testing.T) {
	_, a, _ := shippersOnTwoPartitions(t, Async, time.Second)
	woken := func() bool { return takeWake(a) }
	a.markDirty(1)
	if !woken() || !a.dirty[1].Load() {
		t.Fatal("a write to a clean segment did not wake the idle shipper or mark the segment")
	}
	a.markDirty(1)
	if woken() {
		t.Fatal("a write to a segment marked already woke the shipper")
	}
	a.gathering.Store(true)
	a.markDirty(2)
	if woken() {
		t.Fatal("a write woke a shipper in its gathering pause")
	}
	if !a.dirty[2].Load() {
		t.Fatal("a write during the pause did not mark its segment for the pass after it")
	}
	a.gathering.Store(false)
	a.markDirty(3)
	if !woken() {
		t.Fatal("a write after the pause did not wake the shipper")
	}
}

// TestSyncWriteLeavesTheWakeUpToItsBarrier: under Sync a write marks its
// segment and arms the timer instead of waking the shipper — its barrier
// wakes it a moment later (D99: the write's wake-up only started a
// gathering pause the barrier's ended) —; a write no barrier asks for is
// shipped by the timer; a barrier disarms it, or the pass would run twice.
func TestSyncWriteLeavesTheWakeUpToItsBarrier(t *testing.T) {
	_, a, _ := barrierOnTwoPartitions(t, time.Second)
	woken := func() bool { return takeWake(a) }
	a.markDirty(1)
	if woken() {
		t.Fatal("a sync write woke the shipper: its barrier does")
	}
	if !a.dirty[1].Load() || !a.syncArmed.Load() {
		t.Fatal("a sync write did not mark its segment and arm the timer that ships it without a barrier")
	}
	if !pollFor(func() bool { return woken() && a.waited.Load() }) {
		t.Fatal("a write no barrier asked for was not shipped: the timer did not wake the shipper to ship")
	}
	a.waited.Store(false)

	a.markDirty(2)
	a.hurry(2)
	if !woken() || !a.waited.Load() {
		t.Fatal("the barrier did not wake the shipper to ship at once")
	}
	if a.syncArmed.Load() {
		t.Fatal("the barrier left the timer armed: a second pass for nothing a moment later")
	}
}

// TestSyncBarrierShipsOnItsOwnGoroutine (D100): a sync write's barrier
// ships its partition's dirty segments itself, on the goroutine that then
// waits for the ack, without waking the shipper's run goroutine — a
// goroutine hand-off less per round trip —, and wakes the run goroutine
// instead when it must not ship itself: a pass is running (it may have
// passed the write's segment already: the write would wait for a pass
// that never comes) or a segment waits for its catch-up snapshot (large:
// shipped by the run goroutine).
func TestSyncBarrierShipsOnItsOwnGoroutine(t *testing.T) {
	m, a, _ := barrierOnTwoPartitions(t, time.Second)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	owner, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	replica, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	defer replica.Close()
	n := a.last - a.first + 1
	out := &stream{conn: owner, w: bufio.NewWriter(owner), enc: newEncoder(),
		cursor: make([]uint64, n), snap: make([]bool, n), announce: make([]bool, n), pins: make([]func(), n)}
	a.live.Store(out)
	r := bufio.NewReader(replica)

	if res := m.st.Segment(1).Put("k1", []byte("v1"), nil); res.Status != kv.StatusSuccess {
		t.Fatalf("put: %v", res.Status)
	}
	a.markDirty(1)
	a.hurry(1)
	if takeWake(a) {
		t.Fatal("the barrier woke the run goroutine to ship what it could ship itself")
	}
	if a.syncArmed.Load() {
		t.Fatal("the barrier shipped but left the timer armed: a second pass for nothing")
	}
	_ = replica.SetReadDeadline(time.Now().Add(30 * time.Second))
	typ, body, err := readFrame(r)
	if err != nil {
		t.Fatalf("nothing shipped to the replica: %v", err)
	}
	seg, ops, err := decodeOps(body)
	if typ != fOps || err != nil || seg != 1 || len(ops) != 1 || ops[0].Record.Key() != "k1" {
		t.Fatalf("shipped frame %d segment %d ops %d (err %v), want the Ops of k1 on segment 1", typ, seg, len(ops), err)
	}
	if out.cursor[1] != ops[0].Revision() {
		t.Fatalf("cursor %d after shipping revision %d", out.cursor[1], ops[0].Revision())
	}

	out.mu.Lock() // the run goroutine is in a pass
	if res := m.st.Segment(2).Put("k2", []byte("v2"), nil); res.Status != kv.StatusSuccess {
		t.Fatalf("put: %v", res.Status)
	}
	a.markDirty(2)
	a.hurry(2)
	if !takeWake(a) || !a.waited.Load() {
		out.mu.Unlock()
		t.Fatal("with a pass running, the barrier did not wake the run goroutine to ship its write")
	}
	out.mu.Unlock()
	a.waited.Store(false)

	out.snaps = 1 // a segment waits for its snapshot
	a.hurry(2)
	if !takeWake(a) || !a.waited.Load() {
		t.Fatal("with a snapshot due, the barrier did not leave the shipping to the run goroutine")
	}
	if !a.dirty[2].Load() {
		t.Fatal("the barrier shipped on its own goroutine while a snapshot was due")
	}
}
