package resp

import (
	"bytes"
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The conversions between Lua values and RESP replies, as Redis 7.0's
// script_lua.c makes them (https://redis.io/docs/interact/programmability/lua-api/).
//
// RESP → Lua (what redis.call returns to the script), RESP2:
// integer → number, bulk → string, null bulk / null array → false,
// array → table (1-based), status → {ok=s}, error → {err=s}.
// RESP3 (after redis.setresp(3)) adds: null → nil, map → {map={k=v…}},
// set → {set={member=true…}}, double → {double=n}, boolean → boolean,
// big number → {big_number=s}, verbatim → {verbatim_string={format=, string=}}.
//
// Lua → RESP (the script's result): string → bulk, number → integer
// (truncated toward zero), true → :1 (RESP3 #t), false and nil → null bulk
// (RESP3 #f / _), table with a string "err" field → error, with a string
// "ok" field → status, "double" → double, "map"/"set" → map/set, any other
// table → array of its elements 1, 2, … up to the first nil.

// maxReplyDepth bounds the nesting of a reply converted either way (a
// self-referencing table would otherwise recurse forever); Redis stops at
// its Lua C stack limit with this same error.
const maxReplyDepth = 1000

var errReplyDepth = errors.New("reached lua stack limit")

// wrapped is {field=t}: how Redis hands a script a RESP3 map or set.
func wrapped(L *lua.LState, field string, t *lua.LTable) *lua.LTable {
	w := L.CreateTable(0, 1)
	w.RawSetString(field, t)
	return w
}

// respToLua parses one RESP reply at the start of b and returns it as a Lua
// value and the bytes consumed. The replies come from the command handlers
// (always well formed); a malformed one is an error, never a panic.
func respToLua(L *lua.LState, b []byte) (lua.LValue, int, error) {
	return respValue(L, b, 0)
}

var errBadReply = errors.New("malformed reply")

var crlf = []byte("\r\n")

func respLine(b []byte) (string, int, error) {
	// bytes.Index: strings.Index(string(b), …) copied the rest of the reply
	// for every element read, a conversion quadratic in the reply's size.
	i := bytes.Index(b, crlf)
	if i < 1 {
		return "", 0, errBadReply
	}
	return string(b[1:i]), i + 2, nil
}

func respValue(L *lua.LState, b []byte, depth int) (lua.LValue, int, error) {
	if depth > maxReplyDepth {
		return nil, 0, errReplyDepth
	}
	if len(b) == 0 {
		return nil, 0, errBadReply
	}
	line, n, err := respLine(b)
	if err != nil {
		return nil, 0, err
	}
	switch b[0] {
	case '+':
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(line))
		return t, n, nil
	case '-':
		t := L.CreateTable(0, 1)
		t.RawSetString("err", lua.LString(line))
		return t, n, nil
	case ':':
		v, err := strconv.ParseInt(line, 10, 64)
		if err != nil {
			return nil, 0, errBadReply
		}
		return lua.LNumber(v), n, nil
	case '$', '=':
		size, err := strconv.Atoi(line)
		if err != nil || size < -1 {
			return nil, 0, errBadReply
		}
		if size == -1 {
			return lua.LFalse, n, nil
		}
		if len(b) < n+size+2 || b[n+size] != '\r' || b[n+size+1] != '\n' {
			return nil, 0, errBadReply
		}
		body := string(b[n : n+size])
		if b[0] == '=' {
			if len(body) < 4 || body[3] != ':' {
				return nil, 0, errBadReply
			}
			inner := L.CreateTable(0, 2)
			inner.RawSetString("format", lua.LString(body[:3]))
			inner.RawSetString("string", lua.LString(body[4:]))
			t := L.CreateTable(0, 1)
			t.RawSetString("verbatim_string", inner)
			return t, n + size + 2, nil
		}
		return lua.LString(body), n + size + 2, nil
	case '*', '~', '%', '>':
		count, err := strconv.Atoi(line)
		if err != nil || count < -1 {
			return nil, 0, errBadReply
		}
		if count == -1 {
			return lua.LFalse, n, nil
		}
		// Every element takes at least 3 bytes: a count beyond what b can
		// hold is malformed (and must not size an allocation).
		if count > (len(b)-n)/3 {
			return nil, 0, errBadReply
		}
		switch b[0] {
		case '%':
			t := L.CreateTable(0, count)
			for range count {
				k, kn, err := respValue(L, b[n:], depth+1)
				if err != nil {
					return nil, 0, err
				}
				n += kn
				v, vn, err := respValue(L, b[n:], depth+1)
				if err != nil {
					return nil, 0, err
				}
				n += vn
				if k != lua.LNil {
					t.RawSet(k, v)
				}
			}
			return wrapped(L, "map", t), n, nil
		case '~':
			t := L.CreateTable(0, count)
			for range count {
				m, mn, err := respValue(L, b[n:], depth+1)
				if err != nil {
					return nil, 0, err
				}
				n += mn
				if m != lua.LNil {
					t.RawSet(m, lua.LTrue)
				}
			}
			return wrapped(L, "set", t), n, nil
		}
		t := L.CreateTable(count, 0)
		for i := range count {
			v, vn, err := respValue(L, b[n:], depth+1)
			if err != nil {
				return nil, 0, err
			}
			n += vn
			t.RawSetInt(i+1, v)
		}
		return t, n, nil
	case '_':
		return lua.LNil, n, nil
	case '#':
		switch line {
		case "t":
			return lua.LTrue, n, nil
		case "f":
			return lua.LFalse, n, nil
		}
		return nil, 0, errBadReply
	case ',':
		f, err := parseRESPDouble(line)
		if err != nil {
			return nil, 0, errBadReply
		}
		t := L.CreateTable(0, 1)
		t.RawSetString("double", lua.LNumber(f))
		return t, n, nil
	case '(':
		t := L.CreateTable(0, 1)
		t.RawSetString("big_number", lua.LString(line))
		return t, n, nil
	}
	return nil, 0, errBadReply
}

