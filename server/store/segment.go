package store

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Segment is one of the store's segments: a table of records (table.go) with its own lock,
// revision counter and op-log. Client operations and the replication /
// migration entry points (Snapshot, ApplyRecord, OperationsAfter, …) live on
// it so that a caller that already routed a key to its segment never hashes
// it again.
type Segment struct {
	store *Store
	id    uint16

	mu sync.RWMutex // guards every field below but ops
	// ops counts the segment's committed mutations for Stats. Beside the
	// lock a writer already holds, so an increment touches a cache line
	// the writing core owns; one store-wide counter was a line both CPUs
	// fought over on every write (4 % of a SET -P 16's server CPU).
	ops opCounters
	// origin is the client command whose effect is being committed (0
	// outside one), and replacing is set while a key is deleted to be
	// replaced at once (S*STORE): watches see them as Event.Origin and
	// Event.Replaced, for Redis's keyspace-notification names.
	origin    kv.CmdOp
	replacing bool
	// expiring is set while a put that gives its key a new expiry (a TTL
	// or an instant, not KEEPTTL) commits: Event.SetExpiry.
	expiring bool
	// eventName is the committing write's execCtx.event: Event.Name.
	eventName string
	// writeCtx and writeCmd are the context and command of the write that
	// holds mu (Exec), reused from write to write: allocated per call they
	// were two of an LPUSH's allocations (a handler is called through a
	// function value, so both escaped). writeCtxBusy marks them taken; a
	// write that finds them taken (never expected: a write handler does not
	// re-enter Exec on its own segment) allocates its own.
	writeCtx     execCtx
	writeCmd     kv.Cmd
	writeCtxBusy bool
	// scratch holds a write's small new value (INCR's digits) until the
	// new record copies it.
	scratch [24]byte
	// items holds live records, expired-but-unswept records and tombstones.
	items recordTable
	// draining is the field tables of this segment's collections in the
	// middle of an incremental resize, by the key they were seen under:
	// the sweeper finishes what writes left (drainIdleTables, D132).
	draining  map[*fieldTable]string
	drainingN atomic.Int32 // len(draining), read by the sweeper without the lock
	// ttlKeys is items.expiring, the keys with a TTL, readable without
	// the lock (DBSize). The records with a TTL are marked in the table's
	// hash array (expiresBit), where the sweeper finds them: an index of
	// their own, a Go map, cost ~40 B per key with a TTL and its assignment
	// was 13 % of a pipelined SET EX's CPU (D89).
	ttlKeys atomic.Int32
	// growable holds the append buffers of large strings APPEND grows
	// (appendbuf.go).
	growable map[string]*growBuf
	// tombstones lists keys whose record was a tombstone when appended; the
	// pruner checks each against the table.
	tombstones []string
	revision   uint64
	log        opLog
	feed       feedLog       // the change feed's retention beyond the op-log
	epoch      atomic.Uint64 // the ownership epoch of the segment's partition (SetEpoch)
	// lowWater: every replica has applied all revisions ≤ lowWater, so
	// tombstones at or below it are no longer needed. Without replicas
	// (hasLowWater false) every tombstone is prunable.
	lowWater    uint64
	hasLowWater bool
	// owned: the segment's bytes count against the owned-data cap (R-MEM-4);
	// otherwise they are replica bytes.
	owned bool
	// ownedNow mirrors owned for Owned, which a multi-key command asks of
	// each of its segments before it locks them: no lock, no shared write
	// to the lock's cache line.
	ownedNow atomic.Bool
	// fenced: a live migration's write fence (R-MIG-2) — the segment is
	// still served for reads, every write answers Migrating, and nothing
	// of its own (expiry sweeps, eviction) changes it, so that its content
	// and revision stay exactly what the cut-over proof recorded.
	fenced bool
	bytes  int64 // accounted bytes of every record in items
	live   int   // records in items that are not tombstones
	// txLocks holds the keys a prepared transaction (R-DS-4) reserved until
	// its commit, abort or lock expiry; other writers get Conflict.
	txLocks map[string]txLock
	// txPrepared holds the prepare marker of every transaction holding
	// reservations here until its commit or abort marker (txrepl.go).
	txPrepared map[string]txSegPrepared
	// absentWatches counts the RESP WATCHes of keys that were absent when
	// watched (txwatch.go): their tombstones are kept until the watch ends.
	absentWatches absentWatches
}

