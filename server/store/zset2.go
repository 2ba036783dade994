package store

import (
	"hash/maphash"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/zaris-io/zaris/internal/glob"
	"github.com/zaris-io/zaris/internal/kv"
)

// The rest of the sorted-set family (issue #13 item 5): the unified range
// (by rank, score or lex), lex counts, range removal, pops, ZMSCORE,
// ZRANDMEMBER, ZSCAN, the replace-all effect of every *STORE command and
// the multi-range read a geo search makes. The RESP front end parses
// Redis's syntax and hands the normalised arguments of internal/kv's
// command_zset.go to these handlers.

// ScoreText formats a score as Redis 7.0 replies it: printf's %.17g, inf
// and -inf spelled so. A computed -0 prints "-0" (ZINCRBY, ZUNION); a
// stored one was made 0 (zsetColl.set).
func ScoreText(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	if b, ok := kv.AppendIntegral(nil, f); ok {
		return b
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

func scoreReply(f float64) kv.Reply { return kv.BulkReply(ScoreText(f)) }

// lexBound is one end of a lex range: "[m" inclusive, "(m" exclusive, "-"
// below everything, "+" above everything.
type lexBound struct {
	val       string
	exclusive bool
	inf       int // -1: "-", +1: "+", 0: val
}

// parseLexBound parses a BYLEX bound; false for anything else.
func parseLexBound(b []byte) (lexBound, bool) {
	if len(b) == 0 {
		return lexBound{}, false
	}
	switch b[0] {
	case '-':
		return lexBound{inf: -1}, len(b) == 1
	case '+':
		return lexBound{inf: 1}, len(b) == 1
	case '[':
		return lexBound{val: string(b[1:])}, true
	case '(':
		return lexBound{val: string(b[1:]), exclusive: true}, true
	}
	return lexBound{}, false
}

// aboveMin reports whether member is at or past the lower bound lo.
func (lo lexBound) aboveMin(member string) bool {
	switch lo.inf {
	case -1:
		return true
	case 1:
		return false
	}
	if lo.exclusive {
		return member > lo.val
	}
	return member >= lo.val
}

// belowMax reports whether member is at or before the upper bound hi.
func (hi lexBound) belowMax(member string) bool {
	switch hi.inf {
	case -1:
		return false
	case 1:
		return true
	}
	if hi.exclusive {
		return member < hi.val
	}
	return member <= hi.val
}

// emptyLex reports a range that no member can be in (Redis checks it
// before looking: min > max, or equal and either exclusive).
func emptyLex(lo, hi lexBound) bool {
	if lo.inf == 1 || hi.inf == -1 {
		return true
	}
	if lo.inf != 0 || hi.inf != 0 {
		return false
	}
	return lo.val > hi.val || lo.val == hi.val && (lo.exclusive || hi.exclusive)
}

// firstInLex is the first node whose member is at or past lo (members
// ordered as the skiplist orders them: Redis's lex commands assume every
// score is equal).
func (sl *skiplist) firstInLex(lo lexBound) *slNode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && !lo.aboveMin(x.level(i).next.member) {
			x = x.level(i).next
		}
	}
	return x.next()
}

// lastInLex is the last node whose member is at or before hi, or nil.
func (sl *skiplist) lastInLex(hi lexBound) *slNode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && hi.belowMax(x.level(i).next.member) {
			x = x.level(i).next
		}
	}
	if x == sl.head {
		return nil
	}
	return x
}

// scoreRange is a parsed score interval.
type scoreRange struct {
	min, max     float64
	minEx, maxEx bool
}

func (r scoreRange) has(s float64) bool {
	return (s > r.min || !r.minEx && s == r.min) && (s < r.max || !r.maxEx && s == r.max)
}

func (r scoreRange) empty() bool {
	return r.min > r.max || r.min == r.max && (r.minEx || r.maxEx)
}

// rangeSpec is a parsed CmdZRangeSpec / CmdZRemRange.
type rangeSpec struct {
	by            string // RANK, SCORE, LEX
	rev           bool
	start, stop   int64 // RANK
	score         scoreRange
	lo, hi        lexBound
	offset, count int64 // count < 0: no limit
}

