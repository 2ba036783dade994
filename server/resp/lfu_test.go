package resp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// lfuScript: each command, then OBJECT FREQ of the key it names. With
// lfu-log-factor 0 every access adds one to the counter and with
// lfu-decay-time 0 nothing decays, so the counters are exact and show which
// commands count as an access, and what a write, an overwrite, a copy and a
// restore start a key with. Values are not small integers: Redis shares
// those between keys (and their counter with them) when maxmemory is 0.
var lfuScript = [][]string{
	{"SET", "a", "v1"}, {"GET", "a"}, {"GET", "a"}, {"SET", "a", "v2"}, {"APPEND", "a", "x"}, {"STRLEN", "a"},
	{"GETRANGE", "a", "0", "1"}, {"SETRANGE", "a", "0", "z"}, {"EXISTS", "a"}, {"TYPE", "a"}, {"TTL", "a"},
	{"EXPIRE", "a", "100"}, {"PERSIST", "a"}, {"TOUCH", "a"}, {"GETEX", "a"}, {"SET", "a", "v3", "GET"},
	{"OBJECT", "ENCODING", "a"}, {"MEMORY", "USAGE", "a"}, {"DUMP", "a"},
	{"SET", "n", "12345678901"}, {"INCR", "n"}, {"INCRBY", "n", "5"}, {"DECR", "n"}, {"GET", "n"},
	{"RPUSH", "l", "x"}, {"RPUSH", "l", "y"}, {"LRANGE", "l", "0", "-1"}, {"LLEN", "l"}, {"LINDEX", "l", "0"}, {"LPOP", "l"},
	{"HSET", "h", "f", "v"}, {"HSET", "h", "g", "w"}, {"HGET", "h", "f"}, {"HGETALL", "h"}, {"HLEN", "h"}, {"HDEL", "h", "f"},
	{"SADD", "s", "m"}, {"SISMEMBER", "s", "m"}, {"SCARD", "s"}, {"SMEMBERS", "s"},
	{"ZADD", "z", "1", "m"}, {"ZSCORE", "z", "m"}, {"ZRANGE", "z", "0", "-1"}, {"ZINCRBY", "z", "1", "m"},
	{"SET", "{c}src", "vv"}, {"GET", "{c}src"}, {"COPY", "{c}src", "{c}dst"}, {"COPY", "{c}src", "{c}dst", "REPLACE"},
	{"GET", "{c}src"}, {"RENAME", "{c}src", "{c}moved"}, {"GET", "{c}moved"}, {"RENAMENX", "{c}moved", "{c}again"},
	{"HSET", "{c}h", "f", "v"}, {"HGET", "{c}h", "f"}, {"RENAME", "{c}h", "{c}h2"}, {"RPUSH", "{c}l", "x"}, {"RENAME", "{c}l", "{c}l2"},
	{"XADD", "{c}x", "1-1", "f", "v"}, {"XLEN", "{c}x"}, {"RENAME", "{c}x", "{c}x2"},
	{"DEL", "a"}, {"SET", "a", "fresh"},
}

func TestLFUCountersLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	want := dialRaw(t, redisAddr)
	got := dialRaw(t, n.RESPAddr().String())
	setup := [][]string{
		{"FLUSHALL"}, {"CONFIG", "SET", "maxmemory", "1gb"}, {"CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"},
		{"CONFIG", "SET", "lfu-log-factor", "0"}, {"CONFIG", "SET", "lfu-decay-time", "0"},
		{"CONFIG", "GET", "maxmemory-policy"}, {"CONFIG", "GET", "lfu-log-factor"}, {"CONFIG", "GET", "lfu-decay-time"},
	}
	for _, c := range setup {
		require.Equal(t, want.do(c...), got.do(c...), "%q", c)
	}
	var diffs []string
	for _, c := range lfuScript {
		key := c[1]
		switch strings.ToUpper(c[0]) {
		case "OBJECT", "MEMORY":
			key = c[2]
		case "COPY", "RENAME", "RENAMENX":
			key = c[2] // the destination
		}
		w, g := want.do(c...), got.do(c...)
		wf, gf := want.do("OBJECT", "FREQ", key), got.do("OBJECT", "FREQ", key)
		if w != g && c[0] != "DUMP" && c[0] != "MEMORY" && c[0] != "OBJECT" {
			diffs = append(diffs, fmt.Sprintf("%q: redis %q, zaris %q", c, w, g))
		}
		if wf != gf {
			diffs = append(diffs, fmt.Sprintf("OBJECT FREQ %s after %q: redis %q, zaris %q", key, c, wf, gf))
		}
	}
	// IDLETIME is not kept under LFU (an error, as Redis's); FREQ is not kept under LRU.
	for _, c := range [][]string{
		{"OBJECT", "IDLETIME", "a"}, {"RESTORE", "r", "0", dumpOf(t, want, "a"), "FREQ", "100"}, {"OBJECT", "FREQ", "r"},
		{"RESTORE", "r", "0", dumpOf(t, want, "a"), "REPLACE"}, {"OBJECT", "FREQ", "r"},
		{"RESTORE", "r", "0", dumpOf(t, want, "a"), "REPLACE", "IDLETIME", "1000"}, {"OBJECT", "FREQ", "r"},
		{"CONFIG", "SET", "maxmemory-policy", "allkeys-lru"}, {"OBJECT", "FREQ", "a"},
		{"CONFIG", "SET", "maxmemory-policy", "volatile-lfu"}, {"CONFIG", "GET", "maxmemory-policy"},
		{"CONFIG", "SET", "lfu-log-factor", "-1"}, {"CONFIG", "SET", "lfu-decay-time", "x"},
	} {
		if w, g := want.do(c...), got.do(c...); w != g {
			diffs = append(diffs, fmt.Sprintf("%q: redis %q, zaris %q", c, w, g))
		}
	}
	require.Empty(t, diffs, "LFU counters differ from Redis:\n%s", strings.Join(diffs, "\n"))
}

// dumpOf is DUMP key's payload, from Redis's raw reply.
func dumpOf(t *testing.T, c *rawConn, key string) string {
	t.Helper()
	r := c.do("DUMP", key)
	_, body, ok := strings.Cut(r, "\r\n")
	require.True(t, ok, "DUMP %s: %q", key, r)
	return strings.TrimSuffix(body, "\r\n")
}