// txLock is one key reserved by a prepared transaction.
type txLock struct {
	txID    string
	expires int64 // Unix ns; a crashed coordinator's locks lapse by themselves
}

// txLockedLocked reports whether key is reserved by a live transaction
// other than txID.
func (g *Segment) txLockedLocked(key, txID string, now int64) bool {
	l, ok := g.txLocks[key]
	if !ok {
		return false
	}
	if now >= l.expires {
		delete(g.txLocks, key)
		return false
	}
	return l.txID != txID
}

func newSegment(s *Store, id uint16) *Segment {
	g := &Segment{
		store: s, id: id,
		items: newRecordTable(0),
		log:   newOpLog(s.cfg.OpLogMaxOps, s.cfg.OpLogMaxBytes),
		owned: true,
	}
	g.ownedNow.Store(true)
	g.feed = feedLog{maxBytes: s.cfg.FeedRetentionBytes, maxAge: feedRetention(s.cfg.FeedRetentionAge)}
	if g.feed.enabled() {
		g.log.spill = g.keepTrimmedLocked
	}
	return g
}

// ID is the segment's index.
func (g *Segment) ID() uint16 { return g.id }

func ttlLeft(r *Record, now int64) time.Duration {
	if r.ExpiresAt() == 0 {
		return 0
	}
	left := time.Duration(r.ExpiresAt() - now)
	if left <= 0 {
		return time.Nanosecond // expired but not yet swept: never report "no TTL"
	}
	return left
}

func resultOf(r *Record, now int64) kv.Result {
	return kv.Result{Status: kv.StatusSuccess, Value: r.Value(), Version: r.Version(), Revision: r.Revision, TTL: ttlLeft(r, now)}
}

func status(s kv.Status) kv.Result { return kv.Result{Status: s} }

// refused is a status with the reason a caller can act on (kv.Result.Detail).
func refused(s kv.Status, detail string) kv.Result { return kv.Result{Status: s, Detail: detail} }

// Get returns the live value of key. The returned Value is shared with the
// store and must not be modified.
func (g *Segment) Get(key string) kv.Result {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.getLocked(key, now, false)
}

// getLocked reads key; the caller holds the segment lock (read or write).
// noTouch leaves the access stamp as it was (CLIENT NO-TOUCH).
func (g *Segment) getLocked(key string, now int64, noTouch bool) kv.Result {
	r, st := g.liveStringLocked(key, now, noTouch)
	if r == nil {
		return status(st)
	}
	return resultOf(r, now)
}

// GetValue is Get for a caller that needs only the value (RESP GET and
// MGET): no kv.Result, with its version, revision and TTL, is built and
// copied up to it (D122). The value is shared with the store.
func (g *Segment) GetValue(key string) ([]byte, kv.Status) { return g.getValue(key, false) }

// getValue is GetValue under the read lock; noTouch leaves the access stamp
// as it was (Untouched).
func (g *Segment) getValue(key string, noTouch bool) ([]byte, kv.Status) {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.getValueLocked(key, now, noTouch)
}

func (g *Segment) getValueLocked(key string, now int64, noTouch bool) ([]byte, kv.Status) {
	r, st := g.liveStringLocked(key, now, noTouch)
	if r == nil {
		return nil, st
	}
	return r.Value(), kv.StatusSuccess
}

// liveStringLocked is key's live string record, stamped as read unless
// noTouch, or nil and why not.
func (g *Segment) liveStringLocked(key string, now int64, noTouch bool) (*Record, kv.Status) {
	if !g.owned {
		return nil, kv.StatusMoved
	}
	r := g.items.get(key)
	if r == nil || !r.liveAt(now) {
		return nil, kv.StatusNotFound
	}
	if r.Kind != KindString {
		return nil, kv.StatusWrongType
	}
	if !noTouch {
		g.store.touch(r, now)
	}
	return r, kv.StatusSuccess
}

