package store

import (
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Atomic is a view of one segment under its write lock: every operation made
// through it runs with no other operation of the segment in between. Keys
// that share a hash tag always share a segment, which is what makes Redis's
// MULTI/EXEC (one slot per transaction in a cluster) atomic here.
//
// An Atomic is valid only inside the function given to Segment.Atomically.
type Atomic struct {
	g   *Segment
	now int64
}

// Atomically runs fn with the segment's write lock held. fn must not call
// the Segment's own methods (the lock is not reentrant) and should be short:
// every other operation on the segment waits for it.
func (g *Segment) Atomically(fn func(a *Atomic)) {
	now := g.store.writeNow()
	g.mu.Lock()
	defer g.mu.Unlock()
	fn(&Atomic{g: g, now: now})
}

// Segment is the segment the view holds.
func (a *Atomic) Segment() *Segment { return a.g }

func (a *Atomic) owns(key string) bool { return a.g.store.SegmentFor(key) == a.g }

var crossSegment = kv.Result{Status: kv.StatusBadRequest}

// Get reads key.
func (a *Atomic) Get(key string) kv.Result {
	if !a.owns(key) {
		return crossSegment
	}
	return a.g.getLocked(key, a.now)
}

// Put writes key (the store keeps value).
func (a *Atomic) Put(key string, value []byte, opts *kv.PutOptions) kv.Result {
	if !a.owns(key) {
		return crossSegment
	}
	rec, o, _, res := a.g.preparePut(key, value, opts)
	if rec == nil {
		return res
	}
	return a.g.putLocked(rec, o, a.now)
}

// Delete removes key.
func (a *Atomic) Delete(key string) kv.Result {
	if !a.owns(key) || a.g.store.checkKey(key) != kv.StatusSuccess {
		return crossSegment
	}
	return a.g.removeLocked(key, OpDelete, 0, a.now)
}

// Expire sets a positive TTL on an existing key.
func (a *Atomic) Expire(key string, ttl time.Duration) kv.Result {
	if !a.owns(key) || ttl <= 0 || a.g.store.checkKey(key) != kv.StatusSuccess {
		return crossSegment
	}
	return a.g.retimeLocked(key, OpExpire, ttl, a.now)
}

// Persist removes the TTL of an existing key.
func (a *Atomic) Persist(key string) kv.Result {
	if !a.owns(key) || a.g.store.checkKey(key) != kv.StatusSuccess {
		return crossSegment
	}
	return a.g.retimeLocked(key, OpPersist, 0, a.now)
}

// TimeToLive reports the remaining TTL.
func (a *Atomic) TimeToLive(key string) kv.Result {
	if !a.owns(key) {
		return crossSegment
	}
	return a.g.ttlLocked(key, a.now)
}

// Exec runs a data-structure command on a key of this segment.
func (a *Atomic) Exec(cmd kv.Cmd) kv.Reply {
	if !a.owns(cmd.Key) {
		return kv.BadRequest("CROSSSLOT: key not in this transaction's segment")
	}
	if cmd.Op.NodeLevel() {
		return kv.BadRequest("node-level command inside an atomic block")
	}
	h, bad := lookupHandler(a.g.store, &cmd)
	if h == nil {
		return bad
	}
	return a.g.execLocked(h, &cmd, a.now)
}

// Version reports the current version of key (0 when absent): WATCH compares
// it at EXEC time.
func (a *Atomic) Version(key string) (version, revision uint64) {
	r := a.g.liveLocked(key, a.now)
	if r == nil {
		return 0, 0
	}
	return r.Version, r.Revision
}
