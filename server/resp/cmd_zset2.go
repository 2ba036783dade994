package resp

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// The sorted-set family beyond ZADD…ZCOUNT (issue #13 item 5), with Redis
// 7.0's syntax, replies and errors. Single-key commands parse Redis's
// syntax here, in Redis's order of checks, and run one store command
// (server/store/zset2.go). Multi-key ones (ZUNION, ZINTER, ZDIFF and their
// STORE forms, ZINTERCARD, ZRANGESTORE, ZMPOP) read their sources and
// write their destination under the locks of every key's segment, so they
// are atomic like any Redis command (multikey.go's rule decides whether
// they may run here at all).

func init() {
	z := func(c *command) *command { c.group = "sorted-set"; return keyed(c) }
	numkeys := func(at int) func(args [][]byte) []int { return numKeysAt(at) }
	// Keys only after a count: COMMAND shows no key range (Redis's 0 0 0).
	zn := func(c *command) *command { z(c); c.first, c.last, c.step = 0, 0, 0; return c }
	register(
		z(&command{name: "zrangestore", arity: -5, flags: writeFlags, last: 2, since: "6.2.0",
			summary: "Stores a range of members from sorted set in a key ([BYSCORE|BYLEX] [REV] [LIMIT offset count]).", run: cmdZRangeStore}),
		z(&command{name: "zrangebylex", arity: -4, flags: flagReadonly, since: "2.8.9",
			summary: "Returns members in a sorted set within a lexicographical range ([LIMIT offset count]).", run: zrangeCmd("LEX", false)}),
		z(&command{name: "zrevrangebylex", arity: -4, flags: flagReadonly, since: "2.8.9",
			summary: "Returns members in a sorted set within a lexicographical range in reverse order ([LIMIT offset count]).", run: zrangeCmd("LEX", true)}),
		z(&command{name: "zlexcount", arity: 4, flags: flagReadonly | flagFast, since: "2.8.9",
			summary: "Returns the number of members in a sorted set within a lexicographical range.", run: cmdZLexCount}),
		z(&command{name: "zremrangebyrank", arity: 4, flags: flagWrite, since: "2.0.0",
			summary: "Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", run: cmdZRemRange("RANK")}),
		z(&command{name: "zremrangebyscore", arity: 4, flags: flagWrite, since: "1.2.0",
			summary: "Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", run: cmdZRemRange("SCORE")}),
		z(&command{name: "zremrangebylex", arity: 4, flags: flagWrite, since: "2.8.9",
			summary: "Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", run: cmdZRemRange("LEX")}),
		z(&command{name: "zpopmin", arity: -2, flags: flagWrite | flagFast, since: "5.0.0",
			summary: "Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", run: cmdZPop("MIN")}),
		z(&command{name: "zpopmax", arity: -2, flags: flagWrite | flagFast, since: "5.0.0",
			summary: "Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", run: cmdZPop("MAX")}),
		z(&command{name: "bzpopmin", arity: -3, flags: flagWrite | flagNoScript | flagBlocking | flagFast, last: -2, since: "5.0.0",
			summary: "Removes and returns the member with the lowest score from one or more sorted sets; blocks until a member is available or the timeout (seconds, 0 = forever) passes.", run: cmdBZPop("MIN")}),
		z(&command{name: "bzpopmax", arity: -3, flags: flagWrite | flagNoScript | flagBlocking | flagFast, last: -2, since: "5.0.0",
			summary: "Removes and returns the member with the highest score from one or more sorted sets; blocks until a member is available or the timeout (seconds, 0 = forever) passes.", run: cmdBZPop("MAX")}),
		zn(&command{name: "zmpop", arity: -4, flags: flagWrite, keys: numkeys(1), since: "7.0.0",
			summary: "Returns the highest- or lowest-scoring members from one or more sorted sets after removing them (MIN|MAX [COUNT count]).", run: cmdZMPop(false)}),
		zn(&command{name: "bzmpop", arity: -5, flags: flagWrite | flagBlocking, keys: numkeys(2), since: "7.0.0",
			summary: "Removes and returns members by score from one or more sorted sets; blocks until a member is available or the timeout passes.", run: cmdZMPop(true)}),
		zn(&command{name: "zunion", arity: -3, flags: flagReadonly, keys: numkeys(1), since: "6.2.0",
			summary: "Returns the union of multiple sorted sets ([WEIGHTS weight …] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]).", run: cmdZSetOp(opUnion, false)}),
		zn(&command{name: "zinter", arity: -3, flags: flagReadonly, keys: numkeys(1), since: "6.2.0",
			summary: "Returns the intersection of multiple sorted sets ([WEIGHTS weight …] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]).", run: cmdZSetOp(opInter, false)}),
		zn(&command{name: "zdiff", arity: -3, flags: flagReadonly, keys: numkeys(1), since: "6.2.0",
			summary: "Returns the difference between multiple sorted sets ([WITHSCORES]).", run: cmdZSetOp(opDiff, false)}),
		z(&command{name: "zunionstore", arity: -4, flags: writeFlags, keys: storeKeys, since: "2.0.0",
			summary: "Stores the union of multiple sorted sets in a key.", run: cmdZSetOp(opUnion, true)}),
		z(&command{name: "zinterstore", arity: -4, flags: writeFlags, keys: storeKeys, since: "2.0.0",
			summary: "Stores the intersection of multiple sorted sets in a key.", run: cmdZSetOp(opInter, true)}),
		z(&command{name: "zdiffstore", arity: -4, flags: writeFlags, keys: storeKeys, since: "6.2.0",
			summary: "Stores the difference of multiple sorted sets in a key.", run: cmdZSetOp(opDiff, true)}),
		zn(&command{name: "zintercard", arity: -3, flags: flagReadonly, keys: numkeys(1), since: "7.0.0",
			summary: "Returns the number of members of the intersection of multiple sorted sets ([LIMIT limit]).", run: cmdZInterCard}),
		z(&command{name: "zmscore", arity: -3, flags: flagReadonly | flagFast, since: "6.2.0",
			summary: "Returns the score of one or more members in a sorted set.", run: cmdZMScore}),
		z(&command{name: "zrandmember", arity: -2, flags: flagReadonly, since: "6.2.0",
			summary: "Returns one or more random members from a sorted set ([count [WITHSCORES]]).", run: cmdZRandMember}),
		z(&command{name: "zscan", arity: -3, flags: flagReadonly, since: "2.8.0",
			summary: "Iterates over members and scores of a sorted set ([MATCH pattern] [COUNT count]).", run: cmdZScan}),
	)
}