// Put writes value under key. The record keeps copies of both (in its own
// allocation, recalloc.go): the caller may reuse key's and value's memory
// once Put returns.
func (g *Segment) Put(key string, value []byte, opts *kv.PutOptions) kv.Result {
	o := putOptionsOrNone(opts)
	rec, now, st, detail := g.preparePut(key, value, o)
	if rec == nil {
		return refused(st, detail)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.putLocked(rec, o, now, false)
}

// PutStatus is Put for a caller that needs only the outcome (the RESP front
// end's SET and MSET): it builds no kv.Result, whose 72 bytes copied from
// frame to frame stalled every write (D120).
func (g *Segment) PutStatus(key string, value []byte, opts *kv.PutOptions) kv.Status {
	o := putOptionsOrNone(opts)
	rec, now, st, _ := g.preparePut(key, value, o)
	if rec == nil {
		return st
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	_, st, _ = g.acceptPutLocked(rec, o, now, false)
	return st
}

// noPutOptions stands for a nil *kv.PutOptions; never written.
var noPutOptions kv.PutOptions

// putOptionsOrNone lets the write path read its options through a pointer:
// copying the 64-byte struct from frame to frame stalled on every SET
// (store-forwarding, D120).
func putOptionsOrNone(opts *kv.PutOptions) *kv.PutOptions {
	if opts == nil {
		return &noPutOptions
	}
	return opts
}

// preparePut validates a write and builds its record outside the lock; a nil
// record comes with the refusal's status and reason.
func (g *Segment) preparePut(key string, value []byte, o *kv.PutOptions) (*Record, int64, kv.Status, string) {
	s := g.store
	if d := s.keyProblem(key); d != "" {
		return nil, 0, kv.StatusBadRequest, d
	}
	switch {
	case len(value) > s.cfg.MaxItemBytes:
		return nil, 0, kv.StatusItemTooLarge, fmt.Sprintf("value of %d bytes exceeds --max-item-bytes %d", len(value), s.cfg.MaxItemBytes)
	case o.TTL < 0:
		return nil, 0, kv.StatusBadRequest, fmt.Sprintf("negative TTL %v", o.TTL)
	case o.IfAbsent && o.IfMatchVersion != 0:
		return nil, 0, kv.StatusBadRequest, "IfAbsent and IfMatchVersion exclude each other"
	case o.KeepTTL && o.TTL > 0:
		return nil, 0, kv.StatusBadRequest, "KeepTTL and a TTL exclude each other"
	case o.ExpireAt != 0 && (o.TTL != 0 || o.KeepTTL):
		return nil, 0, kv.StatusBadRequest, "ExpireAt excludes a TTL and KeepTTL"
	}
	now := s.nowFor(o.TTL > 0) // precise only to compute an expiry (writeNow)
	var exp int64
	switch {
	case o.TTL > 0:
		exp = expiryAt(now, o.TTL)
	case o.ExpireAt != 0:
		// The instant as given: one already past leaves a record no read
		// sees, which the sweeper expires.
		exp = max(o.ExpireAt, 1)
	}
	rec := newStringRecord(key, value, exp)
	if m := newMetadata(o.ContentType, o.Labels); m != nil {
		rec.SetMeta(m) // a plain SET has none: its record stays joined, untouched
	}
	rec.access = s.freshAccess(now)
	return rec, now, kv.StatusSuccess, ""
}

// putLocked installs a prepared record; the caller holds the write lock.
func (g *Segment) putLocked(rec *Record, o *kv.PutOptions, now int64, admitted bool) kv.Result {
	rec, st, detail := g.acceptPutLocked(rec, o, now, admitted)
	if st != kv.StatusSuccess {
		return refused(st, detail)
	}
	res := resultOf(rec, now)
	res.Value = nil
	return res
}

// acceptPutLocked checks a prepared record's preconditions and commits it (or
// the copy of it that keeps the old expiry, KEEPTTL), which it returns; the
// caller holds the write lock. A refusal comes with its reason. admitted:
// the write's command passed the memory cap before it ran (Atomic.Admit).
func (g *Segment) acceptPutLocked(rec *Record, o *kv.PutOptions, now int64, admitted bool) (*Record, kv.Status, string) {
	s := g.store
	key := rec.Key()
	if st := g.writableLocked(); st != kv.StatusSuccess {
		return nil, st, ""
	}
	if len(g.txLocks) > 0 && g.txLockedLocked(key, "", now) {
		return nil, kv.StatusConflict, ""
	}
	s.faultLocked(key)
	old := g.items.get(key)
	if old != nil && !old.liveAt(now) {
		old = nil // a tombstone or an expired record: the key is absent
	}
	switch {
	case o.IfAbsent && old != nil:
		return nil, kv.StatusConflict, fmt.Sprintf("key exists at version %d (IfAbsent)", old.Version())
	case o.IfMatchVersion != 0 && old == nil:
		return nil, kv.StatusConflict, fmt.Sprintf("key is absent, IfMatchVersion %d", o.IfMatchVersion)
	case o.IfMatchVersion != 0 && old.Version() != o.IfMatchVersion:
		return nil, kv.StatusConflict, fmt.Sprintf("key is at version %d, IfMatchVersion %d", old.Version(), o.IfMatchVersion)
	}
	if old != nil {
		if o.KeepTTL && old.ExpiresAt() != 0 {
			rec = rec.cloneExpiring(old.ExpiresAt()) // Redis SET … KEEPTTL
		}
		rec.SetVersion(old.Version() + 1)
	} else {
		rec.SetVersion(1)
	}
	if s.evictionPolicy() == NoEviction && g.owned && !admitted {
		delta := rec.accountedBytes()
		if prev := g.items.get(key); prev != nil {
			delta -= prev.accountedBytes()
		}
		if used := s.owned.Load(); delta > 0 && used+delta > s.maxMemory() {
			return nil, kv.StatusCapacityExceeded, fmt.Sprintf("%s more would pass --memory-max-bytes %s (%s in use) and eviction is off",
				kv.FormatBytes(delta), kv.FormatBytes(s.maxMemory()), kv.FormatBytes(used))
		}
	}
	g.revision++
	rec.Revision = g.revision
	g.expiring = o.TTL > 0 || o.ExpireAt != 0
	g.commitLocked(OpPut, rec)
	g.expiring = false
	return rec, kv.StatusSuccess, ""
}

// Delete removes key, leaving a tombstone. NotFound if the key is absent.
func (g *Segment) Delete(key string) kv.Result {
	return g.remove(key, OpDelete, 0)
}

// remove replaces a live record by a tombstone (delete, expiry, eviction).
// With onlyIfRevision != 0 the record is removed only if it is still the one
// with that revision (the sweeper and evictor decide outside the lock).
func (g *Segment) remove(key string, kind OpKind, onlyIfRevision uint64) kv.Result {
	if st := g.store.checkKey(key); st != kv.StatusSuccess {
		return status(st)
	}
	now := g.store.writeNow()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.removeLocked(key, kind, onlyIfRevision, now)
}

// removeLocked is remove under the caller's write lock.
func (g *Segment) removeLocked(key string, kind OpKind, onlyIfRevision uint64, now int64) kv.Result {
	if st := g.writableLocked(); st != kv.StatusSuccess {
		return status(st)
	}
	old := g.items.get(key)
	if old == nil || old.Deleted() || (kind == OpDelete && old.expiredAt(now)) {
		return status(kv.StatusNotFound)
	}
	if onlyIfRevision != 0 && old.Revision != onlyIfRevision {
		return status(kv.StatusConflict)
	}
	if kind == OpDelete && len(g.txLocks) > 0 && g.txLockedLocked(key, "", now) {
		return status(kv.StatusConflict)
	}
	return g.tombstoneLocked(old, kind, now)
}

func (g *Segment) tombstoneLocked(old *Record, kind OpKind, now int64) kv.Result {
	g.revision++
	// The key is copied: old's shares old's allocation with its value,
	// which the tombstone would keep alive until it is pruned.
	tomb := recordOf(strings.Clone(old.Key()), nil, Record{Revision: g.revision}.WithVersion(old.Version()).AsTombstone())
	g.commitLocked(kind, tomb)
	return kv.Result{Status: kv.StatusSuccess, Version: tomb.Version(), Revision: tomb.Revision}
}

// Expire sets a time to live on an existing key (R-KV-3). ttl must be
// positive. The value and its Version are unchanged.
func (g *Segment) Expire(key string, ttl time.Duration) kv.Result {
	if ttl <= 0 {
		return status(kv.StatusBadRequest)
	}
	return g.retime(key, OpExpire, ttl)
}

// Persist removes the time to live of an existing key.
func (g *Segment) Persist(key string) kv.Result {
	return g.retime(key, OpPersist, 0)
}

func (g *Segment) retime(key string, kind OpKind, ttl time.Duration) kv.Result {
	if st := g.store.checkKey(key); st != kv.StatusSuccess {
		return status(st)
	}
	now := g.store.writeNow()
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.retimeLocked(key, kind, ttl, now)
}

// retimeLocked is retime under the caller's write lock.
func (g *Segment) retimeLocked(key string, kind OpKind, ttl time.Duration, now int64) kv.Result {
	if st := g.writableLocked(); st != kv.StatusSuccess {
		return status(st)
	}
	old := g.items.get(key)
	if old == nil || !old.liveAt(now) {
		return status(kv.StatusNotFound)
	}
	if len(g.txLocks) > 0 && g.txLockedLocked(key, "", now) {
		return status(kv.StatusConflict)
	}
	if kind == OpPersist && old.ExpiresAt() == 0 {
		return kv.Result{Status: kv.StatusSuccess, Version: old.Version(), Revision: old.Revision}
	}
	var exp int64
	if kind == OpExpire {
		exp = expiryAt(now, ttl)
	}
	rec := old.cloneExpiring(exp)
	g.revision++
	rec.Revision = g.revision
	g.commitLocked(kind, rec)
	return kv.Result{Status: kv.StatusSuccess, Version: rec.Version(), Revision: rec.Revision, TTL: ttlLeft(rec, now)}
}

// TimeToLive reports the remaining TTL of key in Result.TTL (0 = none).
func (g *Segment) TimeToLive(key string) kv.Result {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.ttlLocked(key, now)
}

// ttlLocked is TimeToLive under the caller's lock (read or write).
func (g *Segment) ttlLocked(key string, now int64) kv.Result {
	if !g.owned {
		return status(kv.StatusMoved)
	}
	r := g.items.get(key)
	if r == nil || !r.liveAt(now) {
		return status(kv.StatusNotFound)
	}
	return kv.Result{Status: kv.StatusSuccess, Version: r.Version(), Revision: r.Revision, TTL: ttlLeft(r, now)}
}

// commitLocked is the one apply path of every mutation (DESIGN.md): it
// installs rec (already carrying its revision and version), keeps the indexes
// and the memory accounting right and appends the operation to the op-log.
func (g *Segment) commitLocked(kind OpKind, rec *Record) {
	old := g.items.swap(rec)
	g.store.inheritAccess(rec, old)
	if g.growable != nil {
		g.settleGrowableLocked(rec.Key(), rec)
	}
	delta := rec.accountedBytes()
	if old != nil {
		delta -= old.accountedBytes()
		if !old.Deleted() {
			g.live--
		}
	}
	g.countTTLKeysLocked() // the swap counted the keys with a TTL (expiresBit)
	if rec.Deleted() {
		g.tombstones = append(g.tombstones, rec.Key())
	} else {
		g.live++
	}
	if rec.Revision > g.revision {
		g.revision = rec.Revision
	}
	g.bytes += delta
	g.store.account(g.owned, delta, int64(rec.liveDelta(old)))
	logged := rec
	if c := rec.coll(); c != nil {
		g.noteDrainingLocked(rec.Key(), c)
		// The collection keeps changing in place after this entry: log a
		// frozen copy (the full encoding for a put, the header otherwise).
		logged = rec.header()
		if kind == OpPut {
			logged.SetValue(c.encode())
		}
	}
	g.log.append(kind, logged)
	g.ops.count(kind)
	g.notifyLocked(kind, rec, nil)
}

// liveDelta is the change in live (non-tombstone) records when r replaces old.
func (r *Record) liveDelta(old *Record) int {
	d := 0
	if !r.Deleted() {
		d++
	}
	if old != nil && !old.Deleted() {
		d--
	}
	return d
}

// --- replication and migration entry points (R-REP-1, R-MIG) ---

// Revision is the segment's current revision.
func (g *Segment) Revision() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.revision
}

// OperationsAfter returns every operation with revision > rev in revision
// order, or ErrBelowTrimFloor when the log no longer reaches back to rev —
// never a partial answer.
func (g *Segment) OperationsAfter(rev uint64) ([]Op, error) {
	return g.AppendOperationsAfter(nil, rev)
}

// AppendOperationsAfter is OperationsAfter appending to ops (a shipper
// reuses one slice for every batch).
func (g *Segment) AppendOperationsAfter(ops []Op, rev uint64) ([]Op, error) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if rev > g.revision {
		return ops, fmt.Errorf("store: segment %d: asked after revision %d, ahead of current %d", g.id, rev, g.revision)
	}
	return g.log.after(ops, rev)
}

