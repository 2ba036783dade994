package resp_test

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// zsetScript covers the sorted-set family (issue #13 item 5): every
// command, its options and its errors, hostile numbers (±inf, NaN, 2^63,
// huge LIMIT offsets and counts) and Redis 7.0's %.17g scores. Keys are
// of different slots: on a lone Zaris node the multi-key commands work as
// on a standalone redis-server, which is the oracle.
var zsetScript = [][]string{
	// Scores as Redis 7.0 prints them.
	{"ZADD", "fmt", "0.1", "a", "1.5", "b", "3.0000000000000004", "c", "inf", "d", "1e20", "e", "123456789012345678", "f"},
	{"ZADD", "fmt", "-inf", "g", "-0.0", "h", "1e-7", "i", "5e-324", "j", "-2.5", "k", "12345678901234567890", "l"},
	{"ZRANGE", "fmt", "0", "-1", "WITHSCORES"}, {"ZSCORE", "fmt", "a"}, {"ZSCORE", "fmt", "h"}, {"ZMSCORE", "fmt", "a", "nope", "d", "g"},
	{"ZINCRBY", "fmt", "0.2", "a"}, {"ZINCRBY", "fmt", "-inf", "d"}, {"ZINCRBY", "fmt", "inf", "g"}, {"ZINCRBY", "fmt", "nan", "a"},
	{"ZADD", "fmt", "INCR", "-inf", "d"}, {"ZADD", "fmt", "nan", "x"}, {"ZADD", "fmt", "INCR", "0.1", "a"},
	// ZADD options.
	{"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e"}, {"ZADD", "z", "GT", "CH", "0", "a", "9", "b", "7", "new"},
	{"ZADD", "z", "LT", "CH", "0", "a", "9", "c"}, {"ZADD", "z", "XX", "GT", "INCR", "-1", "a"}, {"ZADD", "z", "XX", "LT", "INCR", "-1", "a"},
	{"ZADD", "z", "NX", "GT", "1", "a"}, {"ZADD", "z", "XX", "NX", "1", "a"}, {"ZADD", "z", "CH", "XX", "1", "nope"}, {"ZADD", "z", "INCR", "CH", "1", "a"},
	{"ZADD", "z", "NX", "INCR", "1", "a"}, {"ZADD", "z", "XX", "INCR", "1", "nope"}, {"ZADD", "z", "1", "a", "x", "b"}, {"ZADD", "z", "GT"},
	{"ZRANGE", "z", "0", "-1", "WITHSCORES"},
	// Unified ZRANGE.
	{"DEL", "z"}, {"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "5", "f"},
	{"ZRANGE", "z", "0", "-1"}, {"ZRANGE", "z", "-2", "-1", "WITHSCORES"}, {"ZRANGE", "z", "0", "1", "REV"}, {"ZRANGE", "z", "0", "-1", "REV", "WITHSCORES"},
	{"ZRANGE", "z", "-100", "100"}, {"ZRANGE", "z", "3", "1"}, {"ZRANGE", "z", "9223372036854775807", "-9223372036854775808"},
	{"ZRANGE", "z", "-9223372036854775808", "9223372036854775807"}, {"ZRANGE", "z", "0", "9223372036854775808"},
	{"ZRANGE", "z", "(1", "5", "BYSCORE"}, {"ZRANGE", "z", "(1", "(5", "BYSCORE", "WITHSCORES"}, {"ZRANGE", "z", "5", "(1", "BYSCORE", "REV"},
	{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"}, {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"},
	{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "2", "-1"}, {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "9223372036854775807", "9223372036854775807"},
	{"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "0", "0"}, {"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV", "LIMIT", "1", "3", "WITHSCORES"},
	{"ZRANGE", "z", "3", "1", "BYSCORE"}, {"ZRANGE", "z", "(3", "3", "BYSCORE"}, {"ZRANGE", "z", "nan", "1", "BYSCORE"}, {"ZRANGE", "z", "((1", "2", "BYSCORE"},
	{"ZRANGE", "z", "[a", "[c", "BYLEX"}, {"ZRANGE", "z", "-", "+", "BYLEX", "LIMIT", "2", "2"}, {"ZRANGE", "z", "+", "-", "BYLEX", "REV"},
	{"ZRANGE", "z", "a", "c", "BYLEX"}, {"ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"}, {"ZRANGE", "z", "0", "1", "LIMIT", "0", "1"},
	{"ZRANGE", "z", "0", "1", "LIMIT", "0", "-1"}, {"ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"}, {"ZRANGE", "z", "0", "1", "REV", "REV"},
	{"ZRANGE", "z", "0", "1", "LIMIT", "0"}, {"ZRANGE", "z", "0", "1", "LIMIT", "x", "1", "BYSCORE"}, {"ZRANGE", "z", "0", "1", "WITHSCORES", "WITHSCORES"},
	{"ZRANGE", "z", "x", "1"}, {"ZRANGE", "nokey", "0", "-1"}, {"ZRANGE", "nokey", "x", "1"}, {"ZRANGE", "nokey", "x", "1", "BYSCORE"},
	{"ZREVRANGE", "z", "0", "2", "WITHSCORES"}, {"ZREVRANGE", "z", "0", "2", "REV"}, {"ZREVRANGE", "z", "0", "2", "BYSCORE"},
	{"ZREVRANGE", "z", "0", "2", "LIMIT", "0", "1"},
	{"ZRANGEBYSCORE", "z", "-inf", "+inf", "WITHSCORES", "LIMIT", "1", "1"}, {"ZRANGEBYSCORE", "z", "2", "4", "LIMIT", "-5", "1"},
	{"ZRANGEBYSCORE", "z", "(2", "(4"}, {"ZRANGEBYSCORE", "z", "2", "4", "REV"}, {"ZRANGEBYSCORE", "z", "2", "4", "BYSCORE"},
	{"ZRANGEBYSCORE", "z", "2", "4", "LIMIT", "1"}, {"ZRANGEBYSCORE", "z", "x", "4"}, {"ZREVRANGEBYSCORE", "z", "4", "2", "WITHSCORES"},
	{"ZREVRANGEBYSCORE", "z", "+inf", "-inf", "LIMIT", "1", "-1"}, {"ZREVRANGEBYSCORE", "z", "2", "4"},
	// Lex ranges (equal scores).
	{"ZADD", "lex", "0", "a", "0", "b", "0", "c", "0", "d", "0", "e", "0", "ee", "0", "f"},
	{"ZRANGEBYLEX", "lex", "-", "+"}, {"ZRANGEBYLEX", "lex", "[b", "(e"}, {"ZRANGEBYLEX", "lex", "(b", "[ee", "LIMIT", "1", "2"},
	{"ZRANGEBYLEX", "lex", "[z", "[a"}, {"ZRANGEBYLEX", "lex", "+", "-"}, {"ZRANGEBYLEX", "lex", "(c", "(c"}, {"ZRANGEBYLEX", "lex", "[c", "[c"},
	{"ZRANGEBYLEX", "lex", "b", "c"}, {"ZRANGEBYLEX", "lex", "[b", "c"}, {"ZRANGEBYLEX", "lex", "", "+"}, {"ZRANGEBYLEX", "lex", "-", "+", "WITHSCORES"},
	{"ZRANGEBYLEX", "lex", "-", "+", "LIMIT", "-1", "2"}, {"ZRANGEBYLEX", "lex", "-", "+", "LIMIT", "0", "x"},
	{"ZREVRANGEBYLEX", "lex", "+", "-"}, {"ZREVRANGEBYLEX", "lex", "(e", "[b"}, {"ZREVRANGEBYLEX", "lex", "+", "-", "LIMIT", "2", "3"},
	{"ZREVRANGEBYLEX", "lex", "-", "+"}, {"ZLEXCOUNT", "lex", "-", "+"}, {"ZLEXCOUNT", "lex", "[b", "(e"}, {"ZLEXCOUNT", "lex", "(e", "[b"},
	{"ZLEXCOUNT", "lex", "[ee", "[ee"}, {"ZLEXCOUNT", "lex", "x", "+"}, {"ZLEXCOUNT", "nokey", "-", "+"}, {"ZLEXCOUNT", "fmt", "-", "+"},
	// ZRANGESTORE.
	{"ZRANGESTORE", "dst", "z", "0", "2"}, {"ZRANGE", "dst", "0", "-1", "WITHSCORES"}, {"ZRANGESTORE", "dst", "z", "(2", "+inf", "BYSCORE", "LIMIT", "1", "2"},
	{"ZRANGE", "dst", "0", "-1", "WITHSCORES"}, {"ZRANGESTORE", "dst", "lex", "[b", "[d", "BYLEX", "REV"}, {"ZRANGESTORE", "dst", "lex", "+", "-", "BYLEX", "REV", "LIMIT", "0", "2"},
	{"ZRANGE", "dst", "0", "-1"}, {"ZRANGESTORE", "dst", "z", "0", "1", "WITHSCORES"}, {"ZRANGESTORE", "dst", "z", "5", "9"}, {"EXISTS", "dst"},
	{"SET", "str", "v"}, {"ZRANGESTORE", "str", "z", "0", "0"}, {"TYPE", "str"}, {"ZRANGESTORE", "dst", "str", "0", "0"}, {"ZRANGESTORE", "str", "nokey", "0", "-1"},
	{"EXISTS", "str"}, {"ZRANGESTORE", "dst", "z", "x", "1"},
	// Scores read as getDoubleFromObject: an underflow to zero refused, a
	// subnormal kept.
	{"ZADD", "uf", "1e-400", "a"}, {"ZADD", "uf", "0x1p-1080", "a"}, {"ZADD", "uf", "5e-324", "a", "0x1p-1074", "b", "1e-310", "c"},
	{"ZINCRBY", "uf", "-1e-400", "a"}, {"ZSCORE", "uf", "c"}, {"ZRANGEBYSCORE", "uf", "1e-400", "1", "WITHSCORES"}, {"ZCOUNT", "uf", "(1e-400", "+inf"},
	{"GEOADD", "ufg", "1e-400", "0", "m"}, {"GEOADD", "ufg", "5e-324", "0", "m"},
	// A *STORE replaces its destination: a new key, without the TTL it had,
	// also when it is one of the sources (the differential fuzzer found
	// Zaris keeping the TTL).
	{"ZADD", "ttl1", "1", "a", "2", "b"}, {"EXPIRE", "ttl1", "1000"}, {"ZUNIONSTORE", "ttl1", "1", "ttl1"}, {"TTL", "ttl1"},
	{"EXPIRE", "ttl1", "1000"}, {"ZRANGESTORE", "ttl1", "ttl1", "0", "0"}, {"TTL", "ttl1"}, {"ZRANGE", "ttl1", "0", "-1", "WITHSCORES"},
	{"ZADD", "ttl2", "5", "x"}, {"EXPIRE", "ttl2", "1000"}, {"ZDIFFSTORE", "ttl2", "1", "ttl1"}, {"TTL", "ttl2"}, {"ZRANGE", "ttl2", "0", "-1"},
	{"EXPIRE", "ttl1", "1000"}, {"ZINTERSTORE", "ttl1", "2", "ttl1", "ttl2"}, {"EXISTS", "ttl1"},
	{"SET", "ttl3", "v", "EX", "1000"}, {"ZUNIONSTORE", "ttl3", "1", "ttl2"}, {"TYPE", "ttl3"}, {"TTL", "ttl3"},
	{"GEOADD", "ttl4", "13.36", "38.11", "p"}, {"EXPIRE", "ttl4", "1000"}, {"GEOSEARCHSTORE", "ttl4", "ttl4", "FROMLONLAT", "13", "38", "BYRADIUS", "200", "km"}, {"TTL", "ttl4"},
	// Range removal.
	{"ZADD", "rm", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e", "6", "f"}, {"ZREMRANGEBYRANK", "rm", "0", "0"}, {"ZREMRANGEBYRANK", "rm", "-1", "-1"},
	{"ZREMRANGEBYRANK", "rm", "10", "20"}, {"ZREMRANGEBYRANK", "rm", "x", "1"}, {"ZREMRANGEBYSCORE", "rm", "(2", "3"}, {"ZREMRANGEBYSCORE", "rm", "x", "3"},
	{"ZRANGE", "rm", "0", "-1"}, {"ZREMRANGEBYSCORE", "rm", "-inf", "+inf"}, {"EXISTS", "rm"}, {"ZREMRANGEBYRANK", "nokey", "0", "-1"},
	{"ZREMRANGEBYLEX", "lex", "[a", "(c"}, {"ZREMRANGEBYLEX", "lex", "x", "y"}, {"ZRANGE", "lex", "0", "-1"}, {"ZREMRANGEBYLEX", "str", "-", "+"},
	{"ZREMRANGEBYSCORE", "str", "x", "1"},
	// Pops.
	{"SET", "str", "v"}, {"ZADD", "p", "1", "a", "2", "b", "3", "c", "4", "d"}, {"ZPOPMIN", "p"}, {"ZPOPMAX", "p"}, {"ZPOPMIN", "p", "0"}, {"ZPOPMIN", "p", "-1"},
	{"ZPOPMIN", "p", "x"}, {"ZPOPMAX", "p", "9223372036854775807"}, {"EXISTS", "p"}, {"ZPOPMIN", "p"}, {"ZPOPMIN", "p", "2"}, {"ZPOPMIN", "str"},
	{"ZPOPMIN", "p", "1", "2"}, {"ZADD", "p", "1", "a", "2", "b"}, {"ZPOPMAX", "p", "1"},
	{"ZADD", "mp1", "1", "a", "2", "b", "3", "c"}, {"ZMPOP", "2", "nokey", "mp1", "MIN"}, {"ZMPOP", "2", "nokey", "mp1", "MAX", "COUNT", "10"},
	{"ZMPOP", "1", "mp1", "MIN"}, {"ZMPOP", "0", "mp1", "MIN"}, {"ZMPOP", "-1", "mp1", "MIN"}, {"ZMPOP", "x", "mp1", "MIN"}, {"ZMPOP", "3", "mp1", "MIN"},
	{"ZMPOP", "1", "mp1", "FOO"}, {"ZMPOP", "1", "mp1", "MIN", "COUNT", "0"}, {"ZMPOP", "1", "mp1", "MIN", "COUNT"}, {"ZMPOP", "1", "mp1", "MIN", "COUNT", "1", "COUNT", "1"},
	{"ZMPOP", "2", "str", "mp1", "MIN"}, {"ZMPOP", "1", "mp1", "MIN", "FOO"}, {"ZMPOP", "9223372036854775807", "mp1", "MIN"},
	{"ZADD", "bp", "5", "x"}, {"BZPOPMIN", "nokey", "bp", "0"}, {"BZPOPMAX", "nokey", "0.01"}, {"BZPOPMIN", "bp", "x"}, {"BZPOPMIN", "bp", "-1"},
	{"BZPOPMIN", "str", "0"}, {"ZADD", "bp", "5", "x", "6", "y"}, {"BZMPOP", "0", "2", "nokey", "bp", "MAX", "COUNT", "5"}, {"BZMPOP", "0.01", "1", "bp", "MIN"},
	{"BZMPOP", "x", "1", "bp", "MIN"}, {"BZMPOP", "-1", "1", "bp", "MIN"}, {"BZMPOP", "0", "0", "bp", "MIN"}, {"BZMPOP", "0", "1", "bp", "FOO"},
	{"BZMPOP", "x", "0", "bp", "MIN"}, {"BZMPOP", "-1", "x", "bp", "MIN"}, {"BZMPOP", "0", "1", "bp", "MIN", "COUNT", "-1"}, {"BZMPOP", "x", "1", "bp", "MIN", "COUNT", "-1"},
	// Set operations.
	{"ZADD", "u1", "1", "a", "2", "b", "3", "c"}, {"ZADD", "u2", "10", "b", "20", "c", "30", "d"}, {"SADD", "s1", "a", "d", "e"},
	{"ZUNION", "2", "u1", "u2"}, {"ZUNION", "2", "u1", "u2", "WITHSCORES"}, {"ZUNION", "3", "u1", "u2", "s1", "WITHSCORES"},
	{"ZUNION", "2", "u1", "u2", "WEIGHTS", "2", "0.5", "AGGREGATE", "MAX", "WITHSCORES"}, {"ZUNION", "2", "u1", "u2", "AGGREGATE", "MIN", "WITHSCORES"},
	{"ZUNION", "2", "u1", "u2", "WEIGHTS", "inf", "-inf", "WITHSCORES"}, {"ZUNION", "2", "u1", "u2", "WEIGHTS", "0", "inf", "WITHSCORES"},
	{"ZUNION", "2", "u1", "u2", "WEIGHTS", "1"}, {"ZUNION", "2", "u1", "u2", "WEIGHTS", "1", "x"}, {"ZUNION", "2", "u1", "u2", "AGGREGATE", "AVG"},
	{"ZUNION", "2", "u1", "u2", "AGGREGATE"}, {"ZUNION", "0", "u1"}, {"ZUNION", "-1", "u1"}, {"ZUNION", "3", "u1", "u2"}, {"ZUNION", "x", "u1"},
	{"ZUNION", "2", "u1", "str"}, {"ZUNION", "2", "u1", "str", "FOO"}, {"ZUNION", "2", "u1", "nokey", "WITHSCORES"}, {"ZUNION", "1", "u1", "FOO"},
	{"ZINTER", "2", "u1", "u2", "WITHSCORES"}, {"ZINTER", "3", "u1", "u2", "s1"}, {"ZINTER", "2", "u1", "s1", "WITHSCORES"},
	{"ZINTER", "2", "u1", "u2", "WEIGHTS", "1", "2", "AGGREGATE", "MIN", "WITHSCORES"}, {"ZINTER", "2", "u1", "nokey"}, {"ZINTER", "2", "nokey", "str"},
	{"ZDIFF", "2", "u1", "u2", "WITHSCORES"}, {"ZDIFF", "2", "u1", "s1"}, {"ZDIFF", "1", "u1"}, {"ZDIFF", "2", "nokey", "u1"}, {"ZDIFF", "2", "u1", "u2", "WEIGHTS", "1", "1"},
	{"ZDIFF", "2", "u1", "u2", "AGGREGATE", "SUM"},
	{"ZUNIONSTORE", "ust", "2", "u1", "u2"}, {"ZRANGE", "ust", "0", "-1", "WITHSCORES"}, {"ZUNIONSTORE", "ust", "2", "u1", "u2", "WITHSCORES"},
	{"ZINTERSTORE", "ust", "2", "u1", "u2", "WEIGHTS", "2", "3"}, {"ZRANGE", "ust", "0", "-1", "WITHSCORES"}, {"ZINTERSTORE", "ust", "2", "u1", "nokey"},
	{"EXISTS", "ust"}, {"ZDIFFSTORE", "ust", "2", "u1", "u2"}, {"ZRANGE", "ust", "0", "-1", "WITHSCORES"}, {"ZDIFFSTORE", "str", "1", "u1"}, {"TYPE", "str"},
	{"ZUNIONSTORE", "ust", "0", "u1"}, {"ZINTERSTORE", "ust", "x", "u1"}, {"ZDIFFSTORE", "ust", "3", "u1"}, {"ZUNIONSTORE", "u1", "2", "u1", "u2"},
	{"ZRANGE", "u1", "0", "-1", "WITHSCORES"}, {"SET", "str", "v"},
	{"ZADD", "f1", "0.1", "x"}, {"ZADD", "f2", "0.2", "x"}, {"ZADD", "f3", "0.3", "x", "1", "y"}, {"ZUNION", "3", "f1", "f2", "f3", "WITHSCORES"},
	{"ZUNION", "3", "f3", "f2", "f1", "WITHSCORES"}, {"ZINTER", "3", "f3", "f1", "f2", "WITHSCORES"}, {"ZINTER", "3", "f1", "f2", "f3", "WITHSCORES"},
	{"ZINTERCARD", "2", "u1", "u2"}, {"ZINTERCARD", "2", "u1", "u2", "LIMIT", "1"}, {"ZINTERCARD", "2", "u1", "u2", "LIMIT", "0"},
	{"ZINTERCARD", "2", "u1", "u2", "LIMIT", "-1"}, {"ZINTERCARD", "2", "u1", "u2", "LIMIT"}, {"ZINTERCARD", "0", "u1"}, {"ZINTERCARD", "3", "u1", "u2"},
	{"ZINTERCARD", "x", "u1"}, {"ZINTERCARD", "2", "u1", "str"}, {"ZINTERCARD", "2", "u1", "s1"}, {"ZINTERCARD", "1", "nokey"}, {"ZINTERCARD", "2", "u1", "u2", "FOO"},
	// ZMSCORE, ZRANDMEMBER (whole-set answers are deterministic), ZSCAN.
	{"ZMSCORE", "u2", "b", "nope", "d"}, {"ZMSCORE", "nokey", "a"}, {"ZMSCORE", "str", "a"},
	{"ZRANDMEMBER", "nokey"}, {"ZRANDMEMBER", "nokey", "5"}, {"ZRANDMEMBER", "nokey", "-5", "WITHSCORES"}, {"ZRANDMEMBER", "u2", "0"},
	{"ZRANDMEMBER", "u2", "3"}, {"ZRANDMEMBER", "u2", "100", "WITHSCORES"}, {"ZRANDMEMBER", "u2", "x"}, {"ZRANDMEMBER", "u2", "1", "FOO"},
	{"ZRANDMEMBER", "u2", "1", "WITHSCORES", "x"}, {"ZRANDMEMBER", "u2", "-9223372036854775808"}, {"ZRANDMEMBER", "u2", "-9223372036854775807", "WITHSCORES"},
	{"ZRANDMEMBER", "u2", "9223372036854775807", "WITHSCORES"}, {"ZRANDMEMBER", "u2", "4611686018427387904", "WITHSCORES"}, {"ZRANDMEMBER", "str"},
	{"ZADD", "one", "7", "only"}, {"ZRANDMEMBER", "one"}, {"ZRANDMEMBER", "one", "-3"}, {"ZRANDMEMBER", "one", "-2", "WITHSCORES"},
	{"ZSCAN", "u2", "0"}, {"ZSCAN", "u2", "0", "MATCH", "[bc]"}, {"ZSCAN", "u2", "0", "COUNT", "1"}, {"ZSCAN", "u2", "0", "COUNT", "0"},
	{"ZSCAN", "u2", "0", "COUNT", "x"}, {"ZSCAN", "u2", "x"}, {"ZSCAN", "u2", "-1"}, {"ZSCAN", "u2", "0", "FOO", "1"}, {"ZSCAN", "u2", "0", "MATCH"},
	{"ZSCAN", "nokey", "0", "FOO"}, {"ZSCAN", "str", "0"}, {"ZSCAN", "nokey", "x"},
	// Wrong types everywhere.
	{"ZRANGEBYLEX", "str", "-", "+"}, {"ZLEXCOUNT", "str", "-", "+"}, {"ZRANDMEMBER", "str", "1"}, {"ZPOPMAX", "str", "1"},
}

// TestZSetSameRepliesAsRedis runs zsetScript on a standalone redis-server
// and a lone Zaris node, RESP2 and RESP3, byte for byte.
func TestZSetSameRepliesAsRedis(t *testing.T) {
	runOracle(t, zsetScript)
}

func runOracle(t *testing.T, script [][]string) { runOracleNear(t, script, nil) }

// runOracleNear is runOracle where the replies of the commands near
// chooses may differ in the last bits of their floats (sameUpToUlps).
func runOracleNear(t *testing.T, script [][]string, near func(cmd []string) bool) {
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
			for _, c := range script {
				w, g := want.do(c...), got.do(c...)
				if w != g && !(near != nil && near(c) && sameUpToUlps(w, g, 2)) {
					diffs = append(diffs, fmt.Sprintf("%q:\n    %s", c, firstDifference(w, g)))
				}
			}
			require.Empty(t, diffs, "%d replies differ from Redis %s:\n%s", len(diffs), proto, strings.Join(diffs, "\n"))
		})
	}
}

