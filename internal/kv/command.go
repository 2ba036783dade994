package kv

import (
	"fmt"
	"math"
	"strconv"
	"sync"
)

// CmdOp names a data-structure or coordination command (R-DS). Each command
// is implemented once, in the store engine; the SDK (embedded and remote),
// the native protocol and the RESP front end all carry the same Cmd.
//
// The numeric values are part of the wire protocol: append only.
type CmdOp uint16

const (
	CmdNone CmdOp = iota

	// Strings and counters (R-DS-3).
	CmdIncrBy      // args: delta (int)              → Int: new value
	CmdIncrByFloat // args: delta (float)            → Float/Bulk: new value
	CmdAppend      // args: value                    → Int: new length
	CmdStrLen      //                                → Int
	CmdGetRange    // args: start, end               → Bulk
	CmdSetRange    // args: offset, value            → Int: new length
	CmdGetDel      //                                → Bulk or Nil
	CmdType        //                                → Bulk: none|string|hash|list|set|zset|stream

	// Hashes (R-DS-1).
	CmdHSet         // args: field, value, ...          → Int: fields added
	CmdHGet         // args: field                      → Bulk or Nil
	CmdHDel         // args: field, ...                 → Int: fields removed
	CmdHGetAll      //                                  → Array: field, value, ...
	CmdHIncrBy      // args: field, delta               → Int
	CmdHIncrByFloat // args: field, delta               → Bulk
	CmdHLen         //                                  → Int
	CmdHExists      // args: field                      → Int 0/1
	CmdHKeys        //                                  → Array
	CmdHVals        //                                  → Array
	CmdHMGet        // args: field, ...                 → Array (Nil for missing)
	CmdHSetNX       // args: field, value               → Int 0/1

	// Lists.
	CmdLPush  // args: value, ...        → Int: new length
	CmdRPush  // args: value, ...        → Int
	CmdLPop   // args: [count]           → Bulk/Nil, or Array with count
	CmdRPop   // args: [count]
	CmdLRange // args: start, stop       → Array
	CmdLLen   //                         → Int
	CmdLIndex // args: index             → Bulk or Nil
	CmdLRem   // args: count, value      → Int: removed
	CmdLTrim  // args: start, stop       → OK
	CmdLSet   // args: index, value      → OK, or BadRequest when out of range

	// Sets.
	CmdSAdd      // args: member, ...    → Int: added
	CmdSRem      // args: member, ...    → Int: removed
	CmdSMembers  //                      → Array
	CmdSIsMember // args: member         → Int 0/1
	CmdSCard     //                      → Int
	CmdSInter    // args: other keys     → Array (same-segment keys or embedded only; see store)
	CmdSUnion    // args: other keys     → Array

	// Sorted sets.
	CmdZAdd          // args: [NX|XX|GT|LT|CH], score, member, ...   → Int
	CmdZRem          // args: member, ...                            → Int
	CmdZScore        // args: member                                 → Bulk (score) or Nil
	CmdZIncrBy       // args: delta, member                          → Bulk (new score)
	CmdZCard         //                                              → Int
	CmdZRank         // args: member                                 → Int or Nil
	CmdZRevRank      // args: member
	CmdZRange        // args: start, stop, [WITHSCORES]              → Array
	CmdZRevRange     // args: start, stop, [WITHSCORES]
	CmdZRangeByScore // args: min, max, [WITHSCORES], [LIMIT off n]  → Array
	CmdZRevRangeByScore
	CmdZCount // args: min, max → Int

	// Streams (R-DS-2). Arguments follow the Redis commands of the same name
	// (after the key); ids are "ms-seq".
	CmdXAdd       // args: [NOMKSTREAM] [MAXLEN|MINID [=|~] n] id|* field value ...
	CmdXRange     // args: start end [COUNT n]
	CmdXRevRange  // args: end start [COUNT n]
	CmdXLen       //
	CmdXDel       // args: id ...
	CmdXTrim      // args: MAXLEN|MINID [=|~] n
	CmdXGroup     // args: CREATE|DESTROY|SETID|CREATECONSUMER|DELCONSUMER group ...
	CmdXReadGroup // args: group consumer [COUNT n] [NOACK] id   (one key per command)
	CmdXAck       // args: group id ...
	CmdXPending   // args: group [[IDLE ms] start end count [consumer]]
	CmdXClaim     // args: group consumer min-idle-ms id ... [JUSTID]
	CmdXAutoClaim // args: group consumer min-idle-ms start [COUNT n] [JUSTID]
	CmdXRead      // args: id [COUNT n]   (entries after id; one key per command)

	// Locks and leases (R-DS-5): a lock is a string key holding its holder's
	// token, with a TTL.
	CmdLockAcquire // args: token, ttl-ms        → Int 1 acquired / 0 held by another
	CmdLockRenew   // args: token, ttl-ms        → Int 1 renewed / 0 not the holder
	CmdLockRelease // args: token                → Int 1 released / 0 not the holder

	// Node-level commands: they address the node, not one key (Cmd.Key is
	// ignored or carries a session id), and run on the node that receives them.
	CmdScan      // R-DS-8: args see server/store/scan.go
	CmdTxPrepare // R-DS-4: args see server/store/tx.go
	CmdTxCommit
	CmdTxAbort
	CmdFlush  // remove every key of the store → OK
	CmdDBSize // live keys → Int

	cmdEnd // keep last
)

