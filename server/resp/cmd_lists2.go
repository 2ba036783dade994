package resp

import (
	"slices"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/store"
)

// LINSERT, LPOS, LPUSHX/RPUSHX, LMOVE/RPOPLPUSH, LMPOP and their blocking
// forms BLMOVE/BRPOPLPUSH/BLMPOP (issue #13 item 5). Each maps onto one
// store command, which checks its arguments in Redis's order (options
// before the key's type) and reaches the command's other keys through the
// segments held (server/store/multikey.go).

func init() {
	l := func(c *command) *command { c.group = "list"; return keyed(c) }
	register(
		l(&command{name: "linsert", arity: 5, flags: writeFlags, since: "2.2.0",
			summary: "Inserts an element before or after another element in a list.", run: execCmd(kv.CmdLInsert, shapePlain)}),
		l(&command{name: "lpos", arity: -3, flags: flagReadonly, since: "6.0.6",
			summary: "Returns the index of matching elements in a list ([RANK rank] [COUNT num-matches] [MAXLEN len]).", run: execCmd(kv.CmdLPos, shapePlain)}),
		l(&command{name: "lpushx", arity: -3, flags: writeFlags | flagFast, since: "2.2.0",
			summary: "Prepends one or more elements to a list only when the list exists.", run: execCmd(kv.CmdLPushX, shapePlain)}),
		l(&command{name: "rpushx", arity: -3, flags: writeFlags | flagFast, since: "2.2.0",
			summary: "Appends an element to a list only when the list exists.", run: execCmd(kv.CmdRPushX, shapePlain)}),
		l(&command{name: "lmove", arity: 5, flags: writeFlags, last: 2, since: "6.2.0",
			summary: "Returns an element after popping it from one list and pushing it to another. Deletes the list if the last element was moved.",
			run:     cmdLMove(false)}),
		l(&command{name: "rpoplpush", arity: 3, flags: writeFlags, last: 2, since: "1.2.0",
			summary: "Returns the last element of a list after removing and pushing it to another list. Deletes the list if the last element was popped.",
			run:     cmdLMove(false)}),
		l(&command{name: "blmove", arity: 6, flags: writeFlags | flagNoScript | flagBlocking, last: 2, since: "6.2.0",
			summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available or the timeout (seconds, 0 = forever) passes.",
			run:     cmdLMove(true)}),
		l(&command{name: "brpoplpush", arity: 4, flags: writeFlags | flagNoScript | flagBlocking, last: 2, since: "2.2.0",
			summary: "Pops an element from a list, pushes it to another list and returns it. Blocks until an element is available or the timeout (seconds, 0 = forever) passes.",
			run:     cmdLMove(true)}),
	)
	register(
		&command{name: "lmpop", arity: -4, flags: flagWrite | flagMovableKeys, group: "list", since: "7.0.0",
			summary: "Returns multiple elements from a list after removing them (numkeys key … LEFT|RIGHT [COUNT count]). Deletes the list if the last element was popped.",
			keys:    numKeysAt(1), run: cmdLMPop(false)},
		&command{name: "blmpop", arity: -5, flags: flagWrite | flagBlocking | flagMovableKeys, group: "list", since: "7.0.0",
			summary: "Pops the first elements from the first non-empty list (timeout numkeys key … LEFT|RIGHT [COUNT count]). Blocks until an element is available or the timeout passes.",
			keys:    numKeysAt(2), run: cmdLMPop(true)},
	)
	for _, name := range []string{"blmove", "brpoplpush", "blmpop"} {
		unlockedCommands[name] = true // each try takes its locks (execAcross)
	}
}

// execAcross runs a store command naming several keys atomically: inside a
// transaction or a multi-key command's locked view through it; keys of one
// segment through that segment; keys of several segments, all served here,
// under their locks (what a blocking command's try takes, as it holds none
// while it waits).
func (c *conn) execAcross(keys [][]byte, cmd kv.Cmd) kv.Reply {
	if c.tx != nil {
		return c.segment(cmd.Key).Exec(cmd)
	}
	segs := make([]uint16, len(keys))
	for i, k := range keys {
		segs[i] = placement.SegmentOf(view(k), c.srv.segs)
	}
	slices.Sort(segs)
	segs = slices.Compact(segs)
	if len(segs) == 1 {
		return c.segment(cmd.Key).Exec(cmd) // cmd.Key is one of keys: that segment
	}
	for _, g := range segs {
		if !c.served(g) {
			return kv.BadRequest("CROSSSLOT")
		}
	}
	var r kv.Reply
	c.srv.store.AtomicallyMany(segs, func(a *store.Atomic) {
		a.SetNoTouch(c.untouched())
		r = a.Exec(cmd)
	})
	return r
}

