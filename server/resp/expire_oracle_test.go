package resp_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// expireScript is run on redis-server and on Zaris; every reply must be
// byte-identical, the clock readings included: each instant is absolute
// (2100-01-01 and neighbours) or a relative one far from any other, so no
// reply depends on when the command ran.
var expireScript = [][]string{
	// The same instant, in seconds and milliseconds, is neither later nor
	// earlier (issue #13: Zaris compared the front end's wall clock with the
	// store's coarse clock).
	{"SET", "k", "v"},
	{"PEXPIREAT", "k", "4102444800000"},
	{"PEXPIRETIME", "k"}, {"EXPIRETIME", "k"},
	{"PEXPIREAT", "k", "4102444800000", "GT"},
	{"PEXPIREAT", "k", "4102444800000", "LT"},
	{"EXPIREAT", "k", "4102444800", "GT"},
	{"EXPIREAT", "k", "4102444800", "LT"},
	{"PEXPIREAT", "k", "4102444800001", "GT"}, {"PEXPIRETIME", "k"}, {"EXPIRETIME", "k"},
	{"EXPIREAT", "k", "4102444800", "XX", "LT"}, {"PEXPIRETIME", "k"},
	{"PEXPIREAT", "k", "4102444799999", "NX"},
	{"PEXPIREAT", "k", "4102444800499"}, {"EXPIRETIME", "k"}, // rounds as Redis: (ms+500)/1000
	{"PEXPIREAT", "k", "4102444800500"}, {"EXPIRETIME", "k"},
	// A relative time far below or above the expiry.
	{"EXPIRE", "k", "100", "GT"}, {"EXPIRE", "k", "100", "LT"}, {"TTL", "k"},
	{"PEXPIRE", "k", "100000000000", "GT"}, {"PEXPIRE", "k", "100000000000", "LT"},
	// No expiry is infinite: GT never holds, LT always; XX needs one.
	{"PERSIST", "k"},
	{"EXPIRE", "k", "100", "GT"}, {"EXPIRE", "k", "100", "XX", "LT"}, {"PEXPIRETIME", "k"}, {"TTL", "k"},
	{"EXPIREAT", "k", "4102444800", "LT"}, {"EXPIRETIME", "k"},
	// A time not in the future deletes the key once the conditions hold.
	{"PEXPIREAT", "k", "1", "GT"}, {"EXISTS", "k"},
	{"PEXPIREAT", "k", "1", "LT"}, {"EXISTS", "k"}, {"PTTL", "k"}, {"PEXPIRETIME", "k"},
	{"HSET", "h", "f", "v"}, {"EXPIRE", "h", "-1", "GT"}, {"EXPIRE", "h", "0", "LT"}, {"TYPE", "h"},
	{"RPUSH", "l", "a"}, {"EXPIRE", "l", "0"}, {"EXISTS", "l"},
	{"SADD", "s", "a"}, {"EXPIREAT", "s", "-9223372036854775"}, {"EXISTS", "s"},
	// Redis's checks, in its order: options, their compatibility, the
	// number, its overflow; then the key.
	{"EXPIRE", "nokey", "x", "NX", "XX"}, {"EXPIRE", "nokey", "x", "GT", "LT"}, {"EXPIRE", "nokey", "x", "LT", "FOO"},
	{"PEXPIRE", "nokey", "1.5", "GT"}, {"PEXPIRE", "nokey", "100", "gt", "xx"},
	{"EXPIRE", "nokey", "9223372036854776"}, {"EXPIRE", "nokey", "-9223372036854776"},
	{"EXPIREAT", "nokey", "9223372036854776"}, {"PEXPIRE", "nokey", "9223372036854775807"},
	{"PEXPIREAT", "nokey", "9223372036854775807"}, {"PEXPIREAT", "nokey", "-9223372036854775808"},
	// SET … EXAT/PXAT and GETEX … EXAT/PXAT keep the instant given, SET …
	// KEEPTTL the instant held (they were TTLs counted again in the store).
	{"SET", "s1", "v", "PXAT", "4102444800000"}, {"PEXPIRETIME", "s1"},
	{"PEXPIREAT", "s1", "4102444800000", "GT"}, {"PEXPIREAT", "s1", "4102444800000", "LT"},
	{"SET", "s1", "w", "KEEPTTL"}, {"PEXPIRETIME", "s1"}, {"EXPIREAT", "s1", "4102444800", "LT"},
	{"SET", "s1", "x", "GET", "XX", "KEEPTTL"}, {"PEXPIRETIME", "s1"},
	{"SET", "s2", "v", "EXAT", "4102444800"}, {"EXPIREAT", "s2", "4102444800", "GT"},
	{"GETEX", "s2", "PXAT", "4102444800001"}, {"PEXPIRETIME", "s2"}, {"PEXPIREAT", "s2", "4102444800001", "LT"},
	{"GETEX", "s2", "EXAT", "4102444801"}, {"PEXPIRETIME", "s2"}, {"GETEX", "s2", "PXAT", "1"}, {"EXISTS", "s2"},
	{"SET", "s3", "v", "PXAT", "9223372036854775807"}, {"EXPIREAT", "s3", "4102444800", "LT"}, {"EXPIRETIME", "s3"},
	// The last instant int64 milliseconds hold, twice (Zaris keeps it at 2262-04-11).
	{"SET", "c", "v"}, {"PEXPIREAT", "c", "9223372036854775807"}, {"PEXPIREAT", "c", "9223372036854775807", "GT"},
	{"PEXPIREAT", "c", "9223372036854775807", "LT"}, {"EXPIREAT", "c", "4102444800", "LT"}, {"EXPIRETIME", "c"},
	// Inside a transaction, against the expiry the transaction itself set.
	{"SET", "t", "v"}, {"MULTI"},
	{"PEXPIREAT", "t", "4102444800000"}, {"PEXPIREAT", "t", "4102444800000", "GT"}, {"PEXPIRETIME", "t"},
	{"EXEC"},
}