func parseRESPDouble(s string) (float64, error) {
	switch s {
	case "inf":
		return math.Inf(1), nil
	case "-inf":
		return math.Inf(-1), nil
	case "nan":
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// writeLuaReply writes v as the script's reply; a table nested beyond
// maxReplyDepth is replaced by an error.
// scriptResp is the RESP version the script chose (redis.setresp): with 2
// a boolean is :1 or a null, with 3 a boolean.
func writeLuaReply(w *Writer, v lua.LValue, scriptResp, depth int) {
	if depth > maxReplyDepth {
		w.Error("ERR " + errReplyDepth.Error())
		return
	}
	switch v := v.(type) {
	case lua.LString:
		w.BulkString(string(v))
	case lua.LNumber:
		w.Int(luaNumberToInt(float64(v)))
	case lua.LBool:
		switch {
		case scriptResp == 3:
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		if e, ok := v.RawGetString("err").(lua.LString); ok {
			w.B = appendScriptError(w.B, string(e))
			if depth == 0 && w.OnError != nil && v.RawGetString(errStatsCounted) != lua.LTrue {
				w.OnError(string(e))
			}
			return
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			w.Simple(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s)))
			return
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			w.Double(float64(d))
			return
		}
		if s, ok := v.RawGetString("big_number").(lua.LString); ok {
			if w.resp3() {
				w.B = append(append(append(w.B, '('), s...), '\r', '\n')
			} else {
				w.BulkString(string(s))
			}
			return
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			var keys, vals []lua.LValue
			forEachInOrder(m, func(k, val lua.LValue) { keys, vals = append(keys, k), append(vals, val) })
			w.Map(len(keys))
			for i := range keys {
				writeLuaReply(w, keys[i], scriptResp, depth+1)
				writeLuaReply(w, vals[i], scriptResp, depth+1)
			}
			return
		}
		if s, ok := v.RawGetString("set").(*lua.LTable); ok {
			var keys []lua.LValue
			forEachInOrder(s, func(k, _ lua.LValue) { keys = append(keys, k) })
			w.Set(len(keys))
			for _, k := range keys {
				writeLuaReply(w, k, scriptResp, depth+1)
			}
			return
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			writeLuaReply(w, v.RawGetInt(i), scriptResp, depth+1)
		}
	default: // nil, functions, userdata, threads
		w.Null()
	}
}

// forEachInOrder visits t's entries as next() does — the array part,
// then the other keys in the order they were added — where ForEach's
// order changes from one call to the next.
func forEachInOrder(t *lua.LTable, fn func(k, v lua.LValue)) {
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		fn(k, v)
	}
}

// luaNumberToInt is C's (long long) cast of a Lua number: truncation
// toward zero, saturated at the int64 limits (C leaves them undefined; x86
// gives the minimum, which is what Redis answers for ±inf and NaN).
func luaNumberToInt(f float64) int64 {
	switch {
	case f != f, f >= 9223372036854775807, f < -9223372036854775808:
		return math.MinInt64
	}
	return int64(f)
}

// appendScriptError writes the error of an {err=…} table: Redis writes
// "-" + the text with newlines made spaces, verbatim (the text carries its
// own code, or none).
func appendScriptError(b []byte, msg string) []byte {
	b = append(b, '-')
	for i := 0; i < len(msg); i++ {
		c := msg[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		b = append(b, c)
	}
	return append(b, '\r', '\n')
}
