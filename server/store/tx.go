package store

// Multi-key transactions (R-DS-4): the participant side of a two-phase
// commit coordinated by the client (sdk.Tx).
//
// The client reads keys (remembering the Version and Revision it saw, or
// "absent"), stages writes, groups every key by owner and sends each owner
// TX.PREPARE. An owner votes yes only if every read is still at the version
// the client saw, every write condition holds and no key is reserved by
// another live transaction; voting yes reserves every key of the transaction
// on this node (reads too, so they cannot move before the commit) until
// now+timeout and stages the writes. If every owner voted yes the client
// sends TX.COMMIT, which applies the staged writes through the one apply path
// (segment.commitLocked: op-log, revisions, accounting, like any write);
// otherwise TX.ABORT. Reservations lapse by themselves after the timeout, so
// a coordinator that crashed between the phases never wedges a key.
//
// The prepared state is replicated before the vote (txrepl.go, D41): a yes
// logs a prepare marker in each segment involved, the commit and abort log
// theirs, and a replica promoted before the commit holds the transaction
// and commits it when the coordinator retries there.
//
// # Wire encoding
//
// All three are node-level commands (kv.CmdOp.NodeLevel); Cmd.Key is ignored.
//
//	TX.PREPARE  Args[0] transaction id (1..MaxTxIDBytes opaque bytes; the SDK
//	                    sends 32 hex digits of a random 128-bit id)
//	            Args[1] msgpack of TxPrepareRequest, a map with short keys:
//	                    {"t": timeout ns,
//	                     "r": [{"k": key, "v": version (0 = absent), "rv": revision (0 = unchecked)}],
//	                     "w": [{"o": 1 put | 2 delete, "k": key, "v": value, "x": TTL ns,
//	                            "m": if-match version, "a": if-absent, "c": content type, "l": labels}]}
//	            → OK: prepared (also on a retry of a prepared id)
//	            → Conflict: a read moved, a write condition failed, a key is
//	              reserved by another transaction, or the id already finished;
//	              Message names the key and the reason; nothing is reserved
//	            → BadRequest, ItemTooLarge: malformed request
//	            → CapacityExceeded: no-eviction store full, or too many bytes
//	              staged by prepared transactions (MaxMemoryBytes/4)
//	            → Moved: a key's segment is not owned by this node (the
//	              client's map is wrong); nothing is reserved
//	TX.COMMIT   Args[0] transaction id
//	            → Array, one element per staged write in request order: Status
//	              Success with the write's Version and Revision (NotFound for a
//	              delete of a key that was absent). A retried commit of a
//	              committed id answers the same array again.
//	            → Conflict "transaction expired" / "transaction aborted":
//	              nothing was applied
//	            → NotFound "unknown transaction": never prepared here, or its
//	              outcome is no longer remembered (TxOutcomeRetention); nothing
//	              was applied by this call
//	            → Moved: this node holds the transaction only as a replica of
//	              its owner (it owns none of its segments); nothing applied
//	            On a node promoted from replica, the array lists the writes of
//	            the segments it owns (in request order).
//	TX.ABORT    Args[0] transaction id
//	            → OK: released (idempotent; an unknown id is recorded as aborted
//	              so that a prepare delayed in the network is refused)
//	            → Conflict "transaction already committed"
//
// # Locks
//
// Lock order: the transaction table's mutex (txTable.mu) and segment locks
// never nest — the table is consulted and updated before and after the
// segment work, never during it. Segment locks nest among themselves only
// here, and always in ascending segment index (txLockSegments), so two
// transactions over overlapping segments cannot deadlock. A phase of one
// transaction id that runs outside txTable.mu marks its entry busy; any other
// phase for the same id waits for it (txAcquire).
//
// The per-store table is a field of the Store
// (txTableOf) rather than a Store field, so that it is reclaimed with its
// store; it holds no pointer back to the store.