var errMinMaxFloat = kv.BadRequest("min or max is not a float")
var errLexRange = kv.BadRequest("min or max not valid string range item")

// parseRangeSpec parses by and the two bounds (in the command's order: for
// REV the upper bound first).
func parseRangeSpec(by string, rev bool, a, b []byte) (rangeSpec, kv.Reply, bool) {
	sp := rangeSpec{by: by, rev: rev, count: -1}
	if rev {
		a, b = b, a
	}
	switch by {
	case "RANK":
		var ok1, ok2 bool
		sp.start, ok1 = argInt(a)
		sp.stop, ok2 = argInt(b)
		if rev {
			sp.start, sp.stop = sp.stop, sp.start // ranks keep their order under REV
		}
		if !ok1 || !ok2 {
			return sp, errNotInteger, false
		}
	case "SCORE":
		var ok1, ok2 bool
		sp.score.min, sp.score.minEx, ok1 = scoreBound(a)
		sp.score.max, sp.score.maxEx, ok2 = scoreBound(b)
		if !ok1 || !ok2 {
			return sp, errMinMaxFloat, false
		}
	case "LEX":
		var ok1, ok2 bool
		sp.lo, ok1 = parseLexBound(a)
		sp.hi, ok2 = parseLexBound(b)
		if !ok1 || !ok2 {
			return sp, errLexRange, false
		}
	default:
		return sp, kv.BadRequest("syntax error"), false
	}
	return sp, kv.Reply{}, true
}

// collect returns the nodes of the range, in the order of the reply.
func (z *zsetColl) collect(sp rangeSpec) []*slNode {
	if z == nil {
		return nil
	}
	sl := z.sl
	var nodes []*slNode
	switch sp.by {
	case "RANK":
		lo, hi := normalizeRange(sp.start, sp.stop, sl.length)
		if lo >= hi {
			return nil
		}
		nodes = make([]*slNode, 0, hi-lo)
		if !sp.rev {
			for n := sl.byRank(lo); n != nil && len(nodes) < hi-lo; n = n.next() {
				nodes = append(nodes, n)
			}
		} else {
			for n := sl.byRank(sl.length - 1 - lo); n != nil && len(nodes) < hi-lo; n = n.prev {
				nodes = append(nodes, n)
			}
		}
		return nodes
	case "SCORE":
		if sp.score.empty() {
			return nil
		}
		var n *slNode
		in := func(n *slNode) bool { return sp.score.has(n.score) }
		if !sp.rev {
			n = sl.firstAtLeast(sp.score.min, sp.score.minEx)
		} else {
			n = sl.lastAtMost(sp.score.max, sp.score.maxEx)
		}
		return walk(n, in, sp)
	default: // LEX
		if emptyLex(sp.lo, sp.hi) {
			return nil
		}
		var n *slNode
		in := func(n *slNode) bool { return sp.lo.aboveMin(n.member) && sp.hi.belowMax(n.member) }
		if !sp.rev {
			n = sl.firstInLex(sp.lo)
		} else {
			n = sl.lastInLex(sp.hi)
		}
		return walk(n, in, sp)
	}
}

// walk follows the skiplist from n (forward, or backward for REV) while
// nodes are in range, skipping offset nodes and keeping at most count.
// Redis's LIMIT: a negative offset selects nothing; a negative count, all.
func walk(n *slNode, in func(*slNode) bool, sp rangeSpec) []*slNode {
	if sp.offset < 0 || sp.count == 0 {
		return nil
	}
	var nodes []*slNode
	for skip := sp.offset; n != nil && in(n); {
		if skip > 0 {
			skip--
		} else {
			if sp.count >= 0 && int64(len(nodes)) >= sp.count {
				break
			}
			nodes = append(nodes, n)
		}
		if sp.rev {
			n = n.prev
		} else {
			n = n.next()
		}
	}
	return nodes
}