// TrimFloor is the revision above which the op-log is complete.
func (g *Segment) TrimFloor() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.log.floor
}

// PinTrimFloor keeps every operation after rev in the op-log until the
// returned release is called (a migration's snapshot anchor, R-MIG-2). It
// fails with ErrBelowTrimFloor if rev is already trimmed. release is
// idempotent.
func (g *Segment) PinTrimFloor(rev uint64) (release func(), err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if rev < g.log.floor {
		return nil, fmt.Errorf("%w: pin at %d, floor %d", ErrBelowTrimFloor, rev, g.log.floor)
	}
	g.log.pin(rev)
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			g.log.unpin(rev)
			g.mu.Unlock()
		})
	}, nil
}

// SetLowWaterMark records that every replica has applied all revisions ≤
// rev; tombstones at or below it become prunable (R-KV-4). The mark never
// moves backwards.
func (g *Segment) SetLowWaterMark(rev uint64) {
	g.mu.Lock()
	if !g.hasLowWater || rev > g.lowWater {
		g.lowWater = rev
	}
	g.hasLowWater = true
	g.mu.Unlock()
}

// SetOwned moves the segment's bytes between the owned and the replica
// accounting (R-MEM-4). Only owned segments are evicted.
func (g *Segment) SetOwned(owned bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.owned == owned {
		return
	}
	g.store.account(g.owned, -g.bytes, -int64(g.live))
	g.owned = owned
	g.ownedNow.Store(owned)
	g.store.account(g.owned, g.bytes, int64(g.live))
}

