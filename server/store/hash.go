package store

import (
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// hashColl is the materialized form of a hash: field → value (a
// fieldTable, D88).
type hashColl struct {
	t fieldTable
	// order is the entries in the order their fields were added while
	// Redis would keep the hash as a listpack — at most 512 fields, none
	// and no value longer than 64 bytes (keyinfo.go's thresholds) — where
	// Redis answers HGETALL, HKEYS and HVALS in that order, and clients
	// and their tests rely on it. Once the hash passes a threshold big is
	// set and order dropped for good, as Redis never converts a hash back.
	order []unsafe.Pointer
	big   bool
	bytes int64 // accounted
	item  int64 // item size
	scan  scanIndex
}

const hashFieldOverhead = 48

func newHash() *hashColl            { return &hashColl{} }
func (h *hashColl) kind() ValueKind { return KindHash }
func (h *hashColl) size() int64     { return h.bytes }
func (h *hashColl) itemSize() int64 { return h.item }
func (h *hashColl) count() int      { return h.t.len() }

// get is field f's value.
func (h *hashColl) get(f []byte) ([]byte, bool) {
	return h.t.get(unsafe.String(unsafe.SliceData(f), len(f)))
}

// all yields every field and value: in the order they were added while
// the hash keeps one (order), else in the table's.
func (h *hashColl) all(yield func(f string, v []byte) bool) {
	if h.big {
		h.t.all(yield)
		return
	}
	for _, e := range h.order {
		if !yield(entryField(e), entryValue(e)) {
			return
		}
	}
}

// fieldNames is every field, in all's order.
func (h *hashColl) fieldNames() []string {
	all := make([]string, 0, h.t.len())
	for f := range h.all {
		all = append(all, f)
	}
	return all
}

// encode: [field, value, field, value, …] sorted by field — whatever the
// order the hash answers in: the encoding is the content's canonical form,
// which the migration proof's digests compare between two copies (R-MIG-2)
// whatever histories built them. A copy decoded from it (a replica's or
// migrated copy's snapshot) so holds the fields in field order, those
// added after in the order added.
func (h *hashColl) encode() []byte {
	type pair struct {
		f string
		v []byte
	}
	pairs := make([]pair, 0, h.count())
	for f, v := range h.t.all {
		pairs = append(pairs, pair{f, v})
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.f, b.f) })
	flat := make([][]byte, 0, 2*len(pairs))
	for _, p := range pairs {
		flat = append(flat, []byte(p.f), p.v)
	}
	return mustMarshal(flat)
}

func (h *hashColl) decode(b []byte) error {
	var flat [][]byte
	if err := mpsafe.Unmarshal(b, &flat); err != nil {
		return err
	}
	for i := 0; i+1 < len(flat); i += 2 {
		h.set(flat[i], flat[i+1])
	}
	h.t.settle()
	return nil
}

// set stores value under field (copying both) and reports whether the
// field is new.
func (h *hashColl) set(field, value []byte) bool {
	pos, old, exists := h.t.lookup(field)
	return h.store(pos, field, value, old, exists)
}

// fieldGrowth is what setting field to value changes in h's size, with
// the field's position and current value (old, exists) for store.
func (h *hashColl) fieldGrowth(field, value []byte) (grow keySize, pos fieldPos, old []byte, exists bool) {
	pos, old, exists = h.t.lookup(field)
	grow = hashFieldSize(len(field), len(value))
	if exists {
		grow = grow.minus(hashFieldSize(len(field), len(old)))
	}
	return grow, pos, old, exists
}

// store is set once the field's position and current value are known
// (lookup, with no change to the table since). The field and the value
// share one entry; nothing writes into a stored value, a change stores a
// new entry.
func (h *hashColl) store(pos fieldPos, field, value, old []byte, exists bool) bool {
	var was unsafe.Pointer // the entry replaced
	if exists {
		was = h.t.entryAt(pos)
	}
	e := h.t.putAt(pos, field, value)
	if !h.big {
		switch {
		case len(field) > listpackMaxValue || len(value) > listpackMaxValue || h.t.len() > hashListpackMaxEntries:
			h.big, h.order = true, nil
		case exists:
			h.order[slices.Index(h.order, was)] = e // the field keeps its place
		default:
			h.order = append(h.order, e)
		}
	}
	grow := hashFieldSize(len(field), len(value))
	if exists {
		grow = grow.minus(hashFieldSize(len(field), len(old)))
	}
	h.bytes += grow.acct
	h.item += grow.item
	if !exists {
		h.scan.membershipChanged()
	}
	return !exists
}

func (h *hashColl) del(field string) bool {
	e := h.t.delEntry(field)
	if e == nil {
		return false
	}
	if !h.big {
		i := slices.Index(h.order, e)
		h.order = slices.Delete(h.order, i, i+1)
	}
	h.scan.membershipChanged()
	gone := hashFieldSize(len(field), len(entryValue(e)))
	h.bytes -= gone.acct
	h.item -= gone.item
	return true
}

func hashOf(x *execCtx) *hashColl {
	if x.coll == nil {
		return nil
	}
	return x.coll.(*hashColl)
}

