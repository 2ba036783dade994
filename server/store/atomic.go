package store

import (
	"slices"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Atomic is a view of one or more segments under their write locks: every
// operation made through it runs with no other operation of those segments
// in between. Keys that share a hash tag always share a segment, which is
// what makes Redis's MULTI/EXEC (one slot per transaction in a cluster)
// atomic with one lock; a command or transaction over keys of several
// segments of this node locks them all (AtomicallyMany).
//
// An Atomic is valid only inside the function given to Segment.Atomically
// or Store.AtomicallyMany.
type Atomic struct {
	g    *Segment   // the first (or only) locked segment
	many []*Segment // every locked segment, ascending; nil for one
	now  int64
	// noTouch: reads and in-place writes through the view leave the keys'
	// access stamps as they were (SetNoTouch).
	noTouch bool
	// admitted: the view's writes belong to a command admitted under the
	// memory cap before it ran (Admit).
	admitted bool
	// warmed keeps what Prefetch read, so that its loads are used.
	warmed uint
	// room holds many for up to atomicRoom segments.
	room [atomicRoom]*Segment
}

// Admit marks the view's writes as those of a command the front end
// admitted under the memory cap before it ran (Redis's denyoom rule, D108):
// a store without eviction does not refuse them for crossing the cap
// midway, so an MSET of several keys, or a transaction, is applied whole as
// Redis applies it, not up to the key that crossed. It lasts as long as the
// view.
func (a *Atomic) Admit() { a.admitted = true }

// Prefetch reads ahead what a multi-key command is about to look up one key
// after another (MSET, MGET): WarmAhead's reads — each key's index slot on
// its probe, the record there with both ends of its key, the op-log slot
// its segment's write fills next — for keys[0], keys[step], …, WarmBatch at
// a time. The loads of different keys do not depend on one another, so the
// CPU has them in flight together, and the command's own lookups then find
// them in cache instead of waiting for each key's misses in turn (issue
// #17). Keys of segments the view does not hold are read ahead as well:
// harmless, the reads trust nothing.
func (a *Atomic) Prefetch(keys [][]byte, step int) {
	for i := 0; i < len(keys); i += WarmBatch * step {
		a.warmed += a.g.store.warm(keys[i:], step, nil, nil)
	}
}

// SetNoTouch sets whether reads and in-place writes through the view leave
// the keys' access stamps as they were: the view of a CLIENT NO-TOUCH
// client (Redis 7.2), which TOUCH alone stamps.
func (a *Atomic) SetNoTouch(on bool) { a.noTouch = on }

// Atomically runs fn with the segment's write lock held. fn must not call
// the Segment's own methods (the lock is not reentrant) and should be short:
// every other operation on the segment waits for it.
func (g *Segment) Atomically(fn func(a *Atomic)) {
	now := g.store.writeNow()
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(&Atomic{g: g, now: now})
}

// AtomicallyMany runs fn with the write locks of the segments ids held,
// taken in ascending segment order — the store's lock order (transactions
// take theirs so too), so two such calls never deadlock. Through the view,
// a key of any of those segments can be read and written; a key of another
// segment is refused. The same rules as Atomically apply to fn. ids must
// not be empty.
func (s *Store) AtomicallyMany(ids []uint16, fn func(a *Atomic)) {
	s.AtomicallyManyIn(new(Atomic), ids, fn)
}

// AtomicallyManyIn is AtomicallyMany with the view in a's memory, which
// the caller keeps for its next command (a connection: the view was the
// one allocation of an MSET besides its records). a is overwritten, and
// must not be in use by an AtomicallyManyIn still running.
func (s *Store) AtomicallyManyIn(a *Atomic, ids []uint16, fn func(a *Atomic)) {
	// No allocation for a command of a few segments (an MGET, an MSET):
	// the ids sorted on the stack, the segments in the view's own room, and
	// one deferred unlock of them all (a defer per lock in the loop was a
	// heap-allocated defer record each).
	sorted := ids
	if !strictlyAscending(ids) { // a planned command's segments come sorted and distinct
		var idBuf [atomicRoom]uint16
		sorted = append(idBuf[:0], ids...)
		slices.Sort(sorted)
		sorted = slices.Compact(sorted)
	}
	*a = Atomic{now: s.writeNow()}
	segs := a.room[:0]
	if len(sorted) > len(a.room) {
		segs = make([]*Segment, 0, len(sorted))
	}
	for _, id := range sorted {
		segs = append(segs, s.segments[id])
	}
	locked := 0
	defer func() {
		for _, g := range segs[:locked] {
			g.mu.Unlock()
		}
	}()
	for _, g := range segs {
		g.mu.Lock()
		locked++
	}
	a.g = segs[0]
	if len(segs) > 1 {
		a.many = segs
	}
	fn(a)
}

// atomicRoom is how many segments an Atomic view holds without another
// allocation: MSET and MGET of redis-benchmark name ten keys.
const atomicRoom = 16

func strictlyAscending(ids []uint16) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

// Fenced reports whether a segment the view holds is under a live
// migration's write fence: a multi-key write must then be refused whole
// (retry), never applied to the keys of the other segments only.
func (a *Atomic) Fenced() bool {
	if a.g.fenced {
		return true
	}
	for _, g := range a.many {
		if g.fenced {
			return true
		}
	}
	return false
}

// Segment is the (first) segment the view holds.
func (a *Atomic) Segment() *Segment { return a.g }

// segFor returns the locked segment of key, or nil when key's segment is
// not held by this view.
func (a *Atomic) segFor(key string) *Segment {
	g := a.g.store.SegmentFor(key)
	if g == a.g {
		return g
	}
	for _, m := range a.many {
		if m == g {
			return g
		}
	}
	return nil
}

// Holds reports whether the view holds key's segment.
func (a *Atomic) Holds(key string) bool { return a.segFor(key) != nil }

// Serves reports whether the view holds key's segment and this node owns
// it: the ownership read under the lock the view holds (Segment.Owned
// would wait for that lock — forever, from the view's own goroutine).
func (a *Atomic) Serves(key string) bool {
	g := a.segFor(key)
	return g != nil && g.owned
}

var crossSegment = kv.Result{Status: kv.StatusBadRequest}

// Get reads key.
func (a *Atomic) Get(key string) kv.Result {
	g := a.segFor(key)
	if g == nil {
		return crossSegment
	}
	return g.getLocked(key, a.now, a.noTouch)
}

// GetValue is Get's value alone (Segment.GetValue).
func (a *Atomic) GetValue(key string) ([]byte, kv.Status) {
	g := a.segFor(key)
	if g == nil {
		return nil, crossSegment.Status
	}
	return g.getValueLocked(key, a.now, a.noTouch)
}

// Put writes key (copied, as Segment.Put).
func (a *Atomic) Put(key string, value []byte, opts *kv.PutOptions) kv.Result {
	g := a.segFor(key)
	if g == nil {
		return crossSegment
	}
	o := putOptionsOrNone(opts)
	rec, _, st, detail := g.preparePut(key, value, o)
	if rec == nil {
		return refused(st, detail)
	}
	return g.putLocked(rec, o, a.now, a.admitted)
}

// PutStatus is Put reporting only the outcome (Segment.PutStatus).
func (a *Atomic) PutStatus(key string, value []byte, opts *kv.PutOptions) kv.Status {
	g := a.segFor(key)
	if g == nil {
		return crossSegment.Status
	}
	o := putOptionsOrNone(opts)
	rec, _, st, _ := g.preparePut(key, value, o)
	if rec == nil {
		return st
	}
	_, st, _ = g.acceptPutLocked(rec, o, a.now, a.admitted)
	return st
}

// PutNamed is PutStatus for a command Redis's keyspace notification names
// after itself (PFMERGE's destination: "pfadd"): the put's event carries
// origin.
func (a *Atomic) PutNamed(key string, value []byte, opts *kv.PutOptions, origin kv.CmdOp) kv.Status {
	g := a.segFor(key)
	if g == nil {
		return crossSegment.Status
	}
	prev := g.origin
	g.origin = origin
	defer func() { g.origin = prev }()
	return a.PutStatus(key, value, opts)
}

// Delete removes key.
func (a *Atomic) Delete(key string) kv.Result {
	g := a.segFor(key)
	if g == nil || g.store.checkKey(key) != kv.StatusSuccess {
		return crossSegment
	}
	return g.removeLocked(key, OpDelete, 0, a.now)
}

// Expire sets a positive TTL on an existing key.
func (a *Atomic) Expire(key string, ttl time.Duration) kv.Result {
	g := a.segFor(key)
	if g == nil || ttl <= 0 || g.store.checkKey(key) != kv.StatusSuccess {
		return crossSegment
	}
	return g.retimeLocked(key, OpExpire, ttl, a.now)
}

// Persist removes the TTL of an existing key.
func (a *Atomic) Persist(key string) kv.Result {
	g := a.segFor(key)
	if g == nil || g.store.checkKey(key) != kv.StatusSuccess {
		return crossSegment
	}
	return g.retimeLocked(key, OpPersist, 0, a.now)
}

// TimeToLive reports the remaining TTL.
func (a *Atomic) TimeToLive(key string) kv.Result {
	g := a.segFor(key)
	if g == nil {
		return crossSegment
	}
	return g.ttlLocked(key, a.now)
}

// Exec runs a data-structure command on a key of a locked segment.
func (a *Atomic) Exec(cmd kv.Cmd) kv.Reply {
	g := a.segFor(cmd.Key)
	if g == nil {
		return kv.BadRequest("CROSSSLOT: key not in this transaction's segment")
	}
	if cmd.Op.NodeLevel() {
		return kv.BadRequest("node-level command inside an atomic block")
	}
	h, bad := lookupHandler(g.store, &cmd)
	if h == nil {
		return kv.BadRequest(bad)
	}
	return g.execLocked(h, &cmd, a.now, a, a.noTouch)
}

// Version reports the current version of key (0 when absent): WATCH compares
// it at EXEC time.
func (a *Atomic) Version(key string) (version, revision uint64) {
	g := a.segFor(key)
	if g == nil {
		return 0, 0
	}
	r := g.liveLocked(key, a.now)
	if r == nil {
		return 0, 0
	}
	return r.Version(), r.Revision
}
