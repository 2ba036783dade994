package store

import (
	"math"
	"math/rand/v2"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// HSTRLEN, HRANDFIELD and HSCAN (issue #13 item 5), with Redis 7.0's
// replies and errors.

// hashCompact reports whether Redis 7.0 would keep h as a listpack (at
// most 128 fields, every field and value at most 64 bytes: the default
// hash-max-listpack-entries and -value), which HSCAN returns whole.
func hashCompact(h *hashColl) bool {
	if h.count() > 128 {
		return false
	}
	for f, v := range h.t.all {
		if len(f) > 64 || len(v) > 64 {
			return false
		}
	}
	return true
}

// randomField is a field of the non-empty h, each equally likely.
func randomField(h *hashColl) string { return entryField(h.t.randomEntry()) }

// drawsPerWalk is about how many fields collecting all of a hash's fields
// costs per draw (a draw reads a slot or three and one entry; the walk an
// entry per field): a negative count at least a quarter of the hash's size
// draws from the collected fields instead.
const drawsPerWalk = 4

func init() {
	register(kv.CmdHStrLen, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		if h := hashOf(x); h != nil {
			v, _ := h.get(x.cmd.Args[0])
			return kv.IntReply(int64(len(v)))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdHRandField, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		if len(x.cmd.Args) == 0 && x.wrongKind(KindHash) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		var h *hashColl
		if !x.wrongKind(KindHash) {
			h = hashOf(x)
		}
		if len(x.cmd.Args) == 0 {
			if h == nil {
				return kv.NilReply()
			}
			return kv.BulkReply([]byte(randomField(h)))
		}
		n, r, ok := parseRandomCount(x.cmd.Args[0])
		if !ok {
			return r
		}
		withValues := len(x.cmd.Args) == 2
		if len(x.cmd.Args) > 2 || withValues && !optEq(x.cmd.Args[1], "WITHVALUES") {
			return errSyntax
		}
		if withValues && (n > math.MaxInt64/2 || n < -(math.MaxInt64/2)) {
			return kv.BadRequest("value is out of range") // Redis: twice the count must be a long
		}
		if x.wrongKind(KindHash) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		if h == nil || n == 0 {
			return kv.ArrayReply([]kv.Reply{})
		}
		size := h.count()
		var picked []unsafe.Pointer // entries
		switch {
		case n > int64(size)/3: // most of the hash (n*3 could overflow): a partial shuffle of all of it
			all := h.t.entryList()
			k := int(min(n, int64(size)))
			for i := 0; i < k; i++ {
				j := i + rand.IntN(size-i)
				all[i], all[j] = all[j], all[i]
			}
			picked = all[:k]
		case n > 0: // a few distinct fields
			picked = h.t.randomDistinct(int(n))
		default:
			reps := uint64(-n)
			if withValues {
				reps *= 2 // ≤ 2^64-2: n > −2^63
			}
			if !randomCountFits(reps, h.count(), h.bytes) {
				return errRandomTooLarge
			}
			picked = make([]unsafe.Pointer, -n)
			if -n < int64(size)/drawsPerWalk {
				for i := range picked {
					picked[i] = h.t.randomEntry()
				}
				break
			}
			all := h.t.entryList()
			for i := range picked {
				picked[i] = all[rand.IntN(len(all))]
			}
		}
		per := 1
		if withValues {
			per = 2
		}
		out := x.replies(per * len(picked))
		for _, e := range picked {
			out = append(out, kv.BulkReply(x.stringBytes(entryField(e))))
			if withValues {
				out = append(out, kv.BulkReply(entryValue(e)))
			}
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdHScan, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		req, r, done := collScanStart(x, KindHash)
		if done {
			return r
		}
		h := hashOf(x)
		// MATCH applies to the field; the reply names each field and its
		// value by their bytes (values are replaced, never changed in place).
		reply := func(next uint64, fields []string) kv.Reply {
			fields = req.filter(fields, 1)
			out := x.replies(2 * len(fields))
			for _, f := range fields {
				v, _ := h.t.get(f)
				out = append(out, kv.BulkReply(x.stringBytes(f)), kv.BulkReply(v))
			}
			return x.scanPageReply(next, out)
		}
		if hashCompact(h) {
			return reply(0, h.fieldNames())
		}
		return reply(scanFields(&h.scan, req, h.count(), h.t.all, func(f string) bool { _, ok := h.t.get(f); return ok }))
	}})
}