func zrangeSpec(x *execCtx) kv.Reply {
	if !arity(x, 7, 7) {
		return arityError(x)
	}
	a := x.cmd.Args
	sp, bad, ok := parseRangeSpec(string(a[0]), string(a[1]) == "1", a[2], a[3])
	if !ok {
		return bad
	}
	var ok1, ok2 bool
	sp.offset, ok1 = argInt(a[4])
	sp.count, ok2 = argInt(a[5])
	if !ok1 || !ok2 {
		return errNotInteger
	}
	return x.rangeReply(zsetOf(x).collect(sp), string(a[6]) == "1")
}

func zlexCount(x *execCtx) kv.Reply {
	if !arity(x, 2, 2) {
		return arityError(x)
	}
	sp, bad, ok := parseRangeSpec("LEX", false, x.cmd.Args[0], x.cmd.Args[1])
	if !ok {
		return bad
	}
	z := zsetOf(x)
	if z == nil || emptyLex(sp.lo, sp.hi) {
		return kv.IntReply(0)
	}
	first := z.sl.firstInLex(sp.lo)
	last := z.sl.lastInLex(sp.hi)
	if first == nil || last == nil || less(last.score, last.member, first.score, first.member) {
		return kv.IntReply(0)
	}
	return kv.IntReply(int64(z.sl.rank(last.score, last.member) - z.sl.rank(first.score, first.member) + 1))
}

// zremRangeEvents are Redis's event names of ZREMRANGEBY* by range kind.
var zremRangeEvents = map[string]string{"RANK": "zremrangebyrank", "SCORE": "zremrangebyscore", "LEX": "zremrangebylex"}

func zremRange(x *execCtx) kv.Reply {
	if !arity(x, 3, 3) {
		return arityError(x)
	}
	sp, bad, ok := parseRangeSpec(string(x.cmd.Args[0]), false, x.cmd.Args[1], x.cmd.Args[2])
	if !ok {
		return bad
	}
	z := zsetOf(x)
	nodes := z.collect(sp)
	for _, n := range nodes {
		z.rem(n.member)
	}
	if len(nodes) > 0 {
		x.changed() // the same range of the same set on a replica: the same members
		x.event = zremRangeEvents[strings.ToUpper(string(x.cmd.Args[0]))]
	}
	return kv.IntReply(int64(len(nodes)))
}

// zpop removes up to count members from the low (MIN) or high (MAX) end;
// the effect is the ZREM of the members it took.
func zpop(x *execCtx) kv.Reply {
	if !arity(x, 2, 2) {
		return arityError(x)
	}
	count, ok := argInt(x.cmd.Args[1])
	if !ok || count < 0 {
		return kv.BadRequest("value is out of range, must be positive")
	}
	max := kv.IsOption(x.cmd.Args[0], "MAX")
	x.event = "zpopmin"
	if max {
		x.event = "zpopmax"
	}
	z := zsetOf(x)
	if z == nil || count == 0 {
		return kv.ArrayReply([]kv.Reply{})
	}
	n := int(min(count, int64(z.sl.length)))
	out := x.replies(2 * n)
	removed := x.room.args[:0] // the effect's arguments: the op-log copies them
	if n > len(x.room.args) {
		removed = make([][]byte, 0, n)
	}
	for range n {
		node := z.sl.head.next()
		if max {
			node = z.sl.tail
		}
		m := x.stringBytes(node.member)
		out = append(out, kv.BulkReply(m), scoreReply(node.score))
		removed = append(removed, m)
		if max {
			z.rem(node.member)
		} else {
			z.popFirst()
		}
	}
	x.changedArgs(kv.CmdZRem, removed)
	return kv.ArrayReply(out)
}

func zmscore(x *execCtx) kv.Reply {
	if !arity(x, 1, -1) {
		return arityError(x)
	}
	z := zsetOf(x)
	out := x.replies(len(x.cmd.Args))[:len(x.cmd.Args)]
	for i, m := range x.cmd.Args {
		out[i] = kv.NilReply()
		if z != nil {
			if s, ok := z.score(m); ok {
				out[i] = scoreReply(s)
			}
		}
	}
	return kv.ArrayReply(out)
}

// ZRandDrawsInline is the largest negative ZRANDMEMBER count the store
// answers itself, one rank lookup (O(log n)) a draw; the front end streams
// larger ones from a snapshot, their reply being sized by the client.
const ZRandDrawsInline = 1024

