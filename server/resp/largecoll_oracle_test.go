package resp_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// largeCollectionsScript grows a list, a hash, a set, a sorted set and a
// stream past the sizes where their indexes change form — a list's
// references past one 512-entry chunk (D128), a field table through
// several incremental resizes and shrinks (D129), a set's member list past
// its 512-member chunk and back (D130), a stream's entries and pending list
// past their 256-item chunks (D131) — and reads them across those
// boundaries, then shrinks them again. The random picks come last: after
// them the two servers' collections differ.
func largeCollectionsScript() []oracleRow {
	var out []oracleRow
	add := func(mode cmpMode, args ...string) { out = append(out, oracleRow{mode, args}) }
	batch := func(cmd, key string, from, to int, item func(i int) []string) {
		for lo := from; lo < to; lo += 150 {
			args := []string{cmd, key}
			for i := lo; i < min(lo+150, to); i++ {
				args = append(args, item(i)...)
			}
			add(cmpExact, args...)
		}
	}
	one := func(prefix string) func(int) []string {
		return func(i int) []string { return []string{prefix + strconv.Itoa(i)} }
	}

	// A list: 1 200 at the tail, 700 at the head, read across chunk edges.
	batch("RPUSH", "L", 0, 1200, one("r"))
	batch("LPUSH", "L", 0, 700, one("l"))
	for _, w := range [][2]string{{"0", "-1"}, {"505", "530"}, {"1020", "1030"}, {"-600", "-500"}, {"1500", "1600"}, {"1890", "5000"}} {
		add(cmpExact, "LRANGE", "L", w[0], w[1])
	}
	for _, i := range []string{"0", "511", "512", "513", "699", "700", "1023", "1024", "1899", "1900", "-1", "-513", "-1900", "-1901"} {
		add(cmpExact, "LINDEX", "L", i)
	}
	add(cmpExact, "LPOP", "L", "300")
	add(cmpExact, "RPOP", "L", "400")
	add(cmpExact, "LSET", "L", "600", "set")
	add(cmpExact, "LINSERT", "L", "BEFORE", "r500", "ins")
	add(cmpExact, "LREM", "L", "0", "r7")
	add(cmpExact, "LPOS", "L", "r900")
	add(cmpExact, "LTRIM", "L", "100", "1000")
	add(cmpExact, "LLEN", "L")
	add(cmpExact, "LRANGE", "L", "0", "-1")
	add(cmpExact, "LPOP", "L", "850")
	add(cmpExact, "LRANGE", "L", "0", "-1")
	batch("LPUSH", "L", 0, 600, one("again"))
	add(cmpExact, "RPOP", "L", "550")
	add(cmpExact, "LRANGE", "L", "0", "-1")
	add(cmpExact, "LMOVE", "L", "L2", "RIGHT", "LEFT")
	add(cmpExact, "LRANGE", "L2", "0", "-1")

	// A hash through several resizes up, then down, overwritten on the way.
	batch("HSET", "H", 0, 3000, func(i int) []string { return []string{"f" + strconv.Itoa(i), "v" + strconv.Itoa(i)} })
	add(cmpExact, "HLEN", "H")
	batch("HSET", "H", 0, 3000, func(i int) []string { return []string{"f" + strconv.Itoa(i*7%3000), "w" + strconv.Itoa(i)} })
	for _, f := range []string{"f0", "f1", "f1499", "f2999", "f3000"} {
		add(cmpExact, "HGET", "H", f)
	}
	batch("HDEL", "H", 0, 2800, one("f"))
	add(cmpExact, "HLEN", "H")
	add(cmpPairs, "HGETALL", "H")
	batch("HSET", "H", 5000, 5300, func(i int) []string { return []string{"f" + strconv.Itoa(i), "x"} })
	add(cmpExact, "HMGET", "H", "f2800", "f2999", "f5000", "f5299", "f0")
	add(cmpPairs, "HGETALL", "H")

	// A set past one chunk of members and back below a quarter of one.
	batch("SADD", "S", 0, 2000, one("m"))
	batch("SADD", "S2", 1000, 2600, one("m"))
	add(cmpExact, "SCARD", "S")
	add(cmpSet, "SINTER", "S", "S2")
	add(cmpExact, "SINTERCARD", "2", "S", "S2")
	batch("SREM", "S", 0, 1900, one("m"))
	add(cmpExact, "SCARD", "S")
	add(cmpSet, "SMEMBERS", "S")
	add(cmpSet, "SDIFF", "S2", "S")
	add(cmpSet, "SUNION", "S", "S2")
	add(cmpExact, "SISMEMBER", "S", "m1950")
	add(cmpExact, "SMISMEMBER", "S", "m0", "m1899", "m1900", "m1999")
	add(cmpExact, "OBJECT", "ENCODING", "S")

	// A sorted set's member table the same way.
	batch("ZADD", "Z", 0, 2000, func(i int) []string { return []string{strconv.Itoa(i % 97), "z" + strconv.Itoa(i)} })
	add(cmpExact, "ZCARD", "Z")
	add(cmpExact, "ZRANGE", "Z", "500", "520", "WITHSCORES")
	batch("ZREM", "Z", 0, 1950, one("z"))
	add(cmpExact, "ZRANGE", "Z", "0", "-1", "WITHSCORES")
	add(cmpExact, "ZSCORE", "Z", "z1999")

	// A stream's entries and a group's pending list past several 256-item
	// chunks (D131): reads across chunk edges both ways, deletes that
	// drop leading chunks and compact, an out-of-order pending insert
	// (XCLAIM FORCE of an acknowledged entry).
	for i := 1; i <= 1400; i++ {
		add(cmpExact, "XADD", "X", strconv.Itoa(i)+"-1", "f", "v"+strconv.Itoa(i))
	}
	add(cmpExact, "XLEN", "X")
	for _, w := range [][2]string{{"-", "+"}, {"250-1", "260-1"}, {"255", "258"}, {"1300", "+"}, {"1399", "99999"}, {"0", "1"}} {
		add(cmpExact, "XRANGE", "X", w[0], w[1], "COUNT", "40")
		add(cmpExact, "XREVRANGE", "X", w[1], w[0], "COUNT", "40")
	}
	add(cmpExact, "XDEL", "X", "256-1", "257-1", "512-1", "1-1", "1400-1")
	add(cmpExact, "XRANGE", "X", "250", "260")
	add(cmpExact, "XREVRANGE", "X", "520", "500")
	add(cmpExact, "XREVRANGE", "X", "+", "-", "COUNT", "3")
	add(cmpExact, "XGROUP", "CREATE", "X", "g", "0")
	add(cmpExact, "XREADGROUP", "GROUP", "g", "c1", "COUNT", "600", "STREAMS", "X", ">")
	add(cmpExact, "XREADGROUP", "GROUP", "g", "c2", "COUNT", "300", "STREAMS", "X", ">")
	add(cmpExact, "XPENDING", "X", "g")
	ack := []string{"XACK", "X", "g"}
	for i := 2; i <= 100; i++ {
		ack = append(ack, strconv.Itoa(i)+"-1")
	}
	add(cmpExact, ack...)
	add(cmpExact, "XCLAIM", "X", "g", "c3", "0", "300-1", "301-1", "900-1", "JUSTID")
	add(cmpExact, "XCLAIM", "X", "g", "c5", "0", "50-1", "FORCE", "JUSTID")
	add(cmpExact, "XPENDING", "X", "g")
	add(cmpExact, "XAUTOCLAIM", "X", "g", "c4", "0", "0", "COUNT", "50", "JUSTID")
	// A claim that claims nothing makes no consumer (Redis 7.0).
	add(cmpExact, "XAUTOCLAIM", "X", "g", "lazy1", "999999999", "0", "COUNT", "5", "JUSTID")
	add(cmpExact, "XGROUP", "CREATECONSUMER", "X", "g", "lazy1")
	add(cmpExact, "XCLAIM", "X", "g", "lazy2", "0", "1-1", "JUSTID")
	add(cmpExact, "XGROUP", "CREATECONSUMER", "X", "g", "lazy2")
	add(cmpExact, "XTRIM", "X", "MAXLEN", "700")
	add(cmpExact, "XRANGE", "X", "-", "+", "COUNT", "5")
	add(cmpExact, "XAUTOCLAIM", "X", "g", "c4", "0", "0", "COUNT", "400", "JUSTID")
	add(cmpExact, "XPENDING", "X", "g")
	add(cmpExact, "XTRIM", "X", "MINID", "1000")
	del := []string{"XDEL", "X"}
	for i := 1000; i <= 1300; i++ {
		del = append(del, strconv.Itoa(i)+"-1")
	}
	add(cmpExact, del...)
	add(cmpExact, "XRANGE", "X", "-", "+")
	add(cmpExact, "XREVRANGE", "X", "+", "-")
	add(cmpExact, "XLEN", "X")
	add(cmpExact, "XPENDING", "X", "g")

	// Random picks: their sizes and types only; the collections differ after.
	add(cmpShape, "SRANDMEMBER", "S2", "20")
	add(cmpShape, "HRANDFIELD", "H", "10")
	add(cmpShape, "SPOP", "S2", "700")
	add(cmpExact, "SCARD", "S2")
	add(cmpShape, "SPOP", "S2", "800")
	add(cmpExact, "SCARD", "S2")
	return out
}