// geoScript covers the geo commands: positions, hashes and distances as
// redis-server prints them, every search form and option, and the errors.
var geoScript = [][]string{
	{"GEOADD", "Sicily", "13.361389", "38.115556", "Palermo", "15.087269", "37.502669", "Catania"},
	{"GEOADD", "Sicily", "12.758489", "38.788135", "edge1", "17.241510", "38.788135", "edge2", "13.5833332", "37.316667", "Agrigento"},
	{"GEOADD", "Sicily", "NX", "CH", "0", "0", "Palermo", "1", "1", "null"}, {"GEOADD", "Sicily", "XX", "CH", "13.361389", "38.115556", "null"},
	{"GEOADD", "Sicily", "NX", "XX", "1", "1", "x"}, {"GEOADD", "Sicily", "1", "1"}, {"GEOADD", "Sicily", "CH", "CH", "1"},
	{"GEOADD", "Sicily", "200", "100", "x"}, {"GEOADD", "Sicily", "-180.0000001", "0", "x"}, {"GEOADD", "Sicily", "0", "85.05112879", "x"},
	{"GEOADD", "Sicily", "x", "0", "m"}, {"GEOADD", "Sicily", "1", "1", "ok", "1", "nan", "bad"}, {"EXISTS", "bad"},
	{"GEOADD", "poles", "180", "85.05112878", "ne", "-180", "-85.05112878", "sw", "0", "0", "origin", "179.9999", "0", "am1", "-179.9999", "0", "am2"},
	{"ZRANGE", "Sicily", "0", "-1", "WITHSCORES"}, {"ZRANGE", "poles", "0", "-1", "WITHSCORES"},
	{"GEOPOS", "Sicily", "Palermo", "Catania", "nope", "null"}, {"GEOPOS", "poles", "ne", "sw", "origin", "am1", "am2"}, {"GEOPOS", "nokey", "a"},
	{"GEOHASH", "Sicily", "Palermo", "Catania", "nope"}, {"GEOHASH", "poles", "ne", "sw", "origin", "am1"}, {"GEOHASH", "nokey", "a", "b"},
	{"GEODIST", "Sicily", "Palermo", "Catania"}, {"GEODIST", "Sicily", "Palermo", "Catania", "km"}, {"GEODIST", "Sicily", "Palermo", "Catania", "MI"},
	{"GEODIST", "Sicily", "Palermo", "Catania", "ft"}, {"GEODIST", "Sicily", "Palermo", "Catania", "yd"}, {"GEODIST", "Sicily", "Palermo", "nope"},
	{"GEODIST", "Sicily", "Palermo", "Palermo"}, {"GEODIST", "nokey", "a", "b"}, {"GEODIST", "Sicily", "a", "b", "km", "x"}, {"GEODIST", "poles", "am1", "am2"},
	{"GEODIST", "poles", "ne", "sw", "km"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "km"}, {"GEORADIUS", "Sicily", "15", "37", "200", "km", "WITHDIST", "WITHCOORD", "WITHHASH"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "km", "ASC"}, {"GEORADIUS", "Sicily", "15", "37", "200", "km", "DESC", "WITHDIST"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "1"}, {"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "2", "DESC"},
	{"GEORADIUS", "Sicily", "15", "37", "2000", "km", "COUNT", "1", "ANY"}, {"GEORADIUS", "Sicily", "15", "37", "200", "km", "ANY"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "0"}, {"GEORADIUS", "Sicily", "15", "37", "200", "km", "COUNT", "x"},
	{"GEORADIUS", "Sicily", "15", "37", "x", "km"}, {"GEORADIUS", "Sicily", "15", "37", "-1", "km"}, {"GEORADIUS", "Sicily", "15", "37", "1", "yd"},
	{"GEORADIUS", "Sicily", "200", "37", "1", "km"}, {"GEORADIUS", "Sicily", "15", "37", "200", "km", "FOO"}, {"GEORADIUS", "nokey", "15", "37", "200", "km"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "mi", "STORE", "gst"}, {"ZRANGE", "gst", "0", "-1", "WITHSCORES"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "km", "STOREDIST", "gst"}, {"ZRANGE", "gst", "0", "-1", "WITHSCORES"},
	{"GEORADIUS", "Sicily", "15", "37", "200", "km", "STORE", "gst", "WITHDIST"}, {"GEORADIUS", "nokey", "15", "37", "200", "km", "STORE", "gst"},
	{"EXISTS", "gst"}, {"GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "STORE", "gst"}, {"GEORADIUS_RO", "Sicily", "15", "37", "200", "km", "WITHDIST"},
	{"GEORADIUSBYMEMBER", "Sicily", "Agrigento", "100", "km"}, {"GEORADIUSBYMEMBER", "Sicily", "Agrigento", "100", "km", "WITHDIST", "ASC"},
	{"GEORADIUSBYMEMBER", "Sicily", "nope", "100", "km"}, {"GEORADIUSBYMEMBER", "nokey", "nope", "x", "yd"}, {"GEORADIUSBYMEMBER", "Sicily", "Agrigento", "x", "km"},
	{"GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "300", "km", "WITHCOORD", "DESC"}, {"GEORADIUSBYMEMBER_RO", "Sicily", "Palermo", "300", "km", "STORE", "x"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "ASC"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC", "WITHCOORD", "WITHDIST", "WITHHASH"},
	{"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "200", "km", "DESC", "WITHDIST"},
	{"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "BYBOX", "200", "100", "km", "WITHDIST"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "20000", "km"},
	{"GEOSEARCH", "poles", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "WITHDIST"}, {"GEOSEARCH", "poles", "FROMLONLAT", "180", "0", "BYRADIUS", "50", "km", "WITHDIST"},
	{"GEOSEARCH", "poles", "FROMLONLAT", "179", "85", "BYBOX", "5000", "1000", "km", "ASC"}, {"GEOSEARCH", "poles", "FROMMEMBER", "origin", "BYRADIUS", "0", "m", "WITHDIST"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "2"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "2", "ANY"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km", "COUNT", "9223372036854775807"},
	{"GEOSEARCH", "Sicily", "FROMMEMBER", "nope", "BYRADIUS", "200", "km"}, {"GEOSEARCH", "nokey", "FROMMEMBER", "nope", "BYRADIUS", "200", "km"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "FROMMEMBER", "Palermo", "BYRADIUS", "1", "km"},
	{"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"},
	{"GEOSEARCH", "Sicily", "FROMMEMBER", "Palermo", "FROMMEMBER", "Catania", "BYRADIUS", "1", "km"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "km", "BYRADIUS", "1", "km"},
	{"GEOSEARCH", "Sicily", "BYRADIUS", "1", "km", "ASC"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "ASC", "WITHDIST"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "x", "1", "km"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "x", "km"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "-1", "1", "km"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "1", "1", "yd"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STORE", "x"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "ANY"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "x", "37", "BYRADIUS", "1", "km"}, {"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "inf", "km", "COUNT", "1"},
	{"GEOSEARCH", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km", "STOREDIST"},
	{"GEOSEARCHSTORE", "gs", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "ASC", "COUNT", "3"}, {"ZRANGE", "gs", "0", "-1", "WITHSCORES"},
	{"GEOSEARCHSTORE", "gs", "Sicily", "FROMLONLAT", "15", "37", "BYBOX", "400", "400", "km", "STOREDIST"}, {"ZRANGE", "gs", "0", "-1", "WITHSCORES"},
	{"GEOSEARCHSTORE", "gs", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km", "WITHDIST"},
	{"GEOSEARCHSTORE", "gs", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km", "STORE", "x"},
	{"GEOSEARCHSTORE", "gs", "nokey", "FROMLONLAT", "15", "37", "BYRADIUS", "400", "km"}, {"EXISTS", "gs"},
	{"GEOSEARCHSTORE", "gs", "Sicily", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km"}, {"EXISTS", "gs"},
	{"SET", "gstr", "v"}, {"GEOADD", "gstr", "1", "1", "a"}, {"GEOPOS", "gstr", "a"}, {"GEOHASH", "gstr", "a"}, {"GEODIST", "gstr", "a", "b"},
	{"GEOSEARCH", "gstr", "FROMLONLAT", "15", "37", "BYRADIUS", "1", "km"}, {"GEORADIUS", "gstr", "15", "37", "x", "km"},
	{"GEOSEARCHSTORE", "gstr", "Sicily", "FROMLONLAT", "15", "37", "BYRADIUS", "200", "km"}, {"TYPE", "gstr"},
}

func TestGeoSameRepliesAsRedis(t *testing.T) {
	runOracle(t, geoScript)
}

// firstDifference shows where two replies part: the whole replies when
// short, else the first differing line with its neighbours.
func firstDifference(w, g string) string {
	if len(w)+len(g) < 400 {
		return fmt.Sprintf("redis: %q\n    zaris: %q", w, g)
	}
	wl, gl := strings.Split(w, "\r\n"), strings.Split(g, "\r\n")
	for i := 0; i < len(wl) && i < len(gl); i++ {
		if wl[i] != gl[i] {
			lo, hi := max(i-3, 0), i+2
			return fmt.Sprintf("line %d: redis: %q\n    zaris: %q", i, wl[lo:min(hi, len(wl))], gl[lo:min(hi, len(gl))])
		}
	}
	return fmt.Sprintf("lengths differ: redis %d lines, zaris %d lines", len(wl), len(gl))
}

// sameUpToUlps reports whether two replies are equal but for floats that
// differ by at most ulps units in the last place (lengths of bulk strings
// holding them aside).
func sameUpToUlps(w, g string, ulps int64) bool {
	wl, gl := strings.Split(w, "\r\n"), strings.Split(g, "\r\n")
	if len(wl) != len(gl) {
		return false
	}
	for i := range wl {
		if wl[i] == gl[i] || strings.HasPrefix(wl[i], "$") && strings.HasPrefix(gl[i], "$") {
			continue
		}
		a, err1 := strconv.ParseFloat(strings.TrimPrefix(wl[i], ","), 64)
		b, err2 := strconv.ParseFloat(strings.TrimPrefix(gl[i], ","), 64)
		if err1 != nil || err2 != nil || a < 0 != (b < 0) {
			return false
		}
		d := int64(math.Float64bits(a)) - int64(math.Float64bits(b))
		if d > ulps || d < -ulps {
			return false
		}
	}
	return true
}
