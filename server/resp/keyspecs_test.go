package resp_test

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// TestCommandInfoMatchesRedis: COMMAND INFO of every command and
// subcommand both servers have is byte for byte redis-server 7.0's — flags,
// key positions, ACL categories, tips and key specifications (these from
// keyspecs_gen.go) — except for containers, whose subcommand lists differ
// where Zaris lacks one (checked one by one instead).
func TestCommandInfoMatchesRedis(t *testing.T) {
	addr := startRedis(t, false)
	oracle := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = oracle.Close() })
	n := startNode(t)
	ctx := context.Background()
	theirs, err := oracle.Do(ctx, "COMMAND", "LIST").StringSlice()
	require.NoError(t, err)
	oursList, err := newClient(t, n).Do(ctx, "COMMAND", "LIST").StringSlice()
	require.NoError(t, err)
	ours := map[string]bool{}
	for _, c := range oursList {
		ours[c] = true
	}
	want, got := dialRaw(t, addr), dialRaw(t, n.RESPAddr().String())
	sort.Strings(theirs)
	var diffs []string
	compared := 0
	for _, name := range theirs {
		if !ours[name] {
			continue
		}
		w, g := want.do("COMMAND", "INFO", name), got.do("COMMAND", "INFO", name)
		if strings.Count(w, "|") > strings.Count(name, "|")+1 && !strings.Contains(name, "|") {
			continue // a container: its subcommands are compared on their own
		}
		compared++
		if w != g {
			diffs = append(diffs, name+":\n redis "+w+"\n zaris "+g)
		}
	}
	require.Greater(t, compared, 200)
	require.Empty(t, diffs, "COMMAND INFO differing from redis-server:\n%s", strings.Join(diffs, "\n"))
}

// TestGetKeysAndFlagsLikeRedis: COMMAND GETKEYSANDFLAGS (and GETKEYS)
// names the keys and their flags as redis-server does, through the key specifications, the
// commands' own finders where the specifications do not tell (SORT's
// STORE, SET's GET, BITFIELD's writes), and the errors.
func TestGetKeysAndFlagsLikeRedis(t *testing.T) {
	addr := startRedis(t, false)
	n := startNode(t)
	want, got := dialRaw(t, addr), dialRaw(t, n.RESPAddr().String())
	for _, c := range [][]string{
		{"set", "a", "b"}, {"set", "a", "b", "EX", "10", "GET"}, {"get", "a"}, {"mset", "a", "1", "b", "2"},
		{"eval", "x", "2", "a", "b", "c"}, {"eval", "x", "0"}, {"eval", "x", "abc", "a"}, {"fcall", "f", "1", "k"},
		{"xread", "COUNT", "2", "STREAMS", "s1", "s2", "0", "0"}, {"xreadgroup", "GROUP", "g", "c", "STREAMS", "s1", "s2", ">", ">"},
		{"sort", "a", "STORE", "b"}, {"sort", "a"}, {"sort_ro", "a"}, {"zunionstore", "d", "2", "a", "b"},
		{"lmove", "a", "b", "LEFT", "RIGHT"}, {"georadius", "g", "1", "1", "1", "km", "STORE", "s"},
		{"georadius", "g", "1", "1", "1", "km", "STOREDIST", "s"}, {"blpop", "a", "b", "0"}, {"object", "encoding", "k"},
		{"xgroup", "create", "s", "g", "0"}, {"bitop", "and", "d", "a", "b"}, {"copy", "a", "b"}, {"smove", "a", "b", "m"},
		{"bitfield", "k", "GET", "u8", "0"}, {"bitfield", "k", "SET", "u8", "0", "1"}, {"bitfield", "k"},
		{"bitfield_ro", "k", "GET", "u8", "0"}, {"zrangestore", "d", "s", "0", "1"}, {"lmpop", "2", "a", "b", "LEFT"},
		{"sintercard", "2", "a", "b"}, {"del", "a", "b", "c"}, {"rename", "a", "b"}, {"pfmerge", "d", "a", "b"},
		{"restore", "k", "0", "x"}, {"xadd", "s", "*", "f", "v"}, {"migrate", "h", "p", "k", "0", "5"},
		{"spublish", "ch", "m"}, {"ping"}, {"nosuchcommand", "a"}, {"get"}, {"lmpop", "x", "a", "LEFT"},
	} {
		for _, sub := range []string{"GETKEYSANDFLAGS", "GETKEYS"} {
			args := append([]string{"COMMAND", sub}, c...)
			require.Equal(t, want.do(args...), got.do(args...), "%s %q", sub, c)
		}
	}
}

// TestACLKeyPermissionsLikeRedis: a user's key patterns are checked per
// key with the flags of the key specification that names it, as Redis
// 7.0 does — a write-only pattern lets LPUSH, APPEND, SADD or HSET insert
// and DEL delete, but not GET read; EXISTS and TYPE need any pattern that
// matches; a sharded channel is no key.
func TestACLKeyPermissionsLikeRedis(t *testing.T) {
	addr := startRedis(t, false)
	n := startNode(t)
	want, got := dialRaw(t, addr), dialRaw(t, n.RESPAddr().String())
	for _, c := range []*rawConn{want, got} {
		require.Equal(t, "+OK\r\n", c.do("FLUSHALL"))
		require.Equal(t, "+OK\r\n", c.do("ACL", "SETUSER", "w", "on", "nopass", "%W~w*", "%R~r*", "~k*", "+@all", "-@dangerous"))
		require.Equal(t, "+OK\r\n", c.do("AUTH", "w", "x"))
	}
	for _, c := range [][]string{
		{"LPUSH", "w1", "x"}, {"EXISTS", "w1"}, {"TYPE", "w1"}, {"GET", "w1"}, {"SET", "w2", "v"}, {"SET", "w2", "v", "GET"},
		{"DEL", "w2"}, {"APPEND", "w3", "x"}, {"SADD", "w4", "m"}, {"HSET", "w5", "f", "v"}, {"INCR", "w6"},
		{"EXISTS", "r1"}, {"GET", "r1"}, {"SET", "r1", "v"}, {"RPOPLPUSH", "w1", "r9"}, {"COPY", "w1", "w7"},
		{"TYPE", "zz"}, {"SPUBLISH", "wch", "m"}, {"SET", "k1", "v"}, {"GET", "k1"}, {"MSET", "w8", "1", "r8", "2"},
		{"SORT", "k1", "STORE", "w9"}, {"EVAL", "return 1", "1", "w1"}, {"EVAL", "return 1", "1", "k1"},
		{"XADD", "w10", "1-1", "f", "v"}, {"XREAD", "STREAMS", "w10", "0"}, {"ZADD", "w11", "1", "m"}, {"ZSCORE", "w11", "m"},
		{"GETDEL", "w3"}, {"RENAME", "k1", "w12"}, {"PFADD", "w13", "a"}, {"PFCOUNT", "w13"}, {"UNLINK", "w13"},
	} {
		require.Equal(t, want.do(c...), got.do(c...), "%q", c)
	}
}