// numKeysAt finds the keys of a command with a numkeys argument at index
// at, the keys right after it; none when numkeys is not a usable count.
func numKeysAt(at int) func(args [][]byte) []int {
	return func(args [][]byte) []int {
		if at >= len(args) {
			return nil
		}
		n, ok := parseInt(args[at])
		if !ok || n < 1 || n > int64(len(args)-at-1) {
			return nil
		}
		out := make([]int, n)
		for i := range out {
			out[i] = at + 1 + i
		}
		return out
	}
}

// storeKeys is ZUNIONSTORE's: the destination, then numkeys sources.
func storeKeys(args [][]byte) []int {
	src := numKeysAt(2)(args)
	if len(src) == 0 {
		return nil
	}
	return append([]int{1}, src...)
}

// --- ZRANGE and friends ---

// zrangeReq is a parsed Z*RANGE* command.
type zrangeReq struct {
	by          string // RANK, SCORE, LEX
	rev         bool
	start, stop []byte // in the command's order
	offset      int64
	count       int64 // -1: no LIMIT
	withScores  bool
}

// parseZRange parses the arguments after the two bounds, as Redis's
// zrangeGenericCommand: by and rev fixed by the command name ("" / false
// when the options choose). It writes the error and returns false.
func parseZRange(c *conn, opts [][]byte, by string, rev, fixedRev, store bool, start, stop []byte) (zrangeReq, bool) {
	q := zrangeReq{by: by, rev: rev, start: start, stop: stop, count: -1}
	for j := 0; j < len(opts); j++ {
		left := len(opts) - j - 1
		switch a := opts[j]; {
		case !store && eq(a, "WITHSCORES"):
			q.withScores = true
		case eq(a, "LIMIT") && left >= 2:
			off, ok1 := parseInt(opts[j+1])
			cnt, ok2 := parseInt(opts[j+2])
			if !ok1 || !ok2 {
				c.err(msgNotInteger)
				return q, false
			}
			q.offset, q.count = off, cnt
			j += 2
		case !fixedRev && !q.rev && eq(a, "REV"):
			q.rev = true
		case q.by == "" && eq(a, "BYLEX"):
			q.by = "LEX"
		case q.by == "" && eq(a, "BYSCORE"):
			q.by = "SCORE"
		default:
			c.err(msgSyntax)
			return q, false
		}
	}
	if q.by == "" {
		q.by = "RANK"
	}
	switch {
	case q.count != -1 && q.by == "RANK":
		c.err("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return q, false
	case q.withScores && q.by == "LEX":
		c.err("ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return q, false
	}
	if q.by == "RANK" {
		q.offset, q.count = 0, -1
	}
	return q, checkRange(c, q.by, q.rev, q.start, q.stop)
}

// checkRange validates a range's bounds with Redis's errors (before the
// key is looked at, as Redis does).
func checkRange(c *conn, by string, rev bool, a, b []byte) bool {
	switch by {
	case "RANK":
		_, ok1 := parseInt(a)
		_, ok2 := parseInt(b)
		if !ok1 || !ok2 {
			c.err(msgNotInteger)
			return false
		}
	case "SCORE":
		if !validScoreBound(a) || !validScoreBound(b) {
			c.err("ERR min or max is not a float")
			return false
		}
	case "LEX":
		if !validLexBound(a) || !validLexBound(b) {
			c.err("ERR min or max not valid string range item")
			return false
		}
	}
	return true
}

// validScoreBound checks a bound with the store's parser (Redis's
// zslParseRange), so the front end and the store agree on what is a float.
func validScoreBound(b []byte) bool {
	_, _, ok := kv.ParseScoreBound(b)
	return ok
}

func validLexBound(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	switch b[0] {
	case '-', '+':
		return len(b) == 1
	case '[', '(':
		return true
	}
	return false
}

var (
	argZero, argOne                = []byte("0"), []byte("1")
	argRank, argScore, argLexOrder = []byte("RANK"), []byte("SCORE"), []byte("LEX")
)

// flag01 is b as a store argument ("1" or "0"; shared: the store never
// writes into its arguments).
func flag01(b bool) []byte {
	if b {
		return argOne
	}
	return argZero
}

// zrangeArgs is room for one CmdZRangeSpec's arguments, a connection's,
// reused by each ZRANGE: building them allocated seven slices a call
// (12 % of ZRANGE's CPU at -P 16, issue #17).
type zrangeArgs struct {
	args [7][]byte
	nums [2 * 20]byte // offset and count: two int64 in decimal
}

// specArgs are a request's CmdZRangeSpec arguments, built in room (valid
// until room's next use).
func (q zrangeReq) specArgs(room *zrangeArgs, withScores bool) [][]byte {
	a := &room.args
	switch q.by {
	case "RANK":
		a[0] = argRank
	case "SCORE":
		a[0] = argScore
	case "LEX":
		a[0] = argLexOrder
	default:
		a[0] = []byte(q.by)
	}
	nums := strconv.AppendInt(room.nums[:0], q.offset, 10)
	split := len(nums)
	nums = strconv.AppendInt(nums, q.count, 10)
	a[1], a[2], a[3] = flag01(q.rev), q.start, q.stop
	a[4], a[5], a[6] = nums[:split:split], nums[split:len(nums):len(nums)], flag01(withScores)
	return a[:]
}

// zrangeCmd is ZRANGE (by "" and rev false: the options choose) and the
// older forms whose name fixes them (ZREVRANGE, ZRANGEBYSCORE, …).
func zrangeCmd(by string, rev bool) func(c *conn, args [][]byte) {
	fixedRev := by != "" || rev
	return func(c *conn, args [][]byte) {
		q, ok := parseZRange(c, args[4:], by, rev, fixedRev, false, args[2], args[3])
		if !ok {
			return
		}
		sh := shapePlain
		if q.withScores {
			sh = shapeScores
		}
		c.exec(kv.CmdZRangeSpec, args[1], q.specArgs(&c.zrange, q.withScores), sh)
	}
}

// cmdZRangeStore is ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT].
func cmdZRangeStore(c *conn, args [][]byte) {
	q, ok := parseZRange(c, args[5:], "", false, false, true, args[3], args[4])
	if !ok {
		return
	}
	c.atomically(true, args[1:3], func() {
		r := c.execRaw(kv.CmdZRangeSpec, args[2], q.specArgs(&c.zrange, true)...)
		if r.Status != kv.StatusSuccess {
			c.writeReply(r, shapePlain)
			return
		}
		c.storeZSet(args[1], pairsOf(r.Array))
	})
}

// pairsOf turns a member, score, … reply into score-ordered pairs.
func pairsOf(a []kv.Reply) []zpair {
	out := make([]zpair, 0, len(a)/2)
	for i := 0; i+1 < len(a); i += 2 {
		s, _ := strconv.ParseFloat(string(a[i+1].Bulk), 64)
		if string(a[i+1].Bulk) == "inf" {
			s = math.Inf(1)
		} else if string(a[i+1].Bulk) == "-inf" {
			s = math.Inf(-1)
		}
		out = append(out, zpair{member: string(a[i].Bulk), score: s})
	}
	return out
}

type zpair struct {
	member string
	score  float64
}

// storeZSet replaces dst with pairs — whatever it held, its TTL dropped;
// deleted when there are none (ZSTORE, in one step under the key's lock)
// — and replies the number stored.
func (c *conn) storeZSet(dst []byte, pairs []zpair) {
	args := make([][]byte, 0, 2*len(pairs))
	for _, p := range pairs {
		args = append(args, kv.FormatFloat(p.score), []byte(p.member))
	}
	c.exec(kv.CmdZStore, dst, args, shapePlain)
}

func cmdZLexCount(c *conn, args [][]byte) {
	if !checkRange(c, "LEX", false, args[2], args[3]) {
		return
	}
	c.exec(kv.CmdZLexCount, args[1], args[2:], shapePlain)
}

func cmdZRemRange(by string) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if !checkRange(c, by, false, args[2], args[3]) {
			return
		}
		c.exec(kv.CmdZRemRange, args[1], [][]byte{[]byte(by), args[2], args[3]}, shapePlain)
	}
}