// TestExpireFamilyLikeRedis runs expireScript on both servers, then checks
// the keyspace events the expiry commands publish: "expire" for a new
// expiry, "del" for a time not in the future (Redis 7.0's
// expireGenericCommand), nothing when a condition is false.
func TestExpireFamilyLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	conns := map[string]*rawConn{"redis": dialRaw(t, redisAddr), "zaris": dialRaw(t, n.RESPAddr().String())}
	for _, c := range conns {
		require.Equal(t, "+OK\r\n", c.do("FLUSHALL"))
	}
	for _, args := range expireScript {
		want := conns["redis"].do(args...)
		require.Equal(t, want, conns["zaris"].do(args...), "%q", args)
	}

	events := map[string][]string{}
	for name, c := range conns {
		require.Equal(t, "+OK\r\n", c.do("CONFIG", "SET", "notify-keyspace-events", "Eg$"))
		sub := dialRaw(t, map[string]string{"redis": redisAddr, "zaris": n.RESPAddr().String()}[name])
		sub.do("PSUBSCRIBE", "__keyevent@0__:*")
		for _, args := range [][]string{
			{"SET", "e", "v"}, {"EXPIRE", "e", "100"}, {"EXPIRE", "e", "50", "GT"}, {"PEXPIREAT", "e", "4102444800000", "GT"},
			{"EXPIRE", "e", "-5", "GT"}, {"EXPIRE", "e", "-5", "LT"},
			{"SET", "e", "v"}, {"PEXPIREAT", "e", "1"}, {"SET", "e", "v"}, {"PEXPIRE", "e", "0", "NX"},
			{"SET", "done", "v"},
		} {
			c.do(args...)
		}
		for {
			m := sub.reply() // *4 pmessage pattern channel payload
			events[name] = append(events[name], m)
			if strings.HasSuffix(m, "$4\r\ndone\r\n") {
				break
			}
		}
		require.Equal(t, "+OK\r\n", c.do("CONFIG", "SET", "notify-keyspace-events", ""))
	}
	require.Equal(t, events["redis"], events["zaris"])
	require.Len(t, events["redis"], 9, "set expire expire del set del set del set: %q", events["redis"])
}
