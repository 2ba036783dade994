package store

// Replicated prepared state (R-DS-4 with R-REP-2): a participant's prepared
// transaction survives the loss of its owner.
//
// When an owner votes yes it logs, in the op-log of every segment the
// transaction touches, an OpTxPrepare marker: the transaction id, its
// absolute deadline and this segment's share of it (reads, staged writes
// with their positions in the request, reserved keys). The marker takes a
// revision of the segment like any write, ships to the partition's replicas
// on the replication stream, and the TX.PREPARE answer waits for the write
// barrier (store.CommandWrites), so under sync replication the replicas hold
// the prepared state before the coordinator learns the vote.
//
// A replica applies the marker into its own transaction table: the same
// reservations (a promoted replica refuses conflicting writes to them until
// the deadline) and the staged writes. The owner's commit writes ordinary
// OpPut/OpDelete records and then an OpTxCommit marker carrying the
// results; an abort logs OpTxAbort. A replica drops its copy on either
// marker, and applies no staged write itself: the records carry them. An
// expiry logs nothing: every copy lapses at the same absolute deadline.
//
// A replica promoted before the commit marker reached it still holds the
// transaction and commits it when the coordinator retries TX.COMMIT there.
// Writes the old owner had already committed and shipped are recognised
// (a record of a reserved key above the prepare marker's revision, holding
// the staged value) and not applied twice.
//
// A snapshot carries the live prepare markers of its segment
// (Snapshot.Prepared), so a copy built from a snapshot holds them too.

import (
	"bytes"
	"cmp"
	"container/heap"
	"fmt"
	"slices"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// txPrepareMarker is one segment's share of a prepared transaction, the
// body of an OpTxPrepare marker.
type txPrepareMarker struct {
	Expires int64         `msgpack:"e"` // Unix ns on the owner's clock
	Timeout time.Duration `msgpack:"t"`
	Keys    []string      `msgpack:"k"` // the reserved keys of this segment
	Reads   []TxRead      `msgpack:"r,omitempty"`
	Writes  []TxWrite     `msgpack:"w,omitempty"`
	Index   []int         `msgpack:"i,omitempty"` // Index[j]: position of Writes[j] in the request
}

// txCommitMarker is the body of an OpTxCommit marker: the results of the
// segment's writes, whose records precede the marker in the op-log.
type txCommitMarker struct {
	Applied []txAppliedAt `msgpack:"a"`
}

// txSegPrepared is a prepare marker a segment holds until the transaction
// resolves: what a snapshot carries.
type txSegPrepared struct {
	cmd     *kv.Cmd
	rev     uint64
	expires int64
}

func txWriteBytes(w *TxWrite) int64 { return int64(len(w.Key) + len(w.Value)) }

// txPortion is e's share of segment seg.
func (s *Store) txPortion(e *txEntry, seg uint16, expires int64) *txPrepareMarker {
	m := &txPrepareMarker{Expires: expires, Timeout: e.timeout}
	for i, k := range e.keys {
		if e.keySegs[i] == seg {
			m.Keys = append(m.Keys, k)
		}
	}
	for _, r := range e.reads {
		if s.SegmentFor(r.Key).id == seg {
			m.Reads = append(m.Reads, r)
		}
	}
	for i := range e.writes {
		if e.writeSegs[i] == seg {
			m.Writes = append(m.Writes, e.writes[i])
			m.Index = append(m.Index, e.writeIdx[i])
		}
	}
	return m
}

// addPortion adds segment seg's share m (prepare marker at revision rev) to
// a replicated entry and returns the bytes it staged. A share already held
// is not added twice.
func (s *Store) addPortion(e *txEntry, seg uint16, m *txPrepareMarker, rev uint64) int64 {
	if slices.Contains(e.segs, seg) {
		return 0
	}
	for _, k := range m.Keys {
		e.keys = append(e.keys, k)
		e.keySegs = append(e.keySegs, seg)
	}
	e.reads = append(e.reads, m.Reads...)
	var n int64
	for j := range m.Writes {
		e.writes = append(e.writes, m.Writes[j])
		e.writeIdx = append(e.writeIdx, m.Index[j])
		e.writeSegs = append(e.writeSegs, seg)
		n += txWriteBytes(&m.Writes[j])
	}
	e.segs = append(e.segs, seg)
	slices.Sort(e.segs)
	e.prepRev[seg] = rev
	e.bytes += n
	return n
}

// dropSegs removes the shares of segs from e and returns the bytes they
// staged.
func (e *txEntry) dropSegs(segs []uint16) int64 {
	gone := func(seg uint16) bool { return slices.Contains(segs, seg) }
	keys, keySegs := e.keys[:0:0], e.keySegs[:0:0]
	for i, k := range e.keys {
		if !gone(e.keySegs[i]) {
			keys, keySegs = append(keys, k), append(keySegs, e.keySegs[i])
		}
	}
	var n int64
	writes, idx, wsegs := e.writes[:0:0], e.writeIdx[:0:0], e.writeSegs[:0:0]
	for i := range e.writes {
		if gone(e.writeSegs[i]) {
			n += txWriteBytes(&e.writes[i])
			continue
		}
		writes, idx, wsegs = append(writes, e.writes[i]), append(idx, e.writeIdx[i]), append(wsegs, e.writeSegs[i])
	}
	e.keys, e.keySegs, e.writes, e.writeIdx, e.writeSegs = keys, keySegs, writes, idx, wsegs
	e.segs = slices.DeleteFunc(slices.Clone(e.segs), gone)
	for _, seg := range segs {
		delete(e.prepRev, seg)
	}
	e.bytes -= n
	return n
}

// logTxPrepareLocked logs the prepare marker of id's share m of this
// segment and returns its revision.
func (g *Segment) logTxPrepareLocked(id string, m *txPrepareMarker) uint64 {
	body, err := msgpack.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("store: encoding a prepare marker: %v", err)) // plain structs always encode
	}
	g.revision++
	cmd := &kv.Cmd{Op: kv.CmdTxPrepare, Args: [][]byte{[]byte(id), body}}
	g.log.appendMarker(OpTxPrepare, g.revision, cmd)
	g.notePreparedLocked(id, cmd, g.revision, m.Expires)
	return g.revision
}