// writableLocked is the status a write on this segment gets before it
// looks at any key: Moved on a segment this node does not own (a replica
// or foreign segment: the client's map is wrong), Migrating under a
// migration's write fence (retry shortly: the cut-over flips the owner in
// milliseconds), Success otherwise.
func (g *Segment) writableLocked() kv.Status {
	switch {
	case !g.owned:
		return kv.StatusMoved
	case g.fenced:
		return kv.StatusMigrating
	}
	return kv.StatusSuccess
}

// SetWriteFence raises or lowers the migration write fence (R-MIG-2).
// Raising it takes the write lock, so every write that started before has
// committed when it returns: the revision read afterwards is final until
// the fence is lowered.
func (g *Segment) SetWriteFence(on bool) {
	g.mu.Lock()
	g.fenced = on
	g.mu.Unlock()
}

// WriteFenced reports whether the migration write fence is up.
func (g *Segment) WriteFenced() bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.fenced
}

// PendingTransactions counts the keys of this segment reserved by prepared
// transactions that have not lapsed: a cut-over waits for them to commit or
// abort before it records its proof (a commit never fails, so one arriving
// after the fence would still write).
func (g *Segment) PendingTransactions() int {
	now := g.store.clock.NowNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for k := range g.txLocks {
		if g.txLockedLocked(k, "", now) {
			n++
		}
	}
	return n
}

