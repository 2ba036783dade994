package resp_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// xinfoScript exercises XINFO STREAM (FULL), GROUPS, CONSUMERS and XSETID,
// and stream ids at their limits; replies must match redis-server 7.0's
// byte for byte, in RESP2 and RESP3, but for what is Redis's internals or
// the clock (normaliseXInfo).
var xinfoScript = [][]string{
	{"XADD", "s", "1-1", "a", "1"}, {"XADD", "s", "2-1", "b", "2"}, {"XADD", "s", "3-1", "c", "3"},
	{"XINFO", "STREAM", "s"}, {"XINFO", "STREAM", "nokey"}, {"SET", "str", "x"}, {"XINFO", "STREAM", "str"},
	{"XINFO", "STREAM", "s", "FULL"}, {"XINFO", "STREAM", "s", "FULL", "COUNT", "1"}, {"XINFO", "STREAM", "s", "FULL", "COUNT", "x"},
	{"XINFO", "STREAM", "s", "FOO"}, {"XINFO", "GROUPS", "s"}, {"XINFO", "GROUPS", "nokey"}, {"XINFO", "GROUPS", "str"},
	{"XGROUP", "CREATE", "s", "g1", "0"}, {"XGROUP", "CREATE", "s", "g2", "$"}, {"XINFO", "GROUPS", "s"},
	{"XREADGROUP", "GROUP", "g1", "c1", "COUNT", "1", "STREAMS", "s", ">"}, {"XINFO", "GROUPS", "s"},
	{"XINFO", "CONSUMERS", "s", "g1"}, {"XINFO", "CONSUMERS", "s", "nog"}, {"XINFO", "CONSUMERS", "nokey", "g1"},
	{"XDEL", "s", "2-1"}, {"XINFO", "STREAM", "s"}, {"XINFO", "GROUPS", "s"},
	{"XREADGROUP", "GROUP", "g1", "c2", "STREAMS", "s", ">"}, {"XINFO", "GROUPS", "s"}, {"XINFO", "STREAM", "s", "FULL"},
	{"XREADGROUP", "GROUP", "g2", "c1", "STREAMS", "s", ">"}, {"XINFO", "GROUPS", "s"},
	{"XADD", "s", "4-1", "d", "4"}, {"XINFO", "GROUPS", "s"}, {"XGROUP", "SETID", "s", "g2", "0"}, {"XINFO", "GROUPS", "s"},
	{"XDEL", "s", "1-1"}, {"XINFO", "STREAM", "s"}, {"XTRIM", "s", "MAXLEN", "0"}, {"XINFO", "STREAM", "s"}, {"XINFO", "GROUPS", "s"},
	{"XSETID", "s", "1-0"}, {"XSETID", "s", "5-0"}, {"XSETID", "s", "10-0", "ENTRIESADDED", "100", "MAXDELETEDID", "9-0"},
	{"XINFO", "STREAM", "s"}, {"XSETID", "s", "10-0", "MAXDELETEDID", "11-0"}, {"XSETID", "s", "10-0", "ENTRIESADDED", "-1"},
	{"XSETID", "s", "10-0", "ENTRIESADDED", "x"}, {"XSETID", "s", "10-0", "FOO", "1"}, {"XSETID", "s", "10-0", "ENTRIESADDED"},
	{"XSETID", "nokey", "1-0"}, {"XSETID", "str", "1-0"}, {"XSETID", "s", "bad"}, {"XSETID", "s", "-"},
	{"XADD", "s", "10-0", "f", "v"}, {"XADD", "s", "10-1", "f", "v"}, {"XSETID", "s", "10-0"}, {"XSETID", "s", "12-0", "ENTRIESADDED", "0"},
	{"XINFO", "STREAM", "s"},
	// Ids at the limits.
	{"XADD", "lim", "18446744073709551615-18446744073709551615", "f", "v"}, {"XADD", "lim", "*", "f", "v"},
	{"XADD", "lim", "18446744073709551615-*", "f", "v"}, {"XADD", "lim", "5-5", "f", "v"},
	{"XINFO", "STREAM", "lim"}, {"XDEL", "lim", "18446744073709551615-18446744073709551615"}, {"XINFO", "STREAM", "lim"},
	{"XADD", "lim", "*", "f", "v"}, {"XSETID", "lim", "18446744073709551615-18446744073709551615"},
	{"XADD", "lim2", "0-0", "f", "v"}, {"XADD", "lim2", "0-1", "f", "v"}, {"XADD", "lim2", "0-1", "f", "v"},
	{"XADD", "lim2", "18446744073709551616-0", "f", "v"}, {"XADD", "lim2", "1-18446744073709551616", "f", "v"},
	{"XADD", "lim2", "-1-0", "f", "v"}, {"XADD", "lim2", "0-*", "f", "v"},
	{"XADD", "lim3", "18446744073709551615-*", "f", "v"}, {"XADD", "lim3", "18446744073709551615-*", "f", "v"},
	{"XRANGE", "lim3", "-", "+"}, {"XADD", "lim3", "18446744073709551615-18446744073709551615", "f", "v"},
	{"XADD", "lim3", "18446744073709551615-*", "f", "v"}, {"XRANGE", "lim3", "18446744073709551615", "+"},
	{"XRANGE", "lim3", "(18446744073709551615-18446744073709551615", "+"}, {"XRANGE", "lim3", "-", "(0-0"},
	{"XGROUP", "CREATE", "nox", "g", "$", "MKSTREAM"}, {"XINFO", "STREAM", "nox"}, {"XINFO", "GROUPS", "nox"},
	{"XINFO", "STREAM", "nox", "FULL"}, {"XINFO"}, {"XINFO", "FOO", "s"}, {"XINFO", "STREAM"},
}