import (
	"container/heap"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// Limits of a transaction (R-DS-4, bad input: typed statuses).
const (
	// MaxTxIDBytes bounds a transaction id.
	MaxTxIDBytes = 128
	// MaxTxKeys bounds the distinct keys (reads and writes) of one prepare.
	MaxTxKeys = 4096
	// MinTxTimeout and MaxTxTimeout bound the prepare timeout: how long the
	// reservations of a prepared transaction last without a commit.
	MinTxTimeout = time.Millisecond
	MaxTxTimeout = 5 * time.Minute
	// TxOutcomeRetention is the least time a finished transaction's outcome
	// is remembered (at least twice its timeout), so that a retried commit
	// gets the same answer and a late prepare or commit is refused.
	TxOutcomeRetention = 10 * time.Second
)

// TxOp is the operation of a staged write.
type TxOp uint8

const (
	TxPut    TxOp = 1 // write Value (with TTL and metadata)
	TxDelete TxOp = 2 // remove the key; a no-op if it is absent at commit
)

func (o TxOp) String() string {
	switch o {
	case TxPut:
		return "put"
	case TxDelete:
		return "delete"
	}
	return fmt.Sprintf("TxOp(%d)", uint8(o))
}

// TxRead is a key the transaction read, at the version it saw.
type TxRead struct {
	Key string `msgpack:"k"`
	// Version is the ItemVersion seen; 0 = the key was absent.
	Version uint64 `msgpack:"v,omitempty"`
	// Revision is the revision of the record seen; 0 = not checked. Checking
	// it too catches a delete and re-create that restarted the version.
	Revision uint64 `msgpack:"rv,omitempty"`
}

// TxWrite is a staged write.
type TxWrite struct {
	Op    TxOp   `msgpack:"o"`
	Key   string `msgpack:"k"`
	Value []byte `msgpack:"v,omitempty"`
	// TTL of the written value, counted from the commit; 0 = none.
	TTL time.Duration `msgpack:"x,omitempty"`
	// IfMatchVersion: vote no unless the key is at this version (0 = no
	// condition). IfAbsent: vote no if the key exists.
	IfMatchVersion uint64            `msgpack:"m,omitempty"`
	IfAbsent       bool              `msgpack:"a,omitempty"`
	ContentType    string            `msgpack:"c,omitempty"`
	Labels         map[string]string `msgpack:"l,omitempty"`
}

// TxPrepareRequest is the body of TX.PREPARE for one owner: the reads and
// writes of the transaction whose keys this owner holds.
type TxPrepareRequest struct {
	// Timeout is how long the reservations last without a commit.
	Timeout time.Duration `msgpack:"t"`
	Reads   []TxRead      `msgpack:"r,omitempty"`
	Writes  []TxWrite     `msgpack:"w,omitempty"`
}

// TxPrepareCmd encodes TX.PREPARE.
func TxPrepareCmd(txID string, req *TxPrepareRequest) (kv.Cmd, error) {
	body, err := msgpack.Marshal(req)
	if err != nil {
		return kv.Cmd{}, fmt.Errorf("store: encoding TX.PREPARE: %w", err)
	}
	return kv.Cmd{Op: kv.CmdTxPrepare, Args: [][]byte{[]byte(txID), body}}, nil
}

// TxCommitCmd encodes TX.COMMIT.
func TxCommitCmd(txID string) kv.Cmd {
	return kv.Cmd{Op: kv.CmdTxCommit, Args: [][]byte{[]byte(txID)}}
}

// TxAbortCmd encodes TX.ABORT.
func TxAbortCmd(txID string) kv.Cmd {
	return kv.Cmd{Op: kv.CmdTxAbort, Args: [][]byte{[]byte(txID)}}
}

// DecodeTxPrepare decodes the body of TX.PREPARE. The result shares nothing
// with b.
func DecodeTxPrepare(b []byte) (TxPrepareRequest, error) {
	var req TxPrepareRequest
	if err := mpsafe.Unmarshal(b, &req); err != nil {
		return TxPrepareRequest{}, err
	}
	return req, nil
}

func init() {
	registerNode(kv.CmdTxPrepare, func(s *Store, cmd kv.Cmd) kv.Reply {
		if len(cmd.Args) != 2 {
			return kv.BadRequest("TX.PREPARE takes a transaction id and a body")
		}
		req, err := DecodeTxPrepare(cmd.Args[1])
		if err != nil {
			return kv.BadRequest("malformed TX.PREPARE body: " + err.Error())
		}
		return s.TxPrepare(string(cmd.Args[0]), req)
	})
	registerNode(kv.CmdTxCommit, func(s *Store, cmd kv.Cmd) kv.Reply {
		if len(cmd.Args) != 1 {
			return kv.BadRequest("TX.COMMIT takes a transaction id")
		}
		return s.TxCommit(string(cmd.Args[0]))
	})
	registerNode(kv.CmdTxAbort, func(s *Store, cmd kv.Cmd) kv.Reply {
		if len(cmd.Args) != 1 {
			return kv.BadRequest("TX.ABORT takes a transaction id")
		}
		return s.TxAbort(string(cmd.Args[0]))
	})
}

// --- pure decisions ---

// txLimits are the store limits a prepare is validated against.
type txLimits struct {
	maxKeyBytes  int
	maxItemBytes int
}

func validTxID(id string) bool { return len(id) > 0 && len(id) <= MaxTxIDBytes }

// validateTxPrepare checks a prepare request on its own, before looking at
// any data: BadRequest or ItemTooLarge with a reason, or Success.
func validateTxPrepare(id string, req *TxPrepareRequest, lim txLimits) (kv.Status, string) {
	if !validTxID(id) {
		return kv.StatusBadRequest, fmt.Sprintf("transaction id must be 1..%d bytes", MaxTxIDBytes)
	}
	if req.Timeout < MinTxTimeout || req.Timeout > MaxTxTimeout {
		return kv.StatusBadRequest, fmt.Sprintf("transaction timeout %v outside %v..%v", req.Timeout, MinTxTimeout, MaxTxTimeout)
	}
	if len(req.Reads)+len(req.Writes) == 0 {
		return kv.StatusBadRequest, "empty transaction"
	}
	if len(req.Reads) > MaxTxKeys || len(req.Writes) > MaxTxKeys {
		return kv.StatusBadRequest, fmt.Sprintf("more than %d keys in one transaction", MaxTxKeys)
	}
	badKey := func(k string) bool { return k == "" || len(k) > lim.maxKeyBytes }
	read := make(map[string]struct{}, len(req.Reads))
	for _, r := range req.Reads {
		if badKey(r.Key) {
			return kv.StatusBadRequest, "invalid key"
		}
		if _, dup := read[r.Key]; dup {
			return kv.StatusBadRequest, fmt.Sprintf("key %q read twice", r.Key)
		}
		read[r.Key] = struct{}{}
	}
	written := make(map[string]struct{}, len(req.Writes))
	for _, w := range req.Writes {
		if badKey(w.Key) {
			return kv.StatusBadRequest, "invalid key"
		}
		if _, dup := written[w.Key]; dup {
			return kv.StatusBadRequest, fmt.Sprintf("key %q written twice", w.Key)
		}
		written[w.Key] = struct{}{}
		switch {
		case w.Op != TxPut && w.Op != TxDelete:
			return kv.StatusBadRequest, fmt.Sprintf("unknown write op %v", w.Op)
		case w.TTL < 0:
			return kv.StatusBadRequest, "negative TTL"
		case w.IfAbsent && w.IfMatchVersion != 0:
			return kv.StatusBadRequest, "IfAbsent with IfMatchVersion"
		case w.Op == TxPut && len(w.Value) > lim.maxItemBytes:
			return kv.StatusItemTooLarge, fmt.Sprintf("value of %q over %d bytes", w.Key, lim.maxItemBytes)
		}
	}
	if len(read)+len(written) > MaxTxKeys { // a key both read and written counts once below
		n := len(read)
		for k := range written {
			if _, ok := read[k]; !ok {
				n++
			}
		}
		if n > MaxTxKeys {
			return kv.StatusBadRequest, fmt.Sprintf("more than %d keys in one transaction", MaxTxKeys)
		}
	}
	return kv.StatusSuccess, ""
}

// txKeyView is what a prepare sees of one key under its segment lock.
type txKeyView struct {
	Version  uint64 // 0 = absent
	Revision uint64 // 0 = absent
	Reserved bool   // by another live transaction
}

// prepareDecision is the vote of one participant: Success, or Conflict with
// the first reason found (reservations, then reads, then write conditions,
// each in request order). A key missing from cur is absent and free.
func prepareDecision(req *TxPrepareRequest, cur map[string]txKeyView) (kv.Status, string) {
	for _, r := range req.Reads {
		if cur[r.Key].Reserved {
			return kv.StatusConflict, fmt.Sprintf("key %q reserved by another transaction", r.Key)
		}
	}
	for _, w := range req.Writes {
		if cur[w.Key].Reserved {
			return kv.StatusConflict, fmt.Sprintf("key %q reserved by another transaction", w.Key)
		}
	}
	for _, r := range req.Reads {
		v := cur[r.Key]
		switch {
		case r.Version == 0 && v.Version != 0:
			return kv.StatusConflict, fmt.Sprintf("read of %q moved: read absent, now version %d", r.Key, v.Version)
		case r.Version != 0 && v.Version == 0:
			return kv.StatusConflict, fmt.Sprintf("read of %q moved: read version %d, now absent", r.Key, r.Version)
		case r.Version != v.Version:
			return kv.StatusConflict, fmt.Sprintf("read of %q moved: read version %d, now %d", r.Key, r.Version, v.Version)
		case r.Revision != 0 && r.Revision != v.Revision:
			return kv.StatusConflict, fmt.Sprintf("read of %q moved: read revision %d, now %d", r.Key, r.Revision, v.Revision)
		}
	}
	for _, w := range req.Writes {
		v := cur[w.Key]
		switch {
		case w.IfAbsent && v.Version != 0:
			return kv.StatusConflict, fmt.Sprintf("write of %q: key exists", w.Key)
		case w.IfMatchVersion != 0 && v.Version != w.IfMatchVersion:
			return kv.StatusConflict, fmt.Sprintf("write of %q: version %d, want %d", w.Key, v.Version, w.IfMatchVersion)
		}
	}
	return kv.StatusSuccess, ""
}

// txRetention is how long a finished transaction's outcome is remembered.
func txRetention(timeout time.Duration) time.Duration {
	return max(2*timeout, TxOutcomeRetention)
}

// txStagedLimit bounds the bytes staged by all prepared transactions of a
// store: staged values are not yet records, so the memory cap does not see
// them.
func txStagedLimit(maxMemory int64) int64 { return maxMemory / 4 }

// --- the per-store table of transactions ---

type txOutcomeKind uint8

const (
	txCommitted txOutcomeKind = iota + 1
	txAborted
	txExpired
)

func (k txOutcomeKind) String() string {
	switch k {
	case txCommitted:
		return "committed"
	case txAborted:
		return "aborted"
	case txExpired:
		return "expired"
	}
	return "unknown"
}

// txEntry is a transaction being prepared, prepared, or being committed.
// An entry built from the prepare markers of owners this node replicates
// (replicated) may hold only some segments of the transaction, and loses
// each segment (portion) when that segment's commit or abort marker arrives.
type txEntry struct {
	// busy is non-nil while a phase of this id runs outside txTable.mu; it is
	// closed when that phase ends.
	busy    chan struct{}
	expires int64 // Unix ns; 0 while preparing
	timeout time.Duration
	keys    []string // every reserved key, distinct
	keySegs []uint16 // keySegs[i] is the segment of keys[i]
	segs    []uint16 // the distinct segments, ascending
	reads   []TxRead
	writes  []TxWrite
	// writeIdx[i] is the position of writes[i] in the prepare request (the
	// commit answers in that order); writeSegs[i] its segment.
	writeIdx  []int
	writeSegs []uint16
	// prepRev is, per segment, the revision of its prepare marker: a record
	// of a reserved key above it was written by this transaction's commit.
	prepRev    map[uint16]uint64
	replicated bool
	bytes      int64 // staged bytes, counted in txTable.staged
}

// txApplied is the result of one committed write.
type txApplied struct {
	status            kv.Status
	version, revision uint64
}

// txAppliedAt is a committed write's result with its position in the
// prepare request and its segment (a commit marker carries them).
type txAppliedAt struct {
	Index    int       `msgpack:"i"`
	Seg      uint16    `msgpack:"g"`
	Status   kv.Status `msgpack:"s,omitempty"`
	Version  uint64    `msgpack:"v,omitempty"`
	Revision uint64    `msgpack:"rv,omitempty"`
}

// txOutcome is a finished transaction, remembered until forget.
type txOutcome struct {
	kind    txOutcomeKind
	forget  int64 // Unix ns
	applied []txAppliedAt
}

type txDeadline struct {
	at   int64
	id   string
	done bool // a txOutcome's forget time, else a txEntry's expiry
}

type txDeadlines []txDeadline

func (h txDeadlines) Len() int           { return len(h) }
func (h txDeadlines) Less(i, j int) bool { return h[i].at < h[j].at }
func (h txDeadlines) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *txDeadlines) Push(x any)        { *h = append(*h, x.(txDeadline)) }
func (h *txDeadlines) Pop() any {
	old := *h
	d := old[len(old)-1]
	*h = old[:len(old)-1]
	return d
}

