package resp

import (
	"github.com/zaris-io/zaris/internal/kv"
)

// SMOVE, SPOP, SRANDMEMBER, SDIFF, SDIFFSTORE/SINTERSTORE/SUNIONSTORE,
// SMISMEMBER, SINTERCARD and SSCAN (issue #13 item 5). The store checks
// each command's arguments in Redis's order; commands naming several keys
// run through execAcross (one segment, or the keys' segments locked).

func init() {
	s := func(c *command) *command { c.group = "set"; return keyed(c) }
	register(
		s(&command{name: "smove", arity: 4, flags: flagWrite | flagFast, last: 2, since: "1.0.0",
			summary: "Moves a member from one set to another.", run: cmdMultiKey(kv.CmdSMove, 2, shapePlain)}),
		s(&command{name: "spop", arity: -2, flags: flagWrite | flagFast, since: "1.0.0",
			summary: "Returns one or more random members from a set after removing them ([count]). Deletes the set if the last member was popped.",
			run:     cmdRandom(kv.CmdSPop, 3)}),
		s(&command{name: "srandmember", arity: -2, flags: flagReadonly, since: "1.0.0",
			summary: "Get one or multiple random members from a set ([count]; negative: members may repeat).", run: cmdRandom(kv.CmdSRandMember, 3)}),
		s(&command{name: "sdiff", arity: -2, flags: flagReadonly, last: -1, since: "1.0.0",
			summary: "Returns the difference of multiple sets.", run: cmdMultiKey(kv.CmdSDiff, -1, shapeSet)}),
		s(&command{name: "sdiffstore", arity: -3, flags: writeFlags, last: -1, since: "1.0.0",
			summary: "Stores the difference of multiple sets in a key.", run: cmdMultiKey(kv.CmdSDiffStore, -1, shapePlain)}),
		s(&command{name: "sinterstore", arity: -3, flags: writeFlags, last: -1, since: "1.0.0",
			summary: "Stores the intersect of multiple sets in a key.", run: cmdMultiKey(kv.CmdSInterStore, -1, shapePlain)}),
		s(&command{name: "sunionstore", arity: -3, flags: writeFlags, last: -1, since: "1.0.0",
			summary: "Stores the union of multiple sets in a key.", run: cmdMultiKey(kv.CmdSUnionStore, -1, shapePlain)}),
		s(&command{name: "smismember", arity: -3, flags: flagReadonly | flagFast, since: "6.2.0",
			summary: "Determines whether multiple members belong to a set.", run: execCmd(kv.CmdSMIsMember, shapePlain)}),
		s(&command{name: "sscan", arity: -3, flags: flagReadonly, since: "2.8.0",
			summary: "Iterates over members of a set (cursor [MATCH pattern] [COUNT count]).", run: execCmd(kv.CmdSScan, shapePlain)}),
	)
	register(&command{name: "sintercard", arity: -3, flags: flagReadonly | flagMovableKeys, group: "set", since: "7.0.0",
		summary: "Returns the number of members of the intersect of multiple sets (numkeys key … [LIMIT limit]).",
		keys:    numKeysAt(1), run: cmdSInterCard})
}

// cmdMultiKey runs a store command whose keys are args[1:last+1] (last < 0:
// every argument): the first is the command's key, the others its first
// arguments, the rest follow.
func cmdMultiKey(op kv.CmdOp, last int, sh shape) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		end := last + 1
		if last < 0 {
			end = len(args)
		}
		r := c.execAcross(args[1:end], kv.Cmd{Op: op, Key: view(args[1]), Args: args[2:]})
		c.writeReply(r, sh)
	}
}

// cmdRandom is SPOP and SRANDMEMBER: without a count a bulk (or null),
// with one a set (SPOP) or an array; more arguments than maxArgs are a
// syntax error, as in Redis.
func cmdRandom(op kv.CmdOp, maxArgs int) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if len(args) > maxArgs {
			c.err(msgSyntax)
			return
		}
		sh := shapePlain
		if len(args) == 3 && op == kv.CmdSPop {
			sh = shapeSet
		}
		c.exec(op, args[1], args[2:], sh)
	}
}

// cmdSInterCard checks numkeys and LIMIT with Redis's errors before any
// key is read.
func cmdSInterCard(c *conn, args [][]byte) {
	n, ok := parseInt(args[1])
	if !ok || n < 1 {
		c.err("ERR numkeys should be greater than 0")
		return
	}
	if n > int64(len(args)-2) {
		c.err("ERR Number of keys can't be greater than number of args")
		return
	}
	keys := args[2 : 2+n]
	limit := []byte("0")
	for i := 2 + int(n); i < len(args); i++ {
		if !eq(args[i], "LIMIT") || i+1 >= len(args) {
			c.err(msgSyntax)
			return
		}
		if v, ok := parseInt(args[i+1]); !ok || v < 0 {
			c.err("ERR LIMIT can't be negative")
			return
		}
		limit = args[i+1]
		i++
	}
	storeArgs := append([][]byte{limit}, keys[1:]...)
	c.writeReply(c.execAcross(keys, kv.Cmd{Op: kv.CmdSInterCard, Key: view(keys[0]), Args: storeArgs}), shapePlain)
}
