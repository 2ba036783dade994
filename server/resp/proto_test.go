package resp

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var defaultLimits = Limits{}.withDefaults()

// parseAll parses every command of input fed in one buffer.
func parseAll(input []byte, lim Limits) (cmds [][]string, err error) {
	var p Parser
	p.Reset()
	buf := input
	for len(buf) > 0 {
		args, n, err := p.Next(buf, &lim)
		if err != nil {
			return cmds, err
		}
		if n == 0 {
			return cmds, nil
		}
		if n > len(buf) {
			panic(fmt.Sprintf("consumed %d of %d bytes", n, len(buf)))
		}
		cmds = append(cmds, strs(args))
		buf = buf[n:]
	}
	return cmds, nil
}

// parseChunked feeds input chunk bytes at a time, the way a connection
// reads it, compacting consumed bytes away between reads.
func parseChunked(input []byte, chunk int, lim Limits) (cmds [][]string, err error) {
	var p Parser
	p.Reset()
	var buf []byte
	for off := 0; off < len(input) || len(buf) > 0; {
		if off < len(input) {
			end := min(off+chunk, len(input))
			buf = append(buf, input[off:end]...)
			off = end
		}
		progressed := false
		for len(buf) > 0 {
			args, n, err := p.Next(buf, &lim)
			if err != nil {
				return cmds, err
			}
			if n == 0 {
				break
			}
			progressed = true
			cmds = append(cmds, strs(args))
			buf = append([]byte(nil), buf[n:]...) // move: the parser keeps offsets only
		}
		if off >= len(input) && !progressed {
			return cmds, nil
		}
	}
	return cmds, nil
}

func strs(args [][]byte) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = string(a)
	}
	return out
}

func protoMsg(t *testing.T, err error) string {
	t.Helper()
	var pe *ProtocolError
	require.True(t, errors.As(err, &pe), "want a *ProtocolError, got %v", err)
	return pe.Msg
}

func TestParserCommands(t *testing.T) {
	cases := []struct {
		name, in string
		want     [][]string
	}{
		{"multibulk", "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", [][]string{{"GET", "k"}}},
		{"pipelined", "*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n", [][]string{{"PING"}, {"ECHO", "hi"}}},
		{"binary value with CRLF inside", "*3\r\n$3\r\nSET\r\n$4\r\nk\r\n1\r\n$5\r\na\r\nb\x00\r\n", [][]string{{"SET", "k\r\n1", "a\r\nb\x00"}}},
		{"empty bulk", "*2\r\n$4\r\nECHO\r\n$0\r\n\r\n", [][]string{{"ECHO", ""}}},
		{"zero count is skipped", "*0\r\n*1\r\n$4\r\nPING\r\n", [][]string{{}, {"PING"}}},
		{"negative count is skipped", "*-1\r\n*1\r\n$4\r\nPING\r\n", [][]string{{}, {"PING"}}},
		{"inline", "PING\r\n", [][]string{{"PING"}}},
		{"inline LF only", "SET a b\n", [][]string{{"SET", "a", "b"}}},
		{"inline blank line", "\r\n\nPING\n", [][]string{{}, {}, {"PING"}}},
		{"inline double quotes and escapes", `SET "a b" "x\x41\n\"y"` + "\r\n", [][]string{{"SET", "a b", "xA\n\"y"}}},
		{"inline single quotes", `SET 'it\'s' 'a\nb'` + "\r\n", [][]string{{"SET", "it's", `a\nb`}}},
		{"inline empty quoted", `ECHO ""` + "\n", [][]string{{"ECHO", ""}}},
		{"inline quote inside a token", `SET a"b c"` + "\n", [][]string{{"SET", "ab c"}}},
		{"inline tabs and spaces", "  GET \t k  \r\n", [][]string{{"GET", "k"}}},
		{"inline NUL ends the line", "GET k\x00junk\n", [][]string{{"GET", "k"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAll([]byte(tc.in), defaultLimits)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			for _, chunk := range []int{1, 2, 3, 7} {
				got, err := parseChunked([]byte(tc.in), chunk, defaultLimits)
				require.NoError(t, err)
				require.Equal(t, tc.want, got, "chunk %d", chunk)
			}
		})
	}
}

func TestParserIncomplete(t *testing.T) {
	for _, in := range []string{"*", "*2", "*2\r", "*2\r\n", "*2\r\n$3", "*2\r\n$3\r\nGE", "*2\r\n$3\r\nGET\r", "*2\r\n$3\r\nGET\r\n", "PING", "SET \"a b"} {
		var p Parser
		p.Reset()
		args, n, err := p.Next([]byte(in), &defaultLimits)
		require.NoError(t, err, "%q", in)
		require.Zero(t, n, "%q", in)
		require.Nil(t, args, "%q", in)
	}
}

func TestParserNeed(t *testing.T) {
	var p Parser
	p.Reset()
	in := []byte("*2\r\n$3\r\nSET\r\n$1000\r\nabc")
	_, n, err := p.Next(in, &defaultLimits)
	require.NoError(t, err)
	require.Zero(t, n)
	require.Equal(t, len("*2\r\n$3\r\nSET\r\n$1000\r\n")+1002, p.Need(), "the header of the pending bulk tells its size")
	require.True(t, p.Pending())
}

func TestParserErrors(t *testing.T) {
	unauth := defaultLimits
	unauth.Unauthenticated = true
	cases := []struct {
		name, in string
		lim      Limits
		msg      string
	}{
		{"count not a number", "*abc\r\n", defaultLimits, "invalid multibulk length"},
		{"count with plus sign", "*+1\r\n", defaultLimits, "invalid multibulk length"},
		{"count with leading zero", "*01\r\n", defaultLimits, "invalid multibulk length"},
		{"count without CR", "*1\n", defaultLimits, "invalid multibulk length"},
		{"count over the limit", "*1048577\r\n", defaultLimits, "invalid multibulk length"},
		{"count over int64", "*99999999999999999999\r\n", defaultLimits, "invalid multibulk length"},
		{"missing dollar", "*1\r\nfoo\r\n", defaultLimits, "expected '$', got 'f'"},
		{"negative bulk length", "*1\r\n$-1\r\n", defaultLimits, "invalid bulk length"},
		{"bulk length not a number", "*1\r\n$x\r\n", defaultLimits, "invalid bulk length"},
		{"huge bulk length", "*1\r\n$536870913\r\n", defaultLimits, "invalid bulk length"},
		{"bulk without its CRLF", "*1\r\n$3\r\nfooXY", defaultLimits, "invalid bulk length"},
		{"bulk header without CR", "*1\r\n$3\nfoo\r\n", defaultLimits, "invalid bulk length"},
		{"unbalanced double quote", "SET \"a b\n", defaultLimits, "unbalanced quotes in request"},
		{"unbalanced single quote", "SET 'a b\n", defaultLimits, "unbalanced quotes in request"},
		{"closing quote glued to text", "SET \"a\"b\n", defaultLimits, "unbalanced quotes in request"},
		{"too big inline", strings.Repeat("a", 64<<10+1), defaultLimits, "too big inline request"},
		{"too big count string", "*" + strings.Repeat("1", 64<<10+1), defaultLimits, "too big mbulk count string"},
		{"too big bulk count string", "*1\r\n$" + strings.Repeat("1", 64<<10+1), defaultLimits, "too big bulk count string"},
		{"unauthenticated count", "*11\r\n", unauth, "unauthenticated multibulk length"},
		{"unauthenticated bulk", "*1\r\n$16385\r\n", unauth, "unauthenticated bulk length"},
		{"unauthenticated inline", "a b c d e f g h i j k\n", unauth, "unauthenticated multibulk length"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseAll([]byte(tc.in), tc.lim)
			require.Equal(t, tc.msg, protoMsg(t, err))
			require.Equal(t, "Protocol error: "+tc.msg, err.Error())
		})
	}
}

