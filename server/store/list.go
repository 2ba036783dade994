package store

import (
	"bytes"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// listColl is the materialized form of a list: a ring-buffer deque of
// element references, so pushes and pops at both ends are O(1) and
// indexing is O(1), over packed element bytes (listblock.go, D85): the
// elements are copied into the list's own blocks, not allocated one by
// one, so a list of n elements is a few dozen objects with no pointer per
// element for the collector to follow.
type listColl struct {
	refs  []listRef
	head  int
	n     int
	arena listArena
	bytes int64 // accounted
	item  int64 // item size
}

const listElemOverhead = 24

func newList() *listColl            { return &listColl{} }
func (l *listColl) kind() ValueKind { return KindList }
func (l *listColl) size() int64     { return l.bytes }
func (l *listColl) itemSize() int64 { return l.item }
func (l *listColl) count() int      { return l.n }

func (l *listColl) ref(i int) *listRef { return &l.refs[(l.head+i)%len(l.refs)] }

// at is element i. Its bytes are never written again (the arena only
// appends, and compacts into new blocks), so a reply may hold them past
// the segment's lock; its capacity is its length.
func (l *listColl) at(i int) []byte { return l.arena.bytes(*l.ref(i)) }

func (l *listColl) items(lo, hi int) [][]byte {
	out := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; i++ {
		out = append(out, l.at(i))
	}
	return out
}

func (l *listColl) encode() []byte { return mustMarshal(l.items(0, l.n)) }

func (l *listColl) decode(b []byte) error {
	var items [][]byte
	if err := mpsafe.Unmarshal(b, &items); err != nil {
		return err
	}
	l.rebuild(items)
	return nil
}

func (l *listColl) grow() {
	nr := make([]listRef, max(2*len(l.refs), 8))
	for i := 0; i < l.n; i++ {
		nr[i] = *l.ref(i)
	}
	l.refs, l.head = nr, 0
}

func (l *listColl) pushBack(v []byte) {
	if l.n == len(l.refs) {
		l.grow()
	}
	*l.ref(l.n) = l.arena.store(v)
	l.n++
	l.account(listElemSize(v))
	l.compactIfSparse()
}

func (l *listColl) pushFront(v []byte) {
	if l.n == len(l.refs) {
		l.grow()
	}
	l.head = (l.head - 1 + len(l.refs)) % len(l.refs)
	l.refs[l.head] = l.arena.store(v)
	l.n++
	l.account(listElemSize(v))
	l.compactIfSparse()
}

func (l *listColl) popFront() []byte {
	r := l.refs[l.head]
	l.refs[l.head] = listRef{}
	l.head = (l.head + 1) % len(l.refs)
	l.n--
	return l.dropped(r)
}

func (l *listColl) popBack() []byte {
	i := (l.head + l.n - 1) % len(l.refs)
	r := l.refs[i]
	l.refs[i] = listRef{}
	l.n--
	return l.dropped(r)
}

// dropped releases a removed element's bytes and returns them (still
// valid: released bytes are never reused).
func (l *listColl) dropped(r listRef) []byte {
	v := l.arena.bytes(r)
	l.arena.release(r)
	l.account(keySize{}.minus(listElemSize(v)))
	if l.n == 0 {
		l.arena = listArena{}
	} else {
		l.compactIfSparse()
	}
	return v
}

// set replaces element i with a copy of v.
func (l *listColl) set(i int, v []byte) {
	r := l.ref(i)
	l.arena.release(*r)
	*r = l.arena.store(v)
	l.compactIfSparse()
}

// compactIfSparse rebuilds the list into fresh blocks once released bytes
// that live blocks still hold outweigh the live ones (LSET, pops from a
// block's middle): amortized O(1), as each rebuild follows at least as many
// bytes released as it copies.
func (l *listColl) compactIfSparse() {
	if !l.arena.sparse() {
		return
	}
	old := l.arena
	l.arena = listArena{expect: int(old.live)}
	for i := range l.n {
		r := l.ref(i)
		*r = l.arena.store(old.bytes(*r))
	}
}

// account adds a change of the elements' bytes (the count is l.n).
func (l *listColl) account(k keySize) {
	l.bytes += k.acct
	l.item += k.item
}

// rebuild replaces the content (LREM, LTRIM, compaction). items may be
// the list's own elements: the old blocks stay intact for them.
func (l *listColl) rebuild(items [][]byte) {
	*l = listColl{refs: make([]listRef, max(len(items), 8))}
	for _, it := range items {
		l.arena.expect += len(it)
	}
	for _, it := range items {
		l.pushBack(it)
	}
}

func listOf(x *execCtx) *listColl {
	if x.coll == nil {
		return nil
	}
	return x.coll.(*listColl)
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func push(front bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		if !x.fits(listPushGrowth(x.cmd.Args)) {
			return x.tooLarge()
		}
		l := listOf(x)
		for _, v := range x.cmd.Args {
			if front {
				l.pushFront(v)
			} else {
				l.pushBack(v)
			}
		}
		x.changed()
		return kv.IntReply(int64(l.n))
	}
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func pop(front bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 0, 1) {
			return arityError(x)
		}
		count, withCount := int64(1), len(x.cmd.Args) == 1
		if withCount {
			var ok bool
			if count, ok = argInt(x.cmd.Args[0]); !ok || count < 0 {
				return kv.BadRequest("value is out of range, must be positive")
			}
		}
		l := listOf(x)
		if l == nil || l.n == 0 {
			if withCount {
				return kv.Reply{Type: kv.ReplyNil}
			}
			return kv.NilReply()
		}
		var out [][]byte
		for i := int64(0); i < count && l.n > 0; i++ {
			if front {
				out = append(out, l.popFront())
			} else {
				out = append(out, l.popBack())
			}
		}
		if len(out) > 0 {
			x.changed()
		}
		if !withCount {
			return kv.BulkReply(out[0])
		}
		return x.bulksOf(out)
	}
}