var (
	// Redis's radix tree figures and the clock-dependent fields.
	xinfoInternals = regexp.MustCompile(`(\$\d+\r\n(?:radix-tree-keys|radix-tree-nodes|seen-time|idle)\r\n):-?\d+\r\n`)
	xinfoTimes     = regexp.MustCompile(`:\d{13}\r\n`)
)

func normaliseXInfo(s string) string {
	s = xinfoInternals.ReplaceAllString(s, "${1}:N\r\n")
	return xinfoTimes.ReplaceAllString(s, ":T\r\n")
}

func TestXInfoSameAsRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			n := startNode(t)
			rd, zr := dialRaw(t, redisAddr), dialRaw(t, n.RESPAddr().String())
			rd.do("FLUSHALL")
			rd.do("HELLO", proto)
			zr.do("HELLO", proto)
			for _, args := range xinfoScript {
				want := normaliseXInfo(rd.do(args...))
				got := normaliseXInfo(zr.do(args...))
				require.Equal(t, want, got, "%q", args)
			}
		})
	}
}

// COPY makes the same stream, consumers' seen-times included (Redis's
// tcl suite, "COPY basic usage for stream-cgroups"): the copy is made a
// clock millisecond after the last read, so a copy whose consumers counted
// from the COPY would show other times.
func TestCopyKeepsConsumersSeenTimes(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())
	c.do("XADD", "x", "1-1", "a", "1")
	c.do("XADD", "x", "2-1", "b", "1")
	c.do("XGROUP", "CREATE", "x", "g1", "0")
	c.do("XREADGROUP", "GROUP", "g1", "Alice", "COUNT", "1", "STREAMS", "x", ">")
	c.do("XREADGROUP", "GROUP", "g1", "Bob", "COUNT", "1", "STREAMS", "x", ">")
	before := c.do("XINFO", "STREAM", "x", "FULL")
	require.Contains(t, before, "seen-time")
	timeMs := func() int64 { // TIME's reply: *2 $n seconds $n microseconds
		parts := strings.Split(c.do("TIME"), "\r\n")
		sec, err1 := strconv.ParseInt(parts[2], 10, 64)
		us, err2 := strconv.ParseInt(parts[4], 10, 64)
		require.NoError(t, err1)
		require.NoError(t, err2)
		return sec*1000 + us/1000
	}
	read := timeMs()
	require.Eventually(t, func() bool { return timeMs() > read }, 5*time.Second, 100*time.Microsecond)
	require.Equal(t, ":1\r\n", c.do("COPY", "x", "y"))
	require.Equal(t, before, c.do("XINFO", "STREAM", "x", "FULL"))
	require.Equal(t, before, c.do("XINFO", "STREAM", "y", "FULL"))
}