// txTable holds one store's transactions.
type txTable struct {
	mu sync.Mutex // guards every field below; never held with a segment lock
	// live: preparing, prepared or committing transactions.
	live map[string]*txEntry
	// done: finished transactions, remembered for txRetention.
	done map[string]txOutcome
	// deadlines orders the expiries of live entries and the forget times of
	// done ones; stale items (the entry moved on) are skipped when popped.
	deadlines txDeadlines
	staged    int64 // bytes of the writes of live entries
}

func newTxTable() *txTable {
	return &txTable{live: map[string]*txEntry{}, done: map[string]txOutcome{}}
}

func txTableOf(s *Store) *txTable { return s.tx }

// waiting says whether a live transaction may lapse or a finished one be
// forgotten: whether a sweep has something to do.
func (t *txTable) waiting() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.deadlines) > 0
}

// lapsedTx is a prepared transaction whose reservations expired, to release.
type lapsedTx struct {
	id string
	e  *txEntry
}

// sweepLocked expires prepared entries whose timeout passed (they become
// "expired" outcomes; their reservations are returned for release outside
// t.mu) and forgets outcomes past their retention.
func (t *txTable) sweepLocked(now int64) []lapsedTx {
	var lapsed []lapsedTx
	for len(t.deadlines) > 0 && t.deadlines[0].at <= now {
		d := heap.Pop(&t.deadlines).(txDeadline)
		if d.done {
			if o, ok := t.done[d.id]; ok && o.forget == d.at {
				delete(t.done, d.id)
			}
			continue
		}
		e := t.live[d.id]
		if e == nil || e.busy != nil || e.expires != d.at {
			continue // committed, aborted, or a commit is running and will settle it
		}
		delete(t.live, d.id)
		t.staged -= e.bytes
		t.finishLocked(d.id, txOutcome{kind: txExpired}, e.timeout, d.at)
		lapsed = append(lapsed, lapsedTx{d.id, e})
	}
	return lapsed
}

