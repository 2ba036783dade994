package rdb

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestCRC64(t *testing.T) {
	require.Equal(t, uint64(0xe9c6d914c4b8d9ca), crc64(0, []byte("123456789")))
	// The slicing-by-8 path against the plain bitwise definition, at every
	// alignment of the tail.
	poly := uint64(0x95ac9329ac4bc9b5) // jonesPoly reflected
	slow := func(p []byte) uint64 {
		var c uint64
		for _, b := range p {
			c ^= uint64(b)
			for range 8 {
				if c&1 != 0 {
					c = c>>1 ^ poly
				} else {
					c >>= 1
				}
			}
		}
		return c
	}
	data := []byte(strings.Repeat("The quick brown fox jumps over the lazy dog. ", 5))
	for n := range len(data) {
		require.Equal(t, slow(data[:n]), crc64(0, data[:n]), "length %d", n)
	}
}

func TestCanonicalInt32(t *testing.T) {
	for s, want := range map[string]bool{
		"0": true, "-1": true, "127": true, "2147483647": true, "-2147483648": true,
		"2147483648": false, "-2147483649": false, "007": false, "-0": false, "+1": false,
		"": false, "-": false, " 1": false, "1 ": false, "1a": false, "00": false, "99999999999": false,
	} {
		_, ok := canonicalInt32([]byte(s))
		require.Equal(t, want, ok, "%q", s)
	}
}

// TestDumpBytes pins Dump's output for a few values: the strings are what
// Redis 7.0 DUMPs (TestRedisDifferential checks the same against a live
// server).
func TestDumpBytes(t *testing.T) {
	for _, c := range []struct {
		v   Value
		obj []byte
	}{
		{strV("hello"), []byte("\x00\x05hello")},
		{strV(""), []byte("\x00\x00")},
		{strV("-1"), []byte{0, 0xC0, 0xFF}},
		{strV("128"), []byte{0, 0xC1, 0x80, 0}},
		{strV("-2147483648"), []byte{0, 0xC2, 0, 0, 0, 0x80}},
		{strV("2147483648"), []byte("\x00\x0a2147483648")},
		{strV("007"), []byte("\x00\x03007")},
		{strV(strings.Repeat("x", 64)), append([]byte{0, 0x40, 64}, strings.Repeat("x", 64)...)},
		{strV(strings.Repeat("x", 16384)), append([]byte{0, 0x80, 0, 0, 0x40, 0}, strings.Repeat("x", 16384)...)},
		{listV("a", "1"), []byte{1, 2, 1, 'a', 0xC0, 1}},
		{setV("a"), []byte{2, 1, 1, 'a'}},
		{hashV("f", "v"), []byte{4, 1, 1, 'f', 1, 'v'}},
		{zsetV("m", 1.5), []byte{5, 1, 1, 'm', 0, 0, 0, 0, 0, 0, 0xF8, 0x3F}},
	} {
		require.Equal(t, payload(c.obj), Dump(c.v), "%v %q", c.v.Kind, c.v.Str)
	}
	require.Equal(t, []byte{0x81, 0, 0, 0, 1, 0, 0, 0, 0}, appendLen(nil, 1<<32))
	require.Panics(t, func() { Dump(Value{Kind: Hash, Pairs: bs("f")}) })
	require.Panics(t, func() { Dump(Value{Kind: 9}) })
}

type restoreCase struct {
	name    string
	payload []byte
	want    Value
	err     error
	// redisSkip: a successful case Redis 7.0 does not load (newer than its
	// RDB version, or what it refuses on purpose); for an error case, one
	// Redis 7.0 accepts though Restore does not.
	redisSkip string
}

var (
	lzfA100  = lzfStr(100, 0x00, 'a', 0xE0, 97-7, 0x00) // 'a', then 99 bytes from 1 back
	lzfABC   = lzfStr(12, 0x02, 'a', 'b', 'c', 0xE0, 0x00, 0x02)
	lzfShort = lzfStr(6, 0x01, 'x', 'y', 0x40, 0x01) // "xy", then 4 bytes from 2 back
)

