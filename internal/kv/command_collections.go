package kv

// Lists, sets and hashes beyond the first table (issue #13 item 5): the
// block 130–159 of the wire numbers. Arguments follow the Redis command of
// the same name after its first key; a command naming several keys carries
// the others in its arguments, and the store serves it where all its keys'
// segments are held (one segment, or a multi-segment atomic view).
const (
	CmdLInsert     CmdOp = 130 // args: BEFORE|AFTER, pivot, element                → Int: new length, -1 no pivot, 0 no key
	CmdLPos        CmdOp = 131 // args: element [RANK r] [COUNT n] [MAXLEN m]       → Int/Nil, or Array with COUNT
	CmdLPushX      CmdOp = 132 // args: element, ...                                → Int: new length (0: no key, nothing pushed)
	CmdRPushX      CmdOp = 133 // args: element, ...
	CmdLMove       CmdOp = 134 // args: destination, LEFT|RIGHT (from), LEFT|RIGHT (to) → Bulk or Nil
	CmdLMPop       CmdOp = 135 // args: LEFT|RIGHT, count, other keys ...          → Array [key, [elements]] or Nil
	CmdSMove       CmdOp = 136 // args: destination, member                         → Int 0/1
	CmdSPop        CmdOp = 137 // args: [count]                                     → Bulk/Nil, or Array with count
	CmdSRandMember CmdOp = 138 // args: [count]                                     → Bulk/Nil, or Array with count
	CmdSDiff       CmdOp = 139 // args: other keys ...                              → Array
	CmdSDiffStore  CmdOp = 140 // key: destination; args: source keys ...           → Int: members stored
	CmdSInterStore CmdOp = 141 // key: destination; args: source keys ...
	CmdSUnionStore CmdOp = 142 // key: destination; args: source keys ...
	CmdSMIsMember  CmdOp = 143 // args: member, ...                                 → Array of Int 0/1
	CmdSInterCard  CmdOp = 144 // args: limit (0 = none), other keys ...            → Int
	CmdSScan       CmdOp = 145 // args: cursor [MATCH pattern] [COUNT n]            → Array [cursor, [members]]
	CmdHStrLen     CmdOp = 146 // args: field                                       → Int
	CmdHRandField  CmdOp = 147 // args: [count [WITHVALUES]]                        → Bulk/Nil, or Array with count
	CmdHScan       CmdOp = 148 // args: cursor [MATCH pattern] [COUNT n]            → Array [cursor, [field, value, ...]]
)

func init() {
	nameOps(map[CmdOp]string{
		CmdLInsert: "LINSERT", CmdLPos: "LPOS", CmdLPushX: "LPUSHX", CmdRPushX: "RPUSHX", CmdLMove: "LMOVE",
		CmdLMPop: "LMPOP", CmdSMove: "SMOVE", CmdSPop: "SPOP", CmdSRandMember: "SRANDMEMBER", CmdSDiff: "SDIFF",
		CmdSDiffStore: "SDIFFSTORE", CmdSInterStore: "SINTERSTORE", CmdSUnionStore: "SUNIONSTORE",
		CmdSMIsMember: "SMISMEMBER", CmdSInterCard: "SINTERCARD", CmdSScan: "SSCAN",
		CmdHStrLen: "HSTRLEN", CmdHRandField: "HRANDFIELD", CmdHScan: "HSCAN",
	})
}
