package resp_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Differential tests of the strings/bitmaps/HyperLogLog/keyspace surface
// (issue #13 item 5): the same command sequence on a standalone
// redis-server 7.0 and on a lone Zaris node (a one-node cluster, where
// multi-key commands work across slots as on a standalone server), in
// RESP2 and RESP3; replies must be byte-identical.

const (
	maxInt64  = "9223372036854775807"
	minInt64  = "-9223372036854775808"
	maxUint64 = "18446744073709551615"
)

var bitsScript = [][]string{
	// SETBIT / GETBIT
	{"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "7", "1"}, {"SETBIT", "b", "7", "0"}, {"SETBIT", "b", "100", "1"}, {"GET", "b"},
	{"STRLEN", "b"}, {"GETBIT", "b", "100"}, {"GETBIT", "b", "99"}, {"GETBIT", "b", "100000"}, {"GETBIT", "nokey", "0"},
	{"SETBIT", "b", "-1", "1"}, {"SETBIT", "b", "1", "2"}, {"SETBIT", "b", "1", "-1"}, {"SETBIT", "b", "x", "1"}, {"SETBIT", "b", "1", "x"},
	{"SETBIT", "b", "4294967296", "1"}, {"SETBIT", "b", maxInt64, "1"}, {"SETBIT", "b", maxUint64, "1"}, {"SETBIT", "b", minInt64, "1"},
	{"SETBIT", "b", "01", "1"}, {"SETBIT", "b", "+1", "1"}, {"SETBIT", "b", " 1", "1"}, {"GETBIT", "b", "4294967296"}, {"GETBIT", "b", "4294967295"},
	{"GETBIT", "b", "-1"}, {"SETBIT", "z0", "0", "0"}, {"GET", "z0"}, {"EXISTS", "z0"},
	{"RPUSH", "li", "a"}, {"SETBIT", "li", "0", "1"}, {"SETBIT", "li", "x", "1"}, {"GETBIT", "li", "0"}, {"GETBIT", "li", "x"},
	// BITCOUNT
	{"SET", "s", "foobar"}, {"BITCOUNT", "s"}, {"BITCOUNT", "s", "0", "0"}, {"BITCOUNT", "s", "1", "1"}, {"BITCOUNT", "s", "1", "1", "BYTE"},
	{"BITCOUNT", "s", "5", "30", "BIT"}, {"BITCOUNT", "s", "-1", "-1"}, {"BITCOUNT", "s", "-2", "-1", "bit"}, {"BITCOUNT", "s", "-1", "-2"},
	{"BITCOUNT", "s", "0"}, {"BITCOUNT", "s", "0", "1", "FOO"}, {"BITCOUNT", "s", "0", "1", "BIT", "x"}, {"BITCOUNT", "s", "a", "1"},
	{"BITCOUNT", "s", "1", "a"}, {"BITCOUNT", "nokey"}, {"BITCOUNT", "nokey", "a", "b"}, {"BITCOUNT", "nokey", "0"}, {"BITCOUNT", "li"},
	{"BITCOUNT", "s", minInt64, maxInt64}, {"BITCOUNT", "s", maxInt64, minInt64}, {"BITCOUNT", "s", "0", maxInt64, "BIT"},
	{"BITCOUNT", "s", minInt64, "-1", "BIT"}, {"BITCOUNT", "s", "100", "200"}, {"BITCOUNT", "s", "3", "1"},
	{"SET", "empty", ""}, {"BITCOUNT", "empty"}, {"BITCOUNT", "empty", "0", "-1"}, {"BITPOS", "empty", "0"}, {"BITPOS", "empty", "1"},
	// BITPOS
	{"SET", "p", "\xff\xf0\x00"}, {"BITPOS", "p", "0"}, {"BITPOS", "p", "1"}, {"BITPOS", "p", "0", "1"}, {"BITPOS", "p", "1", "2"},
	{"BITPOS", "p", "0", "0", "0"}, {"BITPOS", "p", "1", "2", "-1"}, {"BITPOS", "p", "0", "7", "15", "BIT"}, {"BITPOS", "p", "1", "7", "15", "BIT"},
	{"BITPOS", "p", "0", "12", "-1", "bit"}, {"BITPOS", "p", "1", "12", "-1", "BIT"}, {"BITPOS", "p", "0", "0", "3", "BIT"},
	{"BITPOS", "p", "2"}, {"BITPOS", "p", "x"}, {"BITPOS", "p", "1", "x"}, {"BITPOS", "p", "1", "0", "x"}, {"BITPOS", "p", "1", "0", "1", "FOO"},
	{"BITPOS", "p", "1", "0", "1", "BIT", "x"}, {"BITPOS", "nokey", "0"}, {"BITPOS", "nokey", "1"}, {"BITPOS", "nokey", "1", "x"}, {"BITPOS", "li", "1"},
	{"SET", "ones", "\xff\xff"}, {"BITPOS", "ones", "0"}, {"BITPOS", "ones", "0", "0"}, {"BITPOS", "ones", "0", "0", "-1"}, {"BITPOS", "ones", "0", "1", "1"},
	{"BITPOS", "p", "1", minInt64, maxInt64}, {"BITPOS", "p", "0", maxInt64}, {"BITPOS", "p", "0", "5", "2"}, {"BITPOS", "p", "1", "0", maxInt64, "BIT"},
	{"BITPOS", "p", "2", "0", "1", "FOO"}, {"BITPOS", "li", "2"},
	// BITOP
	{"SET", "o1", "\x0f\xf0"}, {"SET", "o2", "\xff"}, {"BITOP", "AND", "od", "o1", "o2"}, {"GET", "od"}, {"BITOP", "OR", "od", "o1", "o2", "nokey"},
	{"GET", "od"}, {"BITOP", "XOR", "od", "o1", "o2"}, {"GET", "od"}, {"BITOP", "NOT", "od", "o1"}, {"GET", "od"}, {"BITOP", "NOT", "od", "o1", "o2"},
	{"BITOP", "NAND", "od", "o1"}, {"BITOP", "AND", "od", "li", "o1"}, {"BITOP", "AND", "od", "nokey", "nokey2"}, {"EXISTS", "od"},
	{"SET", "od", "x", "EX", "100"}, {"BITOP", "OR", "od", "o1"}, {"TTL", "od"}, {"BITOP", "and", "li", "o1"}, {"TYPE", "li"}, {"GET", "li"},
	{"BITOP", "AND", "od", "o1"}, {"BITOP", "OR", "od", "od", "o2"}, {"GET", "od"},
	// BITFIELD / BITFIELD_RO
	{"BITFIELD", "bf", "SET", "i8", "0", "100", "GET", "i8", "0", "INCRBY", "i8", "0", "100"}, {"GET", "bf"},
	{"BITFIELD", "bf", "OVERFLOW", "SAT", "INCRBY", "i8", "0", "100", "OVERFLOW", "FAIL", "INCRBY", "i8", "0", "1", "GET", "u8", "0"},
	{"BITFIELD", "bf", "INCRBY", "u2", "100", "1", "OVERFLOW", "SAT", "INCRBY", "u2", "102", "1"}, {"GET", "bf"},
	{"BITFIELD", "bf", "SET", "u8", "#1", "255", "GET", "u8", "#1", "SET", "i16", "#2", "-1", "GET", "u16", "#2"},
	{"BITFIELD", "bf", "SET", "i64", "0", minInt64, "GET", "i64", "0", "INCRBY", "i64", "0", "-1", "OVERFLOW", "SAT", "INCRBY", "i64", "0", "-1"},
	{"BITFIELD", "bf", "OVERFLOW", "FAIL", "INCRBY", "i64", "0", maxInt64, "INCRBY", "i64", "0", minInt64},
	{"BITFIELD", "bf", "SET", "u63", "0", maxInt64, "GET", "u63", "0", "INCRBY", "u63", "0", "1", "OVERFLOW", "SAT", "INCRBY", "u63", "0", "5"},
	{"BITFIELD", "bf", "SET", "u8", "0", "-1", "SET", "u8", "8", "256", "OVERFLOW", "SAT", "SET", "u8", "0", "-5", "SET", "i8", "8", "200", "GET", "u16", "0"},
	{"BITFIELD", "bf", "OVERFLOW", "FAIL", "SET", "i4", "0", "8", "SET", "u4", "0", "16", "SET", "i4", "0", "-9", "GET", "i4", "0"},
	{"BITFIELD", "bf", "OVERFLOW", "WRAP", "INCRBY", "i5", "3", "100", "INCRBY", "u5", "3", "-100", "INCRBY", "i1", "9", "1", "INCRBY", "u1", "9", "3"},
	{"BITFIELD", "bf", "GET", "u64", "0"}, {"BITFIELD", "bf", "GET", "i65", "0"}, {"BITFIELD", "bf", "GET", "i0", "0"}, {"BITFIELD", "bf", "GET", "x8", "0"},
	{"BITFIELD", "bf", "GET", "", "0"}, {"BITFIELD", "bf", "GET", "i08", "0"}, {"BITFIELD", "bf", "GET", "i8", "-1"}, {"BITFIELD", "bf", "GET", "i8", "#-1"},
	{"BITFIELD", "bf", "GET", "i8", "#x"}, {"BITFIELD", "bf", "GET", "i8", "4294967296"}, {"BITFIELD", "bf", "GET", "i8", "4294967295"},
	{"BITFIELD", "bf", "GET", "i8", "#536870912"}, {"BITFIELD", "bf", "GET", "i8", "#536870911"}, {"BITFIELD", "bf", "GET", "i8", "#" + maxInt64},
	{"BITFIELD", "bf", "GET", "i64", "#2305843009213693952"}, {"BITFIELD", "bf", "GET", "i8"}, {"BITFIELD", "bf", "SET", "i8", "0"},
	{"BITFIELD", "bf", "SET", "i8", "0", "x"}, {"BITFIELD", "bf", "INCRBY", "i8", "0", "9223372036854775808"}, {"BITFIELD", "bf", "FOO"},
	{"BITFIELD", "bf", "OVERFLOW", "FOO", "GET", "i8", "0"}, {"BITFIELD", "bf", "OVERFLOW"}, {"BITFIELD", "bf"}, {"BITFIELD", "nokey"},
	{"BITFIELD", "nokey", "GET", "i8", "0"}, {"EXISTS", "nokey"}, {"BITFIELD", "li", "GET", "i8", "0"}, {"BITFIELD", "li", "GET", "x", "0"},
	{"BITFIELD", "li"}, {"BITFIELD", "bf", "get", "u4", "0", "overflow", "sat", "incrby", "u4", "0", "-99", "get", "u4", "0"},
	{"BITFIELD", "fail", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "10"}, {"GET", "fail"},
	{"BITFIELD_RO", "bf", "GET", "i8", "0", "GET", "u4", "#3"}, {"BITFIELD_RO", "bf", "SET", "i8", "0", "1"}, {"BITFIELD_RO", "bf", "INCRBY", "i8", "0", "1"},
	{"BITFIELD_RO", "bf", "OVERFLOW", "SAT"}, {"BITFIELD_RO", "bf"}, {"BITFIELD_RO", "nokey", "GET", "u8", "0"}, {"BITFIELD_RO", "li", "GET", "u8", "0"},
	{"BITFIELD_RO", "li", "SET", "u8", "0", "1"}, {"BITFIELD_RO", "bf", "GET", "u64", "0"},
	// LCS, SUBSTR
	{"SET", "l1", "ohmytext"}, {"SET", "l2", "mynewtext"}, {"LCS", "l1", "l2"}, {"LCS", "l1", "l2", "LEN"}, {"LCS", "l1", "l2", "IDX"},
	{"LCS", "l1", "l2", "IDX", "MINMATCHLEN", "4"}, {"LCS", "l1", "l2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"}, {"LCS", "l1", "l2", "IDX", "WITHMATCHLEN"},
	{"LCS", "l1", "l2", "LEN", "IDX"}, {"LCS", "l1", "l2", "MINMATCHLEN"}, {"LCS", "l1", "l2", "MINMATCHLEN", "x"}, {"LCS", "l1", "l2", "FOO"},
	{"LCS", "l1", "nokey"}, {"LCS", "nokey", "nokey2", "IDX"}, {"LCS", "l1", "li"}, {"LCS", "l1", "l2", "MINMATCHLEN", "-5", "IDX"},
	{"SET", "l3", "aaaa"}, {"SET", "l4", "aXaYaZa"}, {"LCS", "l3", "l4", "IDX", "WITHMATCHLEN"}, {"LCS", "l4", "l3", "IDX"}, {"LCS", "l1", "l1", "IDX"},
	{"SUBSTR", "l1", "0", "3"}, {"SUBSTR", "l1", "-3", "-1"}, {"SUBSTR", "l1", "x", "1"}, {"SUBSTR", "nokey", "0", "1"}, {"SUBSTR", "li", "0", "1"},
}

var hllScript = [][]string{
	{"PFADD", "h"}, {"GET", "h"}, {"PFADD", "h"}, {"PFCOUNT", "h"}, {"GET", "h"}, {"PFADD", "h", "a", "b", "c"}, {"GET", "h"},
	{"PFADD", "h", "a"}, {"PFCOUNT", "h"}, {"GET", "h"}, {"PFCOUNT", "h"}, {"TYPE", "h"}, {"STRLEN", "h"},
	{"PFADD", "h2", "c", "d", "e", "f"}, {"PFCOUNT", "h", "h2"}, {"PFCOUNT", "h", "h2", "nokey"}, {"PFCOUNT", "nokey"}, {"PFCOUNT", "nokey", "nokey2"},
	{"PFMERGE", "hm", "h", "h2"}, {"GET", "hm"}, {"PFCOUNT", "hm"}, {"PFMERGE", "hm"}, {"PFMERGE", "newhm"}, {"GET", "newhm"}, {"PFMERGE", "h", "nokey"},
	{"SET", "str", "hello"}, {"PFADD", "str", "x"}, {"PFCOUNT", "str"}, {"PFCOUNT", "h", "str"}, {"PFMERGE", "h", "str"}, {"PFMERGE", "str", "h"},
	{"PFADD", "li", "x"}, {"PFCOUNT", "li"}, {"PFCOUNT", "h", "li"}, {"PFMERGE", "h", "li"},
	{"SET", "fake", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"}, {"PFCOUNT", "fake"}, {"PFADD", "fake", "a"},
	{"SET", "fake2", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f"}, {"PFCOUNT", "fake2"}, {"PFCOUNT", "h", "fake2"},
	{"SET", "short", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xfe"}, {"PFCOUNT", "short"}, {"PFADD", "short", "a", "b", "zz"},
	{"GET", "short"}, {"PFCOUNT", "short", "h"}, {"PFMERGE", "short", "h"},
	{"SET", "long", "HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x7f\xff\x80"}, {"PFCOUNT", "long"}, {"PFADD", "long", "a"},
	{"SET", "dshort", "HYLL\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00"}, {"PFCOUNT", "dshort"}, {"PFADD", "dshort", "a"},
	{"SET", "fake3", "HYLL\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x7f\xff"}, {"PFCOUNT", "fake3"},
	{"SET", "cached", "HYLL\x01\x00\x00\x00\x2a\x00\x00\x00\x00\x00\x00\x00\x7f\xff"}, {"PFCOUNT", "cached"},
	{"SET", "hx", "v", "EX", "100"}, {"DEL", "hx"}, {"PFADD", "hx", "1"}, {"EXPIRE", "hx", "100"}, {"PFMERGE", "hx", "h2"}, {"TTL", "hx"},
}

// hllGrowth adds element batches that walk an HLL from sparse to dense;
// GET after each compares the representation byte for byte.
func hllGrowth() [][]string {
	var out [][]string
	n := 0
	for _, batch := range []int{1, 5, 20, 50, 100, 200, 400, 800, 1600, 3000} {
		c := []string{"PFADD", "grow"}
		for i := 0; i < batch; i++ {
			c = append(c, fmt.Sprint("el-", n))
			n++
		}
		out = append(out, c, []string{"GET", "grow"}, []string{"PFCOUNT", "grow"}, []string{"GET", "grow"})
		other := []string{"PFADD", fmt.Sprint("g", batch)}
		for i := 0; i < batch; i++ {
			other = append(other, fmt.Sprint("x-", i*7))
		}
		out = append(out, other, []string{"PFCOUNT", "grow", fmt.Sprint("g", batch)},
			[]string{"PFMERGE", "merged", fmt.Sprint("g", batch), "grow"}, []string{"GET", "merged"}, []string{"PFCOUNT", "merged"})
	}
	return out
}

func runDifferential(t *testing.T, redisAddr, zarisAddr string, script [][]string, unordered map[string]bool) {
	t.Helper()
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			want := dialRaw(t, redisAddr)
			got := dialRaw(t, zarisAddr)
			require.Equal(t, want.do("FLUSHALL"), got.do("FLUSHALL"))
			if proto == "3" {
				want.do("HELLO", "3")
				got.do("HELLO", "3")
			}
			var diffs []string
			for _, c := range script {
				w, g := want.do(c...), got.do(c...)
				if unordered[strings.ToUpper(c[0])] {
					w, g = sortedLines(w), sortedLines(g)
				}
				if w != g {
					diffs = append(diffs, fmt.Sprintf("%q:\n    redis: %q\n    zaris: %q", c, w, g))
				}
			}
			require.Empty(t, diffs, "replies differ from Redis %s:\n%s", proto, strings.Join(diffs, "\n"))
		})
	}
}

func TestBitmapsLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	runDifferential(t, redisAddr, n.RESPAddr().String(), bitsScript, nil)
}

func TestHyperLogLogLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	runDifferential(t, redisAddr, n.RESPAddr().String(), append(hllScript, hllGrowth()...), nil)
}
