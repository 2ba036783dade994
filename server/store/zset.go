package store

import (
	"math"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// zsetColl is the materialized form of a sorted set: member → score plus a
// skiplist ordered by (score, member).
type zsetColl struct {
	// nodes maps a member to its skiplist node (which holds the score):
	// one lookup finds both, and a score change needs no second one. A
	// field table in node mode (D88): a lookup reads a slot line and the
	// node, and the read-ahead can warm both.
	nodes fieldTable
	sl    *skiplist
	bytes int64 // accounted
	item  int64 // item size
	scan  scanIndex
}

const zsetMemberOverhead = 96

func newZSet() *zsetColl            { return &zsetColl{nodes: fieldTable{nodes: true}, sl: newSkiplist()} }
func (z *zsetColl) kind() ValueKind { return KindZSet }
func (z *zsetColl) size() int64     { return z.bytes }
func (z *zsetColl) itemSize() int64 { return z.item }
func (z *zsetColl) count() int      { return z.nodes.len() }

// node is member's node, nil when member is not in the set.
func (z *zsetColl) node(member []byte) *slNode {
	return z.nodeOf(unsafe.String(unsafe.SliceData(member), len(member)))
}

func (z *zsetColl) nodeOf(member string) *slNode { return (*slNode)(z.nodes.entryOf(member)) }

// members yields every member's node, in no particular order.
func (z *zsetColl) members(yield func(n *slNode) bool) {
	for e := range z.nodes.entries {
		if !yield((*slNode)(e)) {
			return
		}
	}
}

// score is member's score, if member is in the set.
func (z *zsetColl) score(member []byte) (float64, bool) {
	if n := z.node(member); n != nil {
		return n.score, true
	}
	return 0, false
}

type zEntry struct {
	_msgpack struct{} `msgpack:",as_array"`
	Member   string
	Score    float64
}

// encode: [member, score] pairs in (score, member) order.
func (z *zsetColl) encode() []byte {
	out := make([]zEntry, 0, z.count())
	for n := z.sl.head.next(); n != nil; n = n.next() {
		out = append(out, zEntry{Member: n.member, Score: n.score})
	}
	return mustMarshal(out)
}

func (z *zsetColl) decode(b []byte) error {
	var entries []zEntry
	if err := mpsafe.Unmarshal(b, &entries); err != nil {
		return err
	}
	for _, e := range entries {
		z.set(e.Member, e.Score)
	}
	z.nodes.settle()
	return nil
}

// set adds or moves member to score; reports whether it is new.
func (z *zsetColl) set(member string, score float64) bool {
	pos, e := z.nodes.lookupEntry(unsafe.Slice(unsafe.StringData(member), len(member)))
	if e != nil {
		z.move((*slNode)(e), score)
		return false
	}
	if score == 0 {
		score = 0 // -0 is stored as 0: a small set in Redis keeps "0"
	}
	k := zsetMemberSize(len(member))
	z.bytes += k.acct
	z.item += k.item
	z.nodes.setAt(pos, unsafe.Pointer(z.sl.insert(score, member)))
	z.scan.membershipChanged()
	return true
}

// move gives the member of node n a new score.
func (z *zsetColl) move(n *slNode, score float64) {
	if score == 0 {
		score = 0 // -0 is stored as 0, as in set
	}
	if n.score != score {
		z.sl.rescore(n, score)
	}
}

func (z *zsetColl) rem(member string) bool {
	n := z.forget(member)
	if n == nil {
		return false
	}
	z.sl.remove(n.score, member)
	return true
}

// popFirst removes the lowest-ranked member (ZPOPMIN): its path in the
// skiplist is the head on every level, so no walk finds it.
func (z *zsetColl) popFirst() {
	if n := z.sl.head.next(); n != nil {
		z.forget(n.member)
		z.sl.unlinkFirst()
	}
}

// forget takes member out of the member table and the accounting and
// returns its node (nil when member is not in the set); the caller unlinks
// the node.
func (z *zsetColl) forget(member string) *slNode {
	n := (*slNode)(z.nodes.delEntry(member))
	if n == nil {
		return nil
	}
	z.scan.membershipChanged()
	k := zsetMemberSize(len(member))
	z.bytes -= k.acct
	z.item -= k.item
	return n
}

func zsetOf(x *execCtx) *zsetColl {
	if x.coll == nil {
		return nil
	}
	return x.coll.(*zsetColl)
}

type zaddFlags struct{ nx, xx, gt, lt, ch, incr bool }

func parseZAddFlags(args [][]byte) (zaddFlags, [][]byte) {
	var f zaddFlags
	for len(args) > 0 {
		switch a := args[0]; {
		case kv.IsOption(a, "NX"):
			f.nx = true
		case kv.IsOption(a, "XX"):
			f.xx = true
		case kv.IsOption(a, "GT"):
			f.gt = true
		case kv.IsOption(a, "LT"):
			f.lt = true
		case kv.IsOption(a, "CH"):
			f.ch = true
		case kv.IsOption(a, "INCR"):
			f.incr = true
		default:
			return f, args
		}
		args = args[1:]
	}
	return f, args
}

func zadd(x *execCtx) kv.Reply {
	f, rest := parseZAddFlags(x.cmd.Args)
	if len(rest) == 0 || len(rest)%2 != 0 {
		return kv.BadRequest("ZADD needs score member pairs")
	}
	if f.nx && (f.xx || f.gt || f.lt) || f.gt && f.lt {
		return kv.BadRequest("GT, LT, and/or NX options at the same time are not compatible")
	}
	if f.incr && len(rest) != 2 {
		return kv.BadRequest("INCR option supports a single increment-element pair")
	}
	if f.incr {
		x.event = "zincr"
	}
	var scoreRoom [8]float64 // the scores of a ZADD of a few pairs, on the stack
	scores := scoreRoom[:0]
	for i := 0; i < len(rest); i += 2 {
		s, ok := argFloat(rest[i])
		if !ok {
			return errNotFloat
		}
		scores = append(scores, s)
	}
	z := zsetOf(x)
	if !x.fits(zsetAddGrowth(z, rest, f.xx)) {
		return x.tooLarge()
	}
	added, changed := 0, 0
	var effect [][]byte
	var incrResult kv.Reply = kv.NilReply()
	for i := range scores {
		node := z.node(rest[2*i+1])
		old, exists := 0.0, node != nil
		if exists {
			old = node.score
		}
		score := scores[i]
		if f.incr && exists {
			score = old + score
		}
		// Redis's zsetAdd order: NX/XX first, then the NaN refusal (only
		// NaN: an infinite score is a score), then GT/LT.
		switch {
		case f.nx && exists, f.xx && !exists:
			continue
		case math.IsNaN(score):
			return kv.BadRequest("resulting score is not a number (NaN)")
		case exists && (f.gt && score <= old || f.lt && score >= old):
			continue
		}
		switch {
		case !exists:
			z.set(string(rest[2*i+1]), score)
			added++
			changed++
		case old != score:
			z.move(node, score)
			changed++
		}
		if len(scores) == 1 { // one pair: the effect lives in the context's room
			x.changedAs(kv.CmdZAdd, kv.AppendFloat(x.room.num[:0], score), rest[1])
		} else {
			effect = append(effect, kv.FormatFloat(score), rest[2*i+1])
		}
		if f.incr {
			incrResult = scoreReply(score)
		}
	}
	switch {
	case changed == 0:
		x.effect = nil // one pair that changed nothing logs nothing
	case len(scores) > 1:
		x.changedArgs(kv.CmdZAdd, effect) // exact resulting scores: deterministic on replay
	}
	if f.incr {
		return incrResult
	}
	if f.ch {
		return kv.IntReply(int64(changed))
	}
	return kv.IntReply(int64(added))
}

// scoreBound reads a ZRANGEBYSCORE/ZCOUNT bound as Redis's zslParseRange
// does (kv.ParseScoreBound: strtod over the whole text, "" is 0, 1e309 is
// inf, NaN refused).
func scoreBound(b []byte) (v float64, exclusive, ok bool) { return kv.ParseScoreBound(b) }

// rangeReply is the members of nodes, each followed by its score withScores.
func (x *execCtx) rangeReply(nodes []*slNode, withScores bool) kv.Reply {
	per := 1
	if withScores {
		per = 2
	}
	out := x.replies(per * len(nodes))
	for _, n := range nodes {
		out = append(out, kv.BulkReply(x.stringBytes(n.member)))
		if withScores {
			out = append(out, scoreReply(n.score))
		}
	}
	return kv.ArrayReply(out)
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func zrangeByRank(rev bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 2, 3) {
			return arityError(x)
		}
		start, ok1 := argInt(x.cmd.Args[0])
		stop, ok2 := argInt(x.cmd.Args[1])
		if !ok1 || !ok2 {
			return errNotInteger
		}
		withScores := len(x.cmd.Args) == 3
		if withScores && !kv.IsOption(x.cmd.Args[2], "WITHSCORES") {
			return kv.BadRequest("syntax error")
		}
		z := zsetOf(x)
		if z == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		lo, hi := normalizeRange(start, stop, z.sl.length)
		nodes := make([]*slNode, 0, hi-lo)
		if lo < hi {
			if !rev {
				for n := z.sl.byRank(lo); n != nil && len(nodes) < hi-lo; n = n.next() {
					nodes = append(nodes, n)
				}
			} else {
				for n := z.sl.byRank(z.sl.length - 1 - lo); n != nil && len(nodes) < hi-lo; n = n.prev {
					nodes = append(nodes, n)
				}
			}
		}
		return x.rangeReply(nodes, withScores)
	}
}