func (g *Segment) notePreparedLocked(id string, cmd *kv.Cmd, rev uint64, expires int64) {
	if g.txPrepared == nil {
		g.txPrepared = make(map[string]txSegPrepared)
	}
	g.txPrepared[id] = txSegPrepared{cmd: cmd, rev: rev, expires: expires}
}

// logTxResolvedLocked logs the commit (with the results of this segment's
// writes) or abort marker of id.
func (g *Segment) logTxResolvedLocked(id string, kind OpKind, applied []txAppliedAt) {
	cmd := &kv.Cmd{Op: kv.CmdTxAbort, Args: [][]byte{[]byte(id)}}
	if kind == OpTxCommit {
		body, err := msgpack.Marshal(&txCommitMarker{Applied: applied})
		if err != nil {
			panic(fmt.Sprintf("store: encoding a commit marker: %v", err))
		}
		cmd = &kv.Cmd{Op: kv.CmdTxCommit, Args: [][]byte{[]byte(id), body}}
	}
	g.revision++
	g.log.appendMarker(kind, g.revision, cmd)
	delete(g.txPrepared, id)
}

// txAlreadyAppliedLocked reports whether the staged write w was already
// applied by the commit of the owner this node replicated: the key holds a
// record above the prepare marker's revision prepRev with the staged
// outcome. While the key was reserved only that commit could write it.
func (g *Segment) txAlreadyAppliedLocked(w *TxWrite, prepRev uint64) (txApplied, bool) {
	r := g.items.get(w.Key)
	if prepRev == 0 || r == nil || r.Revision <= prepRev {
		return txApplied{}, false
	}
	switch {
	case w.Op == TxDelete && r.Deleted(),
		w.Op == TxPut && !r.Deleted() && r.Kind == KindString && bytes.Equal(r.Value(), w.Value):
		return txApplied{version: r.Version(), revision: r.Revision}, true
	}
	return txApplied{}, false
}