// Owned reports whether the segment counts as owned data.
func (g *Segment) Owned() bool { return g.ownedNow.Load() }

// Snapshot is a revision-anchored copy of a segment's live records: every
// mutation up to Revision is reflected, none after.
type Snapshot struct {
	Segment  uint16
	Revision uint64
	Records  []Record
	// Prepared holds the prepare markers (OpTxPrepare) of the transactions
	// prepared on the segment at Revision: a copy built from the snapshot
	// holds them too (InstallPreparedTx).
	Prepared []Op
}

// Snapshot returns the live records (no tombstones, no expired records) at
// the current revision.
func (g *Segment) Snapshot() Snapshot {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	snap := Snapshot{Segment: g.id, Revision: g.revision, Records: make([]Record, 0, g.live)}
	for r := range g.items.all() {
		if r.liveAt(now) {
			snap.Records = append(snap.Records, r.exported())
		}
	}
	snap.Prepared = g.preparedLocked(now)
	return snap
}

// KeyMeta is what a key listing needs of a record: no value.
type KeyMeta struct {
	Key       string
	Kind      ValueKind
	ExpiresAt int64
}

// LiveKeys lists the segment's live keys and the KeysVersion they are as
// of. Unlike Snapshot it neither copies values nor encodes collections:
// SCAN over a keyspace holding a 100 k-member set built its key list from
// a Snapshot, encoding the set each time.
func (g *Segment) LiveKeys() (KeysVersion, []KeyMeta) {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	keys := make([]KeyMeta, 0, g.live)
	for r := range g.items.all() {
		if r.liveAt(now) {
			keys = append(keys, KeyMeta{Key: r.Key(), Kind: r.Kind, ExpiresAt: r.ExpiresAt()})
		}
	}
	return g.keysVersionLocked(), keys
}