// zrandMember answers ZRANDMEMBER for a count ≥ -ZRandDrawsInline. A
// negative count draws that many members, repeats allowed. A count at least
// the set's size returns the whole set (highest score first, as Redis
// answers for a small set); a smaller one distinct members chosen at random.
func zrandMember(x *execCtx) kv.Reply {
	if !arity(x, 2, 2) {
		return arityError(x)
	}
	count, ok := argInt(x.cmd.Args[0])
	if !ok || count < -ZRandDrawsInline {
		return errNotInteger
	}
	ws := string(x.cmd.Args[1]) == "1"
	z := zsetOf(x)
	if z == nil || count == 0 {
		return kv.ArrayReply([]kv.Reply{})
	}
	size := z.sl.length
	if count < 0 {
		// A random entry of the member table (O(1)) rather than a
		// random rank (a skiplist walk, a cache miss a level).
		nodes := make([]*slNode, -count)
		for i := range nodes {
			nodes[i] = (*slNode)(z.nodes.randomEntry())
		}
		return x.rangeReply(nodes, ws)
	}
	if count >= int64(size) { // the whole set, last first (a small set's order in Redis)
		return x.rangeReply(z.collect(rangeSpec{by: "RANK", rev: true, start: 0, stop: -1, count: -1}), ws)
	}
	var nodes []*slNode
	if count*3 > int64(size) {
		all := z.collect(rangeSpec{by: "RANK", start: 0, stop: -1, count: -1})
		rand.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		nodes = all[:count]
	} else {
		nodes = make([]*slNode, 0, count)
		for _, e := range z.nodes.randomDistinct(int(count)) {
			nodes = append(nodes, (*slNode)(e))
		}
	}
	return x.rangeReply(nodes, ws)
}

// Scanning. A small sorted set (what Redis keeps as a listpack: at most
// 128 members of at most 64 bytes) is returned whole with cursor 0, in
// order, as Redis does. A larger one is walked in the order of a hash of
// the members: the cursor is the next hash to visit, so a member present
// for the whole scan is returned however the set changes meanwhile.
const (
	zscanSmallEntries = 128
	zscanSmallValue   = 64
)

var zscanSeed = maphash.MakeSeed()

func zscanHash(m string) uint64 {
	h := maphash.String(zscanSeed, m)
	if h == 0 {
		h = 1 // cursor 0 means "done"; hash 0 folds into 1
	}
	return h
}

// zscan is ZSCAN's cursor [MATCH pattern] [COUNT count], read like
// SSCAN/HSCAN's (collScanStart: the cursor, then the key's kind, then the
// options).
func zscan(x *execCtx) kv.Reply {
	req, r, done := collScanStart(x, KindZSet)
	if done {
		return r
	}
	cursor, count, pattern := req.cursor, int64(req.count), string(req.match)
	if pattern == "*" {
		pattern = ""
	}
	z := zsetOf(x)
	keep := func(m string) bool { return pattern == "" || glob.Match(pattern, m) }
	var out []kv.Reply
	emit := func(n *slNode) {
		if keep(n.member) {
			out = append(out, kv.BulkReply(x.stringBytes(n.member)), scoreReply(n.score))
		}
	}
	if z == nil {
		return kv.ArrayReply([]kv.Reply{kv.BulkReply([]byte("0")), kv.ArrayReply([]kv.Reply{})})
	}
	if z.small() {
		for n := z.sl.head.next(); n != nil; n = n.next() {
			emit(n)
		}
		return kv.ArrayReply([]kv.Reply{kv.BulkReply([]byte("0")), kv.ArrayReply(out)})
	}
	if z.sl.length > scanOrderMin {
		next, page := z.scan.page(req, z.count(), func(yield func(string)) {
			for n := range z.members {
				yield(n.member)
			}
		}, zscanHash, func(m string) bool { return z.nodeOf(m) != nil })
		out = x.replies(2 * len(page))
		for _, m := range page {
			emit(z.nodeOf(m))
		}
		return x.scanPageReply(next, out)
	}
	type hashed struct {
		h uint64
		n *slNode
	}
	var next []hashed
	for n := z.sl.head.next(); n != nil; n = n.next() {
		if h := zscanHash(n.member); h >= cursor {
			next = append(next, hashed{h, n})
		}
	}
	slices.SortFunc(next, func(a, b hashed) int {
		switch {
		case a.h < b.h:
			return -1
		case a.h > b.h:
			return 1
		}
		return strings.Compare(a.n.member, b.n.member)
	})
	taken := 0
	var newCursor uint64
	for i, e := range next {
		// Members sharing a hash are returned together: the cursor moves
		// past a hash only once all of it was returned.
		if int64(taken) >= count && e.h != next[i-1].h {
			newCursor = e.h
			break
		}
		emit(e.n)
		taken++
	}
	return kv.ArrayReply([]kv.Reply{kv.BulkReply(strconv.AppendUint(nil, newCursor, 10)), kv.ArrayReply(out)})
}

