package store

import (
	"github.com/zaris-io/zaris/internal/kv"
)

// Multi-key collection commands (LMOVE, SMOVE, LMPOP, SINTERSTORE, …). A
// handler runs for its first key like any other; it reaches the command's
// other keys through the segments its caller holds — the key's own segment
// (Segment.Exec: keys sharing a hash tag share it), or every segment of a
// multi-segment atomic view (Store.AtomicallyMany, what the RESP front end
// takes for the keys of one command). A key of a segment not held is
// refused with CROSSSLOT, as Redis Cluster refuses it.
//
// Every other key a handler mutates is opened with openWrite, checked
// (type, item cap) before anything is changed, and committed with its own
// deterministic single-key effect (LMOVE logs an LPOP on its source and an
// LPUSH on its destination; SINTERSTORE a delete and an SADD of the
// members stored), so a replica replays each key's op-log entry as it
// replays any other: the all-or-nothing rule holds because every refusal
// comes before the first mutation.

var errCrossSlot = kv.BadRequest("CROSSSLOT Keys in request don't hash to the same slot")

// segmentOf returns the held segment of key, or nil when the command's
// caller does not hold it.
func (x *execCtx) segmentOf(key string) *Segment {
	if x.view != nil {
		return x.view.segFor(key)
	}
	if x.seg.store.SegmentFor(key) == x.seg {
		return x.seg
	}
	return nil
}

// lookup opens another key of the command for reading: its live record's
// collection (nil when the key is missing), or WRONGTYPE when it holds
// another kind (kindAny: any kind, coll nil for a string).
func (x *execCtx) lookup(key []byte, kind ValueKind) (collection, kv.Reply, bool) {
	k := string(key)
	g := x.segmentOf(k)
	if g == nil {
		return nil, errCrossSlot, false
	}
	if !g.owned {
		return nil, kv.StatusReply(kv.StatusMoved), false
	}
	r := g.liveLocked(k, x.now)
	if r == nil {
		return nil, kv.Reply{}, true
	}
	if kind != kindAny && r.Kind != kind {
		return nil, kv.StatusReply(kv.StatusWrongType), false
	}
	if r.coll() == nil {
		return nil, kv.Reply{}, true
	}
	return r.coll(), kv.Reply{}, true
}

// openWrite opens another key of a write command for mutation, with the
// checks execWriteLocked makes for the command's own key: the segment held
// and served here, no migration fence, no transaction's reservation, the
// key's kind (kindAny: any). With create, a missing key gets a fresh
// collection, inserted if the command changes it. The caller mutates the
// returned context's collection, sets its effect and commits it.
func (x *execCtx) openWrite(key []byte, kind ValueKind, create bool) (*execCtx, kv.Reply, bool) {
	k := string(key)
	g := x.segmentOf(k)
	switch {
	case g == nil:
		return nil, errCrossSlot, false
	case g.store.checkKey(k) != kv.StatusSuccess:
		return nil, kv.BadRequest("invalid key"), false
	case !g.owned:
		return nil, kv.StatusReply(kv.StatusMoved), false
	case g.fenced:
		return nil, kv.StatusReply(kv.StatusMigrating), false
	case len(g.txLocks) > 0 && g.txLockedLocked(k, "", x.now):
		return nil, kv.Reply{Status: kv.StatusConflict, Message: "key reserved by a transaction in progress"}, false
	}
	if r := g.items.get(k); r != nil && !r.Deleted() && r.expiredAt(x.now) {
		g.tombstoneLocked(r, OpExpired, x.now) // as execWriteLocked: the replica drops its stale copy first
	}
	c := &execCtx{seg: g, cmd: &kv.Cmd{Op: x.cmd.Op, Key: k}, now: x.now, view: x.view}
	c.rec = g.liveLocked(k, x.now)
	if c.rec != nil {
		if kind != kindAny && c.rec.Kind != kind {
			return nil, kv.StatusReply(kv.StatusWrongType), false
		}
		if c.rec.coll() != nil {
			c.coll = c.rec.coll()
		}
	} else if create {
		c.coll = newCollection(kind)
	}
	if c.coll != nil {
		c.base = c.coll.size()
	}
	return c, kv.Reply{}, true
}

// commit logs and accounts a key opened with openWrite if the handler
// changed it (set its effect): a new record, an emptied one deleted, or an
// updated one.
func (c *execCtx) commit() {
	if c.effect == nil {
		return
	}
	c.seg.commitEffectLocked(c, c.base)
	c.effect = nil
}

// replace makes the key opened with openWrite (of any kind) hold coll,
// built by the command: the old record is deleted (logged as a delete) and
// a non-empty coll installed as a new record with no TTL, its effect the
// command that builds it from nothing — Redis's setKey. An empty coll
// leaves the key deleted.
func (c *execCtx) replace(coll collection, effect *kv.Cmd) {
	if c.rec != nil {
		c.seg.origin, c.seg.replacing = c.cmd.Op, coll.count() > 0
		c.seg.tombstoneLocked(c.rec, OpDelete, c.now)
		c.seg.origin, c.seg.replacing = 0, false
		c.rec = nil
	}
	if coll.count() == 0 {
		return
	}
	c.coll, c.base = coll, 0
	e := *effect
	e.Key = c.cmd.Key
	c.effect = &e
	c.commit()
}

// fitsNew reports whether the new collection coll may replace the key (the
// per-key caps, and the store's cap under no-eviction), as fits does for a
// growing one.
func (c *execCtx) fitsNew(coll collection) bool {
	return c.fitsFrom(keySize{}, sizeOf(coll))
}

// wrongKind reports whether the command's own key holds another kind than
// k: a handler registered for any kind checks it itself, after parsing
// its options, where Redis checks the type.
func (x *execCtx) wrongKind(k ValueKind) bool { return x.rec != nil && x.rec.Kind != k }
