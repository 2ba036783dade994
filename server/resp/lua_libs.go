package resp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The libraries Redis gives scripts beyond Lua's base, table, string and
// math: cjson (encode, decode, null) and bit (LuaBitOp's 32-bit
// operations), written here in Go. cmsgpack and struct are not provided.

// cjsonNull is cjson.null: a unique value JSON null decodes to and encodes
// from.
var cjsonNull = &lua.LUserData{Value: "cjson.null"}

func openCJSON(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("encode", L.NewFunction(cjsonEncode))
	t.RawSetString("decode", L.NewFunction(cjsonDecode))
	t.RawSetString("null", cjsonNull)
	return t
}

func cjsonEncode(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
	}
	var b bytes.Buffer
	if err := jsonEncode(&b, L.Get(1), 0); err != nil {
		L.RaiseError("Cannot serialise %s", err.Error())
	}
	L.Push(lua.LString(b.String()))
	return 1
}

// jsonEncode follows lua-cjson's defaults: a table whose keys are all
// positive integers is an array (holes are null; "excessively sparse"
// beyond 10 elements and twice the count is an error), any other table an
// object, an empty table "{}"; numbers print with 14 significant digits.
func jsonEncode(b *bytes.Buffer, v lua.LValue, depth int) error {
	if depth > 1000 {
		return fmt.Errorf("table: excessive nesting (1001)")
	}
	switch v := v.(type) {
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(v)))
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LNumber:
		f := float64(v)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("number: must not be NaN or Inf")
		}
		b.WriteString(formatLuaNumber(f))
	case lua.LString:
		jsonString(b, string(v))
	case *lua.LUserData:
		if v == cjsonNull {
			b.WriteString("null")
			return nil
		}
		return fmt.Errorf("userdata: type not supported")
	case *lua.LTable:
		max, count, isArray := 0, 0, true
		v.ForEach(func(k, _ lua.LValue) {
			count++
			n, ok := k.(lua.LNumber)
			if !ok || float64(n) != math.Floor(float64(n)) || n < 1 {
				isArray = false
				return
			}
			if int(n) > max {
				max = int(n)
			}
		})
		if isArray && count > 0 {
			if max > 10 && max > 2*count {
				return fmt.Errorf("table: excessively sparse array")
			}
			b.WriteByte('[')
			for i := 1; i <= max; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				if err := jsonEncode(b, v.RawGetInt(i), depth+1); err != nil {
					return err
				}
			}
			b.WriteByte(']')
			return nil
		}
		b.WriteByte('{')
		first := true
		var err error
		v.ForEach(func(k, val lua.LValue) {
			if err != nil {
				return
			}
			var key string
			switch k := k.(type) {
			case lua.LString:
				key = string(k)
			case lua.LNumber:
				key = formatLuaNumber(float64(k))
			default:
				err = fmt.Errorf("table: table key must be a number or string")
				return
			}
			if !first {
				b.WriteByte(',')
			}
			first = false
			jsonString(b, key)
			b.WriteByte(':')
			err = jsonEncode(b, val, depth+1)
		})
		if err != nil {
			return err
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("%s: type not supported", v.Type().String())
	}
	return nil
}

// jsonString writes s quoted the way lua-cjson does ("/" escaped too).
func jsonString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

// formatLuaNumber prints a number as Lua 5.1 does ("%.14g").
func formatLuaNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e14 {
		return strconv.FormatInt(int64(f), 10)
	}
	// Go's 'g' with a precision drops trailing zeros and writes a two-digit
	// exponent, as C's %g does.
	return strconv.FormatFloat(f, 'g', 14, 64)
}

func cjsonDecode(L *lua.LState) int {
	s := L.CheckString(1)
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := jsonDecode(L, dec, 0)
	if err == nil {
		if _, err2 := dec.Token(); err2 == nil {
			err = fmt.Errorf("Expected the end but found invalid token")
		}
	}
	if err != nil {
		L.RaiseError("%s", err.Error())
	}
	L.Push(v)
	return 1
}

func jsonDecode(L *lua.LState, dec *json.Decoder, depth int) (lua.LValue, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("Found too many nested data structures (1001)")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("Expected value but found invalid token")
	}
	switch tok := tok.(type) {
	case json.Delim:
		switch tok {
		case '[':
			t := L.NewTable()
			for i := 1; dec.More(); i++ {
				v, err := jsonDecode(L, dec, depth+1)
				if err != nil {
					return nil, err
				}
				t.RawSetInt(i, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("Expected comma or array end but found invalid token")
			}
			return t, nil
		case '{':
			t := L.NewTable()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, fmt.Errorf("Expected object key string but found invalid token")
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("Expected object key string but found invalid token")
				}
				v, err := jsonDecode(L, dec, depth+1)
				if err != nil {
					return nil, err
				}
				t.RawSetString(k, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("Expected comma or object end but found invalid token")
			}
			return t, nil
		}
		return nil, fmt.Errorf("Expected value but found invalid token")
	case string:
		return lua.LString(tok), nil
	case json.Number:
		f, err := strconv.ParseFloat(string(tok), 64)
		if err != nil {
			return nil, fmt.Errorf("Expected value but found invalid number")
		}
		return lua.LNumber(f), nil
	case bool:
		return lua.LBool(tok), nil
	case nil:
		return cjsonNull, nil
	}
	return nil, fmt.Errorf("Expected value but found invalid token")
}

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