// finishLocked records id's outcome. A commit already recorded for some of
// its segments is kept: a later portion's commit adds its writes, a later
// expiry or abort of a portion held for another owner changes nothing.
func (t *txTable) finishLocked(id string, o txOutcome, timeout time.Duration, now int64) {
	if old, ok := t.done[id]; ok && old.kind == txCommitted {
		if o.kind == txCommitted {
			o.applied = append(slices.Clone(old.applied), o.applied...)
		} else {
			o = old
		}
	}
	o.forget = now + int64(txRetention(timeout))
	t.done[id] = o
	heap.Push(&t.deadlines, txDeadline{at: o.forget, id: id, done: true})
}

// TxStats describes a store's transaction table (STYLE 12).
type TxStats struct {
	Live        int   // transactions being prepared, prepared or committing
	Remembered  int   // finished transactions whose outcome is still kept
	StagedBytes int64 // bytes staged by live transactions
}

// TxStats returns the table's counters after expiring what is due.
func (s *Store) TxStats() TxStats {
	t, _ := s.txAcquire("")
	defer t.mu.Unlock()
	return TxStats{Live: len(t.live), Remembered: len(t.done), StagedBytes: t.staged}
}

// txAcquire returns the store's table locked, swept, and with no phase of id
// running: it waits for a running one to end.
func (s *Store) txAcquire(id string) (*txTable, int64) {
	t := txTableOf(s)
	for {
		now := s.clock.NowNano()
		t.mu.Lock()
		if lapsed := t.sweepLocked(now); len(lapsed) > 0 {
			t.mu.Unlock()
			for _, l := range lapsed {
				s.releaseReservations(l.id, l.e, false)
			}
			continue
		}
		e := t.live[id]
		if e == nil || e.busy == nil {
			return t, now
		}
		ch := e.busy
		t.mu.Unlock()
		<-ch
	}
}

