package resp_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// idleSeconds is OBJECT IDLETIME's integer reply.
func idleSeconds(t *testing.T, c *rawConn, key string) int {
	t.Helper()
	r := c.do("OBJECT", "IDLETIME", key)
	require.True(t, strings.HasPrefix(r, ":"), "OBJECT IDLETIME %s: %q", key, r)
	n, err := strconv.Atoi(strings.TrimSpace(r[1:]))
	require.NoError(t, err)
	return n
}

// TestClientNoTouch: reads by a client in CLIENT NO-TOUCH mode leave every
// key's access stamp as it was — OBJECT IDLETIME keeps growing through
// plain reads, multi-key reads, reads inside EXEC and inside a script, and
// in-place collection writes — while TOUCH from the same client, and the
// same reads from an ordinary client, reset it (Redis 7.2's semantics).
func TestClientNoTouch(t *testing.T) {
	n := startNode(t)
	addr := n.RESPAddr().String()
	admin := dialRaw(t, addr)
	quiet := dialRaw(t, addr)

	require.Equal(t, "+OK\r\n", admin.do("SET", "s", "v"))
	require.Equal(t, ":1\r\n", admin.do("HSET", "h", "f", "v"))
	require.Equal(t, ":1\r\n", admin.do("RPUSH", "l", "a"))
	require.Equal(t, ":1\r\n", admin.do("SADD", "set1", "a"))
	require.Equal(t, ":1\r\n", admin.do("SADD", "set2", "b"))
	require.Equal(t, ":1\r\n", admin.do("ZADD", "z", "1", "m"))
	keys := []string{"s", "h", "l", "set1", "set2", "z"}

	require.Equal(t, "+OK\r\n", quiet.do("CLIENT", "NO-TOUCH", "on"))
	require.Regexp(t, `flags=[a-zA-Z]*T[a-zA-Z]* `, quiet.do("CLIENT", "INFO"), "CLIENT INFO shows the no-touch flag")
	require.Equal(t, "-ERR syntax error\r\n", quiet.do("CLIENT", "NO-TOUCH", "maybe"))

	// Let every key age past 2 s: a stamp reset now reads as 0 or 1.
	waitFor(t, 30*time.Second, "the keys idle for 2 s", func() bool {
		for _, k := range keys {
			if idleSeconds(t, admin, k) < 2 {
				return false
			}
		}
		return true
	})
	before := map[string]int{}
	for _, k := range keys {
		before[k] = idleSeconds(t, admin, k)
	}

	reads := [][]string{
		{"GET", "s"}, {"STRLEN", "s"}, {"GETRANGE", "s", "0", "-1"}, {"MGET", "s", "h"},
		{"HGET", "h", "f"}, {"HGETALL", "h"},
		{"LRANGE", "l", "0", "-1"}, {"LINDEX", "l", "0"},
		{"SMEMBERS", "set1"}, {"SUNION", "set1", "set2"}, {"SINTERCARD", "2", "set1", "set2"},
		{"ZSCORE", "z", "m"}, {"ZRANGE", "z", "0", "-1"},
		{"EVAL", "return redis.call('GET', KEYS[1])", "1", "s"},
	}
	for _, r := range reads {
		require.False(t, strings.HasPrefix(quiet.do(r...), "-"), "%q", r)
	}
	require.Equal(t, "+OK\r\n", quiet.do("MULTI"))
	require.Equal(t, "+QUEUED\r\n", quiet.do("GET", "s"))
	require.Equal(t, "+QUEUED\r\n", quiet.do("HGET", "h", "f"))
	require.True(t, strings.HasPrefix(quiet.do("EXEC"), "*2\r\n"))
	// An in-place write of a collection is a lookup too (Redis 7.2's
	// lookupKeyWrite honours the mode).
	require.Equal(t, ":2\r\n", quiet.do("RPUSH", "l", "b"))
	for _, k := range keys {
		require.GreaterOrEqual(t, idleSeconds(t, admin, k), before[k], "key %s was touched by a NO-TOUCH client", k)
	}

	// TOUCH stamps even in no-touch mode.
	require.Equal(t, ":1\r\n", quiet.do("TOUCH", "s"))
	require.Less(t, idleSeconds(t, admin, "s"), 2, "TOUCH from a NO-TOUCH client stamps the key")
	// The same read from an ordinary client stamps (the control: the
	// check above can fail).
	require.Equal(t, "$1\r\nv\r\n", admin.do("HGET", "h", "f"))
	require.Less(t, idleSeconds(t, admin, "h"), 2, "an ordinary read stamps the key")
	// Mode off: reads stamp again.
	require.Equal(t, "+OK\r\n", quiet.do("CLIENT", "NO-TOUCH", "off"))
	require.NotRegexp(t, `flags=[a-zA-Z]*T`, quiet.do("CLIENT", "INFO"), "the flag is cleared")
	require.Equal(t, "*1\r\n$1\r\nm\r\n", quiet.do("ZRANGE", "z", "0", "-1"))
	require.Less(t, idleSeconds(t, admin, "z"), 2, "a read after NO-TOUCH off stamps the key")

	// TTL, PTTL, TYPE and EXISTS are not accesses, from any client (Redis's
	// LOOKUP_NOTOUCH); TOUCH is.
	for _, r := range [][]string{{"TTL", "set1"}, {"PTTL", "set1"}, {"TYPE", "set1"}, {"EXISTS", "set1"}} {
		require.False(t, strings.HasPrefix(admin.do(r...), "-"), "%q", r)
	}
	require.GreaterOrEqual(t, idleSeconds(t, admin, "set1"), before["set1"], "TTL, TYPE or EXISTS touched the key")
	require.Equal(t, ":1\r\n", admin.do("TOUCH", "set1"))
	require.Less(t, idleSeconds(t, admin, "set1"), 2, "TOUCH stamps the key")
}