func init() {
	register(kv.CmdLPush, handler{kind: KindList, write: true, create: true, run: push(true)})
	register(kv.CmdRPush, handler{kind: KindList, write: true, create: true, run: push(false)})
	register(kv.CmdLPop, handler{kind: KindList, write: true, run: pop(true)})
	register(kv.CmdRPop, handler{kind: KindList, write: true, run: pop(false)})
	register(kv.CmdLLen, handler{kind: KindList, run: func(x *execCtx) kv.Reply {
		if l := listOf(x); l != nil {
			return kv.IntReply(int64(l.n))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdLRange, handler{kind: KindList, check: intArgs(0, 1), run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		start, ok1 := argInt(x.cmd.Args[0])
		stop, ok2 := argInt(x.cmd.Args[1])
		if !ok1 || !ok2 {
			return errNotInteger
		}
		l := listOf(x)
		if l == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		lo, hi := normalizeRange(start, stop, l.n)
		out := x.replies(hi - lo)
		for i := lo; i < hi; i++ {
			out = append(out, kv.BulkReply(l.at(i)))
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdLIndex, handler{kind: KindList, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		l := listOf(x) // Redis looks the key up before it reads the index
		if l == nil {
			return kv.NilReply()
		}
		i, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		if i < 0 {
			i += int64(l.n)
		}
		if i < 0 || i >= int64(l.n) {
			return kv.NilReply()
		}
		return kv.BulkReply(l.at(int(i)))
	}})
	register(kv.CmdLSet, handler{kind: KindList, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		l := listOf(x) // Redis looks the key up before it reads the index
		if l == nil {
			return kv.StatusReply(kv.StatusNotFound)
		}
		i, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		if i < 0 {
			i += int64(l.n)
		}
		if i < 0 || i >= int64(l.n) {
			return kv.BadRequest("index out of range")
		}
		grow := listElemSize(x.cmd.Args[1]).minus(listElemSize(l.at(int(i))))
		if !x.fits(grow) {
			return x.tooLarge()
		}
		l.account(grow)
		l.set(int(i), x.cmd.Args[1])
		x.changed()
		return kv.OKReply()
	}})
	register(kv.CmdLRem, handler{kind: KindList, check: intArgs(0), write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		count, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		l := listOf(x)
		if l == nil {
			return kv.IntReply(0)
		}
		items := l.items(0, l.n)
		target := x.cmd.Args[1]
		removed := int64(0)
		keep := make([][]byte, 0, len(items))
		if count >= 0 {
			for _, it := range items {
				if bytes.Equal(it, target) && (count == 0 || removed < count) {
					removed++
					continue
				}
				keep = append(keep, it)
			}
		} else {
			most := -(count + 1) // removed < -count, without negating MinInt64
			for i := len(items) - 1; i >= 0; i-- {
				if bytes.Equal(items[i], target) && removed <= most {
					removed++
					continue
				}
				keep = append(keep, items[i])
			}
			for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
				keep[i], keep[j] = keep[j], keep[i]
			}
		}
		if removed > 0 {
			l.rebuild(keep)
			x.changed()
		}
		return kv.IntReply(removed)
	}})
	register(kv.CmdLTrim, handler{kind: KindList, check: intArgs(0, 1), write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		start, ok1 := argInt(x.cmd.Args[0])
		stop, ok2 := argInt(x.cmd.Args[1])
		if !ok1 || !ok2 {
			return errNotInteger
		}
		l := listOf(x)
		if l == nil {
			return kv.OKReply()
		}
		lo, hi := normalizeRange(start, stop, l.n)
		if lo == 0 && hi == l.n {
			return kv.OKReply()
		}
		l.rebuild(l.items(lo, hi))
		x.changed()
		return kv.OKReply()
	}})
}