// --- segment work ---

// txLockSegments write-locks segs, which must be ascending: the lock order of
// every multi-segment operation.
func (s *Store) txLockSegments(segs []uint16) {
	for _, i := range segs {
		s.segments[i].mu.Lock()
	}
}

func (s *Store) txUnlockSegments(segs []uint16) {
	for j := len(segs) - 1; j >= 0; j-- {
		s.segments[segs[j]].mu.Unlock()
	}
}

// releaseReservations drops the reservations id still holds, one segment at
// a time. A key re-reserved by another transaction after ours lapsed keeps
// its new holder. abort logs an abort marker on each owned segment holding
// id's prepare marker, so that its replicas drop it too; an expiry logs
// none (every copy expires the entry at the same deadline).
func (s *Store) releaseReservations(id string, e *txEntry, abort bool) {
	for _, si := range e.segs {
		g := s.segments[si]
		func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			for i, k := range e.keys {
				if e.keySegs[i] == si {
					g.txReleaseLocked(k, id)
				}
			}
			if _, marked := g.txPrepared[id]; marked && abort && g.owned {
				g.logTxResolvedLocked(id, OpTxAbort, nil)
			}
			delete(g.txPrepared, id)
		}()
	}
}

func (g *Segment) txReleaseLocked(key, id string) {
	if l, ok := g.txLocks[key]; ok && l.txID == id {
		delete(g.txLocks, key)
	}
}