// cmdLMove is LMOVE and RPOPLPUSH, and with block BLMOVE and BRPOPLPUSH:
// the ends are checked first, then the timeout, then the keys (Redis's
// order).
func cmdLMove(block bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		from, to := []byte("RIGHT"), []byte("LEFT")
		rest := args[3:]
		if eq(args[0], "LMOVE") || eq(args[0], "BLMOVE") {
			from, to, rest = args[3], args[4], args[5:]
			if !isListEnd(from) || !isListEnd(to) {
				c.err(msgSyntax)
				return
			}
		}
		var timeout time.Duration
		if block {
			var ok bool
			if timeout, ok = parseBlockTimeout(c, rest[0]); !ok {
				return
			}
		}
		keys := args[1:3]
		cmd := kv.Cmd{Op: kv.CmdLMove, Key: view(args[1]), Args: [][]byte{args[2], from, to}}
		if !block {
			c.writeReply(c.execAcross(keys, cmd), shapePlain)
			return
		}
		if c.tx != nil {
			// Inside EXEC a blocking move never waits: Redis answers a null
			// (not a null array, as BLPOP does) when there is nothing to move.
			c.writeReply(c.execAcross(keys, cmd), shapePlain)
			return
		}
		c.blockOn(keys[:1], true, timeout, func() bool {
			r := c.execAcross(keys, cmd)
			// A source that is no list now keeps the wait (keepBlocking);
			// a destination of another type is the client's error, as in
			// Redis, and the element stays for the next client.
			if r.Status == kv.StatusSuccess && r.Type == kv.ReplyNil ||
				c.keepBlocking(r) && string(c.execRaw(kv.CmdType, keys[0]).Bulk) != "list" {
				return false
			}
			c.writeReply(r, shapePlain)
			return true
		})
	}
}

func isListEnd(b []byte) bool { return eq(b, "LEFT") || eq(b, "RIGHT") }

// cmdLMPop is LMPOP and, with block, BLMPOP: numkeys, the end and COUNT
// are checked before the timeout and the keys (Redis's order).
func cmdLMPop(block bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		at := 1
		if block {
			at = 2
		}
		n, ok := parseInt(args[at])
		if !ok || n < 1 {
			c.err("ERR numkeys should be greater than 0")
			return
		}
		if n > int64(len(args)-at-2) {
			c.err(msgSyntax)
			return
		}
		keys := args[at+1 : at+1+int(n)]
		opts := args[at+1+int(n):]
		if !isListEnd(opts[0]) {
			c.err(msgSyntax)
			return
		}
		count := []byte("1")
		countSet := false
		for i := 1; i < len(opts); i++ {
			if !eq(opts[i], "COUNT") || countSet || i+1 >= len(opts) {
				c.err(msgSyntax)
				return
			}
			if v, ok := parseInt(opts[i+1]); !ok || v < 1 {
				c.err("ERR count should be greater than 0")
				return
			}
			count, countSet = opts[i+1], true
			i++
		}
		var timeout time.Duration
		if block {
			if timeout, ok = parseBlockTimeout(c, args[1]); !ok {
				return
			}
		}
		storeArgs := append([][]byte{opts[0], count}, keys[1:]...)
		cmd := kv.Cmd{Op: kv.CmdLMPop, Key: view(keys[0]), Args: storeArgs}
		c.blockOn(keys, block, timeout, func() bool {
			if c.blockRetry {
				// A wake-up serves the first key holding a list; one of
				// another type no longer answers WRONGTYPE (keepBlocking).
				for i, k := range keys {
					r := c.execAcross(keys[i:i+1], kv.Cmd{Op: kv.CmdLMPop, Key: view(k), Args: storeArgs[:2]})
					if c.keepBlocking(r) || r.Status == kv.StatusSuccess && r.Type == kv.ReplyNil {
						continue
					}
					c.writeReply(r, shapeNullArray)
					return true
				}
				return false
			}
			r := c.execAcross(keys, cmd)
			if block && r.Status == kv.StatusSuccess && r.Type == kv.ReplyNil {
				return false
			}
			c.writeReply(r, shapeNullArray)
			return true
		})
	}
}