func init() {
	register(kv.CmdHSet, handler{kind: KindHash, write: true, create: true, run: func(x *execCtx) kv.Reply {
		if len(x.cmd.Args) == 0 || len(x.cmd.Args)%2 != 0 {
			return kv.BadRequest("HSET needs field value pairs")
		}
		h := hashOf(x)
		if len(x.cmd.Args) == 2 {
			// One field (redis-benchmark's HSET, most clients' HSET): one
			// lookup answers both the size check and the set.
			grow, pos, old, exists := h.fieldGrowth(x.cmd.Args[0], x.cmd.Args[1])
			if !x.fits(grow) {
				return x.tooLarge()
			}
			var added int64
			if h.store(pos, x.cmd.Args[0], x.cmd.Args[1], old, exists) {
				added = 1
			}
			x.changed()
			return kv.IntReply(added)
		}
		if !x.fits(hashSetGrowth(h, x.cmd.Args)) {
			return x.tooLarge()
		}
		added := 0
		for i := 0; i < len(x.cmd.Args); i += 2 {
			if h.set(x.cmd.Args[i], x.cmd.Args[i+1]) {
				added++
			}
		}
		x.changed()
		return kv.IntReply(int64(added))
	}})
	register(kv.CmdHSetNX, handler{kind: KindHash, write: true, create: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		h := hashOf(x)
		if _, ok := h.get(x.cmd.Args[0]); ok {
			return kv.IntReply(0)
		}
		if !x.fits(hashSetGrowth(h, x.cmd.Args)) {
			return x.tooLarge()
		}
		h.set(x.cmd.Args[0], x.cmd.Args[1])
		x.changedAs(kv.CmdHSet, x.cmd.Args[0], x.cmd.Args[1])
		return kv.IntReply(1)
	}})
	register(kv.CmdHGet, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		if h := hashOf(x); h != nil {
			if v, ok := h.get(x.cmd.Args[0]); ok {
				return kv.BulkReply(v)
			}
		}
		return kv.NilReply()
	}})
	register(kv.CmdHMGet, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		h := hashOf(x)
		out := x.replies(len(x.cmd.Args))[:len(x.cmd.Args)]
		for i, f := range x.cmd.Args {
			if h != nil {
				if v, ok := h.get(f); ok {
					out[i] = kv.BulkReply(v)
				}
			}
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdHDel, handler{kind: KindHash, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		h := hashOf(x)
		if h == nil {
			return kv.IntReply(0)
		}
		n := 0
		for _, f := range x.cmd.Args {
			if h.del(string(f)) {
				n++
			}
		}
		if n > 0 {
			x.changed()
		}
		return kv.IntReply(int64(n))
	}})
	register(kv.CmdHGetAll, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		h := hashOf(x)
		if h == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		out := x.replies(2 * h.count())
		for f, v := range h.all {
			out = append(out, kv.BulkReply(x.stringBytes(f)), kv.BulkReply(v))
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdHKeys, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		h := hashOf(x)
		if h == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		out := x.replies(h.count())
		for f := range h.all {
			out = append(out, kv.BulkReply(x.stringBytes(f)))
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdHVals, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		h := hashOf(x)
		if h == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		out := x.replies(h.count())
		for _, v := range h.all {
			out = append(out, kv.BulkReply(v))
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdHLen, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		if h := hashOf(x); h != nil {
			return kv.IntReply(int64(h.count()))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdHExists, handler{kind: KindHash, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		if h := hashOf(x); h != nil {
			if _, ok := h.get(x.cmd.Args[0]); ok {
				return kv.IntReply(1)
			}
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdHIncrBy, handler{kind: KindHash, check: intArgs(1), write: true, create: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		delta, ok := argInt(x.cmd.Args[1])
		if !ok {
			return errNotInteger
		}
		h := hashOf(x)
		var cur int64
		if v, exists := h.get(x.cmd.Args[0]); exists {
			if cur, ok = argInt(v); !ok {
				return kv.BadRequest("hash value is not an integer")
			}
		}
		next, overflow := addInt(cur, delta)
		if overflow {
			return kv.BadRequest("increment or decrement would overflow")
		}
		nv := strconv.AppendInt(nil, next, 10)
		if !x.fits(hashSetGrowth(h, [][]byte{x.cmd.Args[0], nv})) {
			return x.tooLarge()
		}
		h.set(x.cmd.Args[0], nv)
		x.changedAs(kv.CmdHSet, x.cmd.Args[0], nv)
		return kv.IntReply(next)
	}})
	register(kv.CmdHIncrByFloat, handler{kind: KindHash, check: longDoubleArg(1), write: true, create: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		if d, ok := parseLongDouble(x.cmd.Args[1]); !ok {
			return errNotFloat
		} else if d.IsInf() {
			return kv.BadRequest("value is NaN or Infinity") // Redis refuses the increment itself
		}
		h := hashOf(x)
		cur, exists := h.get(x.cmd.Args[0])
		nv, bad, ok := incrLongDouble(cur, exists, x.cmd.Args[1], kv.BadRequest("hash value is not a float"))
		if !ok {
			return bad
		}
		if !x.fits(hashSetGrowth(h, [][]byte{x.cmd.Args[0], nv})) {
			return x.tooLarge()
		}
		h.set(x.cmd.Args[0], nv)
		x.changedAs(kv.CmdHSet, x.cmd.Args[0], nv)
		return kv.BulkReply(nv)
	}})
}
