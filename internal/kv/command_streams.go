package kv

// Stream introspection ops, at the top of the 190–219 block (scripting
// takes the bottom of it).
const (
	// CmdXInfo: args STREAM [FULL [COUNT n]] | GROUPS | CONSUMERS group →
	// Redis 7.0's XINFO reply, maps as flat field, value arrays.
	CmdXInfo CmdOp = 216
	// CmdXSetID: args id [ENTRIESADDED n] [MAXDELETEDID id] → OK.
	CmdXSetID CmdOp = 217
)

func init() {
	nameOps(map[CmdOp]string{CmdXInfo: "XINFO", CmdXSetID: "XSETID"})
}
