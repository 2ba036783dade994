// Aliases of the command vocabulary of internal/kv, so that callers outside
// this module can build commands for Client.Do.

package sdk

import "github.com/zaris-io/zaris/internal/kv"

// Cmd is one data-structure command on one key, for Client.Do.
type Cmd = kv.Cmd

// CmdOp names a command.
type CmdOp = kv.CmdOp

// Reply is the result of a Cmd: a Status and a RESP-shaped value.
type Reply = kv.Reply

// ReplyType is the shape of a Reply.
type ReplyType = kv.ReplyType

// Reply shapes.
const (
	ReplyNil   = kv.ReplyNil
	ReplyOK    = kv.ReplyOK
	ReplyInt   = kv.ReplyInt
	ReplyBulk  = kv.ReplyBulk
	ReplyArray = kv.ReplyArray
)

// NewCmd builds a command from string arguments.
func NewCmd(op CmdOp, key string, args ...string) Cmd { return kv.NewCmd(op, key, args...) }

// The commands (see internal/kv for their arguments and replies).
const (
	CmdIncrBy           = kv.CmdIncrBy
	CmdIncrByFloat      = kv.CmdIncrByFloat
	CmdAppend           = kv.CmdAppend
	CmdStrLen           = kv.CmdStrLen
	CmdGetRange         = kv.CmdGetRange
	CmdSetRange         = kv.CmdSetRange
	CmdGetDel           = kv.CmdGetDel
	CmdType             = kv.CmdType
	CmdHSet             = kv.CmdHSet
	CmdHGet             = kv.CmdHGet
	CmdHDel             = kv.CmdHDel
	CmdHGetAll          = kv.CmdHGetAll
	CmdHIncrBy          = kv.CmdHIncrBy
	CmdHIncrByFloat     = kv.CmdHIncrByFloat
	CmdHLen             = kv.CmdHLen
	CmdHExists          = kv.CmdHExists
	CmdHKeys            = kv.CmdHKeys
	CmdHVals            = kv.CmdHVals
	CmdHMGet            = kv.CmdHMGet
	CmdHSetNX           = kv.CmdHSetNX
	CmdLPush            = kv.CmdLPush
	CmdRPush            = kv.CmdRPush
	CmdLPop             = kv.CmdLPop
	CmdRPop             = kv.CmdRPop
	CmdLRange           = kv.CmdLRange
	CmdLLen             = kv.CmdLLen
	CmdLIndex           = kv.CmdLIndex
	CmdLRem             = kv.CmdLRem
	CmdLTrim            = kv.CmdLTrim
	CmdLSet             = kv.CmdLSet
	CmdSAdd             = kv.CmdSAdd
	CmdSRem             = kv.CmdSRem
	CmdSMembers         = kv.CmdSMembers
	CmdSIsMember        = kv.CmdSIsMember
	CmdSCard            = kv.CmdSCard
	CmdSInter           = kv.CmdSInter
	CmdSUnion           = kv.CmdSUnion
	CmdZAdd             = kv.CmdZAdd
	CmdZRem             = kv.CmdZRem
	CmdZScore           = kv.CmdZScore
	CmdZIncrBy          = kv.CmdZIncrBy
	CmdZCard            = kv.CmdZCard
	CmdZRank            = kv.CmdZRank
	CmdZRevRank         = kv.CmdZRevRank
	CmdZRange           = kv.CmdZRange
	CmdZRevRange        = kv.CmdZRevRange
	CmdZRangeByScore    = kv.CmdZRangeByScore
	CmdZRevRangeByScore = kv.CmdZRevRangeByScore
	CmdZCount           = kv.CmdZCount
	CmdXAdd             = kv.CmdXAdd
	CmdXRange           = kv.CmdXRange
	CmdXRevRange        = kv.CmdXRevRange
	CmdXLen             = kv.CmdXLen
	CmdXDel             = kv.CmdXDel
	CmdXTrim            = kv.CmdXTrim
	CmdXGroup           = kv.CmdXGroup
	CmdXReadGroup       = kv.CmdXReadGroup
	CmdXAck             = kv.CmdXAck
	CmdXPending         = kv.CmdXPending
	CmdXClaim           = kv.CmdXClaim
	CmdXAutoClaim       = kv.CmdXAutoClaim
	CmdXRead            = kv.CmdXRead
	CmdLockAcquire      = kv.CmdLockAcquire
	CmdLockRenew        = kv.CmdLockRenew
	CmdLockRelease      = kv.CmdLockRelease
)
