package store

import (
	"math"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// String commands work on KindString records and replace the value as a
// whole (an OpPut in the op-log, keeping the key's TTL): counters (R-DS-3)
// are decimal text, as in Redis, so a counter is readable with Get.

func addInt(a, b int64) (int64, bool) {
	s := a + b
	overflow := (b > 0 && s < a) || (b < 0 && s > a)
	return s, overflow
}

// MaxStringBytes is Redis's proto-max-bulk-len, the longest string a
// command may build (SETRANGE, APPEND): past it Redis answers
// errStringTooLong whatever the item cap; the item cap (MaxItemBytes, at
// most this) then applies.
const MaxStringBytes = 512 << 20

var errStringTooLong = kv.BadRequest("string exceeds maximum allowed size (proto-max-bulk-len)")

// stringRange is GETRANGE's clamping of [start, end] to a string of n
// bytes, as Redis's getrangeCommand does it (unlike LRANGE, an end before
// the start of the string clamps to 0 instead of emptying the range).
func stringRange(start, end int64, n int) (lo, hi int) {
	if start < 0 && end < 0 && start > end {
		return 0, 0
	}
	ln := int64(n)
	if start < 0 {
		start += ln
	}
	if end < 0 {
		end += ln
	}
	start, end = max(start, 0), max(end, 0)
	if end >= ln {
		end = ln - 1
	}
	if start > end || n == 0 {
		return 0, 0
	}
	return int(start), int(end) + 1
}

func isInfOrNaN(f float64) bool { return math.IsInf(f, 0) || math.IsNaN(f) }

func valueOf(x *execCtx) []byte {
	if x.rec == nil {
		return nil
	}
	return x.rec.Value()
}

func (x *execCtx) setStringValue(v []byte) {
	if len(v) > x.seg.store.cfg.MaxItemBytes {
		return
	}
	x.newValue, x.setValue = v, true
}

// setRangeOffset is SETRANGE's check: Redis refuses a bad or negative
// offset before it looks the key up.
func setRangeOffset(args [][]byte) kv.Reply {
	if len(args) > 0 {
		off, ok := argInt(args[0])
		if !ok {
			return errNotInteger
		}
		if off < 0 {
			return kv.BadRequest("offset is out of range")
		}
	}
	return kv.Reply{}
}

func init() {
	register(kv.CmdIncrBy, handler{kind: KindString, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		delta, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		var cur int64
		if x.rec != nil {
			if cur, ok = argInt(x.rec.Value()); !ok {
				return errNotInteger
			}
		}
		next, overflow := addInt(cur, delta)
		if overflow {
			return kv.BadRequest("increment or decrement would overflow")
		}
		// Formatted into the segment's scratch (INCR holds the write
		// lock): the new record copies it.
		x.setStringValue(strconv.AppendInt(x.seg.scratch[:0], next, 10))
		return kv.IntReply(next)
	}})
	register(kv.CmdIncrByFloat, handler{kind: KindString, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		v, bad, ok := incrLongDouble(valueOf(x), x.rec != nil, x.cmd.Args[0], errNotFloat)
		if !ok {
			return bad
		}
		x.setStringValue(v)
		return kv.BulkReply(v)
	}})
	register(kv.CmdAppend, handler{kind: KindString, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		n := x.rec.lenOrZero()
		if int64(n)+int64(len(x.cmd.Args[0])) > MaxStringBytes {
			return errStringTooLong
		}
		if n+len(x.cmd.Args[0]) > x.seg.store.cfg.MaxItemBytes {
			return kv.StatusReply(kv.StatusItemTooLarge)
		}
		if x.rec.paged() != nil {
			x.stringEdit(n, x.cmd.Args[0])
			return kv.IntReply(int64(x.newLen()))
		}
		v := x.appendValue(valueOf(x), x.cmd.Args[0])
		x.setStringValue(v)
		return kv.IntReply(int64(len(v)))
	}})
	register(kv.CmdStrLen, handler{kind: KindString, run: func(x *execCtx) kv.Reply {
		return kv.IntReply(int64(x.rec.lenOrZero()))
	}})
	register(kv.CmdGetRange, handler{kind: KindString, check: intArgs(0, 1), run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		start, ok1 := argInt(x.cmd.Args[0])
		end, ok2 := argInt(x.cmd.Args[1])
		if !ok1 || !ok2 {
			return errNotInteger
		}
		if pv := x.rec.paged(); pv != nil {
			lo, hi := stringRange(start, end, pv.n)
			out := make([]byte, hi-lo)
			pv.copyRange(out, lo)
			return kv.BulkReply(out)
		}
		v := valueOf(x)
		lo, hi := stringRange(start, end, len(v))
		// The range aliases the value, as GET's reply does: a string
		// value is never written in place (APPEND writes past its end).
		out := v[lo:hi]
		if out == nil {
			out = []byte{} // a missing key reads as "", not as a nil reply
		}
		return kv.BulkReply(out)
	}})
	register(kv.CmdSetRange, handler{kind: KindString, check: setRangeOffset, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		off, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		if off < 0 {
			return kv.BadRequest("offset is out of range")
		}
		n, patch := x.rec.lenOrZero(), x.cmd.Args[1]
		if len(patch) == 0 {
			return kv.IntReply(int64(n))
		}
		// Compared without computing off+len: off may be near MaxInt64.
		if off > MaxStringBytes-int64(len(patch)) {
			return errStringTooLong
		}
		if off > int64(x.seg.store.cfg.MaxItemBytes)-int64(len(patch)) {
			return kv.StatusReply(kv.StatusItemTooLarge)
		}
		x.stringEdit(int(off), patch)
		return kv.IntReply(int64(x.newLen()))
	}})
	register(kv.CmdGetDel, handler{kind: KindString, write: true, run: func(x *execCtx) kv.Reply {
		if x.rec == nil {
			return kv.NilReply()
		}
		x.delete = true
		return kv.BulkReply(x.rec.Value())
	}})
	register(kv.CmdType, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		if x.rec == nil {
			return kv.BulkReply([]byte("none"))
		}
		return kv.BulkReply([]byte(x.rec.Kind.String()))
	}})
}