// Later families take explicit numbers, one block each, so that commands
// added side by side never renumber one another (the values are wire):
//
//	100–129 strings, bitmaps, HyperLogLog, keyspace (command_strings.go)
//	130–159 lists, sets, hashes (command_collections.go)
//	160–189 sorted sets, geo (command_zset.go)
//	190–219 scripting, streams, server (command_server.go)
//
// Each block's file names its ops with nameOps in an init function.
const maxCmdOp = 256

// nameOps records the names of a block's ops; a duplicate number panics at
// start-up rather than silently aliasing two commands on the wire.
func nameOps(names map[CmdOp]string) {
	for op, name := range names {
		if int(op) >= maxCmdOp || op < cmdEnd || cmdNames[op] != "" {
			panic(fmt.Sprintf("kv: op %d (%s) out of block or named twice", uint16(op), name))
		}
		cmdNames[op] = name
	}
}

var cmdNames = [maxCmdOp]string{
	CmdNone: "NONE", CmdIncrBy: "INCRBY", CmdIncrByFloat: "INCRBYFLOAT", CmdAppend: "APPEND",
	CmdStrLen: "STRLEN", CmdGetRange: "GETRANGE", CmdSetRange: "SETRANGE", CmdGetDel: "GETDEL", CmdType: "TYPE",
	CmdHSet: "HSET", CmdHGet: "HGET", CmdHDel: "HDEL", CmdHGetAll: "HGETALL", CmdHIncrBy: "HINCRBY",
	CmdHIncrByFloat: "HINCRBYFLOAT", CmdHLen: "HLEN", CmdHExists: "HEXISTS", CmdHKeys: "HKEYS", CmdHVals: "HVALS",
	CmdHMGet: "HMGET", CmdHSetNX: "HSETNX",
	CmdLPush: "LPUSH", CmdRPush: "RPUSH", CmdLPop: "LPOP", CmdRPop: "RPOP", CmdLRange: "LRANGE", CmdLLen: "LLEN",
	CmdLIndex: "LINDEX", CmdLRem: "LREM", CmdLTrim: "LTRIM", CmdLSet: "LSET",
	CmdSAdd: "SADD", CmdSRem: "SREM", CmdSMembers: "SMEMBERS", CmdSIsMember: "SISMEMBER", CmdSCard: "SCARD",
	CmdSInter: "SINTER", CmdSUnion: "SUNION",
	CmdZAdd: "ZADD", CmdZRem: "ZREM", CmdZScore: "ZSCORE", CmdZIncrBy: "ZINCRBY", CmdZCard: "ZCARD",
	CmdZRank: "ZRANK", CmdZRevRank: "ZREVRANK", CmdZRange: "ZRANGE", CmdZRevRange: "ZREVRANGE",
	CmdZRangeByScore: "ZRANGEBYSCORE", CmdZRevRangeByScore: "ZREVRANGEBYSCORE", CmdZCount: "ZCOUNT",
	CmdXAdd: "XADD", CmdXRange: "XRANGE", CmdXRevRange: "XREVRANGE", CmdXLen: "XLEN", CmdXDel: "XDEL",
	CmdXTrim: "XTRIM", CmdXGroup: "XGROUP", CmdXReadGroup: "XREADGROUP", CmdXAck: "XACK", CmdXPending: "XPENDING",
	CmdXClaim: "XCLAIM", CmdXAutoClaim: "XAUTOCLAIM", CmdXRead: "XREAD",
	CmdLockAcquire: "LOCK.ACQUIRE", CmdLockRenew: "LOCK.RENEW", CmdLockRelease: "LOCK.RELEASE",
	CmdScan: "SCAN", CmdTxPrepare: "TX.PREPARE", CmdTxCommit: "TX.COMMIT", CmdTxAbort: "TX.ABORT",
	CmdFlush: "FLUSH", CmdDBSize: "DBSIZE",
}

