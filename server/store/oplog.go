package store

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"

	"github.com/zaris-io/zaris/internal/kv"
)

// OpKind is the kind of a logged mutation.
type OpKind uint8

const (
	OpPut     OpKind = iota + 1 // value write (create or overwrite)
	OpDelete                    // client delete; the record is a tombstone
	OpExpire                    // TTL set or changed on an existing key
	OpPersist                   // TTL removed
	OpExpired                   // the key reached its TTL; record is a tombstone
	OpEvicted                   // the key was evicted under memory pressure; tombstone
	OpCommand                   // a collection mutation: Record is the header, Cmd the effect
	// The transaction markers (R-DS-4, txrepl.go) change no record: they
	// carry a participant's prepared state to the partition's replicas so
	// that a promoted replica holds it. Record has only the Revision (Key
	// is empty); Cmd holds the marker. A consumer of record changes (a
	// change feed, a watch) skips them: OpKind.TxMarker.
	OpTxPrepare // a transaction prepared on this segment: Cmd is TX.PREPARE [id, txPrepareMarker]
	OpTxCommit  // it committed: its writes are the OpPut/OpDelete records just before; Cmd is TX.COMMIT [id, txCommitMarker]
	OpTxAbort   // it was aborted or expired on the owner: Cmd is TX.ABORT [id]
)

// LastOpKind is the highest OpKind a decoder accepts.
const LastOpKind = OpTxAbort

// TxMarker reports whether k is a transaction marker: an entry that changes
// no record (skip it when following record changes).
func (k OpKind) TxMarker() bool { return k >= OpTxPrepare && k <= OpTxAbort }

func (k OpKind) String() string {
	switch k {
	case OpPut:
		return "put"
	case OpDelete:
		return "delete"
	case OpExpire:
		return "expire"
	case OpPersist:
		return "persist"
	case OpExpired:
		return "expired"
	case OpEvicted:
		return "evicted"
	case OpCommand:
		return "command"
	case OpTxPrepare:
		return "tx-prepare"
	case OpTxCommit:
		return "tx-commit"
	case OpTxAbort:
		return "tx-abort"
	}
	return fmt.Sprintf("OpKind(%d)", uint8(k))
}

// Op is one entry of a segment's op-log: the mutation's kind and the full
// record it produced (for deletes, the tombstone). Replaying Ops in revision
// order through ApplyRecord reproduces the segment.
type Op struct {
	Kind   OpKind
	Record Record
	// Cmd is the effect of an OpCommand: replaying it on the record's
	// previous state yields the new one. nil for other kinds.
	Cmd *kv.Cmd
}

// Revision is the revision of the operation.
func (o Op) Revision() uint64 { return o.Record.Revision }

// ErrBelowTrimFloor: the caller asked for operations after a revision the
// op-log no longer holds. The answer would be partial, so it is refused; the
// caller must fall back to a snapshot (R-REP-1).
var ErrBelowTrimFloor = errors.New("store: revision below the op-log trim floor")

// logEntry is one op-log slot. rev and size copy what trimming and the
// revision searches need out of the record: reading them through rec
// touched the oldest record of the ring on every write once the log was
// full — a cache miss per write (issue #17: 6 % of a SET's CPU at -P 16).
type logEntry struct {
	rec   *Record
	cmd   *kv.Cmd
	rev   uint64 // rec.Revision
	bytes uint32 // counted against maxBytes (saturated: push and trim count the same figure)
	kind  OpKind
	// slab: rec and cmd are a slot of the log's effect slab, reused once
	// the entry is trimmed — whatever outlives the segment's lock copies
	// them (detached).
	slab bool
}

// detached is e with its record header and command in memory of their
// own when they are a slab slot (the slot is reused after the trim).
func (e logEntry) detached() logEntry {
	if e.slab {
		le := newLoggedEffect(e.rec, e.cmd)
		e.rec, e.cmd, e.slab = &le.hdr, &le.cmd, false
	}
	return e
}

// opLog is a segment's bounded log of mutations, ordered by revision. It
// holds every operation with revision > floor. Guarded by the segment lock.
type opLog struct {
	entries  []logEntry // ring buffer, len == cap
	head     int        // index of the oldest entry
	n        int        // number of entries
	bytes    int        // value bytes retained
	floor    uint64     // every op with revision > floor is in the log
	maxOps   int
	maxBytes int
	pins     map[uint64]int // pinned floors → pin count
	// spill receives each entry the log trims, with the floor before the
	// trim (the change feed's retention); nil = dropped.
	spill func(e logEntry, floor uint64)
	// tail is the slot the next push writes (once the ring is full, the one
	// it trims first), for the pipeline read-ahead (WarmAhead): a pointer
	// read in one word, where the ring's slice header could be read torn.
	tail *logEntry
	// effects holds the logged effects of collection writes (the common,
	// small ones): a write fills a slot, the trim frees the oldest.
	effects effectSlab
}

func newOpLog(maxOps, maxBytes int) opLog {
	// Start small: most segments of a small store never fill the bound.
	// A power-of-two ring (grow doubles it): a slot is a mask away, not a
	// division, on every write.
	return opLog{entries: make([]logEntry, 1<<bits.Len(uint(min(maxOps, 16)-1))), maxOps: maxOps, maxBytes: maxBytes}
}

func (l *opLog) at(i int) *logEntry { return &l.entries[(l.head+i)&(len(l.entries)-1)] }

