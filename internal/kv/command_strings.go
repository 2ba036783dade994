package kv

// Block 100–129: strings, bitmaps, HyperLogLog and keyspace commands
// (issue #13 item 5). The values are wire: never renumber.
const (
	CmdSetBit     CmdOp = 100 // args: offset, 0|1                        → Int: the bit's previous value
	CmdGetBit     CmdOp = 101 // args: offset                             → Int
	CmdBitCount   CmdOp = 102 // args: [start end [BYTE|BIT]]             → Int
	CmdBitPos     CmdOp = 103 // args: bit [start [end [BYTE|BIT]]]       → Int
	CmdBitField   CmdOp = 104 // args: GET/SET/INCRBY/OVERFLOW ...        → Array (Nil for a FAIL overflow)
	CmdBitFieldRO CmdOp = 105 // args: GET type offset ...                → Array
	CmdPFAdd      CmdOp = 106 // args: element ...                        → Int 0/1
	CmdPFCount    CmdOp = 107 //                                          → Int (one key; refreshes the cached cardinality)
)

func init() {
	nameOps(map[CmdOp]string{
		CmdSetBit: "SETBIT", CmdGetBit: "GETBIT", CmdBitCount: "BITCOUNT", CmdBitPos: "BITPOS",
		CmdBitField: "BITFIELD", CmdBitFieldRO: "BITFIELD_RO", CmdPFAdd: "PFADD", CmdPFCount: "PFCOUNT",
	})
}