// NodeLevel reports whether op addresses the node rather than one key: the
// client sends it to every owner (Scan fans out) or to the owner group it
// concerns (a transaction phase), never routed by Cmd.Key.
func (op CmdOp) NodeLevel() bool { return op >= CmdScan && op <= CmdDBSize }

func (op CmdOp) String() string {
	if int(op) < maxCmdOp && cmdNames[op] != "" {
		return cmdNames[op]
	}
	return fmt.Sprintf("CmdOp(%d)", uint16(op))
}

// Valid reports whether this build knows op.
func (op CmdOp) Valid() bool { return op > CmdNone && int(op) < maxCmdOp && cmdNames[op] != "" }

// Cmd is one command on one key. Args are byte strings, as in RESP, so the
// RESP front end passes its arguments through unchanged; numbers are decimal
// text.
type Cmd struct {
	Op   CmdOp
	Key  string
	Args [][]byte
	// Out, when set, is room a handler may build its array reply in. The
	// caller promises to encode the reply before it runs another command
	// with the same Out, and never to write into its bytes, which may then
	// alias the store's own member and field names. A range read costs no
	// allocation of its reply so (issue #17: the []Reply of LRANGE 0 9 was
	// a third of its CPU). nil: the handler allocates and copies.
	Out *[]Reply
}

// NewCmd builds a command from string arguments (convenience for callers
// that are not on a hot path).
func NewCmd(op CmdOp, key string, args ...string) Cmd {
	c := Cmd{Op: op, Key: key, Args: make([][]byte, len(args))}
	for i, a := range args {
		c.Args[i] = []byte(a)
	}
	return c
}

// ReplyType is the shape of a Reply.
type ReplyType uint8

const (
	ReplyNil   ReplyType = iota // no value (a missing field, an empty pop)
	ReplyOK                     // a bare acknowledgement
	ReplyInt                    // Int
	ReplyBulk                   // Bulk (also carries formatted floats)
	ReplyArray                  // Array, elements may be Nil
)

// Reply is the result of a Cmd: a Status (WrongType, BadRequest, …) and, on
// success, a value shaped like a RESP reply. Version and Revision describe
// the key after the command (0 when the key does not exist).
type Reply struct {
	Status   Status
	Type     ReplyType
	Int      int64
	Bulk     []byte
	Array    []Reply
	Version  uint64
	Revision uint64
	Message  string // why a BadRequest, for humans
}

// OK reports Status == StatusSuccess.
func (r Reply) OK() bool { return r.Status == StatusSuccess }

// Err is nil when OK; else the status's sentinel, annotated with Message.
func (r Reply) Err() error {
	if r.Status == StatusSuccess {
		return nil
	}
	if r.Message != "" {
		return fmt.Errorf("%w: %s", r.Status.Err(), r.Message)
	}
	return r.Status.Err()
}

