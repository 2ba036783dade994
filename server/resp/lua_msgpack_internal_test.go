package resp

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The fuzz targets for cmsgpack and struct live here, in package resp, to
// call the library functions on a script state directly (the differential
// and end-to-end tests are in lua_msgpack_test.go, package resp_test: they
// need a node, which this package's tests cannot import).

// libCall calls fn(args...) protected and returns its results, or the
// error; a Go panic inside fn (gopher-lua recovers it into an error) fails
// the test.
func libCall(t *testing.T, L *lua.LState, fn lua.LValue, args ...lua.LValue) ([]lua.LValue, string) {
	t.Helper()
	base := L.GetTop()
	defer L.SetTop(base)
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	if err := L.PCall(len(args), lua.MultRet, nil); err != nil {
		ae, ok := err.(*lua.ApiError)
		if !ok || ae.Type == lua.ApiErrorPanic {
			t.Fatalf("Go panic in a library function: %v", err)
		}
		return nil, ae.Object.String()
	}
	out := make([]lua.LValue, 0, L.GetTop()-base)
	for i := base + 1; i <= L.GetTop(); i++ {
		out = append(out, L.Get(i))
	}
	return out, ""
}

// libFunc is the function name of library lib in a script state.
func libFunc(st *luaState, lib, name string) lua.LValue {
	return st.L.GetField(st.globals.RawGetString(lib), name)
}

// FuzzCMsgpackUnpack unpacks arbitrary bytes: no input panics or fails but
// with one of lua-cmsgpack's errors, and what unpacks packs and unpacks
// again to the same values, packed the same from the second round on.
func FuzzCMsgpackUnpack(f *testing.F) {
	for _, s := range []string{
		"", "\x00", "\xc0\xc2\xc3", "\x93\x01\x02\x03", "\x82\xa1a\x01\xa1b\x92\xc3\xc2", "\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a",
		"\xd3\xff\xff\xff\x00\x00\x00\x00\x00", "\xcf\xff\xff\xff\xff\xff\xff\xff\xff", "\xca\x7f\xc0\x00\x00", "\xd9\x03abc",
		"\xda\x00\x01x", "\xdb\x00\x00\x00\x01y", "\xdc\x00\x02\x01\x02", "\xdd\x00\x00\x00\x01\x90", "\xde\x00\x01\x01\x01",
		"\xdf\x00\x00\x00\x01\xa1k\x80", "\xdf\xff\xff\xff\xff\x01\x02\x03\x04\x05", "\xdd\xff\xff\xff\xff\x01", "\xdb\xff\xff\xff\xff",
		"\x81\xc0\x01", "\x81\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00\x01", "\x81\xce\x03\xff\xff\xff\x01", "\x81\xcd\xff\xff\x01",
		"\xc1", "\xc4\x01x", "\xd4\x01\x01", "\x91\x91\x91\x91\x01", "\x92\x01", "\x83\x03\x01\x01\x01\x02\x02",
		strings.Repeat("\x91", 5000) + "\x01", strings.Repeat("\x01", 8001), strings.Repeat("\x91", 17) + "0", strings.Repeat("\x91", 15) + "\x81\x9100",
	} {
		f.Add([]byte(s))
	}
	st := newLuaState(newScripting(DefaultScriptTimeLimit))
	defer st.close()
	L := st.L
	pack, unpack := libFunc(st, "cmsgpack", "pack"), libFunc(st, "cmsgpack", "unpack")
	known := []string{"Missing bytes in input.", "Bad data format in input.", "table index is nil", "table index is NaN",
		"stack overflow (", "Sparse table index "}
	isKnown := func(msg string) bool {
		for _, k := range known {
			if strings.HasPrefix(msg, k) {
				return true
			}
		}
		return false
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		vals, msg := libCall(t, L, unpack, lua.LString(b))
		if msg != "" {
			if !isKnown(msg) {
				t.Fatalf("unpack %q: unexpected error %q", b, msg)
			}
			return
		}
		if len(vals) == 0 || 2*len(vals) > luaMaxCStack {
			return
		}
		// Packing is stable from its second round: the first may cut
		// nesting at 16 levels (a nil there leaves an empty table).
		packed := make([]lua.LValue, 3)
		for round := range packed {
			p, msg := libCall(t, L, pack, vals...)
			if msg != "" {
				t.Fatalf("%q, round %d: pack: %s", b, round, msg)
			}
			packed[round] = p[0]
			n := len(vals)
			if vals, msg = libCall(t, L, unpack, p[0]); msg != "" {
				// A table key cut at 16 levels is nil; the packed input may
				// be shorter than b (less room for sparse keys).
				if msg == "table index is nil" || strings.HasPrefix(msg, "Sparse table index ") {
					return
				}
				t.Fatalf("%q, round %d: %q does not unpack: %s", b, round, p[0], msg)
			}
			if len(vals) != n {
				t.Fatalf("%q, round %d: %d values, then %d", b, round, n, len(vals))
			}
		}
		if packed[1] != packed[2] {
			t.Fatalf("%q: unstable: %q then %q", b, packed[1], packed[2])
		}
	})
}

// FuzzStructUnpack unpacks arbitrary data with an arbitrary format (and
// packs with it): no panic, only lua_struct's errors.
func FuzzStructUnpack(f *testing.F) {
	for _, s := range [][2]string{
		{">i2", "\x01\x02"}, {"<bBhHlLTiIfd", strings.Repeat("\x01", 64)}, {"!8bd", strings.Repeat("\x00", 16)}, {"bc0", "\x03abc"},
		{"s", "ab\x00"}, {"c999999999999", "x"}, {"i33", "x"}, {"!3", ""}, {"i16>i9<I12", strings.Repeat("\xff", 40)}, {"c1c0", "9abc"},
		{"bc0", "\xffabc"}, {"x!4 xi", "\x00\x00\x00\x00\x01\x00\x00\x00"}, {"z", ""}, {"=", ""},
	} {
		f.Add(s[0], []byte(s[1]))
	}
	st := newLuaState(newScripting(DefaultScriptTimeLimit))
	defer st.close()
	L := st.L
	pack, unpack, size := libFunc(st, "struct", "pack"), libFunc(st, "struct", "unpack"), libFunc(st, "struct", "size")
	known := []string{"bad argument #", "integral size", "alignment ", "format 'c0' needs a previous size", "unfinished string in data",
		"stack overflow (too many results)", "resulting string too large"}
	check := func(t *testing.T, what, msg string) {
		for _, k := range known {
			if strings.HasPrefix(msg, k) {
				return
			}
		}
		t.Fatalf("%s: unexpected error %q", what, msg)
	}
	f.Fuzz(func(t *testing.T, format string, data []byte) {
		if len(format) > 4096 {
			return
		}
		out, msg := libCall(t, L, unpack, lua.LString(format), lua.LString(data))
		if msg != "" {
			check(t, "unpack "+format, msg)
		} else if next, ok := out[len(out)-1].(lua.LNumber); !ok || next < 1 || int(next) > len(data)+1 {
			t.Fatalf("unpack %q %q: next position %v", format, data, out[len(out)-1])
		}
		args := []lua.LValue{lua.LString(format)}
		for _, c := range data {
			if len(args) > 64 {
				break
			}
			if c&1 == 0 {
				args = append(args, lua.LNumber(int8(c)))
			} else {
				args = append(args, lua.LString(data))
			}
		}
		if _, msg := libCall(t, L, pack, args...); msg != "" {
			check(t, "pack "+format, msg)
		}
		if _, msg := libCall(t, L, size, lua.LString(format)); msg != "" {
			check(t, "size "+format, msg)
		}
	})
}
