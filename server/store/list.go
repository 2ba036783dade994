package store

import (
	"bytes"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// listColl is the materialized form of a list: a ring-buffer deque, so
// pushes and pops at both ends are O(1) and indexing is O(1).
type listColl struct {
	buf   [][]byte
	head  int
	n     int
	bytes int64 // accounted
	item  int64 // item size
}

const listElemOverhead = 24

func newList() *listColl            { return &listColl{} }
func (l *listColl) kind() ValueKind { return KindList }
func (l *listColl) size() int64     { return l.bytes }
func (l *listColl) itemSize() int64 { return l.item }
func (l *listColl) count() int      { return l.n }

func (l *listColl) at(i int) []byte { return l.buf[(l.head+i)%len(l.buf)] }

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
	for _, it := range items {
		l.pushBack(it)
	}
	return nil
}

func (l *listColl) grow() {
	nb := make([][]byte, max(2*len(l.buf), 8))
	for i := 0; i < l.n; i++ {
		nb[i] = l.at(i)
	}
	l.buf, l.head = nb, 0
}

func (l *listColl) pushBack(v []byte) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.buf[(l.head+l.n)%len(l.buf)] = append([]byte(nil), v...)
	l.n++
	l.account(listElemSize(v))
}

func (l *listColl) pushFront(v []byte) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.head = (l.head - 1 + len(l.buf)) % len(l.buf)
	l.buf[l.head] = append([]byte(nil), v...)
	l.n++
	l.account(listElemSize(v))
}

func (l *listColl) popFront() []byte {
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = (l.head + 1) % len(l.buf)
	l.n--
	l.account(keySize{}.minus(listElemSize(v)))
	return v
}

func (l *listColl) popBack() []byte {
	i := (l.head + l.n - 1) % len(l.buf)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.account(keySize{}.minus(listElemSize(v)))
	return v
}

// account adds a change of the elements' bytes (the count is l.n).
func (l *listColl) account(k keySize) {
	l.bytes += k.acct
	l.item += k.item
}

// rebuild replaces the content (LREM, LTRIM).
func (l *listColl) rebuild(items [][]byte) {
	*l = listColl{}
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

func push(front bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 1, -1); !ok {
			return r
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

func pop(front bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 0, 1); !ok {
			return r
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
		if r, ok := arity(x, 2, 2); !ok {
			return r
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
		if r, ok := arity(x, 1, 1); !ok {
			return r
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
		if r, ok := arity(x, 2, 2); !ok {
			return r
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
		idx := (l.head + int(i)) % len(l.buf)
		grow := listElemSize(x.cmd.Args[1]).minus(listElemSize(l.buf[idx]))
		if !x.fits(grow) {
			return x.tooLarge()
		}
		l.account(grow)
		l.buf[idx] = append([]byte(nil), x.cmd.Args[1]...)
		x.changed()
		return kv.OKReply()
	}})
	register(kv.CmdLRem, handler{kind: KindList, check: intArgs(0), write: true, run: func(x *execCtx) kv.Reply {
		if r, ok := arity(x, 2, 2); !ok {
			return r
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
		if r, ok := arity(x, 2, 2); !ok {
			return r
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
