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
	if len(h.m) > 128 {
		return false
	}
	for f, v := range h.m {
		if len(f) > 64 || len(v) > 64 {
			return false
		}
	}
	return true
}

func init() {
	register(kv.CmdHStrLen, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 1, 1); !ok {
			return r
		}
		if h := hashOf(x); h != nil {
			return kv.IntReply(int64(len(h.m[string(x.cmd.Args[0])])))
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
		fields := func() []string {
			all := make([]string, 0, len(h.m))
			for f := range h.m {
				all = append(all, f)
			}
			return all
		}
		if len(x.cmd.Args) == 0 {
			if h == nil {
				return kv.NilReply()
			}
			all := fields()
			return kv.BulkReply([]byte(all[rand.IntN(len(all))]))
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
		all := fields()
		var picked []string
		if n > 0 {
			k := int(min(n, int64(len(all))))
			for i := 0; i < k; i++ {
				j := i + rand.IntN(len(all)-i)
				all[i], all[j] = all[j], all[i]
			}
			picked = all[:k]
		} else {
			reps := uint64(-n)
			if withValues {
				reps *= 2 // ≤ 2^64-2: n > −2^63
			}
			if !randomCountFits(reps, len(h.m), h.bytes) {
				return errRandomTooLarge
			}
			picked = make([]string, -n)
			for i := range picked {
				picked[i] = all[rand.IntN(len(all))]
			}
		}
		per := 1
		if withValues {
			per = 2
		}
		out := make([]kv.Reply, 0, per*len(picked))
		for _, f := range picked {
			out = append(out, kv.BulkReply([]byte(f)))
			if withValues {
				out = append(out, kv.BulkReply(h.m[f]))
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
		pairs := func(fields []string) []string {
			out := make([]string, 0, 2*len(fields))
			for _, f := range fields {
				out = append(out, f, string(h.m[f]))
			}
			return out
		}
		if hashCompact(h) {
			all := make([]string, 0, len(h.m))
			for f := range h.m {
				all = append(all, f)
			}
			return collScanReply(0, req.filter(pairs(all), 2))
		}
		next, page := scanByHash(len(h.m), func(yield func(string)) {
			for f := range h.m {
				yield(f)
			}
		}, req)
		return collScanReply(next, req.filter(pairs(page), 2))
	}})
}
