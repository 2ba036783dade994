package resp

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// luaState is one pooled Lua interpreter with Redis's script environment:
// the base, table, string and math libraries, redis.*, cjson and bit;
// no os, io, loadfile, dofile, print, getfenv/setfenv or require. Globals
// are read-only (Redis 7's "Attempt to modify a readonly table"), and
// reading a global that does not exist is an error (Redis's global
// protection), so nothing a script does outlives it in the state; KEYS and
// ARGV are set for each EVAL. States are reused (scripting.get/put): a new
// one costs tens of microseconds, a call on a pooled one a few.
type luaState struct {
	s       *scripting
	L       *lua.LState
	globals *lua.LTable   // the real global table (behind env)
	env     *lua.LTable   // what scripts see as their globals: read-only
	proxies []*lua.LTable // env and the read-only library tables: must stay empty
	errfn   *lua.LFunction
	cancel  context.CancelFunc
	gen     uint64                    // the scripting generation whose libraries are loaded
	fns     map[string]*lua.LFunction // FUNCTION library functions loaded in this state
	run     *scriptRun                // the script running now; nil between runs
	loading map[string]*libFunction   // while FUNCTION LOAD runs a library: what it registers
	broken  bool                      // killed or failed: close instead of pooling
	argv    [][]byte                  // redis.call's argument buffer
}

// maxLuaString bounds string.rep (proto-max-bulk-len): Lua's C allocator
// would fail; a Go one would take the node down.
const maxLuaString = 512 << 20

func newLuaState(s *scripting) *luaState {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   1000,
		RegistrySize:    1024,
		RegistryMaxSize: 4 << 20, // values: a script's stack, not its tables
	})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	st := &luaState{s: s, L: L, globals: L.G.Global, fns: map[string]*lua.LFunction{}}
	g := st.globals
	for _, name := range []string{"dofile", "loadfile", "print", "_printregs", "module", "require", "getfenv", "setfenv", "newproxy", "package", "channel", "coroutine"} {
		g.RawSetString(name, lua.LNil)
	}
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		rep := str.RawGetString("rep")
		str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
			s, n := L.CheckString(1), L.CheckInt64(2)
			if n > 0 && int64(len(s))*n > maxLuaString {
				L.RaiseError("resulting string too large")
			}
			L.Push(rep)
			L.Push(lua.LString(s))
			L.Push(lua.LNumber(n))
			L.Call(2, 1)
			return 1
		}))
	}
	// Redis's pcall hands a caught {err=…} table over as its text.
	pcall := g.RawGetString("pcall")
	g.RawSetString("pcall", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		L.Insert(pcall, 1)
		L.Call(n, lua.MultRet)
		if L.Get(1) == lua.LFalse {
			if t, ok := L.Get(2).(*lua.LTable); ok {
				if e, ok := t.RawGetString("err").(lua.LString); ok {
					L.Replace(2, e)
				}
			}
		}
		return L.GetTop()
	}))
	g.RawSetString("redis", st.openRedis())
	g.RawSetString("cjson", openCJSON(L))
	g.RawSetString("bit", openBit(L))
	for _, lib := range []string{"string", "table", "math", "redis", "cjson", "bit"} {
		if t, ok := g.RawGetString(lib).(*lua.LTable); ok {
			g.RawSetString(lib, st.readOnly(t, nil))
		}
	}
	st.env = st.readOnly(g, L.NewFunction(func(L *lua.LState) int {
		k := L.Get(2)
		if v := g.RawGet(k); v != lua.LNil {
			L.Push(v)
			return 1
		}
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", k.String())
		return 0
	}))
	g.RawSetString("_G", st.env)
	L.Env = st.env // loadstring's chunks see the protected globals too
	st.errfn = L.NewFunction(st.errHandler)
	ctx, cancel := context.WithCancel(context.Background())
	L.SetContext(ctx)
	st.cancel = cancel
	return st
}

// readOnly returns an empty table whose reads go to t (or to index) and
// whose writes fail as Redis's read-only tables do.
func (st *luaState) readOnly(t *lua.LTable, index *lua.LFunction) *lua.LTable {
	L := st.L
	p := L.NewTable()
	mt := L.NewTable()
	if index != nil {
		mt.RawSetString("__index", index)
	} else {
		mt.RawSetString("__index", t)
	}
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(p, mt)
	st.proxies = append(st.proxies, p)
	return p
}