func (z *zsetColl) small() bool {
	if z.sl.length > zscanSmallEntries {
		return false
	}
	for n := range z.members {
		if len(n.member) > zscanSmallValue {
			return false
		}
	}
	return true
}

// zstore makes the key hold a sorted set of the given pairs: the effect of
// ZUNIONSTORE and the other *STORE commands, computed by the front end. As
// Redis's setKey, the key is replaced whatever it held — a new record, with
// no TTL (an existing one, even a source of the command, kept its TTL
// before: found by the differential fuzzer) — and deleted when there are
// no pairs. Refused whole when the new content passes the per-key cap.
func zstore(x *execCtx) kv.Reply {
	a := x.cmd.Args
	if len(a)%2 != 0 {
		return kv.BadRequest("ZSTORE needs score member pairs")
	}
	next := newZSet()
	for i := 0; i < len(a); i += 2 {
		s, ok := argFloat(a[i])
		if !ok {
			return errNotFloat
		}
		next.set(string(a[i+1]), s)
	}
	dst, r, ok := x.openWrite([]byte(x.cmd.Key), kindAny, false)
	if !ok {
		return r
	}
	if next.count() > 0 && !dst.fitsNew(next) {
		return dst.tooLarge()
	}
	// The pairs as given are a ZADD of the new set (a member named twice:
	// its last score, both ways); the op-log copies them.
	dst.replace(next, &kv.Cmd{Op: kv.CmdZAdd, Args: a})
	x.rec = nil // replaced: execWriteLocked must not report the old record
	return kv.IntReply(int64(next.count()))
}

// zscoreRanges returns the members whose score is in any of the half-open
// ranges [min, max), ranges in the order given and members in score order
// within one (a geo search's geohash boxes, read under one lock).
func zscoreRanges(x *execCtx) kv.Reply {
	a := x.cmd.Args
	if len(a)%2 != 0 {
		return kv.BadRequest("ZSCORERANGES needs min max pairs")
	}
	z := zsetOf(x)
	var out []kv.Reply
	for i := 0; i < len(a) && z != nil; i += 2 {
		lo, ok1 := argFloat(a[i])
		hi, ok2 := argFloat(a[i+1])
		if !ok1 || !ok2 {
			return errNotFloat
		}
		for n := z.sl.firstAtLeast(lo, false); n != nil && n.score < hi; n = n.next() {
			out = append(out, kv.BulkReply([]byte(n.member)), kv.FloatReply(n.score))
		}
	}
	return kv.ArrayReply(out)
}

func init() {
	register(kv.CmdZRangeSpec, handler{kind: KindZSet, run: zrangeSpec})
	register(kv.CmdZLexCount, handler{kind: KindZSet, run: zlexCount})
	register(kv.CmdZRemRange, handler{kind: KindZSet, write: true, run: zremRange})
	register(kv.CmdZPop, handler{kind: KindZSet, write: true, run: zpop})
	register(kv.CmdZMScore, handler{kind: KindZSet, run: zmscore})
	register(kv.CmdZRandMember, handler{kind: KindZSet, run: zrandMember})
	register(kv.CmdZScan, handler{kind: kindAny, run: zscan})
	register(kv.CmdZStore, handler{kind: kindAny, write: true, run: zstore})
	register(kv.CmdZScoreRanges, handler{kind: KindZSet, run: zscoreRanges})
}