// ApplyRecord applies a record produced on another node (replication,
// catch-up, migration), keeping its Version and Revision. It is
// revision-guarded: a record not newer than what the segment holds for the
// key — including a tombstone — is stale and ignored (applied=false). That
// guard is what stops a late put from resurrecting a deleted key.
//
// kind says what the record is the result of: OpPut (and deletes) install it
// whole; OpExpire/OpPersist only move the expiry of the record held, which
// must exist (ErrDiverged otherwise: catch up by snapshot).
func (g *Segment) ApplyRecord(rec Record, kind OpKind) (applied bool, err error) {
	if rec.Key() == "" || rec.Revision == 0 {
		return false, fmt.Errorf("store: segment %d: record without key or revision", g.id)
	}
	if rec.Deleted() && kind != OpDelete && kind != OpExpired && kind != OpEvicted {
		kind = OpDelete
	}
	r := rec // copy: the caller's struct is not retained
	if kind != OpPut {
		r.setColl(nil)
	} else if err := r.materialize(); err != nil {
		return false, err
	}
	r.access = g.store.freshAccess(g.store.clock.NowNano())
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.items.get(r.Key())
	if old != nil && old.Revision >= r.Revision {
		return false, nil
	}
	if kind == OpExpire || kind == OpPersist {
		if old == nil || old.Deleted() {
			return false, fmt.Errorf("%w: segment %d: %v for %q, which this node does not hold", ErrDiverged, g.id, kind, r.Key())
		}
		moved := old.clone()
		moved.SetExpiresAt(r.ExpiresAt())
		moved.SetVersion(r.Version())
		moved.Revision = r.Revision
		g.installLocked(moved, kind) // moved itself: a copy of it would keep both alive
		return true, nil
	}
	g.installLocked(&r, kind)
	return true, nil
}