// clean undoes what a script left in the state (rawset into a protected
// table, KEYS/ARGV) so the next script starts from the same environment.
func (st *luaState) clean() {
	st.globals.RawSetString("KEYS", lua.LNil)
	st.globals.RawSetString("ARGV", lua.LNil)
	for _, p := range st.proxies {
		if k, _ := p.Next(lua.LNil); k != lua.LNil {
			st.broken = true // cheaper to start a new state than to find what changed
			return
		}
	}
	st.L.SetTop(0)
}

func (st *luaState) close() {
	st.cancel()
	st.L.Close()
}

// errHandler is the message handler of every script call (Redis's
// __redis__err__handler): it turns the error into an {err=…} table and
// records the script's line it was raised at.
func (st *luaState) errHandler(L *lua.LState) int {
	e := L.Get(1)
	t, ok := e.(*lua.LTable)
	if !ok {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR "+e.String()))
	}
	if st.run != nil && st.run.killed.Load() {
		t = L.NewTable()
		t.RawSetString("err", lua.LString("ERR Script killed by user with SCRIPT KILL..."))
	}
	for level := 1; level <= 3; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.What == "G" {
			continue
		}
		t.RawSetString("source", lua.LString("@"+dbg.Source))
		t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
		break
	}
	L.Push(t)
	return 1
}

// openRedis builds the redis table.
func (st *luaState) openRedis() *lua.LTable {
	L := st.L
	t := L.NewTable()
	set := func(name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }
	set("call", func(L *lua.LState) int { return st.redisCall(L, true) })
	set("pcall", func(L *lua.LState) int { return st.redisCall(L, false) })
	set("error_reply", func(L *lua.LState) int {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			raise(L, "wrong number or type of arguments")
		}
		L.Push(errorTable(L, errorReplyText(string(s))))
		return 1
	})
	set("status_reply", func(L *lua.LState) int {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			raise(L, "wrong number or type of arguments")
		}
		r := L.NewTable()
		r.RawSetString("ok", s)
		L.Push(r)
		return 1
	})
	set("sha1hex", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raise(L, "wrong number of arguments")
		}
		sum := sha1.Sum([]byte(L.ToString(1)))
		L.Push(lua.LString(hex.EncodeToString(sum[:])))
		return 1
	})
	set("log", func(L *lua.LState) int {
		if L.GetTop() < 2 {
			raise(L, "redis.log() requires two arguments or more.")
		}
		if _, ok := L.Get(1).(lua.LNumber); !ok {
			raise(L, "First argument must be a number (log level).")
		}
		return 0 // scripts' log lines are not kept
	})
	set("setresp", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raise(L, "redis.setresp() requires one argument.")
		}
		v := L.CheckInt(1)
		if v != 2 && v != 3 {
			raise(L, "RESP version must be 2 or 3.")
		}
		if st.run != nil {
			st.run.resp = v
		}
		return 0
	})
	set("set_repl", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raise(L, "redis.set_repl() requires one argument.")
		}
		return 0 // effects are always replicated
	})
	set("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	set("breakpoint", func(L *lua.LState) int { L.Push(lua.LFalse); return 1 })
	set("debug", func(L *lua.LState) int { return 0 })
	set("register_function", st.registerFunction)
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
		"REDIS_VERSION_NUM": 0x070000,
	} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(RedisVersion))
	return t
}

// raise raises a Redis error from a redis.* function: an {err=…} table,
// no "file:line:" prefix (Redis's luaPushError + luaError).
func raise(L *lua.LState, msg string) {
	L.Error(errorTable(L, "ERR "+msg), 0)
}

// errorReplyText is redis.error_reply's text: a leading "-" dropped, and
// "ERR " put before a text with no space (no code of its own).
func errorReplyText(s string) string {
	s = strings.TrimPrefix(s, "-")
	code, msg, ok := strings.Cut(s, " ")
	if !ok {
		return "ERR " + strings.Trim(s, "\r\n")
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(msg))
	return t
}

// redisCall is redis.call (raise) and redis.pcall.
func (st *luaState) redisCall(L *lua.LState, raise bool) int {
	fail := func(msg string) int {
		t := errorTable(L, msg)
		if raise {
			L.Error(t, 0)
			return 0
		}
		L.Push(t)
		return 1
	}
	run := st.run
	if run == nil {
		return fail("ERR redis.call can only be called inside a script invocation")
	}
	n := L.GetTop()
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	args := st.argv[:0]
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args = append(args, []byte(v))
		case lua.LNumber:
			args = append(args, callArgNumber(float64(v)))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	st.argv = args[:0]
	reply := run.c.scriptCommand(run, args)
	v, _, err := respToLua(L, reply)
	if err != nil {
		return fail("ERR " + err.Error())
	}
	if t, ok := v.(*lua.LTable); ok && raise {
		if _, isErr := t.RawGetString("err").(lua.LString); isErr {
			L.Error(t, 0)
			return 0
		}
	}
	L.Push(v)
	return 1
}