// txKeys lists the distinct keys of req (reads first, then writes, in
// request order), their segments and the distinct segments ascending.
func (s *Store) txKeys(req *TxPrepareRequest) (keys []string, keySegs, segs []uint16) {
	seen := make(map[string]struct{}, len(req.Reads)+len(req.Writes))
	add := func(k string) {
		if _, ok := seen[k]; ok {
			return
		}
		seen[k] = struct{}{}
		keys = append(keys, k)
		keySegs = append(keySegs, s.SegmentFor(k).id)
	}
	for _, r := range req.Reads {
		add(r.Key)
	}
	for _, w := range req.Writes {
		add(w.Key)
	}
	segs = slices.Clone(keySegs)
	slices.Sort(segs)
	return keys, keySegs, slices.Compact(segs)
}

// prepareTxLocked votes on req and, on yes, reserves every key until expires.
// The caller holds the write locks of every segment of e.
func (s *Store) prepareTxLocked(id string, req *TxPrepareRequest, e *txEntry, now, expires int64) (kv.Status, string) {
	// A key this node does not own: the coordinator's map is wrong. Vote no
	// with Moved (never stage a write a replica or a foreign segment would
	// then apply) so it refreshes its map and retries.
	for i, k := range e.keys {
		if !s.segments[e.keySegs[i]].owned {
			return kv.StatusMoved, fmt.Sprintf("key %q: segment %d is not owned by this node", k, e.keySegs[i])
		}
		if s.segments[e.keySegs[i]].fenced {
			// A moving partition takes no new reservation: the cut-over
			// waits for the prepared ones, never for ones prepared after.
			return kv.StatusConflict, fmt.Sprintf("key %q: segment %d is migrating to another node", k, e.keySegs[i])
		}
	}
	cur := make(map[string]txKeyView, len(e.keys))
	for i, k := range e.keys {
		g := s.segments[e.keySegs[i]]
		var v txKeyView
		if r := g.liveLocked(k, now); r != nil {
			v.Version, v.Revision = r.Version(), r.Revision
		}
		v.Reserved = len(g.txLocks) > 0 && g.txLockedLocked(k, id, now)
		cur[k] = v
	}
	if st, why := prepareDecision(req, cur); st != kv.StatusSuccess {
		return st, why
	}
	if s.evictionPolicy() == NoEviction {
		// Vote no now rather than fail after a yes: a commit never fails.
		var delta int64
		for _, w := range req.Writes {
			g := s.SegmentFor(w.Key)
			if !g.owned {
				continue
			}
			if w.Op == TxPut {
				rec := Record{}.With(w.Key, w.Value)
				rec.SetMeta(newMetadata(w.ContentType, w.Labels))
				delta += rec.accountedBytes()
			}
			if old := g.items.get(w.Key); old != nil {
				delta -= old.accountedBytes()
			}
		}
		if delta > 0 && s.owned.Load()+delta > s.maxMemory() {
			return kv.StatusCapacityExceeded, "the store is full (no-eviction)"
		}
	}
	for i, k := range e.keys {
		g := s.segments[e.keySegs[i]]
		if g.txLocks == nil {
			g.txLocks = make(map[string]txLock)
		}
		g.txLocks[k] = txLock{txID: id, expires: expires}
	}
	// The prepared state goes to the op-log of every segment involved, so
	// that the partition's replicas hold it before this node votes yes (the
	// caller's write barrier waits for them).
	for _, seg := range e.segs {
		e.prepRev[seg] = s.segments[seg].logTxPrepareLocked(id, s.txPortion(e, seg, expires))
	}
	return kv.StatusSuccess, ""
}

// txCommitResult is what commitTxLocked did on this node.
type txCommitResult struct {
	segs    []uint16 // the segments of the entry this node owns: committed or lapsed
	ok      bool     // the writes of segs were applied
	applied []txAppliedAt
}

