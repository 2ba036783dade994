package resp

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// struct for scripts, written in Go after Roberto Ierusalimschy's
// lua_struct.c as Redis 7.0 ships it (with its getnum overflow check), on
// a 64-bit little-endian machine: struct.pack(fmt, ...),
// struct.unpack(fmt, s [, init]) (the values, then the 1-based position
// after them) and struct.size(fmt), compared with a redis-server 7.0
// (TestCMsgpackSameRepliesAsRedis).
//
// Format: ">" big and "<" little endian (little is native), "![n]"
// alignment (a power of 2, 8 by default), "x" a zero byte, "b"/"B" char,
// "h"/"H" short, "l"/"L" long and "T" size_t (8 bytes), "i"/"I[n]" an
// integer of n bytes (4 by default, 32 at most: beyond 8 a value packs as
// its 64 bits and zeros, unpacks from its last 8 bytes), "f" float, "d"
// double, "s" a zero-terminated string, "cn" n bytes of a string (pack
// "c0": the whole string; unpack "c0": as many as the previous value says),
// " " ignored; "=" and any other letter are "invalid format option" (size
// ignores other letters, as lua_struct.c does). Sizes in the format are C
// ints ("integral size overflow" beyond); a string is never read past its
// end nor a count taken from the format allocated: pack copies what its
// arguments hold, unpack refers into its input.

// Lua 5.1 on x86-64: what lua_struct.c's sizeof and alignment give.
const (
	structMaxIntSize = 32 // MAXINTSIZE
	structMaxAlign   = 8  // MAXALIGN: the alignment of double (and > int)
)

type structHeader struct {
	big   bool
	align uint64
}

func openStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

// structFormat is the format argument as the C code sees it: it ends at
// a NUL byte.
func structFormat(L *lua.LState) string {
	f := lua51CheckString(L, 1)
	if i := strings.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	return f
}

func isCDigit(c byte) bool { return '0' <= c && c <= '9' }

