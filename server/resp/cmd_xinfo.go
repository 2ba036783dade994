package resp

import (
	"github.com/zaris-io/zaris/internal/kv"
)

// XINFO STREAM [FULL [COUNT n]] / GROUPS / CONSUMERS and XSETID, with Redis
// 7.0's reply shapes: the store answers maps as flat field, value arrays;
// here they become RESP3 maps (RESP2: the flat arrays Redis sends).

func init() {
	register(
		&command{name: "xinfo", arity: -2, group: "stream", since: "5.0.0",
			summary: "A container for stream introspection commands.", subs: []*command{
				{name: "stream", arity: -3, flags: flagReadonly, first: 2, last: 2, step: 1,
					summary: "Returns information about a stream ([FULL [COUNT count]]).", run: cmdXInfoStream},
				{name: "groups", arity: 3, flags: flagReadonly, first: 2, last: 2, step: 1,
					summary: "Returns a list of the consumer groups of a stream.", run: cmdXInfoGroups},
				{name: "consumers", arity: 4, flags: flagReadonly, first: 2, last: 2, step: 1,
					summary: "Returns a list of the consumers in a consumer group.", tips: []string{"nondeterministic_output"}, run: cmdXInfoConsumers},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the XINFO subcommands.", run: cmdXInfoHelp},
			}},
		&command{name: "xsetid", arity: -3, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, group: "stream", since: "5.0.0",
			summary: "An internal command for replicating stream values ([ENTRIESADDED n] [MAXDELETEDID id]).", run: cmdXSetID},
	)
}

// writeInfoMap writes a flat field, value array as a map; the values of
// the fields in nested (arrays of flat arrays) are written as arrays of
// maps in turn.
func (c *conn) writeInfoMap(r kv.Reply, nested map[string]bool) {
	c.out.Map(len(r.Array) / 2)
	for i := 0; i+1 < len(r.Array); i += 2 {
		k, v := r.Array[i], r.Array[i+1]
		c.writeReply(k, shapePlain)
		if nested[string(k.Bulk)] && v.Type == kv.ReplyArray {
			c.out.Array(len(v.Array))
			for _, e := range v.Array {
				c.writeInfoMap(e, nested)
			}
			continue
		}
		c.writeReply(v, shapePlain)
	}
}

func cmdXInfoStream(c *conn, args [][]byte) {
	r := c.execRaw(kv.CmdXInfo, args[2], append([][]byte{args[1]}, args[3:]...)...)
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return
	}
	c.writeInfoMap(r, map[string]bool{"groups": true, "consumers": true})
}

func writeMapList(c *conn, r kv.Reply) {
	if r.Status != kv.StatusSuccess {
		c.writeReply(r, shapePlain)
		return
	}
	c.out.Array(len(r.Array))
	for _, e := range r.Array {
		c.writeInfoMap(e, nil)
	}
}

func cmdXInfoGroups(c *conn, args [][]byte) {
	writeMapList(c, c.execRaw(kv.CmdXInfo, args[2], args[1]))
}

func cmdXInfoConsumers(c *conn, args [][]byte) {
	writeMapList(c, c.execRaw(kv.CmdXInfo, args[2], args[1], args[3]))
}

func cmdXSetID(c *conn, args [][]byte) {
	c.writeReply(c.execRaw(kv.CmdXSetID, args[1], args[2:]...), shapePlain)
}

func cmdXInfoHelp(c *conn, _ [][]byte) {
	writeHelp(c, "XINFO", []string{
		"CONSUMERS <key> <groupname>", "    Show consumers of <groupname>.",
		"GROUPS <key>", "    Show the stream consumer groups.",
		"STREAM <key> [FULL [COUNT <count>]", "    Show information about the stream.",
	})
}