// --- pops ---

// writePairs writes member, score, … pairs: flat, or (nested, or RESP3)
// as [member, score] arrays.
func (c *conn) writePairs(a []kv.Reply, nested bool) {
	if !nested {
		c.out.Array(len(a))
		for i := 0; i+1 < len(a); i += 2 {
			c.out.Bulk(a[i].Bulk)
			c.out.DoubleText(a[i+1].Bulk)
		}
		return
	}
	c.out.Array(len(a) / 2)
	for i := 0; i+1 < len(a); i += 2 {
		c.out.Array(2)
		c.out.Bulk(a[i].Bulk)
		c.out.DoubleText(a[i+1].Bulk)
	}
}

func cmdZPop(end string) func(c *conn, args [][]byte) {
	endArg := []byte(end) // once, not per call
	return func(c *conn, args [][]byte) {
		if len(args) > 3 {
			c.err(msgSyntax)
			return
		}
		countArg := argOne
		if len(args) == 3 {
			n, ok := parseInt(args[2])
			if !ok || n < 0 {
				c.err("ERR value is out of range, must be positive")
				return
			}
			countArg = itoa(n)
		}
		r := c.execRaw(kv.CmdZPop, args[1], endArg, countArg)
		if r.Status != kv.StatusSuccess {
			c.writeReply(r, shapePlain)
			return
		}
		c.writePairs(r.Array, len(args) == 3 && c.out.Proto == 3)
	}
}