// structGetNum reads the number at fmt[*i:] (df when none), a C int.
func structGetNum(L *lua.LState, f string, i *int, df int) int {
	if *i >= len(f) || !isCDigit(f[*i]) {
		return df
	}
	a := 0
	for *i < len(f) && isCDigit(f[*i]) {
		d := int(f[*i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			lua51Error(L, "integral size overflow")
		}
		a = a*10 + d
		*i++
	}
	return a
}

// structOptSize is optsize: the size of option opt (0 for the options
// that have none).
func structOptSize(L *lua.LState, opt byte, f string, i *int) uint64 {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return uint64(structGetNum(L, f, i, 1))
	case 'i', 'I':
		sz := structGetNum(L, f, i, 4)
		if sz > structMaxIntSize {
			lua51Error(L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return uint64(sz)
	}
	return 0
}

// structToAlign is gettoalign: the padding before an item of size at
// position pos (the formula as lua_struct.c has it, sizes that are not a
// power of 2 included).
func structToAlign(pos uint64, h *structHeader, opt byte, size uint64) uint64 {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > h.align {
		size = h.align
	}
	return (size - (pos & (size - 1))) & (size - 1)
}

// structControl is controloptions: spaces, endianness, alignment, and the
// error for anything else.
func structControl(L *lua.LState, opt byte, f string, i *int, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.big = true
	case '<':
		h.big = false
	case '!':
		a := structGetNum(L, f, i, structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			lua51Error(L, "alignment %d is not a power of 2", a)
		}
		h.align = uint64(a)
	default:
		lua51ArgError(L, 1, "invalid format option '"+string([]byte{opt})+"'")
	}
}

func structPack(L *lua.LState) int {
	f := structFormat(L)
	h := structHeader{align: 1}
	nargs := L.GetTop()
	// lua_struct.c pushes a nil above the arguments: the first one
	// missing is "got nil".
	argType := func(arg int) string {
		if arg == nargs+1 {
			return "nil"
		}
		return lua51TypeName(L, arg)
	}
	number := func(arg int) float64 {
		if n, ok := lua51ToNumber(L.Get(arg)); ok {
			return n
		}
		lua51ArgError(L, arg, "number expected, got "+argType(arg))
		return 0
	}
	str := func(arg int) string {
		switch v := L.Get(arg).(type) {
		case lua.LString:
			return string(v)
		case lua.LNumber:
			return lua51NumberString(float64(v))
		}
		lua51ArgError(L, arg, "string expected, got "+argType(arg))
		return ""
	}
	var b []byte
	var total uint64
	arg := 2
	for i, steps := 0, 0; i < len(f); steps++ {
		if steps%mpCheckEvery == mpCheckEvery-1 {
			luaCheckContext(L)
		}
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pad := structToAlign(total, &h, opt, size)
		total += pad
		for ; pad > 0; pad-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			v := cUint64(number(arg))
			arg++
			b = structPutInteger(b, v, h.big, int(size))
		case 'x':
			b = append(b, 0)
		case 'f':
			v := math.Float32bits(float32(number(arg)))
			arg++
			if h.big {
				b = binary.BigEndian.AppendUint32(b, v)
			} else {
				b = binary.LittleEndian.AppendUint32(b, v)
			}
		case 'd':
			v := math.Float64bits(number(arg))
			arg++
			if h.big {
				b = binary.BigEndian.AppendUint64(b, v)
			} else {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
		case 'c', 's':
			s := str(arg)
			arg++
			if size == 0 {
				size = uint64(len(s))
			}
			if uint64(len(s)) < size {
				// lua_struct.c names the argument after this one
				lua51ArgError(L, arg, "string too short")
			}
			if uint64(len(b))+size >= maxLuaString {
				lua51Error(L, "resulting string too large")
			}
			b = append(b, s[:size]...)
			if opt == 's' {
				b = append(b, 0)
				size++
			}
		default:
			structControl(L, opt, f, &i, &h)
		}
		total += size
		if len(b) > maxLuaString {
			lua51Error(L, "resulting string too large")
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// structPutInteger appends the low size bytes of v (zeros beyond its 64
// bits: no sign extension, as lua_struct.c).
func structPutInteger(b []byte, v uint64, big bool, size int) []byte {
	var buf [structMaxIntSize]byte
	for k := range size {
		j := k
		if big {
			j = size - 1 - k
		}
		buf[j] = byte(v)
		v >>= 8
	}
	return append(b, buf[:size]...)
}

// structGetInteger reads size bytes as lua_struct.c does: into 64 bits
// (a longer integer keeps its last 8 bytes read), a signed one extended
// from bit size*8-1 taken modulo 64 (x86-64's shift).
func structGetInteger(s string, big, signed bool, size int) float64 {
	var l uint64
	for k := range size {
		j := k
		if !big {
			j = size - 1 - k
		}
		l = l<<8 | uint64(s[j])
	}
	if !signed {
		return float64(l)
	}
	mask := ^uint64(0) << (uint(size*8-1) & 63)
	if l&mask != 0 {
		l |= mask
	}
	return float64(int64(l))
}

func structUnpack(L *lua.LState) int {
	f := structFormat(L)
	data := lua51CheckString(L, 2)
	ld := uint64(len(data))
	pos := uint64(lua51OptInteger(L, 3, 1)) // size_t
	if pos == 0 {
		lua51ArgError(L, 3, "offset must be 1 or greater")
	}
	pos--
	nargs := L.GetTop()
	var out []lua.LValue
	h := structHeader{align: 1}
	tooShort := func(size uint64) {
		if !(size <= ld && pos <= ld-size) {
			lua51ArgError(L, 2, "data string too short")
		}
	}
	for i, steps := 0, 0; i < len(f); steps++ {
		if steps%mpCheckEvery == mpCheckEvery-1 {
			luaCheckContext(L)
		}
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		tooShort(size)
		luaCheckStack(L, nargs+len(out), 2, "too many results")
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			signed := 'a' <= opt && opt <= 'z'
			out = append(out, lua.LNumber(structGetInteger(data[pos:pos+size], h.big, signed, int(size))))
		case 'x':
		case 'f':
			out = append(out, lua.LNumber(math.Float32frombits(uint32(structUint(data[pos:pos+4], h.big)))))
		case 'd':
			out = append(out, lua.LNumber(math.Float64frombits(structUint(data[pos:pos+8], h.big))))
		case 'c':
			if size == 0 {
				var n float64
				ok := len(out) > 0
				if ok {
					n, ok = lua51ToNumber(out[len(out)-1])
				}
				if !ok {
					lua51Error(L, "format 'c0' needs a previous size")
				}
				size = cUint64(n)
				out = out[:len(out)-1]
				tooShort(size)
			}
			out = append(out, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				lua51Error(L, "unfinished string in data")
			}
			size = uint64(e) + 1
			out = append(out, lua.LString(data[pos:pos+uint64(e)]))
		default:
			structControl(L, opt, f, &i, &h)
		}
		pos += size
	}
	for _, v := range out {
		L.Push(v)
	}
	L.Push(lua.LNumber(int64(pos + 1)))
	return len(out) + 1
}

func structSize(L *lua.LState) int {
	f := structFormat(L)
	h := structHeader{align: 1}
	var pos uint64
	for i := 0; i < len(f); {
		opt := f[i]
		i++
		size := structOptSize(L, opt, f, &i)
		pos += structToAlign(pos, &h, opt, size)
		if opt == 's' {
			lua51ArgError(L, 1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			lua51ArgError(L, 1, "option 'c0' has no fixed size")
		}
		if !isCAlnum(opt) {
			structControl(L, opt, f, &i, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(int64(pos)))
	return 1
}

// structUint reads a 4- or 8-byte unsigned integer in the given byte order
// (the bits of a float or a double).
func structUint(v string, big bool) uint64 {
	b := []byte(v)
	switch {
	case len(b) == 4 && big:
		return uint64(binary.BigEndian.Uint32(b))
	case len(b) == 4:
		return uint64(binary.LittleEndian.Uint32(b))
	case big:
		return binary.BigEndian.Uint64(b)
	}
	return binary.LittleEndian.Uint64(b)
}
