package store

import (
	"math"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Redis 7.0's expiry commands (EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with
// NX/XX/GT/LT; PTTL, PEXPIRETIME) as store commands, so that every front
// end — RESP, the native protocol's commands, the SDK — shares one
// implementation. Redis keeps an expiry as absolute Unix milliseconds and
// compares those; so does this code: a relative time is converted once,
// with the store's own clock, the current expiry is read in milliseconds,
// and the comparison and the write happen under the segment's write lock.
// A record keeps its expiry in nanoseconds (R-MEM: one clock for TTLs); an
// expiry set here is a whole millisecond, and one set with a finer TTL
// (SET … PX, the native Expire) is read as the millisecond it falls in.

// expireCond is the set of conditions of a conditional expiry (Redis 7's
// NX, XX, GT, LT flags; XX may come with GT or LT).
type expireCond uint8

const (
	expireNX expireCond = 1 << iota // only when the key has no expiry
	expireXX                        // only when it has one
	expireGT                        // only when the new instant is later (none counts as infinite: never)
	expireLT                        // only when it is earlier (none counts as infinite: always)
)

// expireCommand is one of the EXPIRE family: its unit and base.
type expireCommand struct {
	name     string // Redis's name, for the error text
	msPerArg int64  // 1000 for seconds, 1 for milliseconds
	absolute bool   // a Unix time rather than a time from now
}

// expireOutcome is what a conditional expiry did.
type expireOutcome uint8

const (
	expireNoKey   expireOutcome = iota // the key does not exist
	expireSkipped                      // a condition is false: nothing changed
	expireSet                          // the expiry is the new instant
	expireDeleted                      // the instant is not in the future: the key was deleted
)

// errInvalidExpire is Redis's overflow error for the command name.
func errInvalidExpire(name string) kv.Reply {
	return kv.BadRequest("invalid expire time in '" + name + "' command")
}

// parseExpireOptions reads the options after the time as Redis's
// parseExtendedExpireArgumentsOrReply does: every word first (an unknown
// one is named, cut at a NUL byte as Redis's %s prints it), then the
// incompatible pairs.
func parseExpireOptions(args [][]byte) (expireCond, kv.Reply) {
	var cond expireCond
	for _, a := range args {
		switch {
		case kv.IsOption(a, "NX"):
			cond |= expireNX
		case kv.IsOption(a, "XX"):
			cond |= expireXX
		case kv.IsOption(a, "GT"):
			cond |= expireGT
		case kv.IsOption(a, "LT"):
			cond |= expireLT
		default:
			opt := string(a)
			if i := strings.IndexByte(opt, 0); i >= 0 {
				opt = opt[:i]
			}
			return 0, kv.BadRequest("Unsupported option " + opt)
		}
	}
	switch {
	case cond&expireNX != 0 && cond&(expireXX|expireGT|expireLT) != 0:
		return 0, kv.BadRequest("NX and XX, GT or LT options at the same time are not compatible")
	case cond&expireGT != 0 && cond&expireLT != 0:
		return 0, kv.BadRequest("GT and LT options at the same time are not compatible")
	}
	return cond, kv.Reply{}
}

// instantMs resolves the command's time argument to an absolute Unix
// millisecond as Redis's expireGenericCommand does: the unit conversion and
// the base addition must both stay within int64 milliseconds. nowMs is the
// store's clock in milliseconds.
func (c expireCommand) instantMs(arg []byte, nowMs int64) (int64, kv.Reply) {
	n, ok := argInt(arg)
	if !ok {
		return 0, errNotInteger
	}
	if c.msPerArg != 1 {
		if n > math.MaxInt64/c.msPerArg || n < math.MinInt64/c.msPerArg {
			return 0, errInvalidExpire(c.name)
		}
		n *= c.msPerArg
	}
	if !c.absolute {
		if n > math.MaxInt64-nowMs {
			return 0, errInvalidExpire(c.name)
		}
		n += nowMs
	}
	return n, kv.Reply{}
}

// msOf is the Unix millisecond an instant in nanoseconds falls in.
func msOf(ns int64) int64 {
	const perMs = int64(time.Millisecond)
	ms := ns / perMs
	if ns%perMs < 0 {
		ms--
	}
	return ms
}

// nsOfMs is the record's expiry for an instant in milliseconds: beyond
// what int64 nanoseconds hold (2262-04-11) it is kept at that last instant.
func nsOfMs(ms int64) int64 {
	if ms > math.MaxInt64/int64(time.Millisecond) {
		return math.MaxInt64
	}
	return ms * int64(time.Millisecond)
}

// currentExpiryMs is the record's expiry in Unix milliseconds, -1 when it
// has none (Redis's getExpire).
func currentExpiryMs(r *Record) int64 {
	if r.ExpiresAt() == 0 {
		return -1
	}
	return msOf(r.ExpiresAt())
}

// holds reports whether every condition allows a new expiry at whenMs
// over the current one (curMs -1: none), checked as Redis checks them: no
// expiry counts as an infinite one, so GT never holds on it and LT always.
func (cond expireCond) holds(whenMs, curMs int64) bool {
	switch {
	case cond&expireNX != 0 && curMs != -1,
		cond&expireXX != 0 && curMs == -1,
		cond&expireGT != 0 && (curMs == -1 || whenMs <= curMs),
		cond&expireLT != 0 && curMs != -1 && whenMs >= curMs:
		return false
	}
	return true
}

// expireLocked sets the expiry of the live record x.rec to whenMs (Unix
// ms) if cond holds, or deletes the key when whenMs is not after now, as
// Redis's expireGenericCommand (a deletion is an OpDelete, notified "del";
// a new expiry an OpExpire carrying the absolute instant, which replicas
// install as it is). The caller holds the write lock.
func (x *execCtx) expireLocked(whenMs int64, cond expireCond) expireOutcome {
	if x.rec == nil {
		return expireNoKey
	}
	// Beyond what the record holds (2262-04-11) every instant is kept as
	// that last one: compared as it too, so giving the same one twice is
	// neither later nor earlier there either.
	if !cond.holds(min(whenMs, msOf(math.MaxInt64)), currentExpiryMs(x.rec)) {
		return expireSkipped
	}
	if whenMs <= msOf(x.now) {
		x.delete = true // execWriteLocked tombstones it
		return expireDeleted
	}
	g := x.seg
	rec := x.rec.cloneExpiring(nsOfMs(whenMs))
	g.revision++
	rec.Revision = g.revision
	g.commitLocked(OpExpire, rec)
	x.rec = rec
	return expireSet
}

// errExpireReplay: expiry commands replicate as records (OpExpire, OpDelete)
// carrying the absolute instant, never as effects to replay.
var errExpireReplay = kv.BadRequest("expiry commands replicate as records, not effects")

func registerExpire(op kv.CmdOp, c expireCommand) {
	register(op, handler{kind: kindAny, write: true, stamps: true, run: func(x *execCtx) kv.Reply {
		if x.apply {
			return errExpireReplay
		}
		args := x.cmd.Args
		if len(args) == 0 {
			return kv.BadRequest("wrong number of arguments for '" + c.name + "' command")
		}
		// Redis reads the options, then the time, then looks the key up.
		cond, bad := parseExpireOptions(args[1:])
		if bad.Status != kv.StatusSuccess {
			return bad
		}
		whenMs, bad := c.instantMs(args[0], msOf(x.now))
		if bad.Status != kv.StatusSuccess {
			return bad
		}
		switch x.expireLocked(whenMs, cond) {
		case expireSet, expireDeleted:
			return kv.IntReply(1)
		}
		return kv.IntReply(0)
	}})
}

func init() {
	registerExpire(kv.CmdExpire, expireCommand{name: "expire", msPerArg: 1000})
	registerExpire(kv.CmdPExpire, expireCommand{name: "pexpire", msPerArg: 1})
	registerExpire(kv.CmdExpireAt, expireCommand{name: "expireat", msPerArg: 1000, absolute: true})
	registerExpire(kv.CmdPExpireAt, expireCommand{name: "pexpireat", msPerArg: 1, absolute: true})

	// PTTL and PEXPIRETIME read the expiry and the clock once, under the
	// read lock, in milliseconds (Redis's ttlGenericCommand): TTL and
	// EXPIRETIME are these rounded to seconds by the front end. Like Redis's
	// LOOKUP_NOTOUCH, they leave the key's access stamp.
	register(kv.CmdPTTL, handler{kind: kindAny, peek: true, run: func(x *execCtx) kv.Reply {
		switch {
		case x.rec == nil:
			return kv.IntReply(-2)
		case x.rec.ExpiresAt() == 0:
			return kv.IntReply(-1)
		}
		return kv.IntReply(max(currentExpiryMs(x.rec)-msOf(x.now), 0))
	}})
	register(kv.CmdPExpireTime, handler{kind: kindAny, peek: true, run: func(x *execCtx) kv.Reply {
		if x.rec == nil {
			return kv.IntReply(-2)
		}
		return kv.IntReply(currentExpiryMs(x.rec))
	}})
}