func cmdBZPop(end string) func(c *conn, args [][]byte) {
	endArg := []byte(end)
	return func(c *conn, args [][]byte) {
		timeout, ok := parseBlockTimeout(c, args[len(args)-1])
		if !ok {
			return
		}
		keys := args[1 : len(args)-1]
		c.blockOn(keys, true, timeout, func() bool {
			for _, k := range keys {
				r := c.execRaw(kv.CmdZPop, k, endArg, argOne)
				switch {
				case c.keepBlocking(r):
				case r.Status != kv.StatusSuccess:
					c.storeError(r.Status, r.Message)
					return true
				case len(r.Array) == 2:
					c.out.Array(3)
					c.out.Bulk(k)
					c.out.Bulk(r.Array[0].Bulk)
					c.out.DoubleText(r.Array[1].Bulk)
					return true
				}
			}
			return false
		})
	}
}

// cmdZMPop is ZMPOP numkeys key … MIN|MAX [COUNT n] and BZMPOP timeout
// numkeys ….
func cmdZMPop(blocking bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		at := 1
		var timeoutArg []byte
		if blocking {
			timeoutArg, at = args[1], 2
		}
		n, ok := parseInt(args[at])
		if !ok || n < 1 {
			c.err("ERR numkeys should be greater than 0")
			return
		}
		if n >= int64(len(args)-at-1) { // no room for MIN|MAX after the keys
			c.err(msgSyntax)
			return
		}
		where := int64(at) + n + 1
		if where >= int64(len(args)) {
			c.err(msgSyntax)
			return
		}
		var end string
		switch {
		case eq(args[where], "MIN"):
			end = "MIN"
		case eq(args[where], "MAX"):
			end = "MAX"
		default:
			c.err(msgSyntax)
			return
		}
		count := int64(-1)
		for j := int(where) + 1; j < len(args); j++ {
			if count == -1 && eq(args[j], "COUNT") && j+1 < len(args) {
				j++
				v, ok := parseInt(args[j])
				if !ok || v < 1 {
					c.err("ERR count should be greater than 0")
					return
				}
				count = v
				continue
			}
			c.err(msgSyntax)
			return
		}
		count = max(count, 1)
		keys := args[at+1 : where]
		var timeout time.Duration
		if blocking {
			d, ok := parseBlockTimeout(c, timeoutArg)
			if !ok {
				return
			}
			timeout = d
		}
		try := func() bool {
			for _, k := range keys {
				r := c.execRaw(kv.CmdZPop, k, []byte(end), itoa(count))
				switch {
				case c.keepBlocking(r):
				case r.Status != kv.StatusSuccess:
					c.storeError(r.Status, r.Message)
					return true
				case len(r.Array) > 0:
					c.out.Array(2)
					c.out.Bulk(k)
					c.writePairs(r.Array, true)
					return true
				}
			}
			return false
		}
		if !blocking {
			if !try() {
				c.out.NullArray()
			}
			return
		}
		c.blockOn(keys, true, timeout, try)
	}
}

