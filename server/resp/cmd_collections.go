package resp

import (
	"github.com/zaris-io/zaris/internal/kv"
)

// Hashes, lists, sets and sorted sets: each command maps onto the store
// command of the same name (R-DS-1), which validates its own arguments;
// here only what the RESP shape of the reply needs, and the checks whose
// Redis error text differs from the store's message.

func init() {
	h := func(c *command) *command { c.group = "hash"; return keyed(c) }
	register(
		h(&command{name: "hset", arity: -4, flags: writeFlags | flagFast, since: "2.0.0",
			summary: "Creates or modifies the value of fields in a hash.", run: cmdHSet(false)}),
		h(&command{name: "hmset", arity: -4, flags: writeFlags | flagFast, since: "2.0.0",
			summary: "Sets the values of multiple fields (replies OK).", run: cmdHSet(true)}),
		h(&command{name: "hsetnx", arity: 4, flags: writeFlags | flagFast, since: "2.0.0",
			summary: "Sets the value of a field in a hash only when the field doesn't exist.", run: execCmd(kv.CmdHSetNX, shapePlain)}),
		h(&command{name: "hget", arity: 3, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Returns the value of a field in a hash.", run: execCmd(kv.CmdHGet, shapePlain)}),
		h(&command{name: "hmget", arity: -3, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Returns the values of all fields in a hash.", run: execCmd(kv.CmdHMGet, shapePlain)}),
		h(&command{name: "hdel", arity: -3, flags: flagWrite | flagFast, since: "2.0.0",
			summary: "Deletes one or more fields and their values from a hash. Deletes the hash if no fields remain.", run: execCmd(kv.CmdHDel, shapePlain)}),
		h(&command{name: "hgetall", arity: 2, flags: flagReadonly, since: "2.0.0",
			summary: "Returns all fields and values in a hash.", run: execCmd(kv.CmdHGetAll, shapeMap)}),
		h(&command{name: "hincrby", arity: 4, flags: writeFlags | flagFast, since: "2.0.0",
			summary: "Increments the integer value of a field in a hash by a number. Uses 0 as initial value if the field doesn't exist.", run: execCmd(kv.CmdHIncrBy, shapePlain)}),
		h(&command{name: "hincrbyfloat", arity: 4, flags: writeFlags | flagFast, since: "2.6.0",
			summary: "Increments the floating point value of a field by a number. Uses 0 as initial value if the field doesn't exist.", run: execCmd(kv.CmdHIncrByFloat, shapePlain)}),
		h(&command{name: "hlen", arity: 2, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Returns the number of fields in a hash.", run: execCmd(kv.CmdHLen, shapePlain)}),
		h(&command{name: "hexists", arity: 3, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Determines whether a field exists in a hash.", run: execCmd(kv.CmdHExists, shapePlain)}),
		h(&command{name: "hkeys", arity: 2, flags: flagReadonly, since: "2.0.0",
			summary: "Returns all fields in a hash.", run: execCmd(kv.CmdHKeys, shapePlain)}),
		h(&command{name: "hvals", arity: 2, flags: flagReadonly, since: "2.0.0",
			summary: "Returns all values in a hash.", run: execCmd(kv.CmdHVals, shapePlain)}),
	)

	l := func(c *command) *command { c.group = "list"; return keyed(c) }
	register(
		l(&command{name: "lpush", arity: -3, flags: writeFlags | flagFast, since: "1.0.0",
			summary: "Prepends one or more elements to a list. Creates the key if it doesn't exist.", run: execCmd(kv.CmdLPush, shapePlain)}),
		l(&command{name: "rpush", arity: -3, flags: writeFlags | flagFast, since: "1.0.0",
			summary: "Appends one or more elements to a list. Creates the key if it doesn't exist.", run: execCmd(kv.CmdRPush, shapePlain)}),
		l(&command{name: "lpop", arity: -2, flags: flagWrite | flagFast, since: "1.0.0",
			summary: "Returns the first elements in a list after removing them ([count]). Deletes the list if the last element was popped.", run: cmdPop(kv.CmdLPop)}),
		l(&command{name: "rpop", arity: -2, flags: flagWrite | flagFast, since: "1.0.0",
			summary: "Returns and removes the last elements of a list ([count]). Deletes the list if the last element was popped.", run: cmdPop(kv.CmdRPop)}),
		l(&command{name: "lrange", arity: 4, flags: flagReadonly, since: "1.0.0",
			summary: "Returns a range of elements from a list.", run: execCmd(kv.CmdLRange, shapePlain)}),
		l(&command{name: "llen", arity: 2, flags: flagReadonly | flagFast, since: "1.0.0",
			summary: "Returns the length of a list.", run: execCmd(kv.CmdLLen, shapePlain)}),
		l(&command{name: "lindex", arity: 3, flags: flagReadonly, since: "1.0.0",
			summary: "Returns an element from a list by its index.", run: execCmd(kv.CmdLIndex, shapePlain)}),
		l(&command{name: "lrem", arity: 4, flags: flagWrite, since: "1.0.0",
			summary: "Removes elements from a list. Deletes the list if the last element was removed.", run: execCmd(kv.CmdLRem, shapePlain)}),
		l(&command{name: "ltrim", arity: 4, flags: flagWrite, since: "1.0.0",
			summary: "Removes elements from both ends a list. Deletes the list if all elements were trimmed.", run: execCmd(kv.CmdLTrim, shapePlain)}),
		l(&command{name: "lset", arity: 4, flags: writeFlags, since: "1.0.0",
			summary: "Sets the value of an element in a list by its index.", run: execCmd(kv.CmdLSet, shapePlain)}),
	)

	s := func(c *command) *command { c.group = "set"; return keyed(c) }
	register(
		s(&command{name: "sadd", arity: -3, flags: writeFlags | flagFast, since: "1.0.0",
			summary: "Adds one or more members to a set. Creates the key if it doesn't exist.", run: execCmd(kv.CmdSAdd, shapePlain)}),
		s(&command{name: "srem", arity: -3, flags: flagWrite | flagFast, since: "1.0.0",
			summary: "Removes one or more members from a set. Deletes the set if the last member was removed.", run: execCmd(kv.CmdSRem, shapePlain)}),
		s(&command{name: "smembers", arity: 2, flags: flagReadonly, since: "1.0.0",
			summary: "Returns all members of a set.", run: execCmd(kv.CmdSMembers, shapeSet)}),
		s(&command{name: "sismember", arity: 3, flags: flagReadonly | flagFast, since: "1.0.0",
			summary: "Determines whether a member belongs to a set.", run: execCmd(kv.CmdSIsMember, shapePlain)}),
		s(&command{name: "scard", arity: 2, flags: flagReadonly | flagFast, since: "1.0.0",
			summary: "Returns the number of members in a set.", run: execCmd(kv.CmdSCard, shapePlain)}),
		s(&command{name: "sinter", arity: -2, flags: flagReadonly, last: -1, since: "1.0.0",
			summary: "Returns the intersect of multiple sets.", run: cmdSetAlgebra(kv.CmdSInter)}),
		s(&command{name: "sunion", arity: -2, flags: flagReadonly, last: -1, since: "1.0.0",
			summary: "Returns the union of multiple sets.", run: cmdSetAlgebra(kv.CmdSUnion)}),
	)

	z := func(c *command) *command { c.group = "sorted-set"; return keyed(c) }
	register(
		z(&command{name: "zadd", arity: -4, flags: writeFlags | flagFast, since: "1.2.0",
			summary: "Adds one or more members to a sorted set, or updates their scores ([NX|XX] [GT|LT] [CH] [INCR]).", run: cmdZAdd}),
		z(&command{name: "zrem", arity: -3, flags: flagWrite | flagFast, since: "1.2.0",
			summary: "Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", run: execCmd(kv.CmdZRem, shapePlain)}),
		z(&command{name: "zscore", arity: 3, flags: flagReadonly | flagFast, since: "1.2.0",
			summary: "Returns the score of a member in a sorted set.", run: execCmd(kv.CmdZScore, shapeDouble)}),
		z(&command{name: "zincrby", arity: 4, flags: writeFlags | flagFast, since: "1.2.0",
			summary: "Increments the score of a member in a sorted set.", run: execCmd(kv.CmdZIncrBy, shapeDouble)}),
		z(&command{name: "zcard", arity: 2, flags: flagReadonly | flagFast, since: "1.2.0",
			summary: "Returns the number of members in a sorted set.", run: execCmd(kv.CmdZCard, shapePlain)}),
		z(&command{name: "zrank", arity: 3, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Returns the index of a member in a sorted set ordered by ascending scores.", run: execCmd(kv.CmdZRank, shapePlain)}),
		z(&command{name: "zrevrank", arity: 3, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Returns the index of a member in a sorted set ordered by descending scores.", run: execCmd(kv.CmdZRevRank, shapePlain)}),
		z(&command{name: "zrange", arity: -4, flags: flagReadonly, since: "1.2.0",
			summary: "Returns members in a sorted set within a range of indexes or scores ([BYSCORE] [REV] [LIMIT offset count] [WITHSCORES]).", run: zrangeCmd("", false)}),
		z(&command{name: "zrevrange", arity: -4, flags: flagReadonly, since: "1.2.0",
			summary: "Returns members in a sorted set within a range of indexes, in reverse order ([WITHSCORES]).", run: zrangeCmd("RANK", true)}),
		z(&command{name: "zrangebyscore", arity: -4, flags: flagReadonly, since: "1.0.5",
			summary: "Returns members in a sorted set within a range of scores ([WITHSCORES] [LIMIT offset count]).", run: zrangeCmd("SCORE", false)}),
		z(&command{name: "zrevrangebyscore", arity: -4, flags: flagReadonly, since: "2.2.0",
			summary: "Returns members in a sorted set within a range of scores in reverse order ([WITHSCORES] [LIMIT offset count]).", run: zrangeCmd("SCORE", true)}),
		z(&command{name: "zcount", arity: 4, flags: flagReadonly | flagFast, since: "2.0.0",
			summary: "Returns the count of members in a sorted set that have scores within a range.", run: execCmd(kv.CmdZCount, shapePlain)}),
	)
}

// keyed gives a one-key command its key position (1) unless it names more.
func keyed(c *command) *command {
	c.first, c.step = 1, 1
	if c.last == 0 {
		c.last = 1
	}
	return c
}

func cmdHSet(replyOK bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if len(args)%2 != 0 {
			c.err("ERR wrong number of arguments for '" + lowerName(args[0]) + "' command")
			return
		}
		if !replyOK {
			c.exec(kv.CmdHSet, args[1], args[2:], shapePlain)
			return
		}
		k := view(args[1])
		r := c.segment(k).Exec(kv.Cmd{Op: kv.CmdHSet, Key: k, Args: args[2:]})
		if r.Status == kv.StatusSuccess {
			c.out.OK()
			return
		}
		c.writeReply(r, shapePlain)
	}
}

func cmdPop(op kv.CmdOp) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		switch len(args) {
		case 2:
			c.exec(op, args[1], nil, shapePlain)
		case 3:
			n, ok := parseInt(args[2])
			if !ok || n < 0 {
				c.err("ERR value is out of range, must be positive")
				return
			}
			c.exec(op, args[1], args[2:], shapeNullArray)
		default:
			c.err("ERR wrong number of arguments for '" + lowerName(args[0]) + "' command")
		}
	}
}

// cmdZAdd checks ZADD's options with Redis's error texts, then hands the
// command to the store unchanged.
func cmdZAdd(c *conn, args [][]byte) {
	var nx, xx, gt, lt, incr bool
	i := 2
	for ; i < len(args); i++ {
		switch a := args[i]; {
		case eq(a, "NX"):
			nx = true
		case eq(a, "XX"):
			xx = true
		case eq(a, "GT"):
			gt = true
		case eq(a, "LT"):
			lt = true
		case eq(a, "CH"):
		case eq(a, "INCR"):
			incr = true
		default:
			goto pairs
		}
	}
pairs:
	elements := len(args) - i
	switch {
	case elements == 0 || elements%2 != 0:
		c.err(msgSyntax)
		return
	case nx && xx:
		c.err("ERR XX and NX options at the same time are not compatible")
		return
	case gt && nx || lt && nx || gt && lt:
		c.err("ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	case incr && elements > 2:
		c.err("ERR INCR option supports a single increment-element pair")
		return
	}
	for j := i; j < len(args); j += 2 {
		if _, ok := parseFloat(args[j]); !ok {
			c.err(msgNotFloat)
			return
		}
	}
	sh := shapePlain
	if incr {
		sh = shapeDouble
	}
	c.exec(kv.CmdZAdd, args[1], args[2:], sh)
}
