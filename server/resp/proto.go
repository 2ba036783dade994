package resp

import (
	"bytes"

	"github.com/zaris-io/zaris/internal/kv"
)

// Limits bound what a client may send. The zero value of a field means its
// default.
type Limits struct {
	// MaxBulkLen is the largest bulk string argument (Redis's
	// proto-max-bulk-len). Default 512 MiB.
	MaxBulkLen int
	// MaxArgs is the most arguments one multibulk command may declare.
	// Default 1 Mi (Redis accepts up to INT_MAX, but memory is only spent as
	// the arguments arrive, as here).
	MaxArgs int
	// MaxInline is the longest inline command line, and the longest
	// multibulk or bulk header, before its newline arrives (Redis's
	// PROTO_INLINE_MAX_SIZE). Default 64 KiB.
	MaxInline int
	// Unauthenticated: the limits are those Redis applies to a client that
	// has not authenticated yet (at most 10 arguments of at most 16 KiB),
	// and their errors say so.
	Unauthenticated bool
}

// Defaults of Limits.
const (
	DefaultMaxBulkLen = 512 << 20
	DefaultMaxArgs    = 1 << 20
	DefaultMaxInline  = 64 << 10

	unauthMaxArgs    = 10
	unauthMaxBulkLen = 16 << 10
)

func (l Limits) withDefaults() Limits {
	if l.MaxBulkLen <= 0 {
		l.MaxBulkLen = DefaultMaxBulkLen
	}
	if l.MaxArgs <= 0 {
		l.MaxArgs = DefaultMaxArgs
	}
	if l.MaxInline <= 0 {
		l.MaxInline = DefaultMaxInline
	}
	return l
}

// ProtocolError is a request the parser cannot make sense of. The server
// answers "-ERR Protocol error: <Msg>" and closes the connection, as Redis
// does: the stream cannot be resynchronised.
type ProtocolError struct{ Msg string }

func (e *ProtocolError) Error() string { return "Protocol error: " + e.Msg }

func protoErr(msg string) *ProtocolError { return &ProtocolError{Msg: msg} }

// Parser reads requests from the front of a byte buffer: multibulk RESP
// arrays of bulk strings ("*2\r\n$3\r\nGET\r\n$1\r\nk\r\n") and inline
// commands ("GET k\r\n"), with Redis's rules and error texts
// (networking.c: processMultibulkBuffer, processInlineBuffer).
//
// It is incremental: given the bytes received so far it either returns one
// complete command, or reports that it needs more, remembering how far it
// got, so a large command arriving in many reads is scanned once. Between
// calls the caller may move the unconsumed bytes (compact its buffer), as
// long as the next call's buffer starts at the same command: the state is
// kept as offsets from the start of the command.
//
// It is a pure codec: no I/O, no allocation on the multibulk path once its
// argument slices have grown (arguments alias the caller's buffer).
type Parser struct {
	args  [][]byte
	spans []span

	inMulti bool // a multibulk header was read; spans holds the arguments so far
	count   int  // arguments the header declared
	pos     int  // next byte to parse, from the start of the command
	bulk    int  // length of the bulk whose header was read, or -1
	need    int  // total bytes the command needs, when known (a pending bulk)
}

type span struct{ lo, hi int }

// Reset drops any partially parsed command.
func (p *Parser) Reset() {
	p.inMulti, p.count, p.pos, p.bulk, p.need = false, 0, 0, -1, 0
	p.spans = p.spans[:0]
}

// Need is the number of bytes, from the start of the current command, the
// command is known to need before it can complete (0 when unknown). A
// reader waiting for a large bulk string uses it to size its buffer once.
func (p *Parser) Need() int { return p.need }

// Pending reports whether a command has been partly parsed.
func (p *Parser) Pending() bool { return p.inMulti }