// scoreRangeArgs parses ZRANGEBYSCORE/ZREVRANGEBYSCORE/ZCOUNT arguments
// in Redis's order: the options first (WITHSCORES, LIMIT offset count),
// then the bounds.
func scoreRangeArgs(args [][]byte, rev, options bool) (min, max float64, minEx, maxEx, withScores bool, offset, limit int64, bad kv.Reply) {
	limit = -1
	if len(args) < 2 {
		return min, max, minEx, maxEx, withScores, offset, limit, kv.BadRequest("wrong number of arguments")
	}
	opts := args[2:]
	for options && len(opts) > 0 {
		switch o := opts[0]; {
		case kv.IsOption(o, "WITHSCORES"):
			withScores = true
			opts = opts[1:]
		case kv.IsOption(o, "LIMIT"):
			if len(opts) < 3 {
				return min, max, minEx, maxEx, withScores, offset, limit, kv.BadRequest("syntax error")
			}
			var okO, okL bool
			offset, okO = argInt(opts[1])
			limit, okL = argInt(opts[2])
			if !okO || !okL {
				return min, max, minEx, maxEx, withScores, offset, limit, errNotInteger
			}
			opts = opts[3:]
		default:
			return min, max, minEx, maxEx, withScores, offset, limit, kv.BadRequest("syntax error")
		}
	}
	a, b := args[0], args[1]
	if rev {
		a, b = b, a // ZREVRANGEBYSCORE key max min
	}
	var ok1, ok2 bool
	min, minEx, ok1 = scoreBound(a)
	max, maxEx, ok2 = scoreBound(b)
	if !ok1 || !ok2 {
		return min, max, minEx, maxEx, withScores, offset, limit, kv.BadRequest("min or max is not a float")
	}
	return min, max, minEx, maxEx, withScores, offset, limit, kv.Reply{}
}