// --- ZUNION, ZINTER, ZDIFF ---

type zsetOp uint8

const (
	opUnion zsetOp = iota
	opInter
	opDiff
)

// zsource is one input of a set operation: a sorted set's pairs, or a
// plain set's members scored 1.
type zsource struct {
	pairs  []zpair
	index  map[string]float64
	weight float64
}

// readSource reads key as a sorted set or a set (Redis accepts both); ok
// false after writing WRONGTYPE or another error.
func (c *conn) readSource(key []byte) (zsource, bool) {
	r := c.execRaw(kv.CmdZRangeSpec, key, []byte("RANK"), []byte("0"), []byte("0"), []byte("-1"), []byte("0"), []byte("-1"), []byte("1"))
	if r.Status == kv.StatusWrongType {
		r = c.execRaw(kv.CmdSMembers, key)
		if r.Status != kv.StatusSuccess {
			c.writeReply(r, shapePlain)
			return zsource{}, false
		}
		src := zsource{weight: 1}
		for _, m := range r.Array {
			src.pairs = append(src.pairs, zpair{member: string(m.Bulk), score: 1})
		}
		return src, true
	}
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return zsource{}, false
	}
	return zsource{pairs: pairsOf(r.Array), weight: 1}, true
}

func (s *zsource) lookup(m string) (float64, bool) {
	if s.index == nil {
		s.index = make(map[string]float64, len(s.pairs))
		for _, p := range s.pairs {
			s.index[p.member] = p.score
		}
	}
	v, ok := s.index[m]
	return v, ok
}

