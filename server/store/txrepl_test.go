package store

import (
	"reflect"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// A replica pair in one process: the owner's op-log is shipped to the
// replica by OperationsAfter/ApplyOp, exactly what the replication stream
// does over TCP (server/replication).
type txPair struct {
	t       *testing.T
	owner   *Store
	replica *Store
	clock   *ManualClock
}

func newTxPair(t *testing.T) *txPair {
	o, clk := newTestStore(t)
	r, _ := newTestStore(t, func(c *Config) { c.Clock = clk })
	for _, g := range r.segments {
		g.SetOwned(false)
	}
	return &txPair{t: t, owner: o, replica: r, clock: clk}
}

// ship applies to the replica the owner's ops of every segment it has not
// applied; keep filters them (nil: all).
func (p *txPair) ship(keep func(Op) bool) {
	p.t.Helper()
	for i, g := range p.owner.segments {
		rg := p.replica.segments[i]
		ops, err := g.OperationsAfter(rg.Revision())
		if err != nil {
			p.t.Fatal(err)
		}
		for _, op := range ops {
			if keep != nil && !keep(op) {
				continue
			}
			if _, err := rg.ApplyOp(op); err != nil {
				p.t.Fatalf("segment %d: applying %v at %d: %v", i, op.Kind, op.Revision(), err)
			}
		}
	}
}

// promote makes the replica the owner of every segment (the failover).
func (p *txPair) promote() {
	for _, g := range p.replica.segments {
		g.SetOwned(true)
	}
}

func (p *txPair) prepareTransfer(id string, k []string) (TxPrepareRequest, kv.Reply) {
	p.t.Helper()
	for _, key := range k {
		mustStatus(p.t, p.owner.Put(key, []byte("100"), nil), kv.StatusSuccess)
	}
	req := TxPrepareRequest{Timeout: time.Minute,
		Reads: []TxRead{{Key: k[0], Version: 1}, {Key: k[1], Version: 1}},
		Writes: []TxWrite{{Op: TxPut, Key: k[0], Value: []byte("70")}, {Op: TxPut, Key: k[1], Value: []byte("130")},
			{Op: TxDelete, Key: k[2]}}}
	return req, mustReply(p.t, p.owner.TxPrepare(id, req), kv.StatusSuccess)
}

func (p *txPair) wantValues(s *Store, k []string) {
	p.t.Helper()
	if g := s.Get(k[0]); string(g.Value) != "70" {
		p.t.Fatalf("%s = %+v, want 70", k[0], g)
	}
	if g := s.Get(k[1]); string(g.Value) != "130" {
		p.t.Fatalf("%s = %+v, want 130", k[1], g)
	}
	mustStatus(p.t, s.Get(k[2]), kv.StatusNotFound)
}

// The failure this prevents: the owner voted yes and died before the
// commit reached it; its promoted replica did not know the transaction and
// answered "unknown transaction", half-applying a transaction whose other
// owner committed.
func TestTxReplicaPromotedBeforeTheCommitHoldsThePreparedTransaction(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "a", 3)
	p.prepareTransfer("tx1", k)
	p.ship(nil)
	if st := p.replica.TxStats(); st.Live != 1 || st.StagedBytes == 0 {
		t.Fatalf("replica stats %+v", st)
	}
	if n := reservedKeys(p.replica); n != 3 {
		t.Fatalf("replica holds %d reservations, want 3", n)
	}
	// A replica commits nothing of segments it does not own.
	mustReply(t, p.replica.TxCommit("tx1"), kv.StatusMoved)

	p.promote() // the owner died before TX.COMMIT reached it
	// The promoted copy refuses writes to the reserved keys until the deadline.
	mustStatus(t, p.replica.Put(k[0], []byte("x"), nil), kv.StatusConflict)
	r := mustReply(t, p.replica.TxCommit("tx1"), kv.StatusSuccess)
	if len(r.Array) != 3 || r.Array[0].Version != 2 || r.Array[1].Version != 2 || r.Array[2].Status != kv.StatusSuccess {
		t.Fatalf("commit on the promoted replica: %+v", r)
	}
	p.wantValues(p.replica, k)
	if n := reservedKeys(p.replica); n != 0 {
		t.Fatalf("%d reservations left", n)
	}
	again := mustReply(t, p.replica.TxCommit("tx1"), kv.StatusSuccess)
	if !reflect.DeepEqual(again.Array, r.Array) {
		t.Fatalf("a retried commit answered %+v, want %+v", again.Array, r.Array)
	}
}

// The failure this prevents: the owner committed and shipped some of the
// writes' records but died before the commit marker; the promoted replica,
// retried by the coordinator, would apply those writes a second time (new
// versions and revisions, a delete answering NotFound).
func TestTxCommitOnAPromotedReplicaDoesNotApplyTwice(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "b", 3)
	p.prepareTransfer("tx2", k)
	p.ship(nil)
	want := mustReply(t, p.owner.TxCommit("tx2"), kv.StatusSuccess)
	p.ship(func(op Op) bool { return op.Kind != OpTxCommit }) // the records, not the marker
	if st := p.replica.TxStats(); st.Live != 1 {
		t.Fatalf("replica stats %+v: the entry must survive without its commit marker", st)
	}
	p.promote()
	got := mustReply(t, p.replica.TxCommit("tx2"), kv.StatusSuccess)
	if !reflect.DeepEqual(got.Array, want.Array) {
		t.Fatalf("commit on the promoted replica answered %+v, want the owner's %+v", got.Array, want.Array)
	}
	p.wantValues(p.replica, k)
	if g := p.replica.Get(k[0]); g.Version != 2 {
		t.Fatalf("applied twice: %+v", g)
	}
}

