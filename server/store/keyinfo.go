package store

import (
	"sync/atomic"

	"github.com/zaris-io/zaris/internal/kv"
)

// Key introspection and copying for OBJECT, MEMORY USAGE and COPY
// (issue #13 item 5).

// KeyInfo describes a key for OBJECT and MEMORY USAGE.
type KeyInfo struct {
	Kind ValueKind
	// Encoding is the encoding Redis 7.0 would report for this content with
	// its default thresholds (see encodingOf).
	Encoding string
	// IdleMillis is the time since the key was last read or written, under
	// a recency policy (0 under LFU, which keeps no time of last access).
	IdleMillis int64
	// Freq is the key's access counter under an LFU policy (OBJECT FREQ),
	// decayed to now; LFU says whether it is one.
	Freq uint8
	LFU  bool
	// Bytes is what the key is charged against the memory budget.
	Bytes int64
	// SharedInt: a string holding a small integer, which Redis shares
	// (OBJECT REFCOUNT answers INT_MAX for it).
	SharedInt bool
}

// Redis 7.0's built-in encoding thresholds, what redis-server answers
// without a configuration file (hash-max-listpack-entries 512 and -value
// 64, zset-max-listpack-entries 128 and -value 64, set-max-intset-entries
// 512; the sample redis.conf lowers the hash one to 128).
const (
	hashListpackMaxEntries = 512
	zsetListpackMaxEntries = 128
	listpackMaxValue       = 64
	intsetMaxEntries       = 512
	embstrMaxLen           = 44
)

// encodingOf is the encoding Redis would use for the record's content. A
// hash remembers passing a threshold (hashColl.big), as Redis's conversion
// is for good; the other kinds are decided from the content now, so a set
// or sorted set that grew past a threshold and shrank again may report the
// small encoding where Redis keeps the big one.
func encodingOf(r *Record) (enc string, sharedInt bool) {
	switch r.Kind {
	case KindString:
		if r.ValueLen() <= 20 {
			if n, ok := redisInt(r.Value()); ok {
				return "int", n >= 0 && n < 10000
			}
		}
		if r.ValueLen() <= embstrMaxLen {
			return "embstr", false
		}
		return "raw", false
	case KindHash:
		if r.coll().(*hashColl).big { // it passed a threshold: converted for good, as in Redis
			return "hashtable", false
		}
		return "listpack", false
	case KindList:
		return "quicklist", false
	case KindSet:
		s := r.coll().(*setColl)
		if s.count() > intsetMaxEntries {
			return "hashtable", false
		}
		for m := range s.members.all {
			if _, ok := redisInt([]byte(m)); !ok {
				return "hashtable", false
			}
		}
		return "intset", false
	case KindZSet:
		z := r.coll().(*zsetColl)
		if z.count() > zsetListpackMaxEntries {
			return "skiplist", false
		}
		for n := range z.members {
			if len(n.member) > listpackMaxValue {
				return "skiplist", false
			}
		}
		return "listpack", false
	case KindStream:
		return "stream", false
	}
	return "unknown", false
}

func (g *Segment) inspectLocked(key string, now int64) (KeyInfo, kv.Status) {
	if !g.owned {
		return KeyInfo{}, kv.StatusMoved
	}
	r := g.liveLocked(key, now)
	if r == nil {
		return KeyInfo{}, kv.StatusNotFound
	}
	enc, shared := encodingOf(r)
	info := KeyInfo{Kind: r.Kind, Encoding: enc, Bytes: r.accountedBytes(), SharedInt: shared}
	if g.store.evictionPolicy().LFU() {
		info.Freq, info.LFU = g.store.lfuCounter(r, now), true
	} else {
		// The wrapping difference, as the evictor takes it: RESTORE …
		// IDLETIME may set a stamp from before the node started.
		info.IdleMillis = max(int64(int32(g.store.stamp(now)-atomic.LoadUint32(&r.access))), 0)
	}
	return info, kv.StatusSuccess
}

// Inspect describes key without counting as an access (OBJECT IDLETIME
// must not reset what it measures).
func (g *Segment) Inspect(key string) (KeyInfo, kv.Status) {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.inspectLocked(key, now)
}

// Inspect is Segment.Inspect through the locked view.
func (a *Atomic) Inspect(key string) (KeyInfo, kv.Status) {
	g := a.segFor(key)
	if g == nil {
		return KeyInfo{}, kv.StatusBadRequest
	}
	return g.inspectLocked(key, a.now)
}