// Next parses one command from the front of buf, which must start where
// the previous call's consumed bytes ended.
//
//   - n > 0: a command was consumed; args are its arguments (empty for a
//     blank inline line or "*0"/"*-1", which Redis skips). args and the
//     slices in it alias buf (an inline command's arguments are copies) and
//     are valid until the next call.
//   - n == 0, err == nil: the command is incomplete; call again with more.
//   - err != nil: a *ProtocolError.
func (p *Parser) Next(buf []byte, lim *Limits) (args [][]byte, n int, err error) {
	if len(buf) == 0 {
		return nil, 0, nil
	}
	if !p.inMulti {
		if buf[0] != '*' {
			return p.inline(buf, lim)
		}
		count, next, err := readHeader(buf, lim.MaxInline, "too big mbulk count string", "invalid multibulk length")
		if err != nil || next == 0 {
			return nil, 0, err
		}
		if count > int64(lim.MaxArgs) {
			return nil, 0, protoErr("invalid multibulk length")
		}
		if lim.Unauthenticated && count > unauthMaxArgs {
			return nil, 0, protoErr("unauthenticated multibulk length")
		}
		if count <= 0 {
			return p.args[:0], next, nil
		}
		p.inMulti, p.count, p.pos, p.bulk, p.need = true, int(count), next, -1, 0
		p.spans = p.spans[:0]
	}
	for len(p.spans) < p.count {
		if p.bulk < 0 {
			if p.pos >= len(buf) {
				return nil, 0, nil
			}
			rest := buf[p.pos:]
			if rest[0] != '$' {
				return nil, 0, protoErr("expected '$', got '" + string(rest[:1]) + "'")
			}
			size, next, err := readHeader(rest, lim.MaxInline, "too big bulk count string", "invalid bulk length")
			if err != nil || next == 0 {
				return nil, 0, err
			}
			if size < 0 || size > int64(lim.MaxBulkLen) {
				return nil, 0, protoErr("invalid bulk length")
			}
			if lim.Unauthenticated && size > unauthMaxBulkLen {
				return nil, 0, protoErr("unauthenticated bulk length")
			}
			p.bulk = int(size)
			p.pos += next
			p.need = p.pos + p.bulk + 2
		}
		if len(buf) < p.pos+p.bulk+2 {
			return nil, 0, nil
		}
		end := p.pos + p.bulk
		if buf[end] != '\r' || buf[end+1] != '\n' {
			return nil, 0, protoErr("invalid bulk length")
		}
		p.spans = append(p.spans, span{p.pos, end})
		p.pos = end + 2
		p.bulk, p.need = -1, 0
	}
	args = p.args[:0]
	for _, s := range p.spans {
		args = append(args, buf[s.lo:s.hi:s.hi])
	}
	p.args = args
	n = p.pos
	p.Reset()
	return args, n, nil
}

// inline parses an inline command: one line, split like redis-cli and
// Redis split it (sdssplitargs).
func (p *Parser) inline(buf []byte, lim *Limits) ([][]byte, int, error) {
	nl, ok := lineEnd(buf, lim.MaxInline)
	if !ok {
		return nil, 0, protoErr("too big inline request")
	}
	if nl < 0 {
		return nil, 0, nil
	}
	line := buf[:nl]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	args, ok := SplitArgs(line, p.args[:0])
	if !ok {
		return nil, 0, protoErr("unbalanced quotes in request")
	}
	if lim.Unauthenticated && len(args) > unauthMaxArgs {
		return nil, 0, protoErr("unauthenticated multibulk length")
	}
	p.args = args
	return args, nl + 1, nil
}

