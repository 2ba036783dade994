package store

import (
	"bytes"
	"math"
	"strconv"

	"github.com/zaris-io/zaris/internal/kv"
)

// LINSERT, LPOS, LPUSHX/RPUSHX, LMOVE and LMPOP (issue #13 item 5), with
// Redis 7.0's replies and errors.

// listEnd parses LEFT/RIGHT (true = the head).
func listEnd(b []byte) (front, ok bool) {
	switch {
	case bytes.EqualFold(b, []byte("LEFT")):
		return true, true
	case bytes.EqualFold(b, []byte("RIGHT")):
		return false, true
	}
	return false, false
}

// lposOptions are LPOS's options: rank (≠ 0; negative = from the tail),
// count (-1: not given, 0: every match) and maxlen (0: the whole list).
type lposOptions struct {
	rank, count, maxlen int64
}

// parseLPosOptions parses LPOS's options in Redis's order of checks; a
// later option overrides an earlier one.
func parseLPosOptions(args [][]byte) (lposOptions, kv.Reply, bool) {
	o := lposOptions{rank: 1, count: -1}
	for i := 0; i < len(args); i += 2 {
		if i+1 >= len(args) {
			return o, errSyntax, false
		}
		n, ok := argInt(args[i+1])
		switch opt := args[i]; {
		case bytes.EqualFold(opt, []byte("RANK")):
			if !ok {
				return o, errNotInteger, false
			}
			if n == 0 {
				return o, kv.BadRequest("RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"), false
			}
			o.rank = n
		case bytes.EqualFold(opt, []byte("COUNT")):
			if !ok || n < 0 {
				return o, kv.BadRequest("COUNT can't be negative"), false
			}
			o.count = n
		case bytes.EqualFold(opt, []byte("MAXLEN")):
			if !ok || n < 0 {
				return o, kv.BadRequest("MAXLEN can't be negative"), false
			}
			o.maxlen = n
		default:
			return o, errSyntax, false
		}
	}
	return o, kv.Reply{}, true
}

// lpos finds element in l: the indexes of the matches from the rank-th on
// (from the tail when rank < 0), at most count of them (0: all), looking at
// no more than maxlen elements (0: all). RANK −2^63 has no positive
// counterpart: like Redis it then matches from the first match at the tail.
func lpos(l *listColl, elem []byte, o lposOptions) []int64 {
	fromTail := o.rank < 0
	rank := o.rank
	if fromTail {
		rank = -rank
		if rank < 0 {
			rank = 1
		}
	}
	var out []int64
	matches := int64(0)
	for step := 0; step < l.n; step++ {
		if o.maxlen != 0 && int64(step) >= o.maxlen {
			break
		}
		i := step
		if fromTail {
			i = l.n - 1 - step
		}
		if !bytes.Equal(l.at(i), elem) {
			continue
		}
		matches++
		if matches < rank {
			continue
		}
		out = append(out, int64(i))
		if o.count == -1 || o.count != 0 && int64(len(out)) >= o.count {
			break
		}
	}
	return out
}

// pushX is LPUSHX/RPUSHX: a push onto an existing list only, logged as the
// push it is.
//
// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func pushX(front bool) func(x *execCtx) kv.Reply {
	pushOp := kv.CmdRPush
	if front {
		pushOp = kv.CmdLPush
	}
	return func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		l := listOf(x)
		if l == nil {
			return kv.IntReply(0)
		}
		if !x.fits(listPushGrowth(x.cmd.Args)) {
			return x.tooLarge()
		}
		for _, v := range x.cmd.Args {
			if front {
				l.pushFront(v)
			} else {
				l.pushBack(v)
			}
		}
		x.changedArgs(pushOp, x.cmd.Args)
		return kv.IntReply(int64(l.n))
	}
}

func popEnd(l *listColl, front bool) []byte {
	if front {
		return l.popFront()
	}
	return l.popBack()
}

func pushEnd(l *listColl, v []byte, front bool) {
	if front {
		l.pushFront(v)
	} else {
		l.pushBack(v)
	}
}

func popOp(front bool) kv.CmdOp {
	if front {
		return kv.CmdLPop
	}
	return kv.CmdRPop
}

func pushOp(front bool) kv.CmdOp {
	if front {
		return kv.CmdLPush
	}
	return kv.CmdRPush
}

// lmove is LMOVE source destination from to (RPOPLPUSH is RIGHT LEFT):
// Redis's order — a missing source answers nil before the destination is
// looked at; a destination of another kind is WRONGTYPE; the destination
// must fit the element before the source loses it.
func lmove(x *execCtx) kv.Reply {
	if !arity(x, 3, 3) {
		return arityError(x)
	}
	from, ok1 := listEnd(x.cmd.Args[1])
	to, ok2 := listEnd(x.cmd.Args[2])
	if !ok1 || !ok2 {
		return errSyntax
	}
	if x.wrongKind(KindList) {
		return kv.StatusReply(kv.StatusWrongType)
	}
	src := listOf(x)
	if src == nil || src.n == 0 {
		return kv.NilReply()
	}
	dstKey := x.cmd.Args[0]
	if string(dstKey) == x.cmd.Key {
		// A rotation of one list: one entry, the command itself, replays it.
		v := popEnd(src, from)
		pushEnd(src, v, to)
		x.changed()
		return kv.BulkReply(v)
	}
	dst, r, ok := x.openWrite(dstKey, KindList, true)
	if !ok {
		return r
	}
	var head []byte
	if from {
		head = src.at(0)
	} else {
		head = src.at(src.n - 1)
	}
	if !dst.fits(listElemSize(head)) {
		return dst.tooLarge()
	}
	v := popEnd(src, from)
	pushEnd(dst.coll.(*listColl), v, to)
	x.changedAs(popOp(from))
	dst.changedAs(pushOp(to), v)
	dst.commit()
	return kv.BulkReply(v)
}