// CarryAccess gives the key to the access state of from — its recency, or
// its counter under LFU — as Redis's RENAME moves the object with both.
func (a *Atomic) CarryAccess(from, to string) {
	gf, gt := a.segFor(from), a.segFor(to)
	if gf == nil || gt == nil {
		return
	}
	f, t := gf.liveLocked(from, a.now), gt.liveLocked(to, a.now)
	if f == nil || t == nil {
		return
	}
	atomic.StoreUint32(&t.access, atomic.LoadUint32(&f.access))
}

// CarryAccess is Atomic.CarryAccess for two keys of this segment.
func (g *Segment) CarryAccess(from, to string) {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	f, t := g.liveLocked(from, now), g.liveLocked(to, now)
	if f != nil && t != nil {
		atomic.StoreUint32(&t.access, atomic.LoadUint32(&f.access))
	}
}

// Copy copies the value at src, with its TTL, to dst (COPY): false when
// src is missing, or dst exists and replace is off. The destination is a
// new record logged whole (an OpPut carrying the value or the
// collection's encoding), so replicas install the same copy.
func (a *Atomic) Copy(src, dst string, replace bool) (bool, kv.Result) {
	gs, gd := a.segFor(src), a.segFor(dst)
	if gs == nil || gd == nil || gd.store.checkKey(dst) != kv.StatusSuccess {
		return false, crossSegment
	}
	if !gs.owned {
		return false, status(kv.StatusMoved)
	}
	if st := gd.writableLocked(); st != kv.StatusSuccess {
		return false, status(st)
	}
	from := gs.liveLocked(src, a.now)
	if from == nil {
		return false, kv.Result{}
	}
	gs.store.touch(from, a.now) // COPY reads its source, as in Redis
	old := gd.liveLocked(dst, a.now)
	if old != nil && !replace {
		return false, kv.Result{}
	}
	if len(gd.txLocks) > 0 && gd.txLockedLocked(dst, "", a.now) {
		return false, status(kv.StatusConflict)
	}
	rec := newStringRecord(dst, from.Value(), from.ExpiresAt())
	rec.Kind, rec.access = from.Kind, gd.store.freshAccess(a.now)
	rec.SetVersion(1)
	var dup collection
	if c := from.coll(); c != nil {
		var err error
		if dup, err = decodeCollection(from.Kind, c.encode()); err != nil {
			return false, status(kv.StatusInternal)
		}
		if s, ok := c.(*streamColl); ok {
			dup.(*streamColl).keepSeenTimes(s)
		}
	}
	v := rec.Value()
	if dup != nil {
		v = nil // a collection record has no value
	}
	rec.setParts(rec.Key(), v, rec.joined(), dup, from.Meta())
	if old != nil {
		rec.SetVersion(old.Version() + 1)
	}
	res := gd.installWholeLocked(rec, kv.CmdCopy)
	return res.Status == kv.StatusSuccess, res
}

// installWholeLocked puts a record built whole (COPY's, RESTORE's) in
// place of whatever its key holds, after the per-key caps and the memory
// cap: an OpPut carrying the value or the collection's encoding, so
// replicas install the same. origin names the command for the keyspace
// events when the put's own name ("set") is not it.
func (g *Segment) installWholeLocked(rec *Record, origin kv.CmdOp) kv.Result {
	if !g.store.recordFits(rec) {
		return kv.Result{Status: kv.StatusItemTooLarge}
	}
	grow := rec.accountedBytes()
	if prev := g.items.get(rec.Key()); prev != nil {
		grow -= prev.accountedBytes()
	}
	if g.store.storeFull(g, grow) {
		return status(kv.StatusCapacityExceeded)
	}
	g.store.faultLocked(rec.Key())
	g.revision++
	rec.Revision = g.revision
	g.origin = origin
	access := rec.access
	g.commitLocked(OpPut, rec)
	// A whole install (COPY, RESTORE) is a new key, as in Redis, not one
	// more access to the key it replaces: it keeps the access it was given.
	atomic.StoreUint32(&rec.access, access)
	g.origin = 0
	return kv.Result{Version: rec.Version(), Revision: rec.Revision}
}

// ListFits reports whether a new list of elems passes the per-key caps (the
// rule an RPUSH that builds it would meet): SORT … STORE checks it before
// it replaces the destination, so a refused store changes nothing.
func (s *Store) ListFits(elems [][]byte) bool {
	return keyFits(keySize{}, listPushGrowth(elems), s.keyLimits()) == capNone
}
