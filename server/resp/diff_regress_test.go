package resp_test

import (
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/respdiff"
	"github.com/zaris-io/zaris/internal/testscale"
)

// diffRegressions are the mismatches the differential fuzzer
// (difffuzz_test.go) found, each as its minimised reproducer: the sequence
// runs from an empty key space on a fresh connection in the protocol given,
// on redis-server and on Zaris, and every reply must match (by
// respdiff.Compare's rules). The comment is what differed before the fix.
var diffRegressions = []struct {
	proto int
	seq   [][]string
}{
	// Integers are read like Redis's string2ll: no '+', no leading zero, no space, no "-0".
	{proto: 3, seq: [][]string{{"hincrby", "k2", "b", "+2"}}},                                  // redis: ERR not an integer | zaris: 2
	{proto: 3, seq: [][]string{{"MSET", "k3", "f", "k4", "-0"}, {"INCR", "k4"}}},               // redis: ERR not an integer | zaris: 1
	{proto: 3, seq: [][]string{{"LREM", "k1", "02", "c"}}},                                     // redis: ERR not an integer | zaris: 0
	{proto: 2, seq: [][]string{{"LRANGE", "k1", "4294967296", "+2"}}},                          // redis: ERR not an integer | zaris: []
	{proto: 3, seq: [][]string{{"zrevrange", "k2", "1", "+2"}}},                                // redis: ERR not an integer | zaris: []
	{proto: 2, seq: [][]string{{"ZRANGEBYSCORE", "k4", "5", "10", "LIMIT", "+2", "1"}}},        // redis: ERR not an integer | zaris: []
	{proto: 2, seq: [][]string{{"SCAN", "-1", "$", "["}}},                                      // redis: ERR syntax error | zaris: ERR invalid cursor
	{proto: 3, seq: [][]string{{"SCAN", "+2", "TYPE", "1"}}},                                   // redis: ["0" []] | zaris: ERR invalid cursor
	{proto: 2, seq: [][]string{{"SCAN", "-9223372036854775808", "MATCH", "k*", "COUNT", "1"}}}, // redis: ["0" []] | zaris: ERR invalid cursor
	// Floats are read like strtod: hexadecimal accepted; score bounds as zslParseRange ("" is 0, 1e309 is inf).
	{proto: 3, seq: [][]string{{"ZADD", "k2", "XX", "INCR", "0x10", "c"}}},                                                   // redis: nil | zaris: ERR not a valid float
	{proto: 3, seq: [][]string{{"ZCOUNT", "{k}5", "0x10", "18446744073709551615"}}},                                          // redis: 0 | zaris: ERR min or max is not a float
	{proto: 3, seq: [][]string{{"ZRANGEBYSCORE", "k2", "1e309", "9223372036854775807", "WITHSCORES", "LIMIT", "0", "-100"}}}, // redis: [] | zaris: ERR min or max is not a float
	{proto: 2, seq: [][]string{{"ZREVRANGEBYSCORE", "k4", "-1e309", ""}}},                                                    // redis: [] | zaris: ERR min or max is not a float
	{proto: 2, seq: [][]string{{"HINCRBYFLOAT", "k2", "c", "-1e309"}}},                                                       // redis: -1e309 in long double | zaris: ERR not a valid float (a check too strict)
	// Scores print in %.17g's notation, with the shortest digits.
	{proto: 3, seq: [][]string{{"ZINCRBY", "k1", "4294967296", "-1"}}},                                             // redis: 4294967296 | zaris: 4.294967296e+09
	{proto: 2, seq: [][]string{{"ZADD", "z", "1e16", "a", "1e17", "b"}, {"ZRANGE", "z", "0", "-1", "WITHSCORES"}}}, // zaris: 1e+16
	// Arguments are checked before the key's type where Redis checks them first ...
	{proto: 2, seq: [][]string{{"SADD", "k2", "x"}, {"GETRANGE", "k2", "3", "9223372036854775808"}}}, // redis: ERR not an integer | zaris: WRONGTYPE
	{proto: 3, seq: [][]string{{"ZADD", "{k}5", "1", "a"}, {"HINCRBY", "{k}5", "a", "k1"}}},          // redis: ERR not an integer | zaris: WRONGTYPE
	{proto: 3, seq: [][]string{{"SET", "k1", "3"}, {"LRANGE", "k1", " 1", "5"}}},                     // redis: ERR not an integer | zaris: WRONGTYPE
	{proto: 2, seq: [][]string{{"INCRBY", "k4", "100"}, {"LREM", "k4", "9223372036854775808", "x"}}}, // redis: ERR not an integer | zaris: WRONGTYPE
	{proto: 3, seq: [][]string{{"ZINCRBY", "{k}5", "-1", "a"}, {"ltrim", "{k}5", " 1", "100"}}},      // redis: ERR not an integer | zaris: WRONGTYPE
	{proto: 2, seq: [][]string{{"INCR", "k0"}, {"ZREVRANGE", "k0", "1.5", "18446744073709551615"}}},  // redis: ERR not an integer | zaris: WRONGTYPE
	{proto: 2, seq: [][]string{{"SET", "k2", "02"}, {"ZCOUNT", "k2", "+inf", "x"}}},                  // redis: ERR min or max is not a float | zaris: WRONGTYPE
	{proto: 3, seq: [][]string{{"HMSET", "k3", "f", "1"}, {"SETRANGE", "k3", "-2", "inf"}}},          // redis: ERR offset is out of range | zaris: WRONGTYPE
	{proto: 2, seq: [][]string{{"EXPIRE", "k1", "b", "b", "1", ""}}},                                 // redis: ERR Unsupported option b | zaris: ERR not an integer
	{proto: 3, seq: [][]string{{"EXPIREAT", "k1", "a", "a"}}},                                        // redis: ERR Unsupported option a | zaris: ERR not an integer
	{proto: 2, seq: [][]string{{"PEXPIRE", "k0", "a\r\nb", "2", "1"}}},                               // redis: ERR Unsupported option 2 | zaris: ERR not an integer
	{proto: 3, seq: [][]string{{"PEXPIREAT", "k0", "x", strings.Repeat("x", 300)}}},                  // redis: the whole option | zaris: cut at 128 bytes
	{proto: 3, seq: [][]string{{"expire", "k4", "2", "\x00\xff"}}},                                   // redis: option cut at its NUL byte | zaris: whole
	// ... and after the key lookup where Redis looks first.
	{proto: 3, seq: [][]string{{"LINDEX", "k3", "x"}}},                                         // redis: nil | zaris: ERR not an integer
	{proto: 2, seq: [][]string{{"LSET", "k0", "9223372036854775808", "c"}}},                    // redis: ERR no such key | zaris: ERR not an integer
	{proto: 3, seq: [][]string{{"GETEX", "k2", "EX", "-2"}}},                                   // redis: nil | zaris: ERR invalid expire time
	{proto: 2, seq: [][]string{{"GETEX", "k4", "PX", "1.5"}}},                                  // redis: nil | zaris: ERR not an integer
	{proto: 2, seq: [][]string{{"HMSET", "{k}5", "c", "(-inf"}, {"GETEX", "{k}5", "PX", "x"}}}, // redis: WRONGTYPE | zaris: ERR not an integer
	{proto: 3, seq: [][]string{{"getex", "k4", "PX", "-1", "0x10"}}},                           // redis: ERR syntax error | zaris: ERR invalid expire time
	{proto: 3, seq: [][]string{{"SETEX", "k0", "100", "v"}, {"SINTER", "k4", "(-inf", "k0"}}},  // redis: WRONGTYPE | zaris: empty set
	// Error texts.
	{proto: 2, seq: [][]string{{"EXEC", "c"}}},                                                              // redis: EXECABORT … | zaris: ERR wrong number of arguments
	{proto: 2, seq: [][]string{{"MULTI"}, {"SET", "a", "1"}, {"EXEC", "x"}, {"EXEC"}, {"GET", "a"}}},        // EXECABORT ends the transaction
	{proto: 3, seq: [][]string{{"XREAD", "STREAMS", "k1", "18446744073709551615", "18446744073709551615"}}}, // redis: Unbalanced XREAD | zaris: Unbalanced 'xread'
	{proto: 3, seq: [][]string{{"XREADGROUP", "GROUP", "1", "a", "NOACK", "STREAMS", "k3"}}},                // redis: Unbalanced XREAD | zaris: Unbalanced 'xreadgroup'
	{proto: 2, seq: [][]string{{"PUBSUB", "CHANNELS", "k2", "a"}}},                                          // redis: unknown subcommand or wrong number … 'CHANNELS' | zaris: wrong number of arguments
	// Found by the first long run.
	{proto: 3, seq: [][]string{{"SETRANGE", "k1", "3", "x"}, {"ZINCRBY", "k1", " 1", "f"}}},                       // redis: ERR not a valid float | zaris: WRONGTYPE
	{proto: 2, seq: [][]string{{"SCAN", "\x00", "TYPE", "\x00\xff"}}},                                             // redis: ["0" []] (strtoul stops at NUL) | zaris: ERR invalid cursor
	{proto: 2, seq: [][]string{{"ZRANGE", "k0", "10", "1", "LIMIT", "1", "-1", "WITHSCORES"}}},                    // redis: [] (a count of -1 is no LIMIT) | zaris: ERR syntax error, LIMIT …
	{proto: 3, seq: [][]string{{"ZRANGE", "{k}5", "b", "+", "BYSCORE", "LIMIT", "3", "x", "WITHSCORES", "-100"}}}, // redis: ERR not an integer | zaris: ERR syntax error
	// The fuzzer's own rules: EXEC replies by each queued command's class; an expiry past 2262 (accepted).
	{proto: 2, seq: [][]string{{"MULTI"}, {"SETNX", "k1", "c"}, {"SMEMBERS", "k2"}, {"EXEC"}}},
	{proto: 3, seq: [][]string{{"HSET", "k4", "b", ""}, {"PEXPIREAT", "k4", "9223372036854775807"}, {"TTL", "k4"}, {"EXPIRETIME", "k4"}}},
	// MSETNX naming a key twice writes its last value; PUBSUB queues inside MULTI.
	{proto: 3, seq: [][]string{{"MSETNX", "k1", "[a", "k4", "\x00\xff", "k4", "0.1"}, {"MGET", "k1", "k4"}}},            // redis: 1 | zaris: 0
	{proto: 3, seq: [][]string{{"SADD", "s", "a", "b", "c"}, {"MULTI"}, {"SMEMBERS", "s"}, {"HGETALL", "s"}, {"EXEC"}}}, // each EXEC reply compared by its command's class
	{proto: 2, seq: [][]string{{"MULTI"}, {"PUBSUB", "NUMPAT"}, {"PUBSUB", "CHANNELS"}, {"EXEC"}}},                      // redis: QUEUED | zaris: ERR not allowed inside a transaction
	// Commands merged after the fuzzer (zsets/geo, lists/sets/hashes, keys): one score-bound parser
	// (kv.ParseScoreBound, zslParseRange), one cursor parser (kv.ParseCursor, strtoul), Redis's parse order.
	{proto: 3, seq: [][]string{{"ZRANGESTORE", "k3", "k3", "0x10", "(", "BYSCORE", "REV", "LIMIT", "4294967296", "100"}}},                         // redis: 0 | zaris: ERR min or max is not a float
	{proto: 2, seq: [][]string{{"XADD", "k3", "1-1", "a", "f"}, {"ZRANGEBYSCORE", "k3", "5e-324", ""}}},                                           // redis: WRONGTYPE | zaris: ERR min or max is not a float
	{proto: 2, seq: [][]string{{"ZADD", "z", "0", "a", "1", "b", "2", "c"}, {"ZREMRANGEBYSCORE", "z", "", "(1e309"}, {"ZRANGE", "z", "0", "-1"}}}, // redis: 3 | zaris: ERR min or max is not a float
	{proto: 3, seq: [][]string{{"ZADD", "z", "-1", "a", "0", "b"}, {"ZRANGE", "z", "\x00", "+inf", "BYSCORE", "WITHSCORES"}}},                     // a bound read as strtod reads it
	{proto: 3, seq: [][]string{{"ZADD", "z", "1", "a", "2", "b"}, {"ZREVRANGEBYSCORE", "z", "1e309", "-1e309", "WITHSCORES"}}},                    // redis: all | zaris: ERR min or max is not a float
	{proto: 3, seq: [][]string{{"HSET", "h", "f", "v"}, {"HSCAN", "h", "\x00\xff"}, {"HSCAN", "k3", "\x00\xff", "(-inf"}}},                        // redis: ["0" …] | zaris: ERR invalid cursor
	{proto: 2, seq: [][]string{{"SADD", "s", "m"}, {"SSCAN", "s", ""}, {"HINCRBY", "k2", "f", "1"}, {"SSCAN", "k2", "", "c"}}},                    // redis: ["0" [m]], WRONGTYPE | zaris: ERR invalid cursor
	{proto: 3, seq: [][]string{{"ZADD", "z", "1", "a"}, {"ZSCAN", "z", "\x00\xff", "MATCH", "a*"}, {"ZSCAN", "z", "-1", "COUNT", "0"}, {"ZSCAN", "z", "0", "MATCH"}}},
	{proto: 3, seq: [][]string{{"MULTI"}, {"ZSCAN", "k3", "0"}, {"SSCAN", "k2", "3", "k0"}, {"HSCAN", "k1", "x"}, {"EXEC"}}},                                                                                      // the fuzzer compared QUEUED by the cursor shape
	{proto: 3, seq: [][]string{{"ZRANDMEMBER", "{k}5", "k0", "1"}, {"ZADD", "z", "1", "a"}, {"ZRANDMEMBER", "z", "-9223372036854775808", "x"}}},                                                                   // redis: ERR not an integer | zaris: ERR syntax error
	{proto: 3, seq: [][]string{{"COPY", "k4", "k0", "DB", "2", "REPLACE", "a\r\nb"}, {"COPY", "k4", "k0", "DB", "16"}, {"COPY", "k4", "k0", "DB", "x"}}},                                                          // redis: ERR syntax error | zaris: ERR Copying to another database …
	{proto: 2, seq: [][]string{{"GEOPOS", "k3"}, {"GEOHASH", "k2"}, {"SET", "s", "1"}, {"GEOPOS", "s"}, {"GEOHASH", "s"}}},                                                                                        // redis: [] and WRONGTYPE | zaris: ERR wrong number of arguments for ZMSCORE
	{proto: 2, seq: [][]string{{"ZINTERCARD", "1", "k4", "LIMIT", "-9223372036854775809"}, {"ZINTERCARD", "1", "k4", "LIMIT", "1.5"}}},                                                                            // redis: ERR LIMIT can't be negative | zaris: ERR not an integer
	{proto: 3, seq: [][]string{{"SADD", "k4", "a", "a\r\nb"}, {"SORT", "k4", "BY", "[a-"}, {"SORT_RO", "k4", "BY", "x", "LIMIT", "0", "1"}, {"SORT", "k4", "BY", "x", "STORE", "d"}, {"LRANGE", "d", "0", "-1"}}}, // a set unsorted comes in its own order (unspecified): compared as SMEMBERS
	{proto: 3, seq: [][]string{{"PFADD", "k3", "f"}, {"BITCOUNT", "k3", "-1", "-100", "1.5"}, {"BITCOUNT", "k3", "1", "2", "1.5"}}},                                                                               // redis: 0 (an empty negative range before the unit) | zaris: ERR syntax error
	{proto: 3, seq: [][]string{{"ZADD", "k0", "LT", "+inf", "c", "1e308", "a", "-inf", "d", "-1", "e", "-1e300", "g", "9.3e18", "h", "1.8e19", "i", "-4e18", "j"}, // scores no GEOADD wrote decode as (uint64_t)score on x86-64
		{"GEOPOS", "k0", "f", "c", "b", "d", "e", "g", "h", "i", "j"}, {"GEOHASH", "k0", "c", "d", "e", "g", "h", "i", "j"}}}, // redis: -179.99999731779098511 | zaris: 180
	{proto: 2, seq: [][]string{{"RPUSH", "k2", "\x00\xff", "2\x00x", " 1"}, {"SORT_RO", "k2", "GET", "["}, {"SORT", "k2"}}}, // redis: sorted (strtod reads a C string) | zaris: ERR One or more scores can't be converted into double
	{proto: 2, seq: [][]string{{"XADD", "s", "1-1", "a", "1"}, {"XADD", "s", "2-1", "a", "1"}, {"XADD", "s", "3-1", "a", "1"}, // XGROUP ENTRIESREAD (Redis 7.0): the counter, the lag, the errors
		{"XGROUP", "CREATE", "s", "g1", "0", "ENTRIESREAD", "1"}, {"XGROUP", "CREATE", "s", "g2", "0", "ENTRIESREAD", "-2"},
		{"XGROUP", "CREATE", "s", "g3", "0", "ENTRIESREAD", "+1"}, {"XGROUP", "CREATE", "s", "g4", "0", "ENTRIESREAD"},
		{"XGROUP", "CREATE", "s2", "g5", "$", "ENTRIESREAD", "5", "MKSTREAM"}, {"XGROUP", "CREATE", "s", "g6", "0", "ENTRIESREAD", "1", "ENTRIESREAD", "2"},
		{"XGROUP", "SETID", "s", "g1", "2-1", "ENTRIESREAD", "2"}, {"XGROUP", "SETID", "s", "g6", "2-1", "FOO", "3"},
		{"XINFO", "GROUPS", "s"}, {"XINFO", "GROUPS", "s2"}, {"XGROUP", "SETID", "s", "g1", "2-1"}, {"XINFO", "GROUPS", "s"}}},
}

// TestDiffRegressions replays every row on redis-server and on Zaris.
func TestDiffRegressions(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	timeout := testscale.D(10 * time.Second)
	for _, row := range diffRegressions {
		m, err := respdiff.Replay(redisAddr, n.RESPAddr().String(), row.proto, timeout, row.seq)
		if err != nil {
			t.Fatalf("%q: %v", row.seq, err)
		}
		if m != nil {
			t.Errorf("RESP%d %q: replies differ (%s):\n\tredis: %s\n\tzaris: %s", row.proto, row.seq, m.Why, m.Redis, m.Zaris)
		}
	}
}
