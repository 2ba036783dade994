package resp

import (
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// FuzzLuaReplyConversion feeds arbitrary bytes to the RESP → Lua
// conversion (what redis.call hands a script) and writes any value it
// accepts back as a script reply, in both protocols: no input panics, and
// the second conversion of a value is the first's (the mapping is stable
// once a value has been through it).
func FuzzLuaReplyConversion(f *testing.F) {
	for _, s := range []string{
		"+OK\r\n", "-ERR x\r\n", ":42\r\n", ":-9223372036854775808\r\n", "$3\r\nabc\r\n", "$-1\r\n", "*-1\r\n",
		"*3\r\n:1\r\n$1\r\nx\r\n*1\r\n+OK\r\n", "%1\r\n$1\r\nk\r\n:1\r\n", "~2\r\n$1\r\na\r\n$1\r\nb\r\n",
		",1.5\r\n", ",inf\r\n", "#t\r\n", "#f\r\n", "_\r\n", "(123\r\n", "=7\r\ntxt:abc\r\n", "*2\r\n$-1\r\n_\r\n",
		"*99999999999\r\n", "$99999999999\r\n", "*1\r\n*1\r\n*1\r\n:1\r\n",
	} {
		f.Add([]byte(s))
	}
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		v, n, err := respToLua(L, b)
		if err != nil {
			return
		}
		if n <= 0 || n > len(b) {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		for _, proto := range []int{2, 3} {
			for _, scriptResp := range []int{2, 3} {
				w1 := Writer{Proto: proto}
				writeLuaReply(&w1, v, scriptResp, 0)
				v2, n2, err := respToLua(L, w1.B)
				if err != nil || n2 != len(w1.B) {
					t.Fatalf("the reply written for %q does not parse back: %q (%v)", b, w1.B, err)
				}
				w2 := Writer{Proto: proto}
				writeLuaReply(&w2, v2, scriptResp, 0)
				w3 := Writer{Proto: proto}
				v3, _, _ := respToLua(L, w2.B)
				writeLuaReply(&w3, v3, scriptResp, 0)
				if string(w2.B) != string(w3.B) {
					t.Fatalf("unstable conversion of %q: %q then %q", b, w2.B, w3.B)
				}
			}
		}
	})
}

// BenchmarkPooledLuaCall is the Lua side of one EVALSHA without the
// network or a command: take a pooled state, set KEYS and ARGV, run the
// cached script, convert its reply, give the state back.
func BenchmarkPooledLuaCall(b *testing.B) {
	s := newScripting(DefaultScriptTimeLimit)
	es, _, msg := s.loadScript("return {KEYS[1], ARGV[1], #ARGV}")
	if msg != "" {
		b.Fatal(msg)
	}
	keys, argv := [][]byte{[]byte("k")}, [][]byte{[]byte("v"), []byte("w")}
	w := Writer{Proto: 2}
	b.ReportAllocs()
	for b.Loop() {
		run := &scriptRun{name: "x", resp: 2}
		st := s.get(run)
		st.globals.RawSetString("KEYS", luaStrings(st.L, keys))
		st.globals.RawSetString("ARGV", luaStrings(st.L, argv))
		fn := st.L.NewFunctionFromProto(es.proto)
		fn.Env = st.env
		v, m := st.call(fn)
		if m != "" {
			b.Fatal(m)
		}
		w.B = w.B[:0]
		writeLuaReply(&w, v, 2, 0)
		s.put(st)
	}
}