// commitTxLocked applies the staged writes of e that fall in segments this
// node owns, if every reservation of those segments is still held by id at
// now; otherwise it applies nothing (ok=false). Either way it releases those
// reservations and logs a commit (or abort) marker on each of those
// segments, after the writes' own records. Segments this node only
// replicates are left alone: their owner commits them. The caller holds the
// write locks of every segment of e, so the release and the writes are one
// atomic step: nobody can slip a write in between.
func (s *Store) commitTxLocked(id string, e *txEntry, now int64) (r txCommitResult) {
	for _, seg := range e.segs {
		if s.segments[seg].owned {
			r.segs = append(r.segs, seg)
		}
	}
	if len(r.segs) == 0 {
		return r
	}
	r.ok = true
	for i, k := range e.keys {
		if !slices.Contains(r.segs, e.keySegs[i]) {
			continue
		}
		l, held := s.segments[e.keySegs[i]].txLocks[k]
		if !held || l.txID != id || now >= l.expires {
			r.ok = false
			break
		}
	}
	for i, k := range e.keys {
		if slices.Contains(r.segs, e.keySegs[i]) {
			s.segments[e.keySegs[i]].txReleaseLocked(k, id)
		}
	}
	if !r.ok {
		for _, seg := range r.segs {
			g := s.segments[seg]
			if _, marked := g.txPrepared[id]; marked {
				g.logTxResolvedLocked(id, OpTxAbort, nil)
			}
		}
		return r
	}
	for i := range e.writes {
		seg := e.writeSegs[i]
		if !slices.Contains(r.segs, seg) {
			continue
		}
		g := s.segments[seg]
		a, done := txApplied{}, false
		if e.replicated {
			// This node was a replica when the owner prepared: the owner
			// may have committed and shipped some of the writes before it
			// died. Those are not applied twice.
			a, done = g.txAlreadyAppliedLocked(&e.writes[i], e.prepRev[seg])
		}
		if !done {
			a = g.applyTxWriteLocked(&e.writes[i], now)
		}
		r.applied = append(r.applied, txAppliedAt{Index: e.writeIdx[i], Seg: seg, Status: a.status, Version: a.version, Revision: a.revision})
	}
	for _, seg := range r.segs {
		var mine []txAppliedAt
		for _, a := range r.applied {
			if a.Seg == seg {
				mine = append(mine, a)
			}
		}
		s.segments[seg].logTxResolvedLocked(id, OpTxCommit, mine)
	}
	return r
}

// applyTxWriteLocked applies one staged write like Put or Delete would,
// through the one apply path.
func (g *Segment) applyTxWriteLocked(w *TxWrite, now int64) txApplied {
	old := g.liveLocked(w.Key, now)
	if w.Op == TxDelete {
		if old == nil {
			return txApplied{status: kv.StatusNotFound}
		}
		r := g.tombstoneLocked(old, OpDelete, now)
		return txApplied{version: r.Version, revision: r.Revision}
	}
	var exp int64
	if w.TTL > 0 {
		exp = now + int64(w.TTL)
	}
	rec := newStringRecord(w.Key, w.Value, exp)
	rec.SetVersion(1)
	rec.SetMeta(newMetadata(w.ContentType, w.Labels))
	rec.access = g.store.freshAccess(now)
	if old != nil {
		rec.SetVersion(old.Version() + 1)
	}
	g.revision++
	rec.Revision = g.revision
	g.commitLocked(OpPut, rec)
	return txApplied{version: rec.Version(), revision: rec.Revision}
}

// txCommitReply answers a commit: the results of the writes in segments
// this node owns, in request order.
func (s *Store) txCommitReply(applied []txAppliedAt) kv.Reply {
	mine := make([]txAppliedAt, 0, len(applied))
	for _, x := range applied {
		if s.segments[x.Seg].Owned() {
			mine = append(mine, x)
		}
	}
	slices.SortFunc(mine, func(a, b txAppliedAt) int { return a.Index - b.Index })
	a := make([]kv.Reply, len(mine))
	for i, x := range mine {
		a[i] = kv.Reply{Status: x.Status, Type: kv.ReplyOK, Version: x.Version, Revision: x.Revision}
	}
	return kv.ArrayReply(a)
}

// --- the three phases ---