// weighted is a source's score times its weight; NaN (0 × ±inf) is 0, as
// Redis has it.
func weighted(score, weight float64) float64 {
	v := score * weight
	if math.IsNaN(v) {
		return 0
	}
	return v
}

func aggregate(how string, acc, v float64) float64 {
	switch how {
	case "MIN":
		return min(acc, v)
	case "MAX":
		return max(acc, v)
	}
	acc += v
	if math.IsNaN(acc) { // inf + -inf: Redis's convention is 0
		return 0
	}
	return acc
}

// cmdZSetOp is ZUNION/ZINTER/ZDIFF numkeys key … (and the STORE forms,
// dst first) with Redis's order of checks: numkeys, then every source's
// type, then the options.
func cmdZSetOp(op zsetOp, store bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		at := 1
		if store {
			at = 2
		}
		n, ok := parseInt(args[at])
		if !ok {
			c.err(msgNotInteger)
			return
		}
		if n < 1 {
			c.err("ERR at least 1 input key is needed for '" + lowerName(args[0]) + "' command")
			return
		}
		if n > int64(len(args)-at-1) {
			c.err(msgSyntax)
			return
		}
		keys := args[at+1 : at+1+int(n)]
		lockKeys := keys
		if store {
			lockKeys = append([][]byte{args[1]}, keys...)
		}
		c.atomically(store, lockKeys, func() {
			srcs := make([]zsource, len(keys))
			for i, k := range keys {
				s, ok := c.readSource(k)
				if !ok {
					return
				}
				srcs[i] = s
			}
			how, withScores, ok := parseSetOpOptions(c, op, store, args[at+1+int(n):], srcs)
			if !ok {
				return
			}
			res := combine(op, how, srcs)
			if store {
				c.storeZSet(args[1], res)
				return
			}
			c.writeZPairs(res, withScores)
		})
	}
}

func parseSetOpOptions(c *conn, op zsetOp, store bool, opts [][]byte, srcs []zsource) (how string, withScores, ok bool) {
	how = "SUM"
	for j := 0; j < len(opts); j++ {
		left := len(opts) - j
		switch a := opts[j]; {
		case op != opDiff && left >= len(srcs)+1 && eq(a, "WEIGHTS"):
			for i := range srcs {
				j++
				w, ok := parseFloat(opts[j])
				if !ok {
					c.err("ERR weight value is not a float")
					return "", false, false
				}
				srcs[i].weight = w
			}
		case op != opDiff && left >= 2 && eq(a, "AGGREGATE"):
			j++
			switch {
			case eq(opts[j], "SUM"):
				how = "SUM"
			case eq(opts[j], "MIN"):
				how = "MIN"
			case eq(opts[j], "MAX"):
				how = "MAX"
			default:
				c.err(msgSyntax)
				return "", false, false
			}
		case !store && eq(a, "WITHSCORES"):
			withScores = true
		default:
			c.err(msgSyntax)
			return "", false, false
		}
	}
	return how, withScores, true
}

// combine computes the operation. Scores are summed in Redis's order (an
// intersection from the smallest source up), so that rounding matches.
func combine(op zsetOp, how string, srcs []zsource) []zpair {
	var out []zpair
	// Redis combines the sources from the smallest up (a union too): the
	// order of the sums.
	order := make([]int, len(srcs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return len(srcs[a].pairs) - len(srcs[b].pairs) })
	switch op {
	case opUnion:
		acc := map[string]float64{}
		for _, i := range order {
			s := srcs[i]
			for _, p := range s.pairs {
				v := weighted(p.score, s.weight)
				if old, ok := acc[p.member]; ok {
					acc[p.member] = aggregate(how, old, v)
				} else {
					acc[p.member] = v
				}
			}
		}
		for m, v := range acc {
			out = append(out, zpair{m, v})
		}
	case opInter:
		first := srcs[order[0]]
	next:
		for _, p := range first.pairs {
			v := weighted(p.score, first.weight)
			for _, i := range order[1:] {
				s, ok := srcs[i].lookup(p.member)
				if !ok {
					continue next
				}
				v = aggregate(how, v, weighted(s, srcs[i].weight))
			}
			out = append(out, zpair{p.member, v})
		}
	case opDiff:
	outer:
		for _, p := range srcs[0].pairs {
			for i := 1; i < len(srcs); i++ {
				if _, ok := srcs[i].lookup(p.member); ok {
					continue outer
				}
			}
			out = append(out, p)
		}
	}
	sortPairs(out)
	return out
}

