package resp

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// Streams (R-DS-2): every command maps onto the store's stream command of
// the same name. The store takes one key per XREAD/XREADGROUP; the front
// end runs it per key and assembles Redis's reply ([[key, entries] …], a
// map in RESP3). BLOCK waits on store watches of the keys (block.go).

func init() {
	x := func(c *command) *command { c.group = "stream"; return c }
	register(
		x(&command{name: "xadd", arity: -5, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Appends a new message to a stream. Creates the key if it doesn't exist ([NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value …).",
			tips:    []string{"nondeterministic_output"}, run: execCmd(kv.CmdXAdd, shapePlain)}),
		x(&command{name: "xrange", arity: -4, flags: flagReadonly, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Returns the messages from a stream within a range of IDs ([COUNT count]).", run: execCmd(kv.CmdXRange, shapeNullArray)}),
		x(&command{name: "xrevrange", arity: -4, flags: flagReadonly, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Returns the messages from a stream within a range of IDs in reverse order ([COUNT count]).", run: execCmd(kv.CmdXRevRange, shapeNullArray)}),
		x(&command{name: "xlen", arity: 2, flags: flagReadonly | flagFast, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Return the number of messages in a stream.", run: execCmd(kv.CmdXLen, shapePlain)}),
		x(&command{name: "xdel", arity: -3, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Returns the number of messages after removing them from a stream.", run: execCmd(kv.CmdXDel, shapePlain)}),
		x(&command{name: "xtrim", arity: -4, flags: flagWrite, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Deletes messages from the beginning of a stream (MAXLEN|MINID [=|~] threshold [LIMIT count]; ~ removes whole nodes, as Redis).",
			tips:    []string{"nondeterministic_output"}, run: execCmd(kv.CmdXTrim, shapePlain)}),
		x(&command{name: "xread", arity: -4, flags: flagReadonly | flagBlocking | flagMovableKeys, since: "5.0.0",
			summary: "Returns messages from multiple streams with IDs greater than the ones requested ([COUNT count] [BLOCK ms] STREAMS key … id …).",
			keys:    streamsKeys, run: cmdXRead(false)}),
		x(&command{name: "xreadgroup", arity: -7, flags: flagWrite | flagBlocking | flagMovableKeys, since: "5.0.0",
			summary: "Returns new or historical messages from a stream for a consumer in a group (GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key … id …).",
			keys:    streamsKeys, run: cmdXRead(true)}),
		x(&command{name: "xack", arity: -4, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Returns the number of messages that were successfully acknowledged by the consumer group member of a stream.", run: execCmd(kv.CmdXAck, shapePlain)}),
		x(&command{name: "xpending", arity: -3, flags: flagReadonly, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Returns the information and entries from a stream consumer group's pending entries list ([[IDLE min-idle] start end count [consumer]]).",
			tips:    []string{"nondeterministic_output"}, run: cmdXPending}),
		x(&command{name: "xclaim", arity: -6, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "5.0.0",
			summary: "Changes, or acquires, ownership of a message in a consumer group, as if the message was delivered a consumer group member.",
			tips:    []string{"nondeterministic_output"}, run: execCmd(kv.CmdXClaim, shapeStream)}),
		x(&command{name: "xautoclaim", arity: -6, flags: flagWrite | flagFast, first: 1, last: 1, step: 1, since: "6.2.0",
			summary: "Changes, or acquires, ownership of messages in a consumer group, as if the messages were delivered to as consumer group member.",
			tips:    []string{"nondeterministic_output"}, run: execCmd(kv.CmdXAutoClaim, shapeStream)}),
		x(&command{name: "xgroup", arity: -2, since: "5.0.0", summary: "A container for consumer groups commands.", subs: []*command{
			{name: "create", arity: -5, flags: writeFlags, first: 2, last: 2, step: 1,
				summary: "Creates a consumer group ([MKSTREAM]).", run: cmdXGroup},
			{name: "destroy", arity: 4, flags: flagWrite, first: 2, last: 2, step: 1,
				summary: "Destroys a consumer group.", run: cmdXGroup},
			{name: "setid", arity: -5, flags: flagWrite, first: 2, last: 2, step: 1,
				summary: "Sets the last-delivered ID of a consumer group.", run: cmdXGroup},
			{name: "createconsumer", arity: 5, flags: writeFlags, first: 2, last: 2, step: 1,
				summary: "Creates a consumer in a consumer group.", run: cmdXGroup},
			{name: "delconsumer", arity: 5, flags: flagWrite, first: 2, last: 2, step: 1,
				summary: "Deletes a consumer from a consumer group.", run: cmdXGroup},
			{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the XGROUP subcommands.", run: cmdXGroupHelp},
		}}),
	)
}

// cmdXGroup: XGROUP <sub> key group … → the store's XGROUP <sub> group …
// on key.
func cmdXGroup(c *conn, args [][]byte) {
	storeArgs := make([][]byte, 0, len(args)-2)
	storeArgs = append(storeArgs, args[1])
	storeArgs = append(storeArgs, args[3:]...)
	r := c.execRaw(kv.CmdXGroup, args[2], storeArgs...)
	if r.Status != kv.StatusSuccess && strings.HasPrefix(r.Message, "NOGROUP ") {
		// Redis's wording for XGROUP.
		r.Message = "NOGROUP No such consumer group '" + cString(string(args[3])) + "' for key name '" + cString(string(args[2])) + "'"
	}
	c.writeReply(r, shapePlain)
}

// cmdXPending: the summary form of an empty PEL ends with a null array,
// not a null string, in Redis.
func cmdXPending(c *conn, args [][]byte) {
	r := c.execRaw(kv.CmdXPending, args[1], args[2:]...)
	if r.Status == kv.StatusSuccess && len(args) == 3 && len(r.Array) == 4 && r.Array[3].Type == kv.ReplyNil {
		c.out.Array(4)
		for _, e := range r.Array[:3] {
			c.writeReply(e, shapePlain)
		}
		c.out.NullArray()
		return
	}
	c.writeReply(r, shapePlain)
}

func cmdXGroupHelp(c *conn, _ [][]byte) {
	writeHelp(c, "XGROUP", []string{
		"CREATE <key> <groupname> <id|$> [MKSTREAM]", "    Create a new consumer group.",
		"CREATECONSUMER <key> <groupname> <consumer>", "    Create a new consumer in the specified group.",
		"DELCONSUMER <key> <groupname> <consumer>", "    Remove the specified consumer.",
		"DESTROY <key> <groupname>", "    Remove the specified group.",
		"SETID <key> <groupname> <id|$>", "    Set the current group ID.",
	})
}

// streamsKeys finds the keys of XREAD/XREADGROUP: the first half of what
// follows STREAMS.
func streamsKeys(args [][]byte) []int {
	for i := 1; i < len(args); i++ {
		switch {
		case eq(args[i], "STREAMS"):
			n := len(args) - i - 1
			if n == 0 || n%2 != 0 {
				return nil
			}
			out := make([]int, 0, n/2)
			for j := i + 1; j < i+1+n/2; j++ {
				out = append(out, j)
			}
			return out
		case eq(args[i], "GROUP"):
			i += 2
		case eq(args[i], "COUNT"), eq(args[i], "BLOCK"):
			i++
		}
	}
	return nil
}

// xreadReq is a parsed XREAD/XREADGROUP.
type xreadReq struct {
	group, consumer []byte
	count           int64 // -1: none
	block           time.Duration
	blocking        bool
	noAck           bool
	keys, ids       [][]byte
}

func parseXRead(c *conn, args [][]byte, group bool) (xreadReq, bool) {
	r := xreadReq{count: -1}
	streamsAt := 0
	for i := 1; i < len(args) && streamsAt == 0; i++ {
		more := len(args) - i - 1
		switch a := args[i]; {
		case eq(a, "BLOCK") && more > 0:
			ms, ok := parseInt(args[i+1])
			if !ok {
				c.err("ERR timeout is not an integer or out of range")
				return r, false
			}
			if ms < 0 {
				c.err("ERR timeout is negative")
				return r, false
			}
			r.blocking, r.block = true, time.Duration(min(ms, math.MaxInt64/int64(time.Millisecond)))*time.Millisecond
			i++
		case eq(a, "COUNT") && more > 0:
			n, ok := parseInt(args[i+1])
			if !ok {
				c.err(msgNotInteger)
				return r, false
			}
			r.count = max(n, 0)
			i++
		case eq(a, "STREAMS") && more > 0:
			streamsAt = i + 1
		case eq(a, "GROUP") && more >= 2:
			if !group {
				c.err("ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return r, false
			}
			r.group, r.consumer = args[i+1], args[i+2]
			i += 2
		case eq(a, "NOACK"):
			if !group {
				c.err("ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return r, false
			}
			r.noAck = true
		default:
			c.err(msgSyntax)
			return r, false
		}
	}
	switch n := len(args) - streamsAt; {
	case streamsAt == 0:
		c.err(msgSyntax)
		return r, false
	case n%2 != 0:
		// Redis 7.0 names XREAD here for XREADGROUP too.
		c.err("ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified.")
		return r, false
	case group && r.group == nil:
		c.err("ERR Missing GROUP option for XREADGROUP")
		return r, false
	default:
		r.keys = args[streamsAt : streamsAt+n/2]
		r.ids = args[streamsAt+n/2:]
	}
	// The ids are checked per key by the store, after the key's type and
	// group, as Redis does ('>' in XREAD, '$' in XREADGROUP, the syntax).
	return r, true
}

func cmdXRead(group bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		req, ok := parseXRead(c, args, group)
		if !ok {
			return
		}
		if !group {
			// "$" is the last id when the command runs: resolve it once, so
			// a blocked read returns what arrives after, not after itself.
			ids := make([][]byte, len(req.ids))
			for i, id := range req.ids {
				ids[i] = id
				if string(id) == "$" {
					ids[i] = c.lastStreamID(req.keys[i])
				}
			}
			req.ids = ids
		}
		try := func() bool { return c.xreadOnce(&req, group) }
		if group && len(req.keys) > 1 {
			// Redis checks every key (type, group, id) before it serves
			// any: one try checks them all, then reads, under the keys'
			// locks, so that a bad last key leaves the first ones unread.
			try = func() bool {
				ran, done := false, false
				c.atomically(true, req.keys, func() {
					ran = true
					done = !c.xreadGroupChecked(&req) || c.xreadOnce(&req, group)
				})
				return done || !ran // not run: refused whole (a write fence), the error written
			}
		}
		c.blockOn(req.keys, req.blocking, req.block, try)
	}
}

// xreadGroupChecked checks each key of an XREADGROUP in Redis's order —
// its type, the group, then its id — and reports true when all pass, or
// writes the first error.
func (c *conn) xreadGroupChecked(req *xreadReq) bool {
	for i, key := range req.keys {
		// XPENDING … - + 0 looks the key and the group up and reads nothing.
		r := c.execRaw(kv.CmdXPending, key, req.group, []byte("-"), []byte("+"), []byte("0"))
		if r.Status == kv.StatusSuccess {
			r = store.CheckGroupReadID(req.ids[i])
		}
		if r.Status != kv.StatusSuccess {
			if c.groupReadGone(key, r) {
				return false
			}
			if strings.HasPrefix(r.Message, "NOGROUP ") {
				r.Message += " in XREADGROUP with GROUP option"
			}
			c.storeError(r.Status, r.Message)
			return false
		}
	}
	return true
}

// groupReadGone answers a blocked XREADGROUP whose wake-up found its
// stream or group gone, with Redis 7.0's errors: the key deleted or now of
// another type ends the wait (a group read cannot outlive its stream, even
// if the key is made again), and so does a deleted group. It reports
// whether it answered (only on a retry: a first try answers the store's
// errors, as Redis does).
func (c *conn) groupReadGone(key []byte, r kv.Reply) bool {
	switch {
	case !c.blockRetry:
		return false
	case string(c.execRaw(kv.CmdType, key).Bulk) != "stream":
		c.err("UNBLOCKED the stream key no longer exists")
	case strings.HasPrefix(r.Message, "NOGROUP "):
		c.err("NOGROUP the consumer group this client was blocked on no longer exists")
	default:
		return false
	}
	return true
}

// lastStreamID is the id of the newest entry of a stream ("0-0" when the
// stream is empty or absent).
func (c *conn) lastStreamID(key []byte) []byte {
	r := c.execRaw(kv.CmdXRevRange, key, []byte("+"), []byte("-"), []byte("COUNT"), []byte("1"))
	if r.Status == kv.StatusSuccess && len(r.Array) == 1 && len(r.Array[0].Array) > 0 {
		return r.Array[0].Array[0].Bulk
	}
	return []byte("0-0")
}

// xreadOnce reads every key once. It writes the reply and reports true when
// there is something to return (or an error); false when a blocking read
// should wait.
func (c *conn) xreadOnce(req *xreadReq, group bool) bool {
	type result struct {
		key []byte
		r   kv.Reply
	}
	var found []result
	for i, key := range req.keys {
		var r kv.Reply
		if group {
			a := [][]byte{req.group, req.consumer}
			if req.count >= 0 {
				a = append(a, []byte("COUNT"), strconv.AppendInt(nil, req.count, 10))
			}
			if req.noAck {
				a = append(a, []byte("NOACK"))
			}
			r = c.execRaw(kv.CmdXReadGroup, key, append(a, req.ids[i])...)
		} else {
			a := [][]byte{req.ids[i]}
			if req.count > 0 {
				a = append(a, []byte("COUNT"), strconv.AppendInt(nil, req.count, 10))
			}
			r = c.execRaw(kv.CmdXRead, key, a...)
		}
		if r.Status != kv.StatusSuccess && group && c.groupReadGone(key, r) {
			return true
		}
		if c.keepBlocking(r) {
			continue
		}
		if r.Status != kv.StatusSuccess {
			if group && strings.HasPrefix(r.Message, "NOGROUP ") {
				r.Message += " in XREADGROUP with GROUP option"
			}
			c.storeError(r.Status, r.Message)
			return true
		}
		history := group && store.GroupReadsHistory(req.ids[i])
		if len(r.Array) > 0 || history {
			found = append(found, result{key, r})
		}
	}
	if len(found) == 0 {
		if req.blocking {
			return false
		}
		c.out.NullArray()
		return true
	}
	if c.out.Proto == 3 {
		c.out.Map(len(found))
	} else {
		c.out.Array(len(found))
	}
	for _, f := range found {
		if c.out.Proto != 3 {
			c.out.Array(2)
		}
		c.out.Bulk(f.key)
		c.writeReply(f.r, shapeStream)
	}
	return true
}