// scoreRangeCheck is the check of the score range commands: Redis parses
// the arguments before it looks the key up.
func scoreRangeCheck(rev, options bool) func(args [][]byte) kv.Reply {
	return func(args [][]byte) kv.Reply {
		_, _, _, _, _, _, _, bad := scoreRangeArgs(args, rev, options)
		if bad.Status != kv.StatusSuccess && len(args) >= 2 {
			return bad
		}
		return kv.Reply{}
	}
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func zrangeByScore(rev bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 2, -1) {
			return arityError(x)
		}
		min, max, minEx, maxEx, withScores, offset, limit, bad := scoreRangeArgs(x.cmd.Args, rev, true)
		if bad.Status != kv.StatusSuccess {
			return bad
		}
		z := zsetOf(x)
		if z == nil || offset < 0 {
			return kv.ArrayReply([]kv.Reply{})
		}
		inRange := func(n *slNode) bool {
			return (n.score > min || !minEx && n.score == min) && (n.score < max || !maxEx && n.score == max)
		}
		var nodes []*slNode
		var n *slNode
		if !rev {
			n = z.sl.firstAtLeast(min, minEx)
		} else {
			n = z.sl.lastAtMost(max, maxEx)
		}
		for ; n != nil && inRange(n); offset-- {
			if offset <= 0 {
				if limit >= 0 && int64(len(nodes)) >= limit {
					break
				}
				nodes = append(nodes, n)
			}
			if !rev {
				n = n.next()
			} else {
				n = n.prev
			}
		}
		return x.rangeReply(nodes, withScores)
	}
}

