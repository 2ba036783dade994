package resp_test

import (
	"bufio"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The lists/sets/hashes surface of issue #13 item 5 against a real
// redis-server 7.0 (standalone: on a lone Zaris node multi-key commands
// work across slots, as there). Every row runs on both, in RESP2 and
// RESP3; the replies must be byte-identical after the row's normalisation:
// exact, unordered (a set's members, a hash's pairs), or — for a random
// choice — its shape (types and sizes, the bulk contents masked).

type cmpMode uint8

const (
	cmpExact  cmpMode = iota
	cmpSet            // top-level elements in any order
	cmpPairs          // top-level (field, value) pairs in any order (RESP2 flat, RESP3 nested)
	cmpScan           // [cursor, members]: members in any order
	cmpScan2          // [cursor, field value …]: pairs in any order
	cmpShape          // bulk contents masked (a random pick); sizes and types compared
	cmpUnsure         // shape, and Redis' own answer depends on a random choice too
)

type oracleRow struct {
	mode cmpMode
	args []string
}

func rows(mode cmpMode, cmds ...[]string) []oracleRow {
	out := make([]oracleRow, len(cmds))
	for i, c := range cmds {
		out[i] = oracleRow{mode, c}
	}
	return out
}

func exact(cmds ...[]string) []oracleRow { return rows(cmpExact, cmds...) }

var collectionsScript = slices.Concat(
	// LPOS: ranks (negative, ±2^63), COUNT, MAXLEN and their errors.
	exact([]string{"RPUSH", "l", "a", "b", "c", "a", "b", "c"},
		[]string{"LPOS", "l", "a"}, []string{"LPOS", "l", "a", "RANK", "2"}, []string{"LPOS", "l", "a", "RANK", "-1"},
		[]string{"LPOS", "l", "a", "RANK", "-2"}, []string{"LPOS", "l", "a", "RANK", "3"}, []string{"LPOS", "l", "a", "COUNT", "0"},
		[]string{"LPOS", "l", "a", "COUNT", "1"}, []string{"LPOS", "l", "a", "RANK", "-1", "COUNT", "0"}, []string{"LPOS", "l", "c", "MAXLEN", "2"},
		[]string{"LPOS", "l", "c", "RANK", "-1", "MAXLEN", "2"}, []string{"LPOS", "l", "a", "COUNT", "0", "MAXLEN", "4"},
		[]string{"LPOS", "l", "a", "RANK", "2", "COUNT", "5"}, []string{"LPOS", "l", "z"}, []string{"LPOS", "l", "z", "COUNT", "0"},
		[]string{"LPOS", "nokey", "a"}, []string{"LPOS", "nokey", "a", "COUNT", "1"}, []string{"LPOS", "l", "a", "RANK", "0"},
		[]string{"LPOS", "l", "a", "COUNT", "-1"}, []string{"LPOS", "l", "a", "MAXLEN", "-1"}, []string{"LPOS", "l", "a", "FOO", "1"},
		[]string{"LPOS", "l", "a", "RANK"}, []string{"LPOS", "l", "a", "RANK", "x"}, []string{"LPOS", "l", "a", "RANK", i64min},
		[]string{"LPOS", "l", "a", "RANK", i64min, "COUNT", "0"}, []string{"LPOS", "l", "a", "RANK", i64max},
		[]string{"LPOS", "l", "a", "COUNT", i64max, "MAXLEN", i64max}, []string{"LPOS", "l", "a", "RANK", "1", "RANK", "2"},
		[]string{"LPOS", "l", "a", "RANK", "-9223372036854775807"}, []string{"LPOS", "l", "a", "MAXLEN", i64big}, []string{"LPOS", "l"},
		// LINSERT, LPUSHX, RPUSHX.
		[]string{"LINSERT", "l", "BEFORE", "b", "X"}, []string{"LINSERT", "l", "AFTER", "c", "Y"}, []string{"LINSERT", "l", "after", "nope", "Y"},
		[]string{"LINSERT", "nokey", "BEFORE", "a", "x"}, []string{"LINSERT", "l", "FOO", "a", "x"}, []string{"LINSERT", "l", "BEFORE", "a"},
		[]string{"LRANGE", "l", "0", "-1"},
		[]string{"LPUSHX", "l", "p", "q"}, []string{"RPUSHX", "l", "r"}, []string{"LPUSHX", "nokey", "a"}, []string{"RPUSHX", "nokey", "a", "b"},
		[]string{"EXISTS", "nokey"}, []string{"LRANGE", "l", "0", "-1"}, []string{"LPUSHX", "l"},
		// LMOVE, RPOPLPUSH: ends, rotation, a source emptied.
		[]string{"LMOVE", "l", "l2", "LEFT", "RIGHT"}, []string{"LMOVE", "l", "l2", "right", "left"}, []string{"LRANGE", "l2", "0", "-1"},
		[]string{"LMOVE", "l", "l", "LEFT", "RIGHT"}, []string{"LMOVE", "l", "l", "RIGHT", "RIGHT"}, []string{"LRANGE", "l", "0", "-1"},
		[]string{"LMOVE", "l", "l2", "UP", "LEFT"}, []string{"LMOVE", "l", "l2", "LEFT"}, []string{"LMOVE", "nokey", "l2", "LEFT", "LEFT"},
		[]string{"RPOPLPUSH", "l", "l2"}, []string{"RPOPLPUSH", "l2", "l2"}, []string{"LRANGE", "l2", "0", "-1"}, []string{"RPOPLPUSH", "nokey", "l"},
		[]string{"RPUSH", "one", "x"}, []string{"LMOVE", "one", "two", "LEFT", "LEFT"}, []string{"EXISTS", "one"}, []string{"LRANGE", "two", "0", "-1"},
		[]string{"RPOPLPUSH", "two", "two"}, []string{"LRANGE", "two", "0", "-1"},
		// Wrong types, in Redis's order of checks.
		[]string{"SET", "str", "x"}, []string{"LMOVE", "str", "l", "LEFT", "LEFT"}, []string{"LMOVE", "l", "str", "LEFT", "LEFT"},
		[]string{"LMOVE", "nokey", "str", "LEFT", "LEFT"}, []string{"LMOVE", "str", "l", "UP", "LEFT"}, []string{"RPOPLPUSH", "l", "str"},
		[]string{"LINSERT", "str", "BEFORE", "a", "b"}, []string{"LINSERT", "str", "FOO", "a", "b"}, []string{"LPOS", "str", "a"},
		[]string{"LPOS", "str", "a", "RANK", "0"}, []string{"LPUSHX", "str", "a"}, []string{"RPUSHX", "str", "a"},
		// LMPOP and its errors.
		[]string{"RPUSH", "m1", "a", "b", "c"}, []string{"LMPOP", "2", "nokey", "m1", "LEFT"}, []string{"LMPOP", "2", "nokey", "m1", "RIGHT", "COUNT", "10"},
		[]string{"EXISTS", "m1"}, []string{"LMPOP", "1", "m1", "LEFT"}, []string{"LMPOP", "0", "m1", "LEFT"}, []string{"LMPOP", "-1", "m1", "LEFT"},
		[]string{"LMPOP", "x", "m1", "LEFT"}, []string{"LMPOP", "2", "m1", "LEFT"}, []string{"LMPOP", "1", "m1", "MID"},
		[]string{"LMPOP", "1", "m1", "LEFT", "COUNT", "0"}, []string{"LMPOP", "1", "m1", "LEFT", "COUNT", "-1"}, []string{"LMPOP", "1", "m1", "LEFT", "COUNT", "x"},
		[]string{"LMPOP", "1", "m1", "LEFT", "COUNT", "1", "COUNT", "2"}, []string{"LMPOP", "1", "m1", "LEFT", "FOO"}, []string{"LMPOP", "1", "m1", "LEFT", "COUNT"},
		[]string{"LMPOP", i64max, "m1", "LEFT"}, []string{"LMPOP", "1", "m1"}, []string{"RPUSH", "m2", "a", "b"}, []string{"LMPOP", "2", "str", "m2", "LEFT"},
		[]string{"LMPOP", "2", "m2", "str", "LEFT"}, []string{"LMPOP", "2", "nokey", "str", "LEFT"}, []string{"LMPOP", "2", "m2", "m2", "RIGHT", "COUNT", "1"},
		[]string{"LMPOP", "1", "m2", "LEFT", "COUNT", i64max}, []string{"EXISTS", "m2"},
		// The blocking forms when they need not wait, or time out at once.
		[]string{"RPUSH", "bm", "a", "b"}, []string{"BLMPOP", "0.01", "2", "nokey", "bm", "LEFT", "COUNT", "5"}, []string{"BLMPOP", "0.01", "1", "nokey", "LEFT"},
		[]string{"BLMPOP", "-1", "1", "bm", "LEFT"}, []string{"BLMPOP", "x", "1", "bm", "LEFT"}, []string{"BLMPOP", "0", "0", "bm", "LEFT"},
		[]string{"BLMPOP", "-1", "1", "bm", "UP"}, []string{"BLMPOP", "-1", "1", "bm", "LEFT", "COUNT", "0"}, []string{"BLMPOP", "0", "1", "str", "LEFT"},
		[]string{"BLMOVE", "nokey", "x", "LEFT", "LEFT", "0.01"}, []string{"BLMOVE", "l", "x", "LEFT", "UP", "-1"},
		[]string{"BLMOVE", "l", "x", "LEFT", "LEFT", "-1"}, []string{"BLMOVE", "l", "x", "LEFT", "LEFT", "x"}, []string{"BLMOVE", "l", "lx", "RIGHT", "LEFT", "0"},
		[]string{"BLMOVE", "str", "lx", "RIGHT", "LEFT", "0"}, []string{"BLMOVE", "l", "str", "RIGHT", "LEFT", "0"},
		[]string{"BRPOPLPUSH", "nokey", "x", "0.01"}, []string{"BRPOPLPUSH", "l", "lx", "0"}, []string{"BRPOPLPUSH", "l", "x", "-1"},
		[]string{"BRPOPLPUSH", "l", "x", "inf"}, []string{"LRANGE", "lx", "0", "-1"},
		// Existing list commands at their edges.
		[]string{"LPOP", "l", "0"}, []string{"LPOP", "nokey", "0"}, []string{"RPOP", "l", "-1"}, []string{"LPOP", "l", i64big},
		[]string{"LRANGE", "l", i64min, i64min}, []string{"LRANGE", "l", "-100", "100"}, []string{"LRANGE", "l", "0", "x"},
		[]string{"LTRIM", "l2", "1", "0"}, []string{"EXISTS", "l2"}, []string{"LSET", "nokey", "0", "x"}, []string{"LSET", "l", "-100", "x"},
		[]string{"LSET", "l", "-1", "last"}, []string{"LREM", "l", "-1", "c"}, []string{"LREM", "l", "0", "nope"}, []string{"LINDEX", "l", "x"},
		[]string{"LINDEX", "l", "-1"}, []string{"LTRIM", "l", "-100", "100"}, []string{"LRANGE", "l", "0", "-1"}, []string{"LPOP", "l", "1"},
		[]string{"RPOP", "l", "100"}, []string{"EXISTS", "l"}, []string{"RPOP", "nokey"}, []string{"LPOP", "str"}, []string{"LPOP", "l", "1", "2"},
		// SMOVE.
		[]string{"SADD", "s1", "a", "b", "c", "d"}, []string{"SADD", "s2", "c", "d", "e"}, []string{"SADD", "s3", "d", "z"},
		[]string{"SMOVE", "s1", "s2", "a"}, []string{"SMOVE", "s1", "s2", "c"}, []string{"SMOVE", "s1", "s2", "zz"}, []string{"SMOVE", "s1", "s1", "b"},
		[]string{"SMOVE", "s1", "s1", "zz"}, []string{"SMOVE", "s1", "str", "b"}, []string{"SMOVE", "str", "s1", "b"}, []string{"SMOVE", "nokey", "str", "b"},
		[]string{"SMOVE", "s1", "new", "b"}, []string{"SADD", "single", "x"}, []string{"SMOVE", "single", "new", "x"}, []string{"EXISTS", "single"},
		[]string{"SCARD", "s1"}, []string{"SCARD", "new"}, []string{"SMOVE", "s1", "new"},
		// SMISMEMBER, SINTERCARD.
		[]string{"SMISMEMBER", "s2", "a", "zz", "c"}, []string{"SMISMEMBER", "nokey", "a"}, []string{"SMISMEMBER", "str", "a"}, []string{"SMISMEMBER", "s2"},
		[]string{"SINTERCARD", "2", "s2", "s3"}, []string{"SINTERCARD", "2", "s2", "s2", "LIMIT", "1"}, []string{"SINTERCARD", "2", "s2", "s2", "LIMIT", "0"},
		[]string{"SINTERCARD", "0", "s2"}, []string{"SINTERCARD", "x", "s2"}, []string{"SINTERCARD", "-1", "s2"}, []string{"SINTERCARD", "3", "s2", "s3"},
		[]string{"SINTERCARD", i64max, "s2"}, []string{"SINTERCARD", "2", "s2", "s3", "LIMIT", "-1"}, []string{"SINTERCARD", "2", "s2", "s3", "LIMIT", "x"},
		[]string{"SINTERCARD", "2", "s2", "s3", "LIMIT"}, []string{"SINTERCARD", "2", "s2", "s3", "FOO", "1"}, []string{"SINTERCARD", "2", "s2", "str"},
		[]string{"SINTERCARD", "2", "nokey", "str"}, []string{"SINTERCARD", "2", "s2", "nokey"}, []string{"SINTERCARD", "1", "s2", "LIMIT", i64max},
		[]string{"SINTERCARD", "1", "s2", "LIMIT", "1", "LIMIT", "0"},
		// SPOP, SRANDMEMBER where the answer is not random.
		[]string{"SPOP", "nokey"}, []string{"SPOP", "nokey", "0"}, []string{"SPOP", "nokey", "5"}, []string{"SPOP", "s3", "0"}, []string{"SPOP", "s3", "-1"},
		[]string{"SPOP", "s3", "x"}, []string{"SPOP", "s3", "1", "2"}, []string{"SPOP", "str"}, []string{"SPOP", "str", "1"}, []string{"SPOP", "str", "-1"},
		[]string{"SPOP", "s3", i64min}, []string{"SADD", "sp", "only"}, []string{"SPOP", "sp"}, []string{"EXISTS", "sp"}, []string{"SADD", "sp", "o"},
		[]string{"SPOP", "sp", "1"}, []string{"EXISTS", "sp"},
		[]string{"SRANDMEMBER", "nokey"}, []string{"SRANDMEMBER", "nokey", "5"}, []string{"SRANDMEMBER", "nokey", "-5"}, []string{"SRANDMEMBER", "s2", "0"},
		[]string{"SRANDMEMBER", "s2", i64min}, []string{"SRANDMEMBER", "s2", "x"}, []string{"SRANDMEMBER", "s2", "1", "2"}, []string{"SRANDMEMBER", "str"},
		[]string{"SRANDMEMBER", "str", "1"}, []string{"SRANDMEMBER", "str", "x"}, []string{"SRANDMEMBER", "nokey", i64min},
		// SSCAN: an intset is returned whole, whatever the cursor and COUNT.
		[]string{"SADD", "is", "3", "1", "2", "-5", "10"}, []string{"SSCAN", "is", "0"}, []string{"SSCAN", "is", "0", "COUNT", "1"},
		[]string{"SSCAN", "is", "7", "COUNT", "1"}, []string{"SSCAN", "is", "0", "MATCH", "1*"}, []string{"SSCAN", "is", "0", "MATCH", "*", "COUNT", "100"},
		[]string{"SSCAN", "is", "0", "COUNT", "0"}, []string{"SSCAN", "is", "0", "COUNT", "-1"}, []string{"SSCAN", "is", "0", "COUNT", "x"},
		[]string{"SSCAN", "is", "x"}, []string{"SSCAN", "is", "0", "MATCH"}, []string{"SSCAN", "is", "0", "FOO", "1"}, []string{"SSCAN", "is", u64max},
		[]string{"SSCAN", "is", "18446744073709551616"}, []string{"SSCAN", "is", "-1"}, []string{"SSCAN", "nokey", "0"}, []string{"SSCAN", "nokey", "0", "COUNT", "0"},
		[]string{"SSCAN", "str", "0"}, []string{"SSCAN", "str", "0", "COUNT", "0"}, []string{"SSCAN", "str", "x"}, []string{"SSCAN", "is"},
		[]string{"SSCAN", "is", "0", "COUNT", i64max}, []string{"SSCAN", "is", "0", "MATCH", "[", "COUNT", "2"},
		// SADD/SREM at their edges.
		[]string{"SADD", "s2"}, []string{"SREM", "nokey", "a"}, []string{"SREM", "str", "a"}, []string{"SADD", "str", "a"},
		[]string{"SISMEMBER", "str", "a"}, []string{"SCARD", "str"},
		// HSTRLEN, HRANDFIELD (not random), HSCAN errors.
		[]string{"HSET", "h", "a", "1", "b", "22", "c", "333"}, []string{"HSTRLEN", "h", "b"}, []string{"HSTRLEN", "h", "z"}, []string{"HSTRLEN", "nokey", "z"},
		[]string{"HSTRLEN", "str", "a"}, []string{"HSTRLEN", "h"},
		[]string{"HRANDFIELD", "nokey"}, []string{"HRANDFIELD", "nokey", "3"}, []string{"HRANDFIELD", "nokey", "3", "WITHVALUES"},
		[]string{"HRANDFIELD", "nokey", "x"}, []string{"HRANDFIELD", "nokey", "1", "FOO"}, []string{"HRANDFIELD", "h", "0"},
		[]string{"HRANDFIELD", "h", "0", "WITHVALUES"}, []string{"HRANDFIELD", "h", i64min}, []string{"HRANDFIELD", "h", "x"},
		[]string{"HRANDFIELD", "h", "1", "FOO"}, []string{"HRANDFIELD", "h", "1", "WITHVALUES", "x"},
		[]string{"HRANDFIELD", "h", i64max, "WITHVALUES"}, []string{"HRANDFIELD", "h", "-4611686018427387904", "WITHVALUES"},
		[]string{"HRANDFIELD", "nokey", "4611686018427387904", "WITHVALUES"}, []string{"HRANDFIELD", "str", "4611686018427387904", "WITHVALUES"},
		[]string{"LPOS", "l", "a", "COUNT", "x"}, []string{"LPOS", "l", "a", "MAXLEN", "x"}, []string{"HRANDFIELD", "str"},
		[]string{"HRANDFIELD", "str", "1"}, []string{"HRANDFIELD", "str", "x"}, []string{"HRANDFIELD", "str", "1", "FOO"}, []string{"HRANDFIELD", "l", "1"},
		[]string{"HSCAN", "h", "0", "COUNT", "0"}, []string{"HSCAN", "h", "x"}, []string{"HSCAN", "nokey", "0"}, []string{"HSCAN", "nokey", "0", "FOO"},
		[]string{"HSCAN", "str", "0"}, []string{"HSCAN", "h", "0", "NOVALUES"}, []string{"HSCAN", "h", "0", "MATCH", "b"},
		// HINCRBYFLOAT formatting.
		[]string{"HINCRBYFLOAT", "hf", "a", "17179869184.5"}, []string{"HINCRBYFLOAT", "hf", "a", "1"}, []string{"HINCRBYFLOAT", "hf", "b", "1e20"},
		[]string{"HINCRBYFLOAT", "hf", "b", "5.0e3"}, []string{"HINCRBYFLOAT", "hf", "c", "1.23456789012345678"}, []string{"HINCRBYFLOAT", "hf", "c", "0.1"},
		[]string{"HINCRBYFLOAT", "hf", "d", "-0"}, []string{"HINCRBYFLOAT", "hf", "e", "3.0e-300"}, []string{"HINCRBYFLOAT", "hf", "f", "1e308"},
		[]string{"HINCRBYFLOAT", "hf", "f", "1e308"}, []string{"HINCRBYFLOAT", "hf", "g", "-1.5"}, []string{"HINCRBYFLOAT", "hf", "g", "1.5"},
		[]string{"HMGET", "hf", "a", "b", "c", "d", "e", "f", "g"}, []string{"HSET", "hf", "s", "abc"}, []string{"HINCRBYFLOAT", "hf", "s", "1"},
	),
	// Set algebra (unordered members).
	rows(cmpSet, []string{"SMEMBERS", "s1"}, []string{"SMEMBERS", "s2"}, []string{"SMEMBERS", "new"},
		[]string{"SDIFF", "s2", "s3"}, []string{"SDIFF", "s2", "nokey"}, []string{"SDIFF", "nokey", "s2"}, []string{"SDIFF", "s2"},
		[]string{"SDIFF", "s2", "s3", "str"}, []string{"SDIFF", "nokey", "str"}, []string{"SINTER", "nokey", "str"}, []string{"SINTER", "s1", "str"},
		[]string{"SUNION", "nokey", "str"}, []string{"SDIFF", "s2", "s2"},
		[]string{"SRANDMEMBER", "s2", "100"}, []string{"SRANDMEMBER", "s2", i64max}, []string{"SRANDMEMBER", "s3", "2"},
	),
	exact([]string{"SDIFFSTORE", "d", "s2", "s3"}, []string{"SCARD", "d"}, []string{"SINTERSTORE", "d", "s2", "s3"}, []string{"SISMEMBER", "d", "d"},
		[]string{"SUNIONSTORE", "d", "s1", "s2", "s3"}, []string{"SCARD", "d"}, []string{"SINTERSTORE", "d", "s1", "nokey"}, []string{"EXISTS", "d"},
		[]string{"SET", "sd", "x", "EX", "100"}, []string{"SUNIONSTORE", "sd", "s3"}, []string{"TYPE", "sd"}, []string{"TTL", "sd"},
		[]string{"SINTERSTORE", "d", "s1", "str"}, []string{"SUNIONSTORE", "s3", "s3", "s1"}, []string{"SCARD", "s3"}, []string{"SDIFFSTORE", "d", "nokey"},
		[]string{"SUNIONSTORE", "d"}, []string{"RPUSH", "ld", "x"}, []string{"SDIFFSTORE", "ld", "s2"}, []string{"TYPE", "ld"}, []string{"SDIFFSTORE", "s2", "s2"},
		[]string{"SCARD", "s2"}, []string{"SINTERSTORE", "str", "str"}, []string{"GET", "str"},
		[]string{"SADD", "sp", "a", "b", "c"}),
	rows(cmpSet, []string{"SMEMBERS", "s3"}, []string{"SMEMBERS", "sd"}, []string{"SMEMBERS", "ld"}, []string{"SPOP", "sp", "10"}),
	exact([]string{"EXISTS", "sp"}, []string{"SADD", "sp", "a", "b", "c"}, []string{"HSET", "hr", "f1", "v1", "f2", "v2"}),
	rows(cmpShape, []string{"SPOP", "sp", "2"}, []string{"SRANDMEMBER", "s2", "-5"}, []string{"SRANDMEMBER", "s2", "2"}, []string{"SRANDMEMBER", "s3", "-3"},
		[]string{"SRANDMEMBER", "s2", "3"},
		[]string{"SRANDMEMBER", "s2"}, []string{"HRANDFIELD", "hr"}, []string{"HRANDFIELD", "hr", "-5"}, []string{"HRANDFIELD", "hr", "-5", "WITHVALUES"},
		[]string{"HRANDFIELD", "hr", "1", "WITHVALUES"}, []string{"SPOP", "sp"}),
	exact([]string{"SCARD", "sp"}),
	rows(cmpPairs, []string{"HRANDFIELD", "hr", "10", "WITHVALUES"}, []string{"HRANDFIELD", "hr", "4611686018427387903", "WITHVALUES"}),
	rows(cmpSet, []string{"HRANDFIELD", "hr", "10"}),
	rows(cmpScan, []string{"SSCAN", "s1", "0"}, []string{"SSCAN", "s1", "0", "MATCH", "*d*"}),
	// Inside MULTI/EXEC: moves across slots, blocking forms that do not wait.
	exact([]string{"MULTI"}, []string{"RPUSH", "tx1", "a", "b"}, []string{"LMOVE", "tx1", "tx2", "LEFT", "LEFT"},
		[]string{"BLMOVE", "nokey", "tx2", "LEFT", "LEFT", "0"}, []string{"BRPOPLPUSH", "nokey", "tx2", "0"},
		[]string{"BLMPOP", "0", "1", "nokey", "LEFT"}, []string{"BLMOVE", "tx1", "tx2", "LEFT", "LEFT", "0"},
		[]string{"SMOVE", "nokey", "x", "m"}, []string{"SINTERCARD", "1", "nokey"}, []string{"LMPOP", "0", "x", "LEFT"},
		[]string{"LRANGE", "tx2", "0", "-1"}, []string{"EXEC"}, []string{"EXISTS", "tx1"},
		[]string{"MULTI"}, []string{"LMOVE", "tx2"}, []string{"EXEC"},
		// The keys of the movable-key commands.
		[]string{"COMMAND", "GETKEYS", "LMPOP", "2", "a", "b", "LEFT"}, []string{"COMMAND", "GETKEYS", "BLMPOP", "0", "2", "a", "b", "LEFT"},
		[]string{"COMMAND", "GETKEYS", "SINTERCARD", "2", "a", "b", "LIMIT", "1"}, []string{"COMMAND", "GETKEYS", "LMOVE", "a", "b", "LEFT", "LEFT"},
		[]string{"COMMAND", "GETKEYS", "SDIFFSTORE", "d", "a", "b"}, []string{"COMMAND", "GETKEYS", "BRPOPLPUSH", "a", "b", "0"},
		[]string{"COMMAND", "GETKEYS", "SMOVE", "a", "b", "m"}),
	rows(cmpScan2, []string{"HSCAN", "h", "0"}, []string{"HSCAN", "h", "0", "COUNT", "1"}, []string{"HSCAN", "h", "99"},
		[]string{"HSCAN", "h", "0", "MATCH", "[ab]"}),
)

// TestCollectionsLikeRedis runs collectionsScript on redis-server and on a
// lone Zaris node and compares every reply (issue #13 item 5).
func TestCollectionsLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			want := dialRaw(t, redisAddr)
			got := dialRaw(t, n.RESPAddr().String())
			require.Equal(t, want.do("FLUSHALL"), got.do("FLUSHALL"))
			if proto == "3" {
				want.do("HELLO", "3")
				got.do("HELLO", "3")
			}
			var diffs []string
			for _, row := range collectionsScript {
				w := want.do(row.args...)
				g, err := got.try(row.args...)
				if err != nil {
					diffs = append(diffs, fmt.Sprintf("%q: the Zaris connection died (%v)", row.args, err))
					got = dialRaw(t, n.RESPAddr().String())
					if proto == "3" {
						got.do("HELLO", "3")
					}
					continue
				}
				if nw, ng := normalise(w, row.mode), normalise(g, row.mode); nw != ng {
					diffs = append(diffs, fmt.Sprintf("%q:\n    redis: %q\n    zaris: %q", row.args, w, g))
				}
			}
			require.Equal(t, "+PONG\r\n", got.do("PING"))
			require.Empty(t, diffs, "replies differ from Redis %s:\n%s", proto, strings.Join(diffs, "\n"))
		})
	}
}

