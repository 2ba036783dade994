package resp

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// cmsgpack for scripts, written in Go after lua-cmsgpack 0.4.0 as Redis
// 7.0 ships it: pack, unpack, unpack_one, unpack_limit and the _NAME,
// _VERSION, _COPYRIGHT and _DESCRIPTION fields, with its encodings, limits
// and error texts, compared byte for byte with a redis-server 7.0
// (TestCMsgpackSameRepliesAsRedis).
//
// Packing: a number whose value is an int64 is the smallest msgpack integer
// that holds it, any other a float 32 when it converts to one and back
// unchanged, else a float 64; a string is fixstr, str 8, 16 or 32; a table
// whose keys are exactly 1..n (n below 2^31) an array, any other a map
// (iteration order: gopher-lua's, not Lua 5.1's); a table nested 16 deep is
// nil (LUACMSGPACK_MAX_NESTING: a circular table packs as a 16-deep copy);
// functions, userdata (cjson.null) and threads are nil. A result beyond
// 512 MB is "resulting string too large" (Redis would run out of memory),
// and a long pack stops at SCRIPT KILL.
//
// Unpacking: bin, ext and 0xc1 are "Bad data format in input.", input that
// ends inside a value "Missing bytes in input."; an int 64 is the nearest
// double, and so is a uint 64 read as an int 64 (2^64-1 is -1, as in
// Redis). Lua 5.1's C stack limit (LUAI_MAXCSTACK, 8000 values) is kept as
// Redis meets it: more than about 8000 values at once, or nesting beyond
// about 4000, is "stack overflow (…)". A decoded map may not set a key nil
// or NaN ("table index is nil"). Nothing is allocated from a length the
// input claims: a container is filled as its elements are read. One
// difference: gopher-lua keeps every integer key below 2^26 in a table's
// array part, so a map key far beyond the table's elements would allocate
// the gap; the gaps one unpack may open are bounded (mpSparseBudget) and a
// key beyond the bound is an error.

// mpMaxNesting is LUACMSGPACK_MAX_NESTING.
const mpMaxNesting = 16

// mpCheckEvery is how many values the encoder and decoder handle between
// two looks at the script's context (SCRIPT KILL, the node stopping).
const mpCheckEvery = 1 << 14

func openCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(mpPack))
	t.RawSetString("unpack", L.NewFunction(mpUnpack))
	t.RawSetString("unpack_one", L.NewFunction(mpUnpackOne))
	t.RawSetString("unpack_limit", L.NewFunction(mpUnpackLimit))
	t.RawSetString("_NAME", lua.LString("cmsgpack"))
	t.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	t.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	t.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return t
}

// --- packing ---

type mpEncoder struct {
	L     *lua.LState
	b     []byte
	nodes int
}

func mpPack(L *lua.LState) int {
	nargs := L.GetTop()
	if nargs == 0 {
		lua51ArgError(L, 0, "MessagePack pack needs input.")
	}
	if 2*nargs > luaMaxCStack {
		lua51ArgError(L, 0, "Too many arguments for MessagePack pack.")
	}
	e := mpEncoder{L: L}
	for i := 1; i <= nargs; i++ {
		// On lua-cmsgpack's stack: the arguments, the strings packed so
		// far, the value being packed.
		e.value(L.Get(i), 0, nargs+i)
	}
	L.Push(lua.LString(e.b))
	return 1
}

// value appends v's encoding; top is the Lua stack depth lua-cmsgpack
// would be at with v on top.
func (e *mpEncoder) value(v lua.LValue, level, top int) {
	if e.nodes++; e.nodes%mpCheckEvery == 0 {
		luaCheckContext(e.L)
		if len(e.b) > maxLuaString {
			lua51Error(e.L, "resulting string too large")
		}
	}
	switch v := v.(type) {
	case lua.LString:
		e.str(string(v))
	case lua.LBool:
		if v {
			e.b = append(e.b, 0xc3)
		} else {
			e.b = append(e.b, 0xc2)
		}
	case lua.LNumber:
		e.number(float64(v))
	case *lua.LTable:
		if level == mpMaxNesting {
			e.b = append(e.b, 0xc0)
			return
		}
		e.table(v, level, top)
	default:
		e.b = append(e.b, 0xc0)
	}
}