func sortPairs(p []zpair) {
	slices.SortFunc(p, func(a, b zpair) int {
		switch {
		case a.score < b.score:
			return -1
		case a.score > b.score:
			return 1
		}
		return strings.Compare(a.member, b.member)
	})
}

// writeZPairs writes members (and scores) in order.
func (c *conn) writeZPairs(p []zpair, withScores bool) {
	if !withScores {
		c.out.Array(len(p))
		for _, e := range p {
			c.out.BulkString(e.member)
		}
		return
	}
	if c.out.Proto == 3 {
		c.out.Array(len(p))
	} else {
		c.out.Array(2 * len(p))
	}
	for _, e := range p {
		if c.out.Proto == 3 {
			c.out.Array(2)
		}
		c.out.BulkString(e.member)
		c.out.DoubleText(store.ScoreText(e.score))
	}
}

// cmdZInterCard is ZINTERCARD numkeys key … [LIMIT limit].
func cmdZInterCard(c *conn, args [][]byte) {
	n, ok := parseInt(args[1])
	if !ok {
		c.err(msgNotInteger)
		return
	}
	if n < 1 {
		c.err("ERR at least 1 input key is needed for 'zintercard' command")
		return
	}
	if n > int64(len(args)-2) {
		c.err(msgSyntax)
		return
	}
	keys := args[2 : 2+n]
	c.atomically(false, keys, func() {
		srcs := make([]zsource, len(keys))
		for i, k := range keys {
			s, ok := c.readSource(k)
			if !ok {
				return
			}
			srcs[i] = s
		}
		limit := int64(0)
		opts := args[2+n:]
		for j := 0; j < len(opts); j++ {
			if eq(opts[j], "LIMIT") && j+1 < len(opts) {
				j++
				v, ok := parseInt(opts[j])
				if !ok || v < 0 { // Redis gives the LIMIT message for a non-integer too
					c.err("ERR LIMIT can't be negative")
					return
				}
				limit = v
				continue
			}
			c.err(msgSyntax)
			return
		}
		order := make([]int, len(srcs))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int { return len(srcs[a].pairs) - len(srcs[b].pairs) })
		count := int64(0)
	next:
		for _, p := range srcs[order[0]].pairs {
			for _, i := range order[1:] {
				if _, ok := srcs[i].lookup(p.member); !ok {
					continue next
				}
			}
			count++
			if limit > 0 && count >= limit {
				break
			}
		}
		c.out.Int(count)
	})
}

// --- ZMSCORE, ZRANDMEMBER, ZSCAN ---

func cmdZMScore(c *conn, args [][]byte) {
	r := c.execRaw(kv.CmdZMScore, args[1], args[2:]...)
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return
	}
	c.out.Array(len(r.Array))
	for _, e := range r.Array {
		if e.Type == kv.ReplyNil {
			c.out.Null()
		} else {
			c.out.DoubleText(e.Bulk)
		}
	}
}