// TestLargeCollectionsLikeRedis runs largeCollectionsScript on
// redis-server and on a lone Zaris node and compares every reply.
func TestLargeCollectionsLikeRedis(t *testing.T) {
	compareScriptWithRedis(t, largeCollectionsScript())
}

// compareScriptWithRedis runs script on a fresh redis-server and a lone
// Zaris node, one command after the other on each, and fails with every
// reply that differs.
func compareScriptWithRedis(t *testing.T, script []oracleRow) {
	t.Helper()
	redisAddr := startRedis(t, false)
	n := startNode(t)
	want := dialRaw(t, redisAddr)
	got := dialRaw(t, n.RESPAddr().String())
	require.Equal(t, want.do("FLUSHALL"), got.do("FLUSHALL"))
	var diffs []string
	for _, row := range script {
		w := want.do(row.args...)
		g, err := got.try(row.args...)
		if err != nil {
			t.Fatalf("%.80q: the Zaris connection died (%v)", row.args, err)
		}
		if nw, ng := normalise(w, row.mode), normalise(g, row.mode); nw != ng {
			diffs = append(diffs, fmt.Sprintf("%.120q:\n    redis: %.300q\n    zaris: %.300q", row.args, w, g))
		}
	}
	require.Empty(t, diffs, "replies differ from Redis:\n%s", strings.Join(diffs, "\n"))
}