// pinnedFloor returns the lowest pinned revision and whether any pin exists.
func (l *opLog) pinnedFloor() (uint64, bool) {
	first, ok := uint64(0), false
	for rev := range l.pins {
		if !ok || rev < first {
			first, ok = rev, true
		}
	}
	return first, ok
}

// appendCmd logs a collection mutation.
func (l *opLog) appendCmd(hdr *Record, cmd *kv.Cmd) {
	l.push(logEntry{kind: OpCommand, rec: hdr, cmd: cmd, rev: hdr.Revision, bytes: entryWeight(cmdBytes(cmd))})
}

// appendEffect logs a collection mutation of rec (its header as it is now:
// the collection keeps changing after this entry) and returns the logged
// command. A small effect goes to a slab slot, any other to memory of its
// own (newLoggedEffect).
func (l *opLog) appendEffect(rec *Record, effect *kv.Cmd) *kv.Cmd {
	size := cmdBytes(effect)
	if len(effect.Args) > 2 || size > effectInline {
		le := newLoggedEffect(rec, effect)
		l.appendCmd(&le.hdr, &le.cmd)
		return &le.cmd
	}
	slot := l.effects.get()
	slot.fill(rec, effect, size)
	l.push(logEntry{kind: OpCommand, rec: &slot.hdr, cmd: &slot.cmd, rev: rec.Revision, bytes: entryWeight(size), slab: true})
	return &slot.cmd
}

// entryWeight is n as a logEntry holds it: 32 bits keep the entry at 32
// bytes (the log holds up to OpLogMaxOps of them per segment).
func entryWeight(n int) uint32 { return uint32(min(n, math.MaxUint32)) }

func cmdBytes(c *kv.Cmd) int {
	n := 0
	for _, a := range c.Args {
		n += len(a)
	}
	return n
}

// appendMarker logs a transaction marker at revision rev.
func (l *opLog) appendMarker(kind OpKind, rev uint64, cmd *kv.Cmd) {
	l.push(logEntry{kind: kind, rec: &Record{Revision: rev}, cmd: cmd, rev: rev, bytes: entryWeight(cmdBytes(cmd))})
}

// append adds an operation. Its revision must exceed every logged revision.
func (l *opLog) append(kind OpKind, rec *Record) {
	l.push(logEntry{kind: kind, rec: rec, rev: rec.Revision, bytes: entryWeight(rec.ValueLen())})
}

func (l *opLog) push(e logEntry) {
	if l.n == len(l.entries) {
		if !l.trimOne(true) {
			l.grow()
		}
	}
	*l.at(l.n) = e
	l.n++
	l.bytes += int(e.bytes)
	for l.n > 1 && (l.n > l.maxOps || l.bytes > l.maxBytes) {
		if !l.trimOne(false) {
			break
		}
	}
	l.tail = l.at(l.n) // at(len) wraps to the oldest: the slot a full ring reuses
}

// trimOne drops the oldest entry unless a pin holds it. full reports that the
// ring is at capacity; then trimming only happens if the bounds allow it.
func (l *opLog) trimOne(full bool) bool {
	if l.n == 0 {
		return false
	}
	if full && l.n < l.maxOps && l.bytes <= l.maxBytes {
		return false // room within the bounds: grow the ring instead
	}
	oldest := l.at(0)
	if pin, ok := l.pinnedFloor(); ok && oldest.rev > pin {
		return false
	}
	if l.spill != nil {
		l.spill(oldest.detached(), l.floor)
	}
	if oldest.slab {
		l.effects.release(oldest.rec)
	}
	l.floor = oldest.rev
	l.bytes -= int(oldest.bytes)
	*oldest = logEntry{}
	l.head = (l.head + 1) & (len(l.entries) - 1)
	l.n--
	return true
}

func (l *opLog) grow() {
	next := make([]logEntry, max(2*len(l.entries), 16))
	for i := 0; i < l.n; i++ {
		next[i] = *l.at(i)
	}
	l.entries, l.head = next, 0
}

// after returns the operations with revision > rev, or ErrBelowTrimFloor.
func (l *opLog) after(ops []Op, rev uint64) ([]Op, error) {
	if rev < l.floor {
		return ops, fmt.Errorf("%w: asked after %d, floor %d", ErrBelowTrimFloor, rev, l.floor)
	}
	start := l.firstAfter(rev)
	ops = slices.Grow(ops, l.n-start)
	for i := start; i < l.n; i++ {
		e := l.at(i)
		cmd := e.cmd
		if e.slab {
			cmd = cloneCmd(cmd) // the caller reads it after the lock, when the slot may be reused
		}
		ops = append(ops, Op{Kind: e.kind, Record: e.rec.exported(), Cmd: cmd})
	}
	return ops, nil
}

// firstAfter is the index of the first entry with revision > rev (n if none).
func (l *opLog) firstAfter(rev uint64) int {
	return sort.Search(l.n, func(i int) bool { return l.at(i).rev > rev })
}

// reset empties the log and sets its floor (after a snapshot install).
func (l *opLog) reset(floor uint64) {
	clear(l.entries)
	l.effects.releaseAll()
	l.head, l.n, l.bytes, l.floor = 0, 0, 0, floor
}

func (l *opLog) pin(rev uint64) {
	if l.pins == nil {
		l.pins = make(map[uint64]int)
	}
	l.pins[rev]++
}

func (l *opLog) unpin(rev uint64) {
	if l.pins[rev] <= 1 {
		delete(l.pins, rev)
	} else {
		l.pins[rev]--
	}
	for l.n > 1 && (l.n > l.maxOps || l.bytes > l.maxBytes) {
		if !l.trimOne(false) {
			break
		}
	}
}
