package store

import (
	"math"
	"math/rand/v2"

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

// randomFieldWindow is how many fields randomField chooses among.
const randomFieldWindow = 32

// randomField picks a field of the non-empty h at random, in O(1): a walk
// from a random slot, but the first field after it is favoured when it
// follows empty slots, so the pick is among the next randomFieldWindow
// fields (Redis's dictGetFairRandomKey samples a bucket
// run the same way). Close to uniform, not exactly: on a hash of thousands
// of fields a field's chance stays within about 0.4–1.9× the mean
// (TestHashRandomFieldSpread); a smaller hash (≤ the window) is exact.
func randomField(h *hashColl) string {
	var window [randomFieldWindow]string
	n := 0
	for f := range h.t.fromRandomSlot {
		window[n] = f
		if n++; n == len(window) {
			break
		}
	}
	return window[rand.IntN(n)]
}

// randomWindow is the fields of one walk of the non-empty h from a random
// place, randomFieldWindow more than the n a caller picks among them (all
// of h when it is smaller): n picks at randomField's spread for the price
// of one walk instead of n.
func randomWindow(h *hashColl, n int, buf []string) []string {
	win := buf[:0]
	if want := min(h.count(), n+randomFieldWindow); cap(win) < want {
		win = make([]string, 0, want)
	} else {
		win = win[:0:want]
	}
	for f := range h.t.fromRandomSlot {
		if win = append(win, f); len(win) == cap(win) {
			break
		}
	}
	return win
}

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
		var picked []string
		var window [2 * randomFieldWindow]string // a small count's window, on the stack
		switch {
		case n > int64(size)/3: // most of the hash (n*3 could overflow): a partial shuffle of all of it
			all := h.fieldNames()
			k := int(min(n, int64(size)))
			for i := 0; i < k; i++ {
				j := i + rand.IntN(size-i)
				all[i], all[j] = all[j], all[i]
			}
			picked = all[:k]
		case n > 0: // a few distinct fields: a partial shuffle of one window
			win := randomWindow(h, int(n), window[:])
			for i := range int(n) {
				j := i + rand.IntN(len(win)-i)
				win[i], win[j] = win[j], win[i]
			}
			picked = win[:n]
		default:
			reps := uint64(-n)
			if withValues {
				reps *= 2 // ≤ 2^64-2: n > −2^63
			}
			if !randomCountFits(reps, h.count(), h.bytes) {
				return errRandomTooLarge
			}
			picked = make([]string, -n)
			if -n < int64(size)/randomFieldWindow { // fewer draws than a walk of the hash costs
				win := randomWindow(h, len(picked), window[:])
				for i := range picked {
					picked[i] = win[rand.IntN(len(win))]
				}
				break
			}
			all := h.fieldNames()
			for i := range picked {
				picked[i] = all[rand.IntN(len(all))]
			}
		}
		per := 1
		if withValues {
			per = 2
		}
		out := x.replies(per * len(picked))
		for _, f := range picked {
			out = append(out, kv.BulkReply(x.stringBytes(f)))
			if withValues {
				v, _ := h.t.get(f)
				out = append(out, kv.BulkReply(v))
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