// decodeTxMarker checks a marker read from another node.
func decodeTxMarker(op Op) (id string, prep *txPrepareMarker, commit *txCommitMarker, err error) {
	want := map[OpKind]kv.CmdOp{OpTxPrepare: kv.CmdTxPrepare, OpTxCommit: kv.CmdTxCommit, OpTxAbort: kv.CmdTxAbort}[op.Kind]
	if op.Cmd == nil || op.Cmd.Op != want || len(op.Cmd.Args) == 0 || op.Record.Revision == 0 || !validTxID(string(op.Cmd.Args[0])) {
		return "", nil, nil, fmt.Errorf("store: malformed %v marker", op.Kind)
	}
	id = string(op.Cmd.Args[0])
	switch op.Kind {
	case OpTxPrepare:
		prep = &txPrepareMarker{}
		if len(op.Cmd.Args) != 2 {
			return "", nil, nil, fmt.Errorf("store: malformed %v marker", op.Kind)
		}
		if err := mpsafe.Unmarshal(op.Cmd.Args[1], prep); err != nil || len(prep.Index) != len(prep.Writes) {
			return "", nil, nil, fmt.Errorf("store: malformed %v marker: %v", op.Kind, err)
		}
	case OpTxCommit:
		commit = &txCommitMarker{}
		if len(op.Cmd.Args) != 2 {
			return "", nil, nil, fmt.Errorf("store: malformed %v marker", op.Kind)
		}
		if err := mpsafe.Unmarshal(op.Cmd.Args[1], commit); err != nil {
			return "", nil, nil, fmt.Errorf("store: malformed %v marker: %v", op.Kind, err)
		}
	}
	return id, prep, commit, nil
}

// applyTxMarker applies a transaction marker from the owner's op-log: it
// logs it here too (this copy may become the owner, and its op-log then
// feeds the next replicas), holds or drops the reservations and updates the
// transaction table. Revision-guarded like any op.
func (g *Segment) applyTxMarker(op Op) (bool, error) {
	id, prep, commit, err := decodeTxMarker(op)
	if err != nil {
		return false, err
	}
	rev := op.Record.Revision
	cmd := cloneCmd(op.Cmd)
	g.mu.Lock()
	if rev <= g.revision {
		g.mu.Unlock()
		return false, nil
	}
	g.revision = rev
	g.log.appendMarker(op.Kind, rev, cmd)
	if prep != nil {
		g.reserveLocked(id, prep)
		g.notePreparedLocked(id, cmd, rev, prep.Expires)
	} else {
		g.releaseAllLocked(id)
	}
	g.mu.Unlock()
	switch op.Kind {
	case OpTxPrepare:
		g.store.txHoldPortion(id, g.id, prep, rev)
	case OpTxCommit:
		for i := range commit.Applied {
			commit.Applied[i].Seg = g.id
		}
		g.store.txDropPortion(id, g.id, txOutcome{kind: txCommitted, applied: commit.Applied})
	default:
		g.store.txDropPortion(id, g.id, txOutcome{kind: txAborted})
	}
	return true, nil
}

func (g *Segment) reserveLocked(id string, m *txPrepareMarker) {
	if g.txLocks == nil {
		g.txLocks = make(map[string]txLock)
	}
	for _, k := range m.Keys {
		g.txLocks[k] = txLock{txID: id, expires: m.Expires}
	}
}

func (g *Segment) releaseAllLocked(id string) {
	for k, l := range g.txLocks {
		if l.txID == id {
			delete(g.txLocks, k)
		}
	}
	delete(g.txPrepared, id)
}