func (e *mpEncoder) str(s string) {
	n := len(s)
	if len(e.b)+n > maxLuaString {
		lua51Error(e.L, "resulting string too large")
	}
	switch {
	case n < 32:
		e.b = append(e.b, 0xa0|byte(n))
	case n <= 0xff:
		e.b = append(e.b, 0xd9, byte(n))
	case n <= 0xffff:
		e.b = append(e.b, 0xda, byte(n>>8), byte(n))
	default:
		e.b = append(e.b, 0xdb)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	}
	e.b = append(e.b, s...)
}

// number: an int64 value (-2^63 ≤ f < 2^63, integral) is an integer,
// anything else (NaN and the infinities too) a float.
func (e *mpEncoder) number(f float64) {
	if f == math.Trunc(f) && f >= -(1<<63) && f < 1<<63 {
		e.integer(int64(f))
		return
	}
	if f32 := float32(f); (math.Abs(f) <= math.MaxFloat32 || math.IsInf(f, 0)) && float64(f32) == f {
		e.b = append(e.b, 0xca)
		e.b = binary.BigEndian.AppendUint32(e.b, math.Float32bits(f32))
		return
	}
	e.b = append(e.b, 0xcb)
	e.b = binary.BigEndian.AppendUint64(e.b, math.Float64bits(f))
}

func (e *mpEncoder) integer(n int64) {
	b := e.b
	switch {
	case n >= 0 && n <= 127:
		b = append(b, byte(n))
	case n >= 0 && n <= 0xff:
		b = append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		b = append(b, 0xcd)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	case n >= 0 && n <= 0xffffffff:
		b = append(b, 0xce)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	case n >= 0:
		b = append(b, 0xcf)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	case n >= -32:
		b = append(b, byte(n))
	case n >= -128:
		b = append(b, 0xd0, byte(n))
	case n >= -32768:
		b = append(b, 0xd1)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	case n >= -2147483648:
		b = append(b, 0xd2)
		b = binary.BigEndian.AppendUint32(b, uint32(n))
	default:
		b = append(b, 0xd3)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	e.b = b
}

// header appends an array or map header: fix (15 at most), 16 or 32 bits.
func (e *mpEncoder) header(n int, fix, b16, b32 byte) {
	switch {
	case n <= 15:
		e.b = append(e.b, fix|byte(n))
	case n <= 0xffff:
		e.b = append(e.b, b16)
		e.b = binary.BigEndian.AppendUint16(e.b, uint16(n))
	default:
		e.b = append(e.b, b32)
		e.b = binary.BigEndian.AppendUint32(e.b, uint32(n))
	}
}

func (e *mpEncoder) table(t *lua.LTable, level, top int) {
	luaCheckStack(e.L, top, 2, "in function table_is_an_array")
	// An array when the keys are exactly 1..count: numbers, positive,
	// integral and below 2^31 (lua-cmsgpack's int test), the largest equal
	// to their count (an empty table is an empty array).
	count, max, array := 0, 0.0, true
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(n) != math.Trunc(float64(n)) || n > math.MaxInt32 {
			array = false
			break
		}
		count++
		max = math.Max(max, float64(n))
	}
	if array && float64(count) == max {
		e.header(count, 0x90, 0xdc, 0xdd)
		luaCheckStack(e.L, top, 1, "in function mp_encode_lua_table_as_array")
		for j := 1; j <= count; j++ {
			e.value(t.RawGet(lua.LNumber(j)), level+1, top+1)
		}
		return
	}
	luaCheckStack(e.L, top, 3, "in function mp_encode_lua_table_as_map")
	count = 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		count++
	}
	e.header(count, 0x80, 0xde, 0xdf)
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		e.value(k, level+1, top+3)
		e.value(v, level+1, top+2)
	}
}

// --- unpacking ---

const (
	mpOK = iota
	mpEOF
	mpBadFormat
)

type mpDecoder struct {
	L      *lua.LState
	s      string
	p      int // the next byte to read
	err    int
	sparse int // array slots gopher-lua may still add to reach sparse integer keys
	values int
}

// mpSparseBudget bounds the nil slots gopher-lua's array parts may get
// while an input of n bytes is unpacked (a map key k beyond its table's
// elements makes gopher-lua fill the array part up to k): 64K, and two
// per byte of input — what unpacking one-byte elements costs anyway.
func mpSparseBudget(n int) int { return 1<<16 + 2*n }