// restoreCases are the hand-built payloads: every branch of the decoder,
// its errors included. They seed FuzzRestore too.
func restoreCases() []restoreCase {
	long := strings.Repeat("0123456789", 1700) // 17000 bytes: 32-bit lengths
	s100 := strings.Repeat("z", 100)
	s300 := strings.Repeat("y", 300)
	s5000 := strings.Repeat("w", 5000)
	bigLen := []byte{0x81, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	bad := func(name string, p []byte, err error) restoreCase {
		return restoreCase{name: name, payload: p, err: err}
	}
	crcZero := binary.LittleEndian.AppendUint16([]byte("\x00\x02hi"), Version)
	crcZero = append(crcZero, make([]byte, 8)...)
	badCRC := payload(raw("hello"))
	badCRC[len(badCRC)-1] ^= 1
	return append([]restoreCase{
		// Strings.
		{name: "string raw", payload: payload([]byte{0}, raw("hello")), want: strV("hello")},
		{name: "string empty", payload: payload([]byte{0}, raw("")), want: strV("")},
		{name: "string 14-bit", payload: payload([]byte{0}, raw(s300)), want: strV(s300)},
		{name: "string 32-bit", payload: payload([]byte{0}, raw(long)), want: strV(long)},
		{name: "string 64-bit length", payload: payload([]byte{0, 0x81, 0, 0, 0, 0, 0, 0, 0, 2}, []byte("ok")), want: strV("ok")},
		{name: "string int8", payload: payload([]byte{0, 0xC0, 0x80}), want: strV("-128")},
		{name: "string int16", payload: payload([]byte{0, 0xC1, 0xE8, 0x03}), want: strV("1000")},
		{name: "string int32", payload: payload([]byte{0, 0xC2, 0x90, 0xEE, 0xFE, 0xFF}), want: strV("-70000")},
		{name: "string lzf run", payload: payload([]byte{0}, lzfA100), want: strV(strings.Repeat("a", 100))},
		{name: "string lzf overlap", payload: payload([]byte{0}, lzfABC), want: strV("abcabcabcabc")},
		{name: "string lzf short ref", payload: payload([]byte{0}, lzfShort), want: strV("xyxyxy")},
		{name: "string lzf literals", payload: payload([]byte{0}, lzfStr(70, lzfLiterals(strings.Repeat("q", 70))...)), want: strV(strings.Repeat("q", 70))},
		bad("string crc zero", crcZero, ErrChecksum), // Redis 7.0 checks a DUMP payload's CRC even when it is 0
		{name: "string version 1", payload: withFooter(1, cat([]byte{0}, raw("v1"))), want: strV("v1")},
		{name: "string version 12", payload: withFooter(12, cat([]byte{0}, raw("v12"))), want: strV("v12"), redisSkip: "RDB 12 is Redis 7.4's"},

		// Plain collections.
		{name: "list", payload: payload([]byte{1}, ln(4), raw("a"), rs("1"), rs("-300"), raw(s100)), want: listV("a", "1", "-300", s100)},
		{name: "set", payload: payload([]byte{2}, ln(3), raw("x"), rs("2"), raw("")), want: setV("x", "2", "")},
		{name: "hash", payload: payload([]byte{4}, ln(2), raw("f"), raw("v"), rs("10"), lzfA100), want: hashV("f", "v", "10", strings.Repeat("a", 100))},
		{name: "zset text scores", payload: payload([]byte{3}, ln(4), raw("a"), raw("1.5"), raw("b"), []byte{254}, raw("c"), []byte{255}, raw("d"), raw("-3e2")),
			want: zsetV("a", 1.5, "b", math.Inf(1), "c", math.Inf(-1), "d", -300.0)},
		{name: "zset text score overflow", payload: payload([]byte{3}, ln(2), raw("a"), raw("1e400"), raw("b"), raw("-1e400")), want: zsetV("a", math.Inf(1), "b", math.Inf(-1))},
		{name: "zset binary scores", payload: payload([]byte{5}, ln(3), raw("a"), f64(0.1), rs("7"), f64(math.Inf(-1)), raw("z"), f64(math.Copysign(0, -1))),
			want: zsetV("a", 0.1, "7", math.Inf(-1), "z", math.Copysign(0, -1))},

		// Compact encodings.
		{name: "zipmap", payload: payload([]byte{9}, blob(zipmap(0, "f", "v", "num", "12", "e", ""))), want: hashV("f", "v", "num", "12", "e", "")},
		{name: "zipmap free and big", payload: payload([]byte{9}, blob(zipmap(3, s300, "v", "k", s300))), want: hashV(s300, "v", "k", s300)},
		{name: "ziplist list", payload: payload([]byte{10}, blob(ziplist(
			zlS6("a"), zlS14(s100), zlS32(s300), zl8(-5), zl16(-1000), zl24(-70000), zl32(1<<30), zl64(math.MinInt64), zlImm(0), zlImm(12), zlS6("")))),
			want: listV("a", s100, s300, "-5", "-1000", "-70000", "1073741824", "-9223372036854775808", "0", "12", "")},
		{name: "ziplist big prevlens", payload: payload([]byte{10}, blob(ziplistOpt(true, zlStrs("x", s300, "y", "300")...))), want: listV("x", s300, "y", "300")},
		{name: "intset 16", payload: payload([]byte{11}, blob(intset(2, -5, 3, 300))), want: setV("-5", "3", "300")},
		{name: "intset 32", payload: payload([]byte{11}, blob(intset(4, -70000, 1))), want: setV("-70000", "1")},
		{name: "intset 64", payload: payload([]byte{11}, blob(intset(8, math.MinInt64, 0, math.MaxInt64))), want: setV("-9223372036854775808", "0", "9223372036854775807")},
		{name: "ziplist zset", payload: payload([]byte{12}, blob(ziplist(zlStrs("a", "1", "b", "2.5", "c", "inf", "d", "-7")...))),
			want: zsetV("a", 1.0, "b", 2.5, "c", math.Inf(1), "d", -7.0)},
		{name: "ziplist hash", payload: payload([]byte{13}, blob(ziplist(zlStrs("f", "v", "n", "100000", "e", "")...))), want: hashV("f", "v", "n", "100000", "e", "")},
		{name: "quicklist", payload: payload([]byte{14}, ln(3), blob(ziplist(zlStrs("a", "1")...)), blob(ziplist()), blob(ziplist(zlStrs(s300)...))),
			want: listV("a", "1", s300)},
		{name: "quicklist lzf node", payload: payload([]byte{14}, ln(1), lzfStr(len(ziplist(zlStrs("q")...)), lzfLiterals(string(ziplist(zlStrs("q")...)))...)), want: listV("q")},
		{name: "listpack hash", payload: payload([]byte{16}, blob(listpack(lpStrs("f", "v", "n", "-5000", "e", "")...))), want: hashV("f", "v", "n", "-5000", "e", "")},
		{name: "listpack zset", payload: payload([]byte{17}, blob(listpack(lpStrs("a", "1", "b", "0.5", "c", "-inf", "d", "100000")...))),
			want: zsetV("a", 1.0, "b", 0.5, "c", math.Inf(-1), "d", 100000.0)},
		{name: "listpack encodings", payload: payload([]byte{18}, ln(1), ln(2), blob(listpack(
			lp7(0), lp7(127), lp13(-4096), lp13(4095), lp16(-32768), lp24(-8388608), lp32(math.MaxInt32), lp64(math.MinInt64),
			lpS6(""), lpS6("abc"), lpS12(s100), lpS12(s5000[:4095]), lpS32(s5000)))),
			want: listV("0", "127", "-4096", "4095", "-32768", "-8388608", "2147483647", "-9223372036854775808", "", "abc", s100, s5000[:4095], s5000)},
		{name: "listpack unknown count", payload: payload([]byte{18}, ln(1), ln(2), blob(listpackCount(0xFFFF, lpStrs("a", "b")...))), want: listV("a", "b")},
		{name: "quicklist2 plain and packed", payload: payload([]byte{18}, ln(4), ln(2), blob(listpack(lpStrs("a", "1")...)), ln(1), raw(s5000), ln(2), blob(listpack()), ln(1), rs("7")),
			want: listV("a", "1", s5000, "7")},
		{name: "listpack set", payload: payload([]byte{20}, blob(listpack(lpStrs("a", "5", "b")...))), want: setV("a", "5", "b"), redisSkip: "set listpacks are Redis 7.2's"},

		// Footer errors.
		bad("empty", nil, ErrChecksum),
		bad("nine bytes", make([]byte, 9), ErrChecksum),
		bad("bad crc", badCRC, ErrChecksum),
		bad("version 13", withFooter(13, cat([]byte{0}, raw("x"))), ErrChecksum),
		{name: "version 0", payload: withFooter(0, cat([]byte{0}, raw("x"))), err: ErrChecksum, redisSkip: "Redis 7.0 accepts version 0; Restore takes 1..MaxVersion"},

		// Object errors.
		bad("no object", payload(), ErrFormat),
		{name: "truncated string", payload: payload([]byte{0}, raw("hello")[:4]), err: ErrFormat, redisSkip: "Redis reads on into the footer"},
		{name: "trailing bytes", payload: payload([]byte{0}, raw("x"), []byte{0}), err: ErrFormat, redisSkip: "Redis ignores what follows the object"},
		bad("huge string", payload([]byte{0}, bigLen), ErrFormat),
		bad("huge list", payload([]byte{1}, bigLen, raw("x")), ErrFormat),
		bad("huge hash", payload([]byte{4}, []byte{0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, raw("x"), raw("y")), ErrFormat),
		bad("huge zset", payload([]byte{5}, bigLen, raw("x"), f64(1)), ErrFormat),
		bad("huge quicklist", payload([]byte{18}, bigLen, ln(2)), ErrFormat),
		bad("bad length byte", payload([]byte{0, 0x82, 0, 0, 0, 1}, []byte("x")), ErrFormat),
		{name: "encoded count", payload: payload([]byte{1, 0xC1}, raw("x")), err: ErrFormat, redisSkip: "Redis reads a string encoding where a count is due as the count"},
		bad("string encoding 4", payload([]byte{0, 0xC4}), ErrFormat),
		bad("empty list", payload([]byte{1}, ln(0)), ErrFormat),
		bad("empty set", payload([]byte{2}, ln(0)), ErrFormat),
		bad("empty hash", payload([]byte{4}, ln(0)), ErrFormat),
		bad("empty zset", payload([]byte{5}, ln(0)), ErrFormat),
		bad("zset nan binary", payload([]byte{5}, ln(1), raw("a"), f64(math.NaN())), ErrFormat),
		bad("zset nan text", payload([]byte{3}, ln(1), raw("a"), []byte{253}), ErrFormat),
		{name: "zset bad text score", payload: payload([]byte{3}, ln(1), raw("a"), raw("1.5x")), err: ErrFormat, redisSkip: "Redis's sscanf stops at the first byte it cannot parse"},
		bad("lzf bad back-reference", payload([]byte{0}, lzfStr(4, 0x00, 'a', 0x20, 0x05)), ErrFormat),
		bad("lzf short output", payload([]byte{0}, lzfStr(101, 0x00, 'a', 0xE0, 97-7, 0x00)), ErrFormat),
		bad("lzf long output", payload([]byte{0}, lzfStr(99, 0x00, 'a', 0xE0, 97-7, 0x00)), ErrFormat),
		bad("lzf truncated literal", payload([]byte{0}, lzfStr(5, 0x04, 'a', 'b')), ErrFormat),
		bad("lzf truncated reference", payload([]byte{0}, lzfStr(5, 0x00, 'a', 0x20)), ErrFormat),
		bad("lzf truncated length byte", payload([]byte{0}, lzfStr(5, 0x00, 'a', 0xE0)), ErrFormat),
		bad("lzf huge output", payload([]byte{0, 0xC3}, ln(5), ln(1<<40), []byte{0x00, 'a', 0xE0, 0xff, 0x00}), ErrFormat),
		bad("lzf over ratio", payload([]byte{0}, lzfStr(89*5, 0x00, 'a', 0xE0, 0xff, 0x00)), ErrFormat),
		{name: "string lzf empty", payload: payload([]byte{0, 0xC3, 0, 0}), want: strV("")},
		{name: "lzf empty output", payload: payload([]byte{0}, lzfStr(0, 0x00, 'a')), err: ErrFormat, redisSkip: "Redis takes any stream for an empty output: lzf_decompress's 0 is also its error"},
		bad("lzf compressed length past end", payload([]byte{0, 0xC3, 10, 20, 0, 'a'}), ErrFormat),
		bad("module", payload([]byte{7}, raw("x")), ErrFormat),
		bad("hash with field ttls", payload([]byte{22}, ln(0)), ErrFormat),
		bad("unknown type", payload([]byte{99}), ErrFormat),
		bad("intset width 3", payload([]byte{11}, blob(intset(3, 1, 2))), ErrFormat),
		bad("intset count", payload([]byte{11}, blob(intset(2, 1, 2)[:10])), ErrFormat),
		bad("intset empty", payload([]byte{11}, blob(intset(2))), ErrFormat),
		bad("intset short", payload([]byte{11}, raw("\x02\x00\x00")), ErrFormat),
		bad("listpack empty hash", payload([]byte{16}, blob(listpack())), ErrFormat),
		bad("listpack odd hash", payload([]byte{16}, blob(listpack(lpStrs("f", "v", "g")...))), ErrFormat),
		bad("listpack odd zset", payload([]byte{17}, blob(listpack(lpStrs("a", "1", "b")...))), ErrFormat),
		{name: "listpack nan score", payload: payload([]byte{17}, blob(listpack(lpStrs("a", "nan")...))), err: ErrFormat, redisSkip: "Redis 7.0 does not check the scores of a listpack"},
		{name: "listpack bad score", payload: payload([]byte{17}, blob(listpack(lpStrs("a", "x")...))), err: ErrFormat, redisSkip: "Redis 7.0 does not check the scores of a listpack"},
		bad("listpack count", payload([]byte{20}, blob(listpackCount(3, lpStrs("a", "b")...))), ErrFormat),
		bad("listpack total", payload([]byte{20}, blob(withTotal(listpack(lpStrs("a")...), 99))), ErrFormat),
		bad("listpack bad backlen", payload([]byte{20}, blob(corrupt(listpack(lpS6("abc")), 10, 5))), ErrFormat),
		bad("listpack bad encoding", payload([]byte{20}, blob(corrupt(listpack(lpS6("abc")), 6, 0xF5))), ErrFormat),
		bad("listpack string past end", payload([]byte{20}, blob(corrupt(listpack(lpS6("abc")), 6, 0x80|60))), ErrFormat),
		bad("listpack int past end", payload([]byte{20}, blob(listpack(lpEntry{0xF4, 1, 2}))), ErrFormat),
		bad("listpack no end", payload([]byte{20}, blob(withTotal(listpack(lpS6("abc"))[:11], 11))), ErrFormat),
		bad("listpack after end", payload([]byte{20}, blob(withTotal(append(listpack(lpS6("abc")), 0), 13))), ErrFormat),
		bad("quicklist2 container 3", payload([]byte{18}, ln(1), ln(3), blob(listpack(lpStrs("a")...))), ErrFormat),
		bad("quicklist2 only empty nodes", payload([]byte{18}, ln(1), ln(2), blob(listpack())), ErrFormat),
		bad("quicklist2 bad listpack", payload([]byte{18}, ln(1), ln(2), raw("xyzzy-not-a-listpack")), ErrFormat),
		bad("ziplist bad prevlen", payload([]byte{10}, blob(corrupt(ziplist(zlStrs("a", "b")...), 13, 1))), ErrFormat),
		bad("ziplist bad tail", payload([]byte{10}, blob(corrupt(ziplist(zlStrs("a", "b")...), 4, 10))), ErrFormat),
		bad("ziplist bad count", payload([]byte{10}, blob(corrupt(ziplist(zlStrs("a", "b")...), 8, 3))), ErrFormat),
		bad("ziplist bad encoding", payload([]byte{10}, blob(corrupt(ziplist(zlStrs("a")...), 11, 0xC1))), ErrFormat),
		bad("ziplist prevlen 0xff", payload([]byte{10}, blob(corrupt(ziplist(zlStrs("a", "b")...), 13, 0xFF))), ErrFormat),
		bad("ziplist empty", payload([]byte{10}, blob(ziplist())), ErrFormat),
		bad("ziplist odd hash", payload([]byte{13}, blob(ziplist(zlStrs("f")...))), ErrFormat),
		{name: "ziplist zset nan", payload: payload([]byte{12}, blob(ziplist(zlStrs("a", "nan")...))), err: ErrFormat, redisSkip: "Redis 7.0 does not check the scores of a ziplist"},
		bad("ziplist string past end", payload([]byte{10}, blob(corrupt(ziplist(zlStrs("a")...), 11, 0x40|1))), ErrFormat),
		bad("zipmap count", payload([]byte{9}, blob(corrupt(zipmap(0, "f", "v"), 0, 2))), ErrFormat),
		bad("zipmap key only", payload([]byte{9}, blob([]byte{1, 1, 'f', 0xFF})), ErrFormat),
		bad("zipmap free past end", payload([]byte{9}, blob(corrupt(zipmap(0, "f", "v"), 4, 9))), ErrFormat),
		bad("zipmap empty", payload([]byte{9}, blob([]byte{0, 0xFF})), ErrFormat),
	}, streamCases()...)
}

func f64(f float64) []byte { return binary.LittleEndian.AppendUint64(nil, math.Float64bits(f)) }

// corrupt returns b with b[i] set to c.
func corrupt(b []byte, i int, c byte) []byte {
	b = bytes.Clone(b)
	b[i] = c
	return b
}

// withTotal returns a listpack or ziplist with its total-bytes header set.
func withTotal(b []byte, n uint32) []byte {
	b = bytes.Clone(b)
	binary.LittleEndian.PutUint32(b, n)
	return b
}

func TestRestoreTable(t *testing.T) {
	for _, c := range restoreCases() {
		t.Run(c.name, func(t *testing.T) {
			got, err := Restore(c.payload)
			if c.err != nil {
				require.ErrorIs(t, err, c.err)
				require.Equal(t, Value{}, got)
				return
			}
			require.NoError(t, err)
			require.True(t, equalValues(c.want, got), "want %s\n got %s", show(c.want), show(got))
			again, err := Restore(Dump(got))
			require.NoError(t, err)
			require.True(t, equalValues(withoutActive(got), again), "Dump round trip: %s", show(again))
		})
	}
}

// TestRestoreDoesNotAlias checks that the value does not share memory with
// the payload, and that appending to one element leaves its neighbours be.
func TestRestoreDoesNotAlias(t *testing.T) {
	p := payload([]byte{1}, ln(3), raw("ab"), raw("cd"), rs("5"))
	v, err := Restore(p)
	require.NoError(t, err)
	for i := range p {
		p[i] = 'X'
	}
	_ = append(v.Elems[0], 'Z')
	require.Equal(t, bs("ab", "cd", "5"), v.Elems)

	v, err = Restore(payload([]byte{11}, blob(intset(2, 1, 2))))
	require.NoError(t, err)
	_ = append(v.Elems[0], '9')
	require.Equal(t, bs("1", "2"), v.Elems)
}

// TestRestoreTruncations cuts every valid table payload at every length and
// flips every bit of a few: nothing panics, and every failure is one of the
// two errors.
func TestRestoreTruncations(t *testing.T) {
	for _, c := range restoreCases() {
		if c.err != nil || len(c.payload) > 2000 {
			continue
		}
		obj := c.payload[:len(c.payload)-footerLen]
		for n := range len(obj) {
			_, err := Restore(withFooter(Version, obj[:n]))
			require.ErrorIs(t, err, ErrFormat, "%s cut at %d", c.name, n)
		}
		for i := range len(obj) * 8 {
			bad := bytes.Clone(obj)
			bad[i/8] ^= 1 << (i % 8)
			if _, err := Restore(withFooter(Version, bad)); err != nil {
				require.ErrorIs(t, err, ErrFormat, "%s bit %d", c.name, i)
			}
		}
	}
}

// TestRestoreHugeClaims: lengths that claim far more than the payload holds
// fail without allocating what they claim.
func TestRestoreHugeClaims(t *testing.T) {
	claims := [][]byte{
		payload([]byte{1, 0x80, 0xff, 0xff, 0xff, 0xff}, raw("x")),
		payload([]byte{0, 0xC3, 0x80, 0xff, 0xff, 0xff, 0xff, 0x81, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
		payload([]byte{0, 0xC3}, ln(4), []byte{0x80, 0x1f, 0xff, 0xff, 0xff}, []byte{0x00, 'a', 0xE0, 0xff}),
		payload([]byte{11}, raw("\x08\x00\x00\x00\xff\xff\xff\xff")),
		payload([]byte{18, 0x80, 0xff, 0xff, 0xff, 0xff}, ln(2)),
		payload([]byte{20}, blob([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})),
	}
	for i, p := range claims {
		allocs := testing.AllocsPerRun(10, func() {
			_, err := Restore(p)
			require.ErrorIs(t, err, ErrFormat)
		})
		require.LessOrEqual(t, allocs, 2.0, "claim %d", i)
	}
	// A compressed string whose input could produce its claimed length,
	// were it not over the cap, is refused before its output is allocated.
	clen := uint64(lzfMaxLen/lzfMaxRatio + 1000)
	p := payload([]byte{0, 0xC3}, ln(clen), ln(lzfMaxLen+1), make([]byte, clen))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Restore(p)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrFormat)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(2*len(p)))
}

func TestErrorsAreSentinels(t *testing.T) {
	// The sentinels themselves, so that their text is Redis's reply.
	_, err := Restore([]byte("short"))
	require.Same(t, ErrChecksum, err)
	_, err = Restore(payload([]byte{99}))
	require.Same(t, ErrFormat, err)
	require.Equal(t, "Bad data format", err.Error())
}

func show(v Value) string {
	var b strings.Builder
	b.WriteString(v.Kind.String() + ":")
	if v.Kind == String {
		b.WriteString(" " + trim(v.Str))
	}
	for _, e := range v.Elems {
		b.WriteString(" " + trim(e))
	}
	for _, e := range v.Pairs {
		b.WriteString(" " + trim(e))
	}
	for _, m := range v.Members {
		b.WriteString(" " + trim(m.Member) + "=" + strconv.FormatFloat(m.Score, 'g', -1, 64))
	}
	if v.Stream != nil {
		b.WriteString(" " + strings.Join(streamContent(v.Stream), "; "))
		for _, g := range v.Stream.Groups {
			for _, c := range g.Consumers {
				fmt.Fprintf(&b, "; %q/%q active %d", g.Name, c.Name, c.ActiveMs)
			}
		}
	}
	return b.String()
}

func trim(b []byte) string {
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "…(" + strconv.Itoa(len(b)) + ")"
	}
	return strconv.Quote(string(b))
}
