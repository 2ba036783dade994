package store

import (
	"math"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/rdb"
)

// Dump reads key's value for DUMP: false when the key is missing. A hash
// gives its fields in the order it answers HGETALL, a list its elements
// in order, a sorted set its members by score, a stream its entries, its
// groups and their pending entries.
func (a *Atomic) Dump(key string) (rdb.Value, bool, kv.Result) {
	g := a.segFor(key)
	if g == nil {
		return rdb.Value{}, false, crossSegment
	}
	if !g.owned {
		return rdb.Value{}, false, status(kv.StatusMoved)
	}
	r := g.liveLocked(key, a.now)
	if r == nil {
		return rdb.Value{}, false, kv.Result{}
	}
	g.store.touch(r, a.now) // a read, as Redis's DUMP is
	switch c := r.coll().(type) {
	case nil:
		return rdb.Value{Kind: rdb.String, Str: r.Value()}, true, kv.Result{}
	case *hashColl:
		pairs := make([][]byte, 0, 2*c.count())
		for f, v := range c.all {
			pairs = append(pairs, []byte(f), v)
		}
		return rdb.Value{Kind: rdb.Hash, Pairs: pairs}, true, kv.Result{}
	case *listColl:
		return rdb.Value{Kind: rdb.List, Elems: c.items(0, c.n)}, true, kv.Result{}
	case *setColl:
		elems := make([][]byte, 0, c.count())
		for m := range c.members.all {
			elems = append(elems, []byte(m))
		}
		return rdb.Value{Kind: rdb.Set, Elems: elems}, true, kv.Result{}
	case *zsetColl:
		members := make([]rdb.ZMember, 0, c.count())
		for n := range c.members {
			members = append(members, rdb.ZMember{Member: []byte(n.member), Score: n.score})
		}
		return rdb.Value{Kind: rdb.ZSet, Members: members}, true, kv.Result{}
	case *streamColl:
		return rdb.Value{Kind: rdb.Stream, Stream: dumpStream(c)}, true, kv.Result{}
	}
	return rdb.Value{}, false, status(kv.StatusInternal)
}

// RestoreOptions are RESTORE's options.
type RestoreOptions struct {
	TTLMillis  int64 // 0: no expiry; else milliseconds from now, or a Unix millisecond with AbsTTL
	AbsTTL     bool
	Replace    bool  // an existing key is replaced (else the restore is refused: busy)
	IdleMillis int64 // the recency the key starts with (IDLETIME), 0: just used
	// Freq is the access counter the key starts with under an LFU policy
	// (FREQ, 0..255) when HasFreq.
	Freq    uint8
	HasFreq bool
}

// restoredAccess is a restored key's access field: IDLETIME applies under a
// recency policy, FREQ under a frequency one (Redis's objectSetLRUOrLFU),
// otherwise the key is as new.
func (s *Store) restoredAccess(o RestoreOptions, now int64) uint32 {
	if s.evictionPolicy().LFU() {
		if o.HasFreq {
			return lfuPack(s.lfuMinute(now), o.Freq)
		}
		return s.freshAccess(now)
	}
	return s.stamp(now) - idleStamp(o.IdleMillis)
}

// Restore installs v at key (RESTORE): busy when the key exists and
// Replace is off. A TTL already past restores nothing — it deletes the key
// being replaced — as Redis does. The new record is installed whole
// (installWholeLocked), notified as a "restore".
func (a *Atomic) Restore(key string, v rdb.Value, o RestoreOptions) (busy bool, res kv.Result) {
	g := a.segFor(key)
	if g == nil || g.store.checkKey(key) != kv.StatusSuccess {
		return false, crossSegment
	}
	if st := g.writableLocked(); st != kv.StatusSuccess {
		return false, status(st)
	}
	old := g.liveLocked(key, a.now)
	if old != nil && !o.Replace {
		return true, kv.Result{}
	}
	if len(g.txLocks) > 0 && g.txLockedLocked(key, "", a.now) {
		return false, status(kv.StatusConflict)
	}
	var exp int64
	if o.TTLMillis != 0 {
		ms := o.TTLMillis
		if !o.AbsTTL {
			ms = addMillisSaturating(msOf(a.now), ms)
		}
		if exp = nsOfMs(ms); exp <= a.now {
			if old != nil {
				return false, g.removeLocked(key, OpDelete, 0, a.now)
			}
			return false, kv.Result{}
		}
	}
	coll, kind, err := restoredCollection(v)
	if err != nil {
		return false, kv.Result{Status: kv.StatusBadRequest, Detail: rdb.ErrFormat.Error()}
	}
	var value []byte
	if coll == nil {
		value = v.Str
	}
	rec := newStringRecord(key, value, exp)
	rec.Kind, rec.access = kind, g.store.restoredAccess(o, a.now)
	rec.SetVersion(1)
	if old != nil {
		rec.SetVersion(old.Version() + 1)
	}
	if coll != nil {
		rec.setParts(rec.Key(), nil, rec.joined(), coll, nil)
	}
	return false, g.installWholeLocked(rec, kv.CmdRestore)
}

// restoredCollection builds the collection of a decoded value (nil for a
// string). A payload naming a member twice keeps the last one, as the
// commands that build the kind would.
func restoredCollection(v rdb.Value) (collection, ValueKind, error) {
	switch v.Kind {
	case rdb.Hash:
		h := newHash()
		for i := 0; i+1 < len(v.Pairs); i += 2 {
			h.set(v.Pairs[i], v.Pairs[i+1])
		}
		h.t.settle()
		return h, KindHash, nil
	case rdb.List:
		l := newList()
		l.rebuild(v.Elems)
		return l, KindList, nil
	case rdb.Set:
		s := newSet()
		for _, m := range v.Elems {
			s.addBytes(m)
		}
		s.t.settle()
		return s, KindSet, nil
	case rdb.ZSet:
		z := newZSet()
		for _, m := range v.Members {
			z.set(string(m.Member), m.Score)
		}
		z.nodes.settle()
		return z, KindZSet, nil
	case rdb.Stream:
		if v.Stream == nil {
			return nil, KindStream, rdb.ErrFormat
		}
		s, err := restoreStream(v.Stream)
		return s, KindStream, err
	}
	return nil, KindString, nil
}

// maxIdleMillis bounds IDLETIME (about 12 days): a quarter of the recency
// stamp's range, so that the wrapping difference the evictor and OBJECT
// IDLETIME take stays positive for as long again as the key sits idle.
const maxIdleMillis = 1 << 30

// idleStamp is IDLETIME in the recency stamp's unit.
func idleStamp(ms int64) uint32 {
	return uint32(min(max(ms, 0), maxIdleMillis))
}

func addMillisSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
