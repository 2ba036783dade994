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

	// Expiry, as Redis 7.0's EXPIRE family and TTL readers: an expiry is an
	// absolute instant in Unix milliseconds; a relative time is converted
	// once, with the store's clock, and NX/XX/GT/LT compare the instants
	// under the key's lock (a key without expiry counts as infinite for
	// GT/LT). A time not in the future deletes the key.
	CmdExpire      CmdOp = 108 // args: seconds [NX|XX|GT|LT] ...      → Int 1 set or deleted, 0 no key or condition false
	CmdPExpire     CmdOp = 109 // args: milliseconds [NX|XX|GT|LT] ...
	CmdExpireAt    CmdOp = 110 // args: unix-seconds [NX|XX|GT|LT] ...
	CmdPExpireAt   CmdOp = 111 // args: unix-milliseconds [NX|XX|GT|LT] ...
	CmdPTTL        CmdOp = 112 //                                      → Int: ms left, -1 no expiry, -2 no key
	CmdPExpireTime CmdOp = 113 //                                      → Int: the expiry in Unix ms, -1, -2
	// CmdRestore names RESTORE as the origin of the put it makes (a
	// keyspace notification "restore"); RESTORE runs through the locked
	// view (store.Atomic.Restore), not as a command of its own.
	CmdRestore CmdOp = 114
	// CmdCopy names COPY as the origin of the put it makes at its
	// destination (a keyspace notification "copy_to").
	CmdCopy CmdOp = 115
)

func init() {
	nameOps(map[CmdOp]string{
		CmdSetBit: "SETBIT", CmdGetBit: "GETBIT", CmdBitCount: "BITCOUNT", CmdBitPos: "BITPOS",
		CmdBitField: "BITFIELD", CmdBitFieldRO: "BITFIELD_RO", CmdPFAdd: "PFADD", CmdPFCount: "PFCOUNT",
		CmdExpire: "EXPIRE", CmdPExpire: "PEXPIRE", CmdExpireAt: "EXPIREAT", CmdPExpireAt: "PEXPIREAT",
		CmdPTTL: "PTTL", CmdPExpireTime: "PEXPIRETIME", CmdRestore: "RESTORE", CmdCopy: "COPY",
	})
}
