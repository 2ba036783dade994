package respdiff

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// Value is one RESP reply (RESP2 or RESP3) as a tree.
type Value struct {
	Kind  byte   // the RESP type byte: + - : $ * , # _ ( = ~ % > !
	Str   string // simple/bulk/verbatim/error text, the integer or double text
	Null  bool   // $-1, *-1 or _
	Elems []Value
}

// IsError reports a RESP error reply (simple or blob).
func (v Value) IsError() bool { return v.Kind == '-' || v.Kind == '!' }

// ErrCode is the first word of an error reply (ERR, WRONGTYPE, …).
func (v Value) ErrCode() string {
	code, _, _ := strings.Cut(v.Str, " ")
	return code
}

// String renders the value compactly, for reports.
func (v Value) String() string {
	var b strings.Builder
	v.write(&b)
	return b.String()
}

func (v Value) write(b *strings.Builder) {
	if v.Null {
		b.WriteString("(nil)")
		return
	}
	switch v.Kind {
	case '+':
		b.WriteString(v.Str)
	case '-', '!':
		b.WriteString("(error) " + v.Str)
	case ':':
		b.WriteString("(integer) " + v.Str)
	case ',':
		b.WriteString("(double) " + v.Str)
	case '#':
		b.WriteString("(bool) " + v.Str)
	case '(':
		b.WriteString("(big) " + v.Str)
	case '$', '=':
		b.WriteString(strconv.Quote(v.Str))
	default:
		b.WriteByte(v.Kind)
		b.WriteByte('[')
		for i, e := range v.Elems {
			if i > 0 {
				b.WriteByte(' ')
			}
			e.write(b)
		}
		b.WriteByte(']')
	}
}

// key is a canonical text of the value, used to sort unordered elements.
func (v Value) key() string {
	var b strings.Builder
	b.WriteByte(v.Kind)
	if v.Null {
		b.WriteString("nil")
	}
	b.WriteString(strconv.Quote(v.Str))
	for _, e := range v.Elems {
		b.WriteString(e.key())
	}
	return b.String()
}

// Equal reports whether two values are the same reply.
func Equal(a, b Value) bool { return a.key() == b.key() }

// maxReplyBytes bounds one bulk reply the reader accepts (a bug that
// answered gigabytes must fail, not exhaust memory).
const maxReplyBytes = 64 << 20

// Read reads one complete reply (attributes are skipped).
func Read(r *bufio.Reader) (Value, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return Value{}, err
	}
	if len(line) < 3 || !strings.HasSuffix(line, "\r\n") {
		return Value{}, fmt.Errorf("malformed reply line %q", line)
	}
	kind, body := line[0], line[1:len(line)-2]
	switch kind {
	case '+', '-', ':', ',', '#', '(':
		return Value{Kind: kind, Str: body}, nil
	case '_':
		return Value{Kind: kind, Null: true}, nil
	case '$', '=', '!':
		n, err := strconv.Atoi(body)
		if err != nil || n > maxReplyBytes {
			return Value{}, fmt.Errorf("bad bulk length %q", body)
		}
		if n < 0 {
			return Value{Kind: kind, Null: true}, nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Value{}, err
		}
		s := string(buf[:n])
		if kind == '=' && len(s) >= 4 { // verbatim: "txt:" prefix
			s = s[4:]
		}
		return Value{Kind: kind, Str: s}, nil
	case '*', '~', '>', '%', '|':
		n, err := strconv.Atoi(body)
		if err != nil || n > 1<<24 {
			return Value{}, fmt.Errorf("bad aggregate length %q", body)
		}
		if n < 0 {
			return Value{Kind: kind, Null: true}, nil
		}
		if kind == '%' || kind == '|' {
			n *= 2
		}
		v := Value{Kind: kind, Elems: make([]Value, 0, min(n, 1024))}
		for i := 0; i < n; i++ {
			e, err := Read(r)
			if err != nil {
				return Value{}, err
			}
			v.Elems = append(v.Elems, e)
		}
		if kind == '|' { // attributes precede the real reply
			return Read(r)
		}
		return v, nil
	}
	return Value{}, fmt.Errorf("unknown reply type %q", kind)
}

// Encode appends args as a RESP array of bulk strings.
func Encode(dst []byte, args []string) []byte {
	dst = append(dst, '*')
	dst = strconv.AppendInt(dst, int64(len(args)), 10)
	dst = append(dst, '\r', '\n')
	for _, a := range args {
		dst = append(dst, '$')
		dst = strconv.AppendInt(dst, int64(len(a)), 10)
		dst = append(dst, '\r', '\n')
		dst = append(dst, a...)
		dst = append(dst, '\r', '\n')
	}
	return dst
}

// sorted returns v with its elements sorted (an unordered collection).
func sorted(v Value) Value {
	out := v
	out.Elems = append([]Value(nil), v.Elems...)
	sort.Slice(out.Elems, func(i, j int) bool { return out.Elems[i].key() < out.Elems[j].key() })
	return out
}

// sortedPairs sorts a flat field, value, … array (or a RESP3 map) by pair.
func sortedPairs(v Value) Value {
	type pair struct{ k, v Value }
	var ps []pair
	for i := 0; i+1 < len(v.Elems); i += 2 {
		ps = append(ps, pair{v.Elems[i], v.Elems[i+1]})
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i].k.key()+ps[i].v.key() < ps[j].k.key()+ps[j].v.key() })
	out := v
	out.Elems = nil
	for _, p := range ps {
		out.Elems = append(out.Elems, p.k, p.v)
	}
	if len(v.Elems)%2 == 1 {
		out.Elems = append(out.Elems, v.Elems[len(v.Elems)-1])
	}
	return out
}