// txHoldPortion adds a replicated share to the table. A share of a
// transaction already finished here (its commit or abort came first, by a
// snapshot) is released instead.
func (s *Store) txHoldPortion(id string, seg uint16, m *txPrepareMarker, rev uint64) {
	t, _ := s.txAcquire(id)
	if _, finished := t.done[id]; finished {
		t.mu.Unlock()
		g := s.segments[seg]
		g.mu.Lock()
		g.releaseAllLocked(id)
		g.mu.Unlock()
		return
	}
	e := t.live[id]
	if e == nil {
		e = &txEntry{expires: m.Expires, timeout: m.Timeout, prepRev: map[uint16]uint64{}, replicated: true}
		t.live[id] = e
		heap.Push(&t.deadlines, txDeadline{at: e.expires, id: id})
	}
	t.staged += s.addPortion(e, seg, m, rev)
	t.mu.Unlock()
}

// txDropPortion drops segment seg's share of id and records the outcome
// (o == nil: the share is forgotten without an outcome, as when a snapshot
// replaces the segment).
func (s *Store) txDropPortion(id string, seg uint16, o txOutcome) {
	t, now := s.txAcquire(id)
	defer t.mu.Unlock()
	var timeout time.Duration
	if e := t.live[id]; e != nil {
		t.staged -= e.dropSegs([]uint16{seg})
		timeout = e.timeout
		if len(e.segs) == 0 {
			delete(t.live, id)
		}
	}
	if o.kind != 0 {
		t.finishLocked(id, o, timeout, now)
	}
}

// PreparedTx returns the prepare markers of the transactions this segment
// holds that have not lapsed, in revision order: what a snapshot of it
// carries (Snapshot.Prepared).
func (g *Segment) PreparedTx() []Op {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.preparedLocked(now)
}

func (g *Segment) preparedLocked(now int64) []Op {
	var ops []Op
	for _, p := range g.txPrepared {
		if p.expires > now {
			ops = append(ops, Op{Kind: OpTxPrepare, Record: Record{Revision: p.rev}, Cmd: p.cmd})
		}
	}
	slices.SortFunc(ops, func(a, b Op) int { return cmp.Compare(a.Record.Revision, b.Record.Revision) })
	return ops
}

// InstallPreparedTx replaces the prepared transactions this segment holds
// with those of a snapshot (Snapshot.Prepared) from its owner. It is called
// after the snapshot's records are in place, whichever way they were
// applied; the markers are not logged (the op-log restarts at the
// snapshot's revision, which covers them).
func (g *Segment) InstallPreparedTx(prepared []Op) error {
	type share struct {
		id   string
		m    *txPrepareMarker
		rev  uint64
		cmd  *kv.Cmd
		kind OpKind
	}
	shares := make([]share, 0, len(prepared))
	for _, op := range prepared {
		id, m, _, err := decodeTxMarker(op)
		if err != nil {
			return err
		}
		if op.Kind != OpTxPrepare {
			return fmt.Errorf("store: segment %d: a snapshot carries a %v marker", g.id, op.Kind)
		}
		shares = append(shares, share{id: id, m: m, rev: op.Record.Revision, cmd: cloneCmd(op.Cmd)})
	}
	g.mu.Lock()
	var old []string
	for id := range g.txPrepared {
		old = append(old, id)
	}
	g.txLocks, g.txPrepared = nil, nil
	for _, sh := range shares {
		g.reserveLocked(sh.id, sh.m)
		g.notePreparedLocked(sh.id, sh.cmd, sh.rev, sh.m.Expires)
	}
	g.mu.Unlock()
	for _, id := range old {
		g.store.txDropPortion(id, g.id, txOutcome{})
	}
	for _, sh := range shares {
		g.store.txHoldPortion(sh.id, g.id, sh.m, sh.rev)
	}
	return nil
}
