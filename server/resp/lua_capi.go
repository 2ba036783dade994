package resp

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// Lua 5.1's C API as the libraries Redis gives scripts (cjson, cmsgpack,
// struct, Redis's math.random) meet it, for those libraries written in Go:
// luaL_error's place prefix, luaL_argerror's texts, lua_tonumber's and
// luaL_checkinteger's conversions, strtod, "%.14g".

// luaMaxCStack is Lua 5.1's LUAI_MAXCSTACK: how many values a C function
// may hold on its stack; lua-cmsgpack and lua_struct check it.
const luaMaxCStack = 8000

// luaCheckStack is luaL_checkstack: a C function holding depth values that
// wants n more fails beyond LUAI_MAXCSTACK.
func luaCheckStack(L *lua.LState, depth, n int, msg string) {
	if depth+n > luaMaxCStack {
		lua51Error(L, "stack overflow (%s)", msg)
	}
}

// luaCheckContext raises the error gopher-lua's VM raises when the
// script's context ends (SCRIPT KILL, the node stopping), for the Go loops
// that run long without the VM looking.
func luaCheckContext(L *lua.LState) {
	if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
		L.RaiseError("%s", ctx.Err().Error())
	}
}

// lua51Where is luaL_where(L, 1): "source:line: " when the function that
// called the running Go function is a Lua function, else "" (called from
// pcall, say).
func lua51Where(L *lua.LState) string {
	dbg, ok := L.GetStack(1)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.What == "G" || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
}

// lua51Error is luaL_error from a C library function.
func lua51Error(L *lua.LState, format string, args ...any) {
	L.Error(lua.LString(lua51Where(L)+fmt.Sprintf(format, args...)), 0)
}

// lua51ArgError is luaL_argerror: "bad argument #n to 'name' (msg)", the
// name as the caller called the function ("?" when not known).
func lua51ArgError(L *lua.LState, n int, msg string) {
	name := "?"
	if dbg, ok := L.GetStack(0); ok {
		if _, err := L.GetInfo("n", dbg, lua.LNil); err == nil && dbg.Name != "" &&
			dbg.Name[0] != '(' && dbg.Name[0] != '<' && dbg.Name != "main chunk" {
			name = dbg.Name
		}
	}
	lua51Error(L, "bad argument #%d to '%s' (%s)", n, name, msg)
}

// lua51TypeName is luaL_typename: "no value" past the top.
func lua51TypeName(L *lua.LState, n int) string {
	if n > L.GetTop() {
		return "no value"
	}
	return L.Get(n).Type().String()
}

func lua51TypeError(L *lua.LState, n int, want string) {
	lua51ArgError(L, n, want+" expected, got "+lua51TypeName(L, n))
}

// lua51CheckString is luaL_checklstring: a string, or a number in Lua's
// "%.14g".
func lua51CheckString(L *lua.LState, n int) string {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return lua51NumberString(float64(v))
	}
	lua51TypeError(L, n, "string")
	return ""
}

// lua51NumberString is lua_tostring of a number (LUAI_NUMFFORMAT "%.14g").
func lua51NumberString(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		if math.Signbit(f) {
			return "-nan"
		}
		return "nan"
	case f == math.Trunc(f) && math.Abs(f) < 1e14:
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 14, 64)
}

// lua51ToNumber is lua_tonumber's test: a number, or a string Lua reads as
// one (luaO_str2d: strtod's syntax, surrounding spaces).
func lua51ToNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		return lua51Str2Number(string(v))
	}
	return 0, false
}

func lua51CheckNumber(L *lua.LState, n int) float64 {
	if f, ok := lua51ToNumber(L.Get(n)); ok {
		return f
	}
	lua51TypeError(L, n, "number")
	return 0
}

// lua51CheckInteger is luaL_checkinteger: the number truncated to a
// lua_Integer as C converts it.
func lua51CheckInteger(L *lua.LState, n int) int64 {
	return cInt64(lua51CheckNumber(L, n))
}

// lua51OptInteger is luaL_optinteger.
func lua51OptInteger(L *lua.LState, n int, def int64) int64 {
	if L.Get(n) == lua.LNil {
		return def
	}
	return lua51CheckInteger(L, n)
}

// cInt64 converts as x86-64's cvttsd2si does: toward zero, and
// -2^63 for NaN or a value out of range.
func cInt64(f float64) int64 {
	if f >= -(1<<63) && f < 1<<63 {
		return int64(f)
	}
	return math.MinInt64
}

// cUint64 converts a double to an unsigned 64-bit integer as gcc does on
// x86-64 (two cvttsd2si, the second for values from 2^63).
func cUint64(f float64) uint64 {
	if f >= 1<<63 {
		return uint64(cInt64(f-(1<<63))) ^ 1<<63
	}
	return uint64(cInt64(f))
}

func isCSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
}

// lua51Str2Number is luaO_str2d over a C string (it ends at a NUL):
// strtod's syntax (decimal, hexadecimal, inf, nan) with spaces around.
func lua51Str2Number(s string) (float64, bool) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimLeftFunc(s, func(r rune) bool { return r < 0x80 && isCSpace(byte(r)) })
	n, f := cStrtod(s)
	if n == 0 {
		return 0, false
	}
	for _, c := range []byte(s[n:]) {
		if !isCSpace(c) {
			return 0, false
		}
	}
	return f, true
}

// cStrtod reads the longest number at the start of s as glibc's strtod
// does: the bytes it took (0: none) and the value.
func cStrtod(s string) (int, float64) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	lower := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case strings.HasPrefix(lower, "infinity"):
		return i + 8, sign(math.Inf(1))
	case strings.HasPrefix(lower, "inf"):
		return i + 3, sign(math.Inf(1))
	case strings.HasPrefix(lower, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			j := n + 1
			for j < len(s) && (isCAlnum(s[j]) || s[j] == '_') {
				j++
			}
			if j < len(s) && s[j] == ')' {
				n = j + 1
			}
		}
		return n, sign(math.NaN())
	}
	hex := strings.HasPrefix(lower, "0x")
	start := i
	if hex {
		start = i + 2
	}
	isDig := func(c byte) bool {
		if hex {
			return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'f'
		}
		return '0' <= c && c <= '9'
	}
	j, digits := start, 0
	for j < len(s) && isDig(s[j]) {
		j++
		digits++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDig(s[j]) {
			j++
			digits++
		}
	}
	if digits == 0 {
		if hex {
			return i + 1, sign(0) // "0x" with no digit: strtod reads the 0
		}
		return 0, 0
	}
	mant := s[start:j]
	exp := byte('e')
	if hex {
		exp = 'p'
	}
	expPart := ""
	if j < len(s) && s[j]|0x20 == exp {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && '0' <= s[k] && s[k] <= '9' {
			for k < len(s) && '0' <= s[k] && s[k] <= '9' {
				k++
			}
			expPart = s[j+1 : k]
			j = k
		}
	}
	var text string
	if hex {
		if expPart == "" {
			expPart = "0"
		}
		text = "0x" + mant + "p" + expPart
	} else {
		text = mant
		if expPart != "" {
			text += "e" + expPart
		}
	}
	f, err := strconv.ParseFloat(text, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return 0, 0
		}
	}
	return j, sign(f)
}

func isCAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}