// ApplyOp applies one operation read from another node's op-log
// (OperationsAfter): a record, a collection mutation to replay, or a
// transaction marker (txrepl.go).
func (g *Segment) ApplyOp(op Op) (applied bool, err error) {
	if op.Kind.TxMarker() {
		return g.applyTxMarker(op)
	}
	if op.Kind != OpCommand {
		return g.ApplyRecord(op.Record, op.Kind)
	}
	if op.Cmd == nil || op.Record.Revision == 0 {
		return false, fmt.Errorf("store: segment %d: command op without command or revision", g.id)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if old := g.items.get(op.Cmd.Key); old != nil && old.Revision >= op.Record.Revision {
		return false, nil
	}
	if err := g.applyCommandLocked(op.Record, op.Cmd); err != nil {
		return false, err
	}
	return true, nil
}

// ErrDiverged: an operation cannot be applied because this node's state is
// not the one it was produced against. Catch up by snapshot.
var ErrDiverged = errors.New("store: replica diverged from its source")

// installLocked commits a record received from another node.
func (g *Segment) installLocked(r *Record, kind OpKind) {
	if r.Revision <= g.log.lastRevision() {
		// The op-log must stay ordered by revision. An out-of-order record
		// (only possible outside a revision-ordered stream) is installed but
		// the log restarts above it: catch-up from before it needs a snapshot.
		g.commitLocked(kind, r)
		g.log.reset(g.revision)
		g.resetFeedLocked()
		return
	}
	g.commitLocked(kind, r)
}

func (l *opLog) lastRevision() uint64 {
	if l.n == 0 {
		return l.floor
	}
	return l.at(l.n - 1).rev
}

// InstallSnapshot replaces the segment's content with snap (a replica or a
// migration target catching up from below the source's trim floor). The
// op-log restarts at snap.Revision.
func (g *Segment) InstallSnapshot(snap Snapshot) {
	now := g.store.clock.NowNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	g.store.account(g.owned, -g.bytes, -int64(g.live))
	g.items = newRecordTable(len(snap.Records))
	g.forgetDrainingLocked()
	g.growable = nil // its spare capacity left g.bytes with the rest
	g.tombstones = nil
	g.bytes, g.live = 0, 0
	stamp := g.store.freshAccess(now)
	for i := range snap.Records {
		r := snap.Records[i]
		r.access = stamp
		if err := r.materialize(); err != nil {
			g.store.log.Error("store: dropping an undecodable collection from a snapshot", "key", r.Key(), "err", err)
			continue
		}
		rec := &r
		g.items.set(rec)
		g.bytes += rec.accountedBytes()
		if rec.Deleted() {
			g.tombstones = append(g.tombstones, rec.Key())
		} else {
			g.live++
		}
		if rec.ExpiresAt() != 0 && !rec.Deleted() {
		}
	}
	g.countTTLKeysLocked()
	g.store.account(g.owned, g.bytes, int64(g.live))
	g.revision = snap.Revision
	g.log.reset(snap.Revision)
	g.resetFeedLocked()
}

// Bytes is the accounted size of the segment's records.
func (g *Segment) Bytes() int64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.bytes
}

// KeysVersion tells whether a segment's key set may have changed: equal
// versions, the same keys (a write moves the revision; an installed
// snapshot replaces the table, even at the same revision).
type KeysVersion struct {
	revision uint64
	records  int
	table    uint64
}

// ScanState is Owned, Len and the KeysVersion read under one lock: what a
// key scan checks on each of the 256 segments, most of them often empty.
func (g *Segment) ScanState() (owned bool, live int, v KeysVersion) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.owned, g.live, g.keysVersionLocked()
}

func (g *Segment) keysVersionLocked() KeysVersion {
	return KeysVersion{revision: g.revision, records: g.items.len(), table: g.items.ident}
}

// Len is the number of live records (expired-but-unswept included).
func (g *Segment) Len() int {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.live
}

// expiryAt is the instant (Unix ns) a TTL set at now ends. A TTL reaching
// past the last representable instant (year 2262) ends there instead of
// wrapping into the past: Redis accepts TTLs of millions of years, which
// would otherwise expire the key at once.
func expiryAt(now int64, ttl time.Duration) int64 {
	if int64(ttl) > math.MaxInt64-now {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

// countTTLKeysLocked publishes items.expiring after a change of it.
func (g *Segment) countTTLKeysLocked() {
	if n := int32(g.items.expiring); g.ttlKeys.Load() != n { // a store is a locked instruction
		g.ttlKeys.Store(n)
	}
}