// cmdZRandMember is ZRANDMEMBER key [count [WITHSCORES]]. A negative count
// (members may repeat) is answered from one snapshot of the set, streamed:
// the reply's size is the client's to choose, as with Redis, but never
// held in memory whole.
func cmdZRandMember(c *conn, args [][]byte) {
	if len(args) == 2 {
		r := c.execRaw(kv.CmdZRandMember, args[1], []byte("1"), []byte("0"))
		switch {
		case r.Status != kv.StatusSuccess:
			c.writeReply(r, shapePlain)
		case len(r.Array) == 0:
			c.out.Null()
		default:
			c.out.Bulk(r.Array[0].Bulk)
		}
		return
	}
	// Redis reads the count before the rest: a bad count is refused even
	// with a syntax error after it.
	n, ok := parseInt(args[2])
	if !ok {
		c.err(msgNotInteger)
		return
	}
	if n < -math.MaxInt64 {
		c.err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
		return
	}
	ws := false
	switch {
	case len(args) == 4 && eq(args[3], "WITHSCORES"):
		ws = true
	case len(args) != 3:
		c.err(msgSyntax)
		return
	}
	if ws && (n > math.MaxInt64/2 || n < -math.MaxInt64/2) {
		c.err("ERR value is out of range")
		return
	}
	if n >= -store.ZRandDrawsInline { // a large negative count is streamed below
		r := c.execRaw(kv.CmdZRandMember, args[1], itoa(n), flag01(ws))
		if r.Status != kv.StatusSuccess {
			c.writeReply(r, shapePlain)
			return
		}
		if ws {
			c.writePairs(r.Array, c.out.Proto == 3)
			return
		}
		c.writeReply(r, shapePlain)
		return
	}
	r := c.execRaw(kv.CmdZRangeSpec, args[1], []byte("RANK"), []byte("0"), []byte("0"), []byte("-1"), []byte("0"), []byte("-1"), []byte("1"))
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return
	}
	size := len(r.Array) / 2
	if size == 0 {
		c.out.Array(0)
		return
	}
	count := -n
	if c.tx != nil && count > zrandTxDraws {
		c.err("ERR ZRANDMEMBER count is out of range inside a transaction")
		return
	}
	switch {
	case ws && c.out.Proto == 3:
		c.out.Array(int(count))
	case ws:
		c.out.Array(int(2 * count))
	default:
		c.out.Array(int(count))
	}
	for i := int64(0); i < count; i++ {
		e := rand.IntN(size)
		if ws && c.out.Proto == 3 {
			c.out.Array(2)
		}
		c.out.Bulk(r.Array[2*e].Bulk)
		if ws {
			c.out.DoubleText(r.Array[2*e+1].Bulk)
		}
		if c.tx == nil && len(c.out.B) >= streamChunk && (!c.flush() || !c.awaitDrain(16*streamChunk)) {
			c.closing = true
			return
		}
	}
}

// zrandTxDraws bounds a negative ZRANDMEMBER count inside EXEC, where the
// reply is built whole instead of streamed: the transaction holds its
// segments' write locks, which a stream would keep for as long as the
// client takes to read it — and under sync replication a flush waits for
// the barrier of the transaction's own writes, which cannot be shipped
// before EXEC releases those locks: the connection hung, its segment's
// lock held for good.
const zrandTxDraws = 1 << 20

// streamChunk is how much reply a streamed answer holds before it is
// handed to the socket.
const streamChunk = 64 << 10

// awaitDrain holds a streamed reply back until at most limit bytes of it
// wait for the socket: the client's reading paces the producer, so a
// reader keeping up is never cut off by the output buffer limit. False
// once writing failed.
func (c *conn) awaitDrain(limit int) bool {
	c.wmu.Lock()
	if len(c.wq) > limit && c.onLoop() {
		c.wmu.Unlock()
		c.leaveLoop() // it waits for the client to read
		c.wmu.Lock()
	}
	defer c.wmu.Unlock()
	for len(c.wq) > limit && c.werr == nil {
		c.wmu.Unlock()
		time.Sleep(100 * time.Microsecond) // the writer signals no one; a short poll paces well enough
		c.wmu.Lock()
	}
	return c.werr == nil
}

// cmdZScan is ZSCAN key cursor [MATCH pattern] [COUNT count]: the store
// reads the arguments as it does SSCAN/HSCAN's (the cursor first, then the
// key, a missing one answering an empty scan whatever the options, then
// the options), so the native op takes Redis's form too.
func cmdZScan(c *conn, args [][]byte) {
	c.exec(kv.CmdZScan, args[1], args[2:], shapePlain)
}