// lmpop is LMPOP's store half: args LEFT|RIGHT, count, then the keys after
// the command's own. The first non-empty list gives up to count elements;
// a key of another kind met before it is WRONGTYPE (the command's own key
// was checked by the caller).
func lmpop(x *execCtx) kv.Reply {
	if !arity(x, 2, -1) {
		return arityError(x)
	}
	front, ok := listEnd(x.cmd.Args[0])
	if !ok {
		return errSyntax
	}
	x.event = "rpop"
	if front {
		x.event = "lpop"
	}
	count, ok := argInt(x.cmd.Args[1])
	if !ok || count <= 0 {
		return kv.BadRequest("count should be greater than 0")
	}
	if x.wrongKind(KindList) {
		return kv.StatusReply(kv.StatusWrongType)
	}
	popN := func(l *listColl) [][]byte {
		n := int(min(count, int64(l.n)))
		out := make([][]byte, n)
		for i := range out {
			out[i] = popEnd(l, front)
		}
		return out
	}
	reply := func(key string, items [][]byte) kv.Reply {
		return kv.ArrayReply([]kv.Reply{kv.BulkReply([]byte(key)), kv.BulksReply(items)})
	}
	countArg := strconv.AppendInt(nil, count, 10)
	if l := listOf(x); l != nil && l.n > 0 {
		items := popN(l)
		x.changedAs(popOp(front), countArg)
		return reply(x.cmd.Key, items)
	}
	for _, k := range x.cmd.Args[2:] {
		if string(k) == x.cmd.Key {
			continue // the command's own key: empty
		}
		c, r, ok := x.openWrite(k, KindList, false)
		if !ok {
			return r
		}
		l, _ := c.coll.(*listColl)
		if l == nil || l.n == 0 {
			continue
		}
		items := popN(l)
		c.changedAs(popOp(front), countArg)
		c.commit()
		return reply(c.cmd.Key, items)
	}
	return kv.NilReply()
}

func init() {
	register(kv.CmdLPushX, handler{kind: KindList, write: true, run: pushX(true)})
	register(kv.CmdRPushX, handler{kind: KindList, write: true, run: pushX(false)})
	register(kv.CmdLMove, handler{kind: kindAny, write: true, run: lmove})
	register(kv.CmdLMPop, handler{kind: kindAny, write: true, run: lmpop})
	register(kv.CmdLInsert, handler{kind: kindAny, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 3, 3) {
			return arityError(x)
		}
		var after bool
		switch w := x.cmd.Args[0]; {
		case bytes.EqualFold(w, []byte("AFTER")):
			after = true
		case bytes.EqualFold(w, []byte("BEFORE")):
		default:
			return errSyntax
		}
		if x.wrongKind(KindList) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		l := listOf(x)
		if l == nil {
			return kv.IntReply(0)
		}
		pivot, elem := x.cmd.Args[1], x.cmd.Args[2]
		at := -1
		for i := 0; i < l.n; i++ {
			if bytes.Equal(l.at(i), pivot) {
				at = i
				break
			}
		}
		if at < 0 {
			return kv.IntReply(-1)
		}
		if !x.fits(listElemSize(elem)) {
			return x.tooLarge()
		}
		if after {
			at++
		}
		items := l.items(0, l.n)
		items = append(items[:at:at], append([][]byte{elem}, items[at:]...)...)
		l.rebuild(items)
		x.changed()
		return kv.IntReply(int64(l.n))
	}})
	register(kv.CmdLPos, handler{kind: kindAny, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		o, r, ok := parseLPosOptions(x.cmd.Args[1:])
		if !ok {
			return r
		}
		if x.wrongKind(KindList) {
			return kv.StatusReply(kv.StatusWrongType)
		}
		l := listOf(x)
		var found []int64
		if l != nil {
			found = lpos(l, x.cmd.Args[0], o)
		}
		if o.count == -1 {
			if len(found) == 0 {
				return kv.NilReply()
			}
			return kv.IntReply(found[0])
		}
		out := x.replies(len(found))[:len(found)]
		for i, n := range found {
			out[i] = kv.IntReply(n)
		}
		return kv.ArrayReply(out)
	}})
}

// maxRandomReply bounds a random-member reply that repeats members (a
// negative count): Redis 7.0 builds any such reply, −2^63+1 elements
// included, until its memory runs out; a Zaris node refuses one past
// these bounds instead (docs/RESP.md).
const (
	maxRandomElements = 1 << 20
	maxRandomBytes    = 512 << 20 // proto-max-bulk-len
)

// randomCountFits reports whether a reply of n repeated picks from a
// collection of count elements in size accounted bytes stays within the
// bounds.
func randomCountFits(n uint64, count int, size int64) bool {
	if n > maxRandomElements {
		return false
	}
	avg := float64(size) / float64(max(count, 1))
	return float64(n)*avg <= math.Min(maxRandomBytes, math.MaxInt64)
}

var errRandomTooLarge = kv.BadRequest("value is out of range, the reply would hold more than 1048576 elements or 512 MB")