// splitReply returns a reply's header line and its elements (none for a
// scalar).
func splitReply(s string) (head string, kids []string) {
	i := strings.Index(s, "\r\n")
	if i < 0 {
		return s, nil
	}
	head = s[:i+2]
	if !strings.ContainsRune("*~>%", rune(s[0])) || strings.HasPrefix(head[1:], "-1") {
		return s, nil
	}
	r := bufio.NewReader(strings.NewReader(s[i+2:]))
	for {
		k, err := readReply(r)
		if err != nil {
			return head, kids
		}
		kids = append(kids, k)
	}
}

// sortGroups sorts a reply's elements taken g at a time.
func sortGroups(s string, g int) string {
	head, kids := splitReply(s)
	var groups []string
	for i := 0; i+g <= len(kids); i += g {
		groups = append(groups, strings.Join(kids[i:i+g], ""))
	}
	slices.Sort(groups)
	return head + strings.Join(groups, "")
}

// maskBulks replaces every bulk string's content by its type marker.
func maskBulks(s string) string {
	head, kids := splitReply(s)
	if kids == nil {
		if s[0] == '$' && !strings.HasPrefix(s, "$-1") {
			return "$?"
		}
		return s
	}
	var b strings.Builder
	b.WriteString(head)
	for _, k := range kids {
		b.WriteString(maskBulks(k))
	}
	return b.String()
}

func normalise(s string, mode cmpMode) string {
	if s == "" || s[0] == '-' {
		return s
	}
	switch mode {
	case cmpSet:
		return sortGroups(s, 1)
	case cmpPairs:
		if _, kids := splitReply(s); len(kids) > 0 && kids[0][0] == '*' {
			return sortGroups(s, 1) // RESP3: [field, value] arrays
		}
		return sortGroups(s, 2)
	case cmpScan, cmpScan2:
		head, kids := splitReply(s)
		if len(kids) != 2 {
			return s
		}
		g := 1
		if mode == cmpScan2 {
			g = 2
		}
		return head + kids[0] + sortGroups(kids[1], g)
	case cmpShape, cmpUnsure:
		return maskBulks(s)
	}
	return s
}
