package resp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server"
)

// Issue 16: --max-item-bytes bounds a whole key, collections included. A
// command that would grow a key past it gets the error an oversized string
// gets, and changes nothing. go-redis against a real node with a 1 KiB cap.
func TestItemCapBoundsEveryDataTypeOverRESP(t *testing.T) {
	n := startNode(t, func(c *server.Config) { c.MaxItemBytes = 1024 })
	rdb := newClient(t, n)
	ctx := ctxT(t)
	const oom = "OOM value exceeds the maximum item size of 1024 bytes"
	kb2 := strings.Repeat("v", 2048)
	b900 := strings.Repeat("v", 900)
	refused := func(what string, cmd redis.Cmder) {
		t.Helper()
		require.EqualError(t, cmd.Err(), oom, what)
	}

	t.Run("strings", func(t *testing.T) {
		refused("SET", rdb.Set(ctx, "s", kb2, 0))
		require.NoError(t, rdb.Set(ctx, "s", b900, 0).Err())
		refused("APPEND", rdb.Append(ctx, "s", strings.Repeat("v", 200)))
		refused("SETRANGE", rdb.SetRange(ctx, "s", 1000, "vvvvvvvvvvvvvvvvvvvvvvvvv"))
		refused("GETSET", rdb.GetSet(ctx, "s", kb2))
		refused("SETEX", rdb.SetEx(ctx, "s", kb2, 60e9))
		refused("MSET", rdb.MSet(ctx, "s", kb2))
		require.Equal(t, b900, rdb.Get(ctx, "s").Val())
	})
	t.Run("hash", func(t *testing.T) {
		refused("HSET of 2 KiB", rdb.HSet(ctx, "h", "f", kb2))
		refused("HMSET over the cap together", rdb.HMSet(ctx, "h", "a", b900, "b", b900))
		require.Zero(t, rdb.Exists(ctx, "h").Val(), "a refused HSET created the hash")
		// Item size: field and value plus a 2-byte header each, 1 + 900 + 4
		// = 905; 119 bytes are left, which a new field of 115 bytes and
		// a value of 1 (+ 4) passes by one.
		require.NoError(t, rdb.HSet(ctx, "h", "a", b900).Err())
		refused("HSETNX", rdb.HSetNX(ctx, "h", "b", strings.Repeat("v", 115)))
		refused("HSET of a field more", rdb.HSet(ctx, "h", "b", strings.Repeat("v", 115)))
		refused("HINCRBY creating a field", rdb.HIncrBy(ctx, "h", strings.Repeat("c", 115), 1))
		refused("HINCRBYFLOAT creating a field", rdb.HIncrByFloat(ctx, "h", strings.Repeat("c", 115), 1.5))
		require.Equal(t, map[string]string{"a": b900}, rdb.HGetAll(ctx, "h").Val())
		require.NoError(t, rdb.HSet(ctx, "h", "b", strings.Repeat("v", 114)).Err(), "a field taking the hash to exactly the cap")
	})
	t.Run("list", func(t *testing.T) {
		refused("RPUSH of 2 KiB", rdb.RPush(ctx, "l", kb2))
		require.NoError(t, rdb.RPush(ctx, "l", b900).Err())
		for range 49 {
			refused("RPUSH of 900 B more", rdb.RPush(ctx, "l", b900))
		}
		refused("LPUSH", rdb.LPush(ctx, "l", b900))
		refused("LSET", rdb.LSet(ctx, "l", 0, kb2))
		require.Equal(t, int64(1), rdb.LLen(ctx, "l").Val())
	})
	t.Run("set", func(t *testing.T) {
		refused("SADD of 2 KiB", rdb.SAdd(ctx, "st", kb2))
		require.NoError(t, rdb.SAdd(ctx, "st", b900).Err())
		refused("SADD more", rdb.SAdd(ctx, "st", strings.Repeat("w", 900)))
		require.Equal(t, int64(1), rdb.SCard(ctx, "st").Val())
	})
	t.Run("sorted set", func(t *testing.T) {
		refused("ZADD of 2 KiB", rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: kb2}))
		// Item size: 900 + 2 (header) + 8 (score) + 2 = 912; a member of
		// 101 bytes (+ 12) passes the cap by one.
		require.NoError(t, rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: b900}).Err())
		refused("ZADD more", rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: strings.Repeat("m", 101)}))
		refused("ZINCRBY of a new member", rdb.ZIncrBy(ctx, "z", 1, strings.Repeat("m", 101)))
		require.Equal(t, int64(1), rdb.ZCard(ctx, "z").Val())
		require.NoError(t, rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: strings.Repeat("m", 100)}).Err(), "a member taking the set to exactly the cap")
		refused("ZADD of a 1-byte member at the cap", rdb.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "m"}))
	})
	t.Run("stream", func(t *testing.T) {
		refused("XADD of 2 KiB", rdb.XAdd(ctx, &redis.XAddArgs{Stream: "x", Values: []string{"f", kb2}}))
		require.NoError(t, rdb.XAdd(ctx, &redis.XAddArgs{Stream: "x", Values: []string{"f", strings.Repeat("v", 800)}}).Err())
		refused("XADD more", rdb.XAdd(ctx, &redis.XAddArgs{Stream: "x", Values: []string{"f", strings.Repeat("v", 800)}}))
		require.Equal(t, int64(1), rdb.XLen(ctx, "x").Val())
	})
	t.Run("transaction", func(t *testing.T) {
		// Inside MULTI the refusal is that command's reply; the block's
		// other commands apply (Redis semantics for a runtime error).
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, "{t}h", "f", kb2)
			p.Set(ctx, "{t}s", "ok", 0)
			return nil
		})
		require.EqualError(t, err, oom)
		require.Zero(t, rdb.Exists(ctx, "{t}h").Val())
		require.Equal(t, "ok", rdb.Get(ctx, "{t}s").Val())
	})
}