// SplitArgs splits a line into arguments the way Redis's sdssplitargs does
// for inline commands: separated by white space, "double quotes" with
// \n \r \t \b \a \xHH and \<char> escapes, 'single quotes' with \' only. A
// closing quote must be followed by white space or the end of the line;
// ok is false for unbalanced quotes. A NUL byte ends the line, as in C.
// The arguments are new slices, appended to dst.
func SplitArgs(line []byte, dst [][]byte) (args [][]byte, ok bool) {
	args = dst
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) || line[i] == 0 {
			return args, true
		}
		var cur []byte
		inq, insq := false, false
	token:
		for {
			var c byte // 0 = end of line
			if i < len(line) {
				c = line[i]
			}
			switch {
			case inq:
				switch {
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && isHex(line[i+2]) && isHex(line[i+3]):
					cur = append(cur, unhex(line[i+2])<<4|unhex(line[i+3]))
					i += 3
				case c == '\\' && i+1 < len(line) && line[i+1] != 0:
					i++
					switch line[i] {
					case 'n':
						cur = append(cur, '\n')
					case 'r':
						cur = append(cur, '\r')
					case 't':
						cur = append(cur, '\t')
					case 'b':
						cur = append(cur, '\b')
					case 'a':
						cur = append(cur, '\a')
					default:
						cur = append(cur, line[i])
					}
				case c == '"':
					if i+1 < len(line) && line[i+1] != 0 && !isSpace(line[i+1]) {
						return nil, false // closing quote must be followed by a space
					}
					i++
					break token
				case c == 0:
					return nil, false // unterminated quotes
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && line[i+1] != 0 && !isSpace(line[i+1]) {
						return nil, false
					}
					i++
					break token
				case c == 0:
					return nil, false
				default:
					cur = append(cur, c)
				}
			default:
				switch c {
				case ' ', '\n', '\r', '\t', 0:
					break token
				case '"':
					inq = true
				case '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		if cur == nil {
			cur = []byte{}
		}
		args = append(args, cur)
	}
}

// lineEnd finds the '\n' ending the line at the front of buf: its index, -1
// when it has not arrived yet, ok=false when the line is (or will be)
// longer than max. Unlike Redis, a line over max is refused even when its
// newline arrived in the same read, so the outcome never depends on how
// the bytes were split into reads.
// readHeader reads the "*N" or "$N" line at the start of buf (its lead
// byte checked by the caller): its value and its length, 0 while the line
// is incomplete. tooBig and invalid are the errors of a line longer than
// max and of a malformed one.
func readHeader(buf []byte, max int, tooBig, invalid string) (v int64, n int, err error) {
	if v, n, ok := shortHeader(buf); ok {
		return v, n, nil
	}
	nl, ok := lineEnd(buf, max)
	switch {
	case !ok:
		return 0, 0, protoErr(tooBig)
	case nl < 0:
		return 0, 0, nil
	case nl < 2 || buf[nl-1] != '\r':
		return 0, 0, protoErr(invalid)
	}
	if v, ok = parseInt(buf[1 : nl-1]); !ok {
		return 0, 0, protoErr(invalid)
	}
	return v, nl + 1, nil
}

// shortHeader reads the header line most commands are made of — the lead
// byte ('*' or '$', which the caller has checked), a positive decimal without leading zeros or a lone 0,
// CR LF — in one pass: its value and the length of the line. ok is false
// for anything else, complete or not (a sign, more than 18 digits, another
// byte, the end of buf): the general path, which owns the errors, reads
// those. What it accepts, parseInt accepts with the same value.
func shortHeader(buf []byte) (v int64, n int, ok bool) {
	i := 1
	for ; i < len(buf) && i <= 18; i++ {
		c := buf[i]
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int64(c-'0')
	}
	if i == 1 || buf[1] == '0' && i > 2 || i+1 >= len(buf) || buf[i] != '\r' || buf[i+1] != '\n' {
		return 0, 0, false
	}
	return v, i + 2, true
}

func lineEnd(buf []byte, max int) (nl int, ok bool) {
	nl = bytes.IndexByte(buf[:min(len(buf), max+1)], '\n')
	if nl < 0 && len(buf) > max {
		return -1, false
	}
	return nl, true
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// parseInt parses a decimal integer exactly like Redis's string2ll.
func parseInt(b []byte) (int64, bool) { return kv.ParseInt(b) }