func init() {
	register(kv.CmdZAdd, handler{kind: KindZSet, write: true, create: true, run: zadd})
	register(kv.CmdZIncrBy, handler{kind: KindZSet, check: floatArgs(0), write: true, create: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		delta, ok := argFloat(x.cmd.Args[0])
		if !ok {
			return errNotFloat
		}
		z := zsetOf(x)
		member := x.cmd.Args[1]
		score := delta // a new member's score is the increment itself (-0 stays -0)
		node := z.node(member)
		if node != nil {
			score = node.score + delta
		}
		if math.IsNaN(score) {
			return kv.BadRequest("resulting score is not a number (NaN)")
		}
		if node != nil {
			z.move(node, score) // an existing member: no string made for its name
		} else {
			if !x.fits(zsetMemberSize(len(member))) {
				return x.tooLarge()
			}
			z.set(string(member), score)
		}
		x.changedAs(kv.CmdZAdd, kv.AppendFloat(x.room.num[:0], score), member)
		return scoreReply(score)
	}})
	register(kv.CmdZRem, handler{kind: KindZSet, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		z := zsetOf(x)
		if z == nil {
			return kv.IntReply(0)
		}
		n := 0
		for _, m := range x.cmd.Args {
			if z.rem(string(m)) {
				n++
			}
		}
		if n > 0 {
			x.changed()
		}
		return kv.IntReply(int64(n))
	}})
	register(kv.CmdZScore, handler{kind: KindZSet, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		if z := zsetOf(x); z != nil {
			if s, ok := z.score(x.cmd.Args[0]); ok {
				return scoreReply(s)
			}
		}
		return kv.NilReply()
	}})
	register(kv.CmdZCard, handler{kind: KindZSet, run: func(x *execCtx) kv.Reply {
		if z := zsetOf(x); z != nil {
			return kv.IntReply(int64(z.count()))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdZRank, handler{kind: KindZSet, run: zrankHandler(false)})
	register(kv.CmdZRevRank, handler{kind: KindZSet, run: zrankHandler(true)})
	register(kv.CmdZRange, handler{kind: KindZSet, check: intArgs(0, 1), run: zrangeByRank(false)})
	register(kv.CmdZRevRange, handler{kind: KindZSet, check: intArgs(0, 1), run: zrangeByRank(true)})
	register(kv.CmdZRangeByScore, handler{kind: KindZSet, check: scoreRangeCheck(false, true), run: zrangeByScore(false)})
	register(kv.CmdZRevRangeByScore, handler{kind: KindZSet, check: scoreRangeCheck(true, true), run: zrangeByScore(true)})
	register(kv.CmdZCount, handler{kind: KindZSet, check: scoreRangeCheck(false, false), run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		min, max, minEx, maxEx, _, _, _, bad := scoreRangeArgs(x.cmd.Args, false, false)
		if bad.Status != kv.StatusSuccess {
			return bad
		}
		z := zsetOf(x)
		if z == nil {
			return kv.IntReply(0)
		}
		// Two rank walks (O(log n)), not a walk of the range.
		first, end := z.sl.countBefore(min, minEx), z.sl.countBefore(max, !maxEx)
		if end <= first {
			return kv.IntReply(0)
		}
		return kv.IntReply(int64(end - first))
	}})
}

// zrankHandler is ZRANK's (ZREVRANK's when rev) handler.
//
// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined.
//
//go:noinline
func zrankHandler(rev bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		z := zsetOf(x)
		if z == nil {
			return kv.NilReply()
		}
		s, ok := z.score(x.cmd.Args[0])
		if !ok {
			return kv.NilReply()
		}
		r := z.sl.rank(s, string(x.cmd.Args[0]))
		if rev {
			r = z.sl.length - 1 - r
		}
		return kv.IntReply(int64(r))
	}
}