func mpUnpack(L *lua.LState) int {
	// Lua's stack keeps every argument; the values go above them.
	return mpUnpackFull(L, 0, 0, L.GetTop())
}

func mpUnpackOne(L *lua.LState) int {
	offset := lua51OptInteger(L, 2, 0)
	return mpUnpackFull(L, 1, offset, 1)
}

func mpUnpackLimit(L *lua.LState) int {
	limit := lua51CheckInteger(L, 2)
	offset := lua51OptInteger(L, 3, 0)
	return mpUnpackFull(L, limit, offset, 1)
}

// mpUnpackFull is lua-cmsgpack's mp_unpack_full: limit and offset both
// zero decode everything and return only the values; otherwise up to limit
// values from the 0-based offset come after the offset of what follows
// (-1 when the input is used up). base is how many values the C function
// has on its stack below the results.
func mpUnpackFull(L *lua.LState, limit, offset int64, base int) int {
	s := lua51CheckString(L, 1)
	decodeAll := limit == 0 && offset == 0
	switch {
	case offset < 0 || limit < 0:
		// Redis prints the input's length where the limit would be.
		lua51Error(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	case offset > int64(len(s)):
		lua51Error(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	if decodeAll {
		limit = math.MaxInt32
	}
	d := mpDecoder{L: L, s: s, p: int(offset), sparse: mpSparseBudget(len(s))}
	var out []lua.LValue
	for cnt := int64(0); d.p < len(s) && cnt < limit; cnt++ {
		v := d.value(base + len(out))
		switch d.err {
		case mpEOF:
			lua51Error(L, "Missing bytes in input.")
		case mpBadFormat:
			lua51Error(L, "Bad data format in input.")
		}
		out = append(out, v)
	}
	if !decodeAll {
		luaCheckStack(L, base+len(out), 1, "in function mp_unpack_full")
		next := lua.LNumber(-1)
		if d.p < len(s) {
			next = lua.LNumber(d.p)
		}
		L.Push(next)
	}
	for _, v := range out {
		L.Push(v)
	}
	if decodeAll {
		return len(out)
	}
	return len(out) + 1
}

// need reports whether n more bytes are there; if not the input is short.
func (d *mpDecoder) need(n int) bool {
	if len(d.s)-d.p < n {
		d.err = mpEOF
		return false
	}
	return true
}

// value decodes the value at d.p; depth is the Lua stack depth
// lua-cmsgpack would decode it at. On a short or bad input it sets d.err
// and returns nil.
func (d *mpDecoder) value(depth int) lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	luaCheckStack(d.L, depth, 1, "too many return values at once; use unpack_one or unpack_limit instead.")
	if d.values++; d.values%mpCheckEvery == 0 {
		luaCheckContext(d.L)
	}
	s, p := d.s, d.p
	c := s[p]
	fixed := func(n int) (string, bool) { // the n bytes after the type byte
		if !d.need(1 + n) {
			return "", false
		}
		d.p += 1 + n
		return s[p+1 : p+1+n], true
	}
	switch c {
	case 0xc0:
		d.p++
		return lua.LNil
	case 0xc2:
		d.p++
		return lua.LFalse
	case 0xc3:
		d.p++
		return lua.LTrue
	case 0xcc:
		if b, ok := fixed(1); ok {
			return lua.LNumber(b[0])
		}
	case 0xd0:
		if b, ok := fixed(1); ok {
			return lua.LNumber(int8(b[0]))
		}
	case 0xcd:
		if b, ok := fixed(2); ok {
			return lua.LNumber(binary.BigEndian.Uint16([]byte(b)))
		}
	case 0xd1:
		if b, ok := fixed(2); ok {
			return lua.LNumber(int16(binary.BigEndian.Uint16([]byte(b))))
		}
	case 0xce:
		if b, ok := fixed(4); ok {
			return lua.LNumber(binary.BigEndian.Uint32([]byte(b)))
		}
	case 0xd2:
		if b, ok := fixed(4); ok {
			return lua.LNumber(int32(binary.BigEndian.Uint32([]byte(b))))
		}
	case 0xcf: // lua_pushunsigned is lua_pushinteger on Lua 5.1: from 2^63, negative
		if b, ok := fixed(8); ok {
			return lua.LNumber(int64(binary.BigEndian.Uint64([]byte(b))))
		}
	case 0xd3:
		if b, ok := fixed(8); ok {
			return lua.LNumber(int64(binary.BigEndian.Uint64([]byte(b))))
		}
	case 0xca:
		if b, ok := fixed(4); ok {
			return lua.LNumber(math.Float32frombits(binary.BigEndian.Uint32([]byte(b))))
		}
	case 0xcb:
		if b, ok := fixed(8); ok {
			return lua.LNumber(math.Float64frombits(binary.BigEndian.Uint64([]byte(b))))
		}
	case 0xd9, 0xda, 0xdb:
		w := 1 << (c - 0xd9) // bytes of the length
		if b, ok := fixed(w); ok {
			return d.bytes(mpLength(b))
		}
	case 0xdc, 0xdd:
		if b, ok := fixed(2 << (c - 0xdc)); ok {
			return d.array(mpLength(b), depth)
		}
	case 0xde, 0xdf:
		if b, ok := fixed(2 << (c - 0xde)); ok {
			return d.hash(mpLength(b), depth)
		}
	default:
		switch {
		case c&0x80 == 0: // positive fixint
			d.p++
			return lua.LNumber(c)
		case c&0xe0 == 0xe0: // negative fixint
			d.p++
			return lua.LNumber(int8(c))
		case c&0xe0 == 0xa0: // fixstr
			d.p++
			return d.bytes(int(c & 0x1f))
		case c&0xf0 == 0x90: // fixarray
			d.p++
			return d.array(int(c&0x0f), depth)
		case c&0xf0 == 0x80: // fixmap
			d.p++
			return d.hash(int(c&0x0f), depth)
		default: // 0xc1, bin, ext
			d.err = mpBadFormat
		}
	}
	return lua.LNil
}

func mpLength(b string) int {
	n := 0
	for i := 0; i < len(b); i++ {
		n = n<<8 | int(b[i])
	}
	return n
}

// bytes is a string of n bytes at d.p (sharing the input's memory).
func (d *mpDecoder) bytes(n int) lua.LValue {
	if !d.need(n) {
		return lua.LNil
	}
	v := lua.LString(d.s[d.p : d.p+n])
	d.p += n
	return v
}

// array reads n elements (n as the input claims: every element takes a
// byte at least, so a claim beyond the input ends at its end).
func (d *mpDecoder) array(n, depth int) lua.LValue {
	// Room for what the input can hold, not what it claims, and little of
	// that: nested arrays each see nearly all the input left.
	t := d.L.CreateTable(min(n, len(d.s)-d.p, 256), 0)
	luaCheckStack(d.L, depth+1, 1, "in function mp_decode_to_lua_array")
	for i := 1; i <= n; i++ {
		v := d.value(depth + 2)
		if d.err != mpOK {
			return lua.LNil
		}
		t.RawSetInt(i, v)
	}
	return t
}

func (d *mpDecoder) hash(n, depth int) lua.LValue {
	t := d.L.NewTable()
	alen := 0 // the length of t's array part, as gopher-lua keeps it
	for ; n > 0; n-- {
		k := d.value(depth + 1)
		if d.err != mpOK {
			return lua.LNil
		}
		v := d.value(depth + 2)
		if d.err != mpOK {
			return lua.LNil
		}
		switch k := k.(type) {
		case *lua.LNilType:
			d.L.Error(lua.LString("table index is nil"), 0)
		case lua.LNumber:
			f := float64(k)
			if math.IsNaN(f) {
				d.L.Error(lua.LString("table index is NaN"), 0)
			}
			if f >= 1 && f < float64(lua.MaxArrayIndex) && f == math.Trunc(f) {
				i := int(f)
				if i > alen {
					if v == lua.LNil {
						continue // nothing there to clear: no need to grow the array
					}
					if d.sparse -= i - alen - 1; d.sparse < 0 {
						lua51Error(d.L, "Sparse table index %d in input beyond what this decoder allocates.", i)
					}
					alen = i
				}
			}
		}
		t.RawSet(k, v)
	}
	return t
}
