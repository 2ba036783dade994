package store

import (
	"bytes"
	"math"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Locks and leases (R-DS-5). A lock is a plain string key whose value is the
// holder's token, with a TTL: it auto-expires when its holder stops renewing
// it (a crashed holder never blocks the lock for good). Only the holder — the
// caller presenting the stored token — may renew or release it.
//
// A lease is not a correctness fence: a holder paused past its TTL (GC,
// a slow syscall, a partition) may still act after another holder acquired
// the lock, and a lock key can be evicted under memory pressure like any
// key. Invariants that must never break are enforced on the data itself,
// with a version check (PutOptions.IfMatchVersion) or a transaction.
//
// Unlike the other string commands, which keep the key's TTL (replaceValue),
// a lock command sets one: the handlers commit their record themselves
// through commitLocked, the one apply path, and point x.rec at it so that the
// dispatcher reports its Version and Revision. The op-log therefore carries
// a lock as ordinary records — an OpPut (token and absolute expiry) on
// acquire, an OpExpire on renew, an OpDelete on release — which replicas
// install whole; lock commands are never logged as effects.

// errLockReplay: lock commands replicate as records, so an effect naming one
// means the log was not produced by this engine.
var errLockReplay = kv.BadRequest("lock commands replicate as records, not effects")

// leaseArgs parses "token, ttl-ms" (withTTL) or "token".
func leaseArgs(x *execCtx, withTTL bool) (token []byte, ttl int64, bad kv.Reply, ok bool) {
	n := 1
	if withTTL {
		n = 2
	}
	if !arity(x, n, n) {
		return nil, 0, arityError(x), false
	}
	token = x.cmd.Args[0]
	if len(token) == 0 {
		return nil, 0, kv.BadRequest("lock token must not be empty"), false
	}
	if len(token) > x.seg.store.cfg.MaxItemBytes {
		return nil, 0, kv.StatusReply(kv.StatusItemTooLarge), false
	}
	if !withTTL {
		return token, 0, kv.Reply{}, true
	}
	ms, isInt := argInt(x.cmd.Args[1])
	if !isInt || ms <= 0 {
		return nil, 0, kv.BadRequest("lock ttl must be a positive number of milliseconds"), false
	}
	if ms > (math.MaxInt64-x.now)/int64(time.Millisecond) {
		return nil, 0, kv.BadRequest("lock ttl is out of range"), false
	}
	return token, ms * int64(time.Millisecond), kv.Reply{}, true
}

// holds reports whether the live record under the key is held with token.
func (x *execCtx) holds(token []byte) bool {
	return x.rec != nil && bytes.Equal(x.rec.Value(), token)
}

// installLeaseLocked writes token under the (absent) key with an expiry ttl
// from now: a new record, version 1, logged as an OpPut.
func (x *execCtx) installLeaseLocked(token []byte, ttl int64) kv.Reply {
	g, s := x.seg, x.seg.store
	// The key may alias a network buffer and the value is the caller's
	// argument: both copied, the store keeps them.
	rec := newStringRecord(x.cmd.Key, token, x.now+ttl)
	rec.SetVersion(1)
	rec.access = s.freshAccess(x.now)
	if s.evictionPolicy() == NoEviction && g.owned {
		delta := rec.accountedBytes()
		if prev := g.items.get(rec.Key()); prev != nil { // expired but not yet swept
			delta -= prev.accountedBytes()
		}
		if delta > 0 && s.owned.Load()+delta > s.maxMemory() {
			return kv.StatusReply(kv.StatusCapacityExceeded)
		}
	}
	g.revision++
	rec.Revision = g.revision
	g.commitLocked(OpPut, rec)
	x.rec = rec
	return kv.IntReply(1)
}

// extendLeaseLocked moves the expiry of the held record to ttl from now,
// keeping its value and Version (like Expire): an OpExpire.
func (x *execCtx) extendLeaseLocked(ttl int64) kv.Reply {
	g := x.seg
	rec := x.rec.cloneExpiring(x.now + ttl)
	g.revision++
	rec.Revision = g.revision
	g.commitLocked(OpExpire, rec)
	x.rec = rec
	return kv.IntReply(1)
}

func init() {
	// LOCK.ACQUIRE key token ttl-ms → 1 acquired, 0 held by another token.
	// The same token acquiring again renews: a client retrying an Acquire
	// whose reply was lost must not lock itself out until the TTL passes.
	register(kv.CmdLockAcquire, handler{kind: KindString, write: true, stamps: true, run: func(x *execCtx) kv.Reply {
		if x.apply {
			return errLockReplay
		}
		token, ttl, bad, ok := leaseArgs(x, true)
		switch {
		case !ok:
			return bad
		case x.rec == nil:
			return x.installLeaseLocked(token, ttl)
		case x.holds(token):
			return x.extendLeaseLocked(ttl)
		}
		return kv.IntReply(0)
	}})
	// LOCK.RENEW key token ttl-ms → 1 renewed, 0 not the holder (the lock
	// expired, or another token holds it). A renewal never creates the lock.
	register(kv.CmdLockRenew, handler{kind: KindString, write: true, stamps: true, run: func(x *execCtx) kv.Reply {
		if x.apply {
			return errLockReplay
		}
		token, ttl, bad, ok := leaseArgs(x, true)
		switch {
		case !ok:
			return bad
		case x.holds(token):
			return x.extendLeaseLocked(ttl)
		}
		return kv.IntReply(0)
	}})
	// LOCK.RELEASE key token → 1 released, 0 not the holder; a refused
	// release changes nothing.
	register(kv.CmdLockRelease, handler{kind: KindString, write: true, stamps: true, run: func(x *execCtx) kv.Reply {
		if x.apply {
			return errLockReplay
		}
		token, _, bad, ok := leaseArgs(x, false)
		switch {
		case !ok:
			return bad
		case x.holds(token):
			x.delete = true // the dispatcher tombstones the record
			return kv.IntReply(1)
		}
		return kv.IntReply(0)
	}})
}
