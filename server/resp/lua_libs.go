package resp

import (
	"math"
	"sort"

	lua "github.com/yuin/gopher-lua"
)

// The libraries Redis gives scripts beyond Lua's base, table, string and
// math, written here in Go: bit (LuaBitOp's 32-bit operations, this
// file), cjson (lua_cjson.go), cmsgpack (lua_msgpack.go) and struct
// (lua_struct.go).

// openBit is LuaBitOp: 32-bit two's-complement operations on numbers.
func openBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	arg := func(L *lua.LState, i int) int32 {
		return int32(uint32(int64(math.Mod(float64(L.CheckNumber(i)), 4294967296))))
	}
	fold := func(op func(a, b int32) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			acc := arg(L, 1)
			for i := 2; i <= L.GetTop(); i++ {
				acc = op(acc, arg(L, i))
			}
			L.Push(lua.LNumber(acc))
			return 1
		}
	}
	shift := func(op func(a int32, n uint) int32) lua.LGFunction {
		return func(L *lua.LState) int {
			L.Push(lua.LNumber(op(arg(L, 1), uint(arg(L, 2))&31)))
			return 1
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { L.Push(lua.LNumber(arg(L, 1))); return 1 },
		"bnot":    func(L *lua.LState) int { L.Push(lua.LNumber(^arg(L, 1))); return 1 },
		"band":    fold(func(a, b int32) int32 { return a & b }),
		"bor":     fold(func(a, b int32) int32 { return a | b }),
		"bxor":    fold(func(a, b int32) int32 { return a ^ b }),
		"lshift":  shift(func(a int32, n uint) int32 { return int32(uint32(a) << n) }),
		"rshift":  shift(func(a int32, n uint) int32 { return int32(uint32(a) >> n) }),
		"arshift": shift(func(a int32, n uint) int32 { return a >> n }),
		"rol": shift(func(a int32, n uint) int32 {
			return int32(uint32(a)<<n | uint32(a)>>((32-n)&31))
		}),
		"ror": shift(func(a int32, n uint) int32 {
			return int32(uint32(a)>>n | uint32(a)<<((32-n)&31))
		}),
		"bswap": func(L *lua.LState) int {
			u := uint32(arg(L, 1))
			L.Push(lua.LNumber(int32(u>>24 | u>>8&0xff00 | u<<8&0xff0000 | u<<24)))
			return 1
		},
		"tohex": func(L *lua.LState) int {
			v := uint32(arg(L, 1))
			n := 8
			if L.GetTop() >= 2 {
				n = int(arg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			n = min(n, 8)
			out := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				out[i] = digits[v&15]
				v >>= 4
			}
			L.Push(lua.LString(out))
			return 1
		},
	}
	names := make([]string, 0, len(fns))
	for k := range fns {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		t.RawSetString(k, L.NewFunction(fns[k]))
	}
	return t
}