// While no write can add data (maxmemory below any record, or no-eviction
// past the cap) a command that may add data is refused before it runs or
// is queued, as Redis's denyoom commands are; reads, DEL and DISCARD still
// run (Redis's tcl suite, unit/multi's OOM tests: a transaction that could
// not refuse them left the server at maxmemory 1 for every test after).
func TestOutOfMemoryRefusesDenyOOMCommandsUpFront(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	c, admin := dialRaw(t, addr), dialRaw(t, addr)
	oom := "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	require.Equal(t, "+OK\r\n", c.do("SET", "x", "value"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory-policy", "noeviction")) // Redis's default

	// A queue of reads only runs; one with a write is refused at EXEC.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("GET", "x"))
	require.Equal(t, "+QUEUED\r\n", c.do("PING"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "1"))
	require.Equal(t, "*2\r\n$5\r\nvalue\r\n+PONG\r\n", c.do("EXEC"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", c.do("SET", "y", "1"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "1"))
	require.Equal(t, "-EXECABORT Transaction discarded because of: OOM command not allowed when used memory > 'maxmemory'.\r\n", c.do("EXEC"))
	require.Equal(t, "-ERR EXEC without MULTI\r\n", c.do("EXEC"))

	// Refused while queuing: EXEC aborts; DISCARD still works.
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, oom, c.do("LPUSH", "l", "a"))
	require.Equal(t, "-EXECABORT Transaction discarded because of previous errors.\r\n", c.do("EXEC"))
	require.Equal(t, "+OK\r\n", c.do("MULTI"))
	require.Equal(t, oom, c.do("SET", "y", "1"))
	require.Equal(t, "+OK\r\n", c.do("DISCARD"))

	require.Equal(t, oom, c.do("SET", "y", "1"))
	require.Equal(t, oom, c.do("INCR", "counter"))
	require.Equal(t, "$5\r\nvalue\r\n", c.do("GET", "x"))
	require.Equal(t, ":1\r\n", c.do("DEL", "x"))

	// No-eviction past an ordinary cap refuses; an evicting store over
	// its cap takes writes and evicts.
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", c.do("SET", "big", strings.Repeat("v", 4096)))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "1000"))
	require.Equal(t, oom, c.do("SET", "y", "1"))
	require.Equal(t, ":1\r\n", c.do("DEL", "big"))
	require.Equal(t, "+OK\r\n", c.do("SET", "y", "1"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru"))
	require.Equal(t, "+OK\r\n", c.do("SET", "z", strings.Repeat("v", 4096)))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", c.do("SET", "y", "2"))

	// An evicting policy under a cap below any record: evicting cannot
	// make room, so it is refused the same way.
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "1"))
	require.Equal(t, oom, c.do("SET", "y", "1"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "0"))
	require.Equal(t, "+OK\r\n", c.do("SET", "y", "3"))
}

// A multi-key write or a transaction admitted under the no-eviction cap is
// applied whole even when it crosses the cap midway, as Redis applies it:
// before, the store refused the key that crossed, and an MSET answered
// -OOM with the pairs before it written, a transaction with half its writes.
func TestAdmittedMultiKeyWritesRunWholePastTheCap(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	c, admin := dialRaw(t, addr), dialRaw(t, addr)
	oom := "-OOM command not allowed when used memory > 'maxmemory'.\r\n"
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory-policy", "noeviction"))
	require.Equal(t, "+OK\r\n", admin.do("CONFIG", "SET", "maxmemory", "2mb"))
	value := strings.Repeat("v", 100_000)
	mset := func(prefix string) []string {
		args := []string{"MSET"}
		for i := range 40 { // 4 MB: twice the cap
			args = append(args, fmt.Sprintf("%s%d", prefix, i), value)
		}
		return args
	}
	for _, tc := range []struct{ name, prefix string }{{"one slot", "{t}k"}, {"several slots", "k"}} {
		t.Run(tc.name, func(t *testing.T) {
			args := mset(tc.prefix)
			require.Equal(t, "+OK\r\n", c.do(args...))
			require.Equal(t, ":40\r\n", c.do("DBSIZE"), "an MSET past the cap was cut short")
			require.Equal(t, oom, c.do("MSET", "a", "1", "b", "2"), "over the cap now: refused before it runs")
			del := append([]string{"DEL"}, args[1:]...)
			for i := len(del) - 1; i > 1; i -= 2 { // the keys only
				del = append(del[:i], del[i+1:]...)
			}
			require.Equal(t, ":40\r\n", c.do(del...))
		})
	}
	t.Run("transaction", func(t *testing.T) {
		require.Equal(t, "+OK\r\n", c.do("MULTI"))
		for i := range 40 {
			require.Equal(t, "+QUEUED\r\n", c.do("SET", fmt.Sprintf("{x}%d", i), value))
		}
		reply := c.do("EXEC")
		require.Equal(t, 40, strings.Count(reply, "+OK\r\n"), "EXEC past the cap: %q", reply[:min(len(reply), 200)])
		require.Equal(t, ":40\r\n", c.do("DBSIZE"))
	})
}