// callArgNumber is a number given to redis.call: an integer when it is
// one, else "%.17g" (Redis 7.0's luaArgsToRedisArgv).
func callArgNumber(f float64) []byte {
	if f == math.Trunc(f) && f >= -9223372036854775808 && f < 9223372036854775807 {
		return strconv.AppendInt(nil, int64(f), 10)
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// registerFunction is redis.register_function, valid only while FUNCTION
// LOAD (or a state catching up with the libraries) runs a library's code:
// register_function(name, callback) or register_function{function_name=,
// callback=, flags=, description=}.
func (st *luaState) registerFunction(L *lua.LState) int {
	if st.loading == nil {
		raise(L, "redis.register_function can only be called on FUNCTION LOAD command")
	}
	f := &libFunction{}
	var cb *lua.LFunction
	switch L.GetTop() {
	case 2:
		name, ok1 := L.Get(1).(lua.LString)
		fn, ok2 := L.Get(2).(*lua.LFunction)
		if !ok1 || !ok2 {
			raise(L, "wrong arguments given to redis.register_function")
		}
		f.name, cb = string(name), fn
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var bad string
		t.ForEach(func(k, v lua.LValue) {
			switch ks := k.String(); ks {
			case "function_name":
				f.name = v.String()
			case "callback":
				cb, _ = v.(*lua.LFunction)
			case "description":
				f.desc, f.hasDesc = v.String(), true
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				ft.ForEach(func(_, fv lua.LValue) {
					fl, ok := parseScriptFlag(fv.String())
					if !ok {
						bad = "unknown flag given"
						return
					}
					f.flags |= fl
				})
			default:
				bad = "unknown argument given to redis.register_function"
			}
		})
		if bad != "" {
			raise(L, bad)
		}
		if f.name == "" || cb == nil {
			raise(L, "redis.register_function must get a function name argument and a callback argument")
		}
	default:
		raise(L, "wrong number of arguments to redis.register_function")
	}
	if !validName(f.name) {
		raise(L, "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long")
	}
	if _, dup := st.loading[f.name]; dup {
		raise(L, "Function already exists in the library")
	}
	st.loading[f.name] = f
	st.fns[f.name] = cb
	return 0
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// call runs fn (a script body or a library function) with args pushed
// after it, and returns its result or the script error to reply.
func (st *luaState) call(fn *lua.LFunction, args ...lua.LValue) (lua.LValue, string) {
	return st.pcall(fn, true, args)
}

// callBare is call without the " script: …" place in an error (FUNCTION
// LOAD's "Error registering functions: …").
func (st *luaState) callBare(fn *lua.LFunction, args ...lua.LValue) (lua.LValue, string) {
	return st.pcall(fn, false, args)
}

func (st *luaState) pcall(fn *lua.LFunction, place bool, args []lua.LValue) (lua.LValue, string) {
	L := st.L
	L.Push(fn)
	for _, a := range args {
		L.Push(a)
	}
	if err := L.PCall(len(args), 1, st.errfn); err != nil {
		return nil, st.scriptError(err, place)
	}
	v := L.Get(-1)
	L.Pop(1)
	return v, ""
}

// scriptError is the reply of a script that raised an error: its {err=…}
// text, then " script: NAME, on SOURCE:LINE." as Redis 7 words it.
func (st *luaState) scriptError(err error, place bool) string {
	name := ""
	if st.run != nil {
		name = st.run.name
	}
	ae, ok := err.(*lua.ApiError)
	if !ok {
		return "ERR Error running script " + name + ", " + err.Error()
	}
	t, ok := ae.Object.(*lua.LTable)
	if !ok {
		return "ERR Error running script " + name + ", " + ae.Object.String()
	}
	msg, _ := t.RawGetString("err").(lua.LString)
	out := string(msg)
	src, ok1 := t.RawGetString("source").(lua.LString)
	line, ok2 := t.RawGetString("line").(lua.LNumber)
	if ok1 && ok2 && place {
		out += " script: " + name + ", on " + string(src) + ":" + strconv.Itoa(int(line)) + "."
	}
	return out
}
