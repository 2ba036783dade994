package resp

import (
	"github.com/zaris-io/zaris/internal/kv"
)

// HSTRLEN, HRANDFIELD and HSCAN (issue #13 item 5).

func init() {
	h := func(c *command) *command { c.group = "hash"; return keyed(c) }
	register(
		h(&command{name: "hstrlen", arity: 3, flags: flagReadonly | flagFast, since: "3.2.0",
			summary: "Returns the length of the value of a field.", run: execCmd(kv.CmdHStrLen, shapePlain)}),
		h(&command{name: "hrandfield", arity: -2, flags: flagReadonly, since: "6.2.0",
			summary: "Returns one or more random fields from a hash ([count [WITHVALUES]]; negative: fields may repeat).", run: cmdHRandField}),
		h(&command{name: "hscan", arity: -3, flags: flagReadonly, since: "2.8.0",
			summary: "Iterates over fields and values of a hash (cursor [MATCH pattern] [COUNT count]).", run: execCmd(kv.CmdHScan, shapePlain)}),
	)
}

// cmdHRandField writes HRANDFIELD's reply: WITHVALUES pairs are two-element
// arrays in RESP3, as Redis 7 sends them.
func cmdHRandField(c *conn, args [][]byte) {
	r := c.execRaw(kv.CmdHRandField, args[1], args[2:]...)
	if r.Status != kv.StatusSuccess || len(args) != 4 || c.out.Proto != 3 {
		c.writeReply(r, shapePlain)
		return
	}
	c.out.Array(len(r.Array) / 2)
	for i := 0; i+1 < len(r.Array); i += 2 {
		c.out.Array(2)
		c.out.Bulk(r.Array[i].Bulk)
		c.out.Bulk(r.Array[i+1].Bulk)
	}
}