// A Cmd.Out room keeps at most RetainedOut replies' room (24 KiB) between
// commands; a larger one, which a range read of more elements grew it to,
// goes back to a pool shared by every connection when the reply is encoded,
// so that a pipeline of LRANGE 0 299 allocates nothing per command either
// (issue #17: each allocated, zeroed and let the GC scan 28 KiB of
// replies) and an idle connection holds no large room. A reply of more than
// PooledOut elements is allocated on its own.
const (
	RetainedOut = 256
	PooledOut   = 4096
)

// largeRooms holds cleared rooms of more than RetainedOut replies.
var largeRooms sync.Pool

// LargeOut returns an empty room with capacity for at least n replies
// (RetainedOut < n ≤ PooledOut), from the pool when it has one that large.
func LargeOut(n int) []Reply {
	if p, ok := largeRooms.Get().(*[]Reply); ok && cap(*p) >= n {
		return (*p)[:0]
	}
	return make([]Reply, 0, max(n, 4*RetainedOut))
}

// ResetOut clears what handlers built in a Cmd.Out room once the reply is
// encoded: the room keeps no value reachable and starts empty again; a
// large room goes back to the pool.
func ResetOut(room *[]Reply) {
	r := *room
	if len(r) > 0 {
		clear(r)
	}
	if cap(r) > RetainedOut {
		// A box of its own: &r would move r to the heap on every call,
		// the common small room's too (one allocation per command).
		box := new([]Reply)
		*box = r[:0]
		largeRooms.Put(box)
		*room = nil
		return
	}
	*room = r[:0]
}

// Constructors for handlers.

func IntReply(n int64) Reply      { return Reply{Type: ReplyInt, Int: n} }
func BulkReply(b []byte) Reply    { return Reply{Type: ReplyBulk, Bulk: b} }
func OKReply() Reply              { return Reply{Type: ReplyOK} }
func NilReply() Reply             { return Reply{Type: ReplyNil} }
func ArrayReply(a []Reply) Reply  { return Reply{Type: ReplyArray, Array: a} }
func StatusReply(s Status) Reply  { return Reply{Status: s} }
func FloatReply(f float64) Reply  { return BulkReply(FormatFloat(f)) }
func BadRequest(msg string) Reply { return Reply{Status: StatusBadRequest, Message: msg} }

// BulksReply wraps byte strings as an array of bulk replies.
func BulksReply(items [][]byte) Reply {
	a := make([]Reply, len(items))
	for i, b := range items {
		a[i] = BulkReply(b)
	}
	return ArrayReply(a)
}

// FormatFloat formats a score or float counter the way Redis prints it.
func FormatFloat(f float64) []byte { return AppendFloat(nil, f) }

// AppendFloat appends f as FormatFloat formats it.
func AppendFloat(dst []byte, f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	}
	return AppendShortestG(dst, f)
}

// AppendIntegral appends f when it is a nonzero whole number of magnitude
// below 1e15 — its integer digits, which both %.17g and the shortest form
// print for it (D90: a ZADD's score formatted without strconv's float
// path). ok is false for anything else, zero included (its sign matters).
func AppendIntegral(dst []byte, f float64) ([]byte, bool) {
	if f == 0 || f <= -1e15 || f >= 1e15 || f != math.Trunc(f) {
		return dst, false
	}
	return strconv.AppendInt(dst, int64(f), 10), true
}

// AppendShortestG appends a finite f with the shortest digits that read
// back as f, in the notation C's %.17g picks (Redis prints scores so):
// plain decimals for exponents -4..16, 4294967296 rather than Go's
// 4.294967296e+09.
func AppendShortestG(dst []byte, f float64) []byte {
	if f == 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.AppendFloat(dst, f, 'g', -1, 64)
	}
	if b, ok := AppendIntegral(dst, f); ok {
		return b
	}
	var tmp [32]byte
	e := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64) // d.ddde±XX: the shortest digits' exponent
	i := len(e) - 1
	for e[i] != 'e' {
		i--
	}
	if exp, _ := strconv.Atoi(string(e[i+1:])); exp >= -4 && exp < 17 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64)
	}
	return append(dst, e...)
}