func TestParserReusesArgsAcrossCommands(t *testing.T) {
	var p Parser
	p.Reset()
	in := bytes.Repeat([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"), 100)
	allocs := testing.AllocsPerRun(50, func() {
		buf := in
		for len(buf) > 0 {
			_, n, err := p.Next(buf, &defaultLimits)
			if err != nil || n == 0 {
				panic("unexpected")
			}
			buf = buf[n:]
		}
	})
	require.Zero(t, allocs, "the multibulk path does not allocate once warm")
}

func TestParseInt(t *testing.T) {
	for in, want := range map[string]int64{"0": 0, "1": 1, "-1": -1, "9223372036854775807": 1<<63 - 1, "-9223372036854775808": -1 << 63} {
		got, ok := parseInt([]byte(in))
		require.True(t, ok, in)
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"", "-", "+1", "01", "-0", " 1", "1 ", "9223372036854775808", "-9223372036854775809", "1a", "18446744073709551616"} {
		_, ok := parseInt([]byte(in))
		require.False(t, ok, in)
	}
}

// FuzzParser: arbitrary bytes never panic the parser, never make it consume
// more than it was given or return arguments outside the buffer, and feeding
// the same bytes in small chunks yields the same commands and the same error
// as feeding them at once.
func FuzzParser(f *testing.F) {
	for _, s := range []string{
		"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", "PING\r\n", "*1\r\n$-1\r\n", "*-5\r\n", "SET \"a\\x4", "*3\r\n$3\r\nSET\r\n$2\r\n\r\n\r\n$0\r\n\r\n",
		"'a\\'b' \"\\n\"\n", "*1\r\n$99999999999999999999\r\n", "*1\r\n$5\r\nab", "\x00\n", "*1\r\n$0\r\n\r\n*0\r\n",
	} {
		f.Add([]byte(s), uint8(3), false)
	}
	f.Fuzz(func(t *testing.T, in []byte, chunk uint8, unauth bool) {
		lim := Limits{MaxBulkLen: 1 << 16, MaxArgs: 1 << 10, MaxInline: 1 << 10, Unauthenticated: unauth}.withDefaults()
		var p Parser
		p.Reset()
		buf := in
		for len(buf) > 0 {
			args, n, err := p.Next(buf, &lim)
			if err != nil || n == 0 {
				break
			}
			if n > len(buf) {
				t.Fatalf("consumed %d of %d", n, len(buf))
			}
			for _, a := range args {
				if len(a) > len(buf) {
					t.Fatalf("argument longer than the buffer")
				}
			}
			buf = buf[n:]
		}
		whole, errWhole := parseAll(in, lim)
		parts, errParts := parseChunked(in, int(chunk%16)+1, lim)
		if (errWhole == nil) != (errParts == nil) || errWhole != nil && errWhole.Error() != errParts.Error() {
			t.Fatalf("errors differ: whole %v, chunked %v", errWhole, errParts)
		}
		if len(whole) != len(parts) {
			t.Fatalf("commands differ: whole %q, chunked %q", whole, parts)
		}
		for i := range whole {
			if strings.Join(whole[i], "\x00") != strings.Join(parts[i], "\x00") {
				t.Fatalf("command %d differs: %q vs %q", i, whole[i], parts[i])
			}
		}
	})
}