// TxPrepare is phase one on this node (see the file comment for the
// replies). The store keeps the Values of req: the caller must not modify
// them afterwards. Preparing an id that is already prepared answers OK
// again; an id is one transaction, its request is not compared.
func (s *Store) TxPrepare(id string, req TxPrepareRequest) kv.Reply {
	lim := txLimits{maxKeyBytes: s.cfg.MaxKeyBytes, maxItemBytes: s.cfg.MaxItemBytes}
	if st, why := validateTxPrepare(id, &req, lim); st != kv.StatusSuccess {
		return kv.Reply{Status: st, Message: why}
	}
	e := &txEntry{timeout: req.Timeout, reads: req.Reads, writes: req.Writes, prepRev: map[uint16]uint64{}}
	e.keys, e.keySegs, e.segs = s.txKeys(&req)
	for i, w := range req.Writes {
		e.bytes += txWriteBytes(&w)
		e.writeIdx = append(e.writeIdx, i)
		e.writeSegs = append(e.writeSegs, s.SegmentFor(w.Key).id)
	}

	t, _ := s.txAcquire(id)
	if o, ok := t.done[id]; ok {
		t.mu.Unlock()
		return kv.Reply{Status: kv.StatusConflict, Message: "transaction already " + o.kind.String()}
	}
	if t.live[id] != nil {
		t.mu.Unlock()
		return kv.OKReply() // a retry: prepared already
	}
	if t.staged+e.bytes > txStagedLimit(s.maxMemory()) {
		t.mu.Unlock()
		return kv.Reply{Status: kv.StatusCapacityExceeded, Message: "too many bytes staged by prepared transactions"}
	}
	done := make(chan struct{})
	e.busy = done
	t.live[id] = e
	t.staged += e.bytes
	t.mu.Unlock()

	now := s.writeNow()
	expires := now + int64(req.Timeout)
	st, why := func() (kv.Status, string) {
		s.txLockSegments(e.segs)
		defer s.txUnlockSegments(e.segs) // a panic must not leave the segments locked
		return s.prepareTxLocked(id, &req, e, now, expires)
	}()

	t.mu.Lock()
	if st == kv.StatusSuccess {
		e.expires = expires
		heap.Push(&t.deadlines, txDeadline{at: expires, id: id})
	} else {
		delete(t.live, id)
		t.staged -= e.bytes
	}
	e.busy = nil
	close(done)
	t.mu.Unlock()
	if st != kv.StatusSuccess {
		return kv.Reply{Status: st, Message: why}
	}
	return kv.OKReply()
}

// TxCommit is phase two on this node: it applies the staged writes of a
// prepared id, all or nothing (see the file comment for the replies). On a
// node that holds the transaction because it replicated its owner and was
// promoted, it commits the segments it now owns; the answer lists their
// writes.
func (s *Store) TxCommit(id string) kv.Reply {
	if !validTxID(id) {
		return kv.BadRequest(fmt.Sprintf("transaction id must be 1..%d bytes", MaxTxIDBytes))
	}
	t, _ := s.txAcquire(id)
	e := t.live[id]
	if e == nil {
		o, ok := t.done[id]
		applied := slices.Clone(o.applied)
		t.mu.Unlock()
		switch {
		case !ok:
			return kv.Reply{Status: kv.StatusNotFound, Message: "unknown transaction"}
		case o.kind == txCommitted:
			return s.txCommitReply(applied)
		}
		return kv.Reply{Status: kv.StatusConflict, Message: "transaction " + o.kind.String()}
	}
	done := make(chan struct{})
	e.busy = done
	t.mu.Unlock()

	now := s.clock.NowNano()
	r := func() txCommitResult {
		s.txLockSegments(e.segs)
		defer s.txUnlockSegments(e.segs) // a panic must not leave the segments locked
		return s.commitTxLocked(id, e, now)
	}()

	t.mu.Lock()
	var applied []txAppliedAt
	if len(r.segs) > 0 {
		t.staged -= e.dropSegs(r.segs)
		if len(e.segs) == 0 {
			delete(t.live, id)
		}
		o := txOutcome{kind: txCommitted, applied: r.applied}
		if !r.ok {
			o.kind = txExpired
		}
		t.finishLocked(id, o, e.timeout, now)
		applied = slices.Clone(t.done[id].applied)
	}
	e.busy = nil
	close(done)
	t.mu.Unlock()
	switch {
	case len(r.segs) == 0:
		return kv.Reply{Status: kv.StatusMoved, Message: "the transaction's segments are not owned by this node"}
	case !r.ok:
		return kv.Reply{Status: kv.StatusConflict, Message: "transaction expired"}
	}
	return s.txCommitReply(applied)
}

// TxAbort releases everything id holds on this node. It is idempotent, and
// an unknown id is remembered as aborted so that a late prepare is refused.
func (s *Store) TxAbort(id string) kv.Reply {
	if !validTxID(id) {
		return kv.BadRequest(fmt.Sprintf("transaction id must be 1..%d bytes", MaxTxIDBytes))
	}
	t, now := s.txAcquire(id)
	if o, ok := t.done[id]; ok {
		t.mu.Unlock()
		if o.kind == txCommitted {
			return kv.Reply{Status: kv.StatusConflict, Message: "transaction already committed"}
		}
		return kv.OKReply()
	}
	e := t.live[id]
	timeout := time.Duration(0)
	if e != nil {
		delete(t.live, id)
		t.staged -= e.bytes
		timeout = e.timeout
	}
	t.finishLocked(id, txOutcome{kind: txAborted}, timeout, now)
	t.mu.Unlock()
	if e != nil {
		s.releaseReservations(id, e, true)
	}
	return kv.OKReply()
}