func TestTxReplicaDropsTheEntryOnTheCommitMarker(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "c", 3)
	p.prepareTransfer("tx3", k)
	p.ship(nil)
	want := mustReply(t, p.owner.TxCommit("tx3"), kv.StatusSuccess)
	p.ship(nil)
	if st := p.replica.TxStats(); st.Live != 0 || st.StagedBytes != 0 || st.Remembered != 1 {
		t.Fatalf("replica stats %+v", st)
	}
	if n := reservedKeys(p.replica); n != 0 {
		t.Fatalf("%d reservations left on the replica", n)
	}
	p.promote()
	got := mustReply(t, p.replica.TxCommit("tx3"), kv.StatusSuccess)
	if !reflect.DeepEqual(got.Array, want.Array) {
		t.Fatalf("retried commit answered %+v, want %+v", got.Array, want.Array)
	}
	p.wantValues(p.replica, k)
}

func TestTxReplicaDropsTheEntryOnTheAbortMarker(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "d", 3)
	p.prepareTransfer("tx4", k)
	p.ship(nil)
	mustReply(t, p.owner.TxAbort("tx4"), kv.StatusSuccess)
	p.ship(nil)
	if st := p.replica.TxStats(); st.Live != 0 || reservedKeys(p.replica) != 0 {
		t.Fatalf("replica stats %+v, %d reservations", st, reservedKeys(p.replica))
	}
	p.promote()
	r := mustReply(t, p.replica.TxCommit("tx4"), kv.StatusConflict)
	if r.Message != "transaction aborted" {
		t.Fatalf("commit after an abort: %q", r.Message)
	}
	mustStatus(t, p.replica.Put(k[0], []byte("free"), nil), kv.StatusSuccess)
}

// Every copy lapses at the owner's absolute deadline: a coordinator that
// died between the phases wedges no key on a promoted replica either.
func TestTxReplicatedEntryLapsesAtTheDeadline(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "e", 3)
	p.prepareTransfer("tx5", k)
	p.ship(nil)
	p.promote()
	p.clock.Advance(time.Minute)
	mustStatus(t, p.replica.Put(k[0], []byte("free"), nil), kv.StatusSuccess)
	r := mustReply(t, p.replica.TxCommit("tx5"), kv.StatusConflict)
	if r.Message != "transaction expired" {
		t.Fatalf("a commit after the deadline: %q", r.Message)
	}
	if st := p.replica.TxStats(); st.Live != 0 || st.StagedBytes != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// A copy built from a snapshot (a replica far behind, a restarted one)
// holds the transactions prepared at the snapshot's revision.
func TestTxSnapshotCarriesThePreparedTransaction(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "f", 3)
	p.prepareTransfer("tx6", k)
	for i, g := range p.owner.segments {
		snap := g.Snapshot()
		rg := p.replica.segments[i]
		rg.InstallSnapshot(snap)
		if err := rg.InstallPreparedTx(snap.Prepared); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.replica.TxStats(); st.Live != 1 {
		t.Fatalf("replica stats %+v", st)
	}
	// A later snapshot without it (the owner aborted) drops it.
	mustReply(t, p.owner.TxAbort("tx6"), kv.StatusSuccess)
	for i, g := range p.owner.segments {
		snap := g.Snapshot()
		if len(snap.Prepared) != 0 {
			t.Fatalf("segment %d: an aborted transaction in a snapshot: %+v", i, snap.Prepared)
		}
		if err := p.replica.segments[i].InstallPreparedTx(snap.Prepared); err != nil {
			t.Fatal(err)
		}
	}
	if st := p.replica.TxStats(); st.Live != 0 || st.StagedBytes != 0 || reservedKeys(p.replica) != 0 {
		t.Fatalf("replica stats %+v, %d reservations", st, reservedKeys(p.replica))
	}
	// And the promoted copy of a fresh prepare, from a snapshot, commits.
	p2 := newTxPair(t)
	p2.prepareTransfer("tx7", k)
	for i, g := range p2.owner.segments {
		snap := g.Snapshot()
		p2.replica.segments[i].InstallSnapshot(snap)
		if err := p2.replica.segments[i].InstallPreparedTx(snap.Prepared); err != nil {
			t.Fatal(err)
		}
	}
	p2.promote()
	mustReply(t, p2.replica.TxCommit("tx7"), kv.StatusSuccess)
	p2.wantValues(p2.replica, k)
}

// A re-sent marker (a session resumed from an earlier revision) changes
// nothing: markers are revision-guarded like records.
func TestTxMarkersAreRevisionGuarded(t *testing.T) {
	p := newTxPair(t)
	k := keysInDistinctSegments(p.owner, "g", 3)
	p.prepareTransfer("tx8", k)
	p.ship(nil)
	before := p.replica.TxStats()
	for i, g := range p.owner.segments {
		ops, _ := g.OperationsAfter(0)
		for _, op := range ops {
			if applied, err := p.replica.segments[i].ApplyOp(op); err != nil || applied {
				t.Fatalf("re-applying %v: applied=%v err=%v", op.Kind, applied, err)
			}
		}
	}
	if after := p.replica.TxStats(); after != before {
		t.Fatalf("stats moved: %+v → %+v", before, after)
	}
	bad := Op{Kind: OpTxPrepare, Record: Record{Revision: 1 << 40}, Cmd: &kv.Cmd{Op: kv.CmdTxPrepare, Args: [][]byte{[]byte("x"), []byte{0xc1}}}}
	if _, err := p.replica.segments[0].ApplyOp(bad); err == nil {
		t.Fatal("a malformed prepare marker was applied")
	}
}
