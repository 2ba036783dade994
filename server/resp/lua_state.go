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
// the base, table, string and math libraries, redis.*, cjson, bit,
// cmsgpack and struct;
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
	// errCounted: the error the last call raised came from a command's
	// reply, which INFO errorstats counted when the command answered it.
	errCounted bool
	libRedis   *lua.LTable // the redis table of a library's load (libraryRedis)
	argv       [][]byte    // redis.call's argument buffer
}

// luaBinarySignature starts a precompiled Lua chunk.
const luaBinarySignature = "\x1bLua"

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
	if str, ok := g.RawGetString("string").(*lua.LTable); ok {
		// gopher-lua has no bytecode: string.dump gives a binary chunk's
		// header, which loadstring refuses as Redis refuses any binary
		// chunk.
		str.RawSetString("dump", L.NewFunction(func(L *lua.LState) int {
			L.CheckFunction(1)
			L.Push(lua.LString(luaBinarySignature + "Q"))
			return 1
		}))
	}
	if m, ok := g.RawGetString("math").(*lua.LTable); ok {
		installRedisRandom(L, m, s.prng)
		m.RawSetString("huge", lua.LNumber(math.Inf(1))) // gopher-lua's is MaxFloat64
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
	// setmetatable on a protected table is a write to it (Redis's
	// "Try trick global protection" cases), not a protected-metatable error.
	setmt := g.RawGetString("setmetatable")
	g.RawSetString("setmetatable", L.NewFunction(func(L *lua.LState) int {
		if t, ok := L.Get(1).(*lua.LTable); ok && st.isReadOnly(t) {
			L.Error(lua.LString("Attempt to modify a readonly table"), 0)
		}
		n := L.GetTop()
		L.Insert(setmt, 1)
		L.Call(n, lua.MultRet)
		return L.GetTop()
	}))
	// tostring prints numbers as Lua 5.1 does ("%.14g", inf, -nan), not as
	// Go does (gopher-lua's 0.3333333333333333, +Inf, NaN).
	tostring := g.RawGetString("tostring")
	g.RawSetString("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok && L.GetTop() == 1 {
			L.Push(lua.LString(lua51NumberString(float64(n))))
			return 1
		}
		n := L.GetTop()
		L.Insert(tostring, 1)
		L.Call(n, 1)
		return 1
	}))
	// Binary chunks are refused (Redis 7's loadstring): what string.dump
	// gives cannot be loaded, so calling it fails as a nil call does.
	loadstring := g.RawGetString("loadstring")
	g.RawSetString("loadstring", L.NewFunction(func(L *lua.LState) int {
		if s, ok := L.Get(1).(lua.LString); ok && strings.HasPrefix(string(s), luaBinarySignature) {
			L.Push(lua.LNil)
			L.Push(lua.LString("loadstring: binary chunks are not allowed"))
			return 2
		}
		n := L.GetTop()
		L.Insert(loadstring, 1)
		L.Call(n, lua.MultRet)
		return L.GetTop()
	}))
	g.RawSetString("redis", st.openRedis())
	g.RawSetString("cjson", openCJSON(L, s.cjson))
	g.RawSetString("bit", openBit(L))
	g.RawSetString("cmsgpack", openCMsgpack(L))
	g.RawSetString("struct", openStruct(L))
	for _, lib := range []string{"string", "table", "math", "redis", "cjson", "bit", "cmsgpack", "struct"} {
		if t, ok := g.RawGetString(lib).(*lua.LTable); ok {
			g.RawSetString(lib, st.readOnly(t, nil))
		}
	}
	missing := func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.Get(2).String())
		return 0
	}
	st.libRedis = st.libraryRedis(L.NewFunction(missing))
	st.env = st.readOnly(g, L.NewFunction(func(L *lua.LState) int {
		k := L.Get(2)
		if st.loading != nil {
			// A library's top-level code sees only redis.register_function,
			// redis.log and the version (Redis 7's load environment).
			if k == lua.LString("redis") {
				L.Push(st.libRedis)
				return 1
			}
			return missing(L)
		}
		if v := g.RawGet(k); v != lua.LNil {
			L.Push(v)
			return 1
		}
		return missing(L)
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
	mt.RawSetString("__newindex", st.refuseWrite())
	// getmetatable answers a read-only view of mt, so that changing
	// __index through it fails as Redis's read-only tables do.
	view, viewMT := L.NewTable(), L.NewTable()
	viewMT.RawSetString("__index", mt)
	viewMT.RawSetString("__newindex", st.refuseWrite())
	viewMT.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(view, viewMT)
	mt.RawSetString("__metatable", view)
	L.SetMetatable(p, mt)
	st.proxies = append(st.proxies, p, view)
	return p
}

func (st *luaState) refuseWrite() *lua.LFunction {
	return st.L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Attempt to modify a readonly table")
		return 0
	})
}

// isReadOnly reports a table readOnly made (or a view of its metatable).
func (st *luaState) isReadOnly(t *lua.LTable) bool {
	for _, p := range st.proxies {
		if p == t {
			return true
		}
	}
	return false
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
	set("acl_check_cmd", st.aclCheckCmd)
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

// libraryRedis is the redis table a library's code sees while FUNCTION
// LOAD runs it: register_function, log and the constants, read-only; any
// other field is missing as a global is.
func (st *luaState) libraryRedis(missing *lua.LFunction) *lua.LTable {
	L := st.L
	t := L.NewTable()
	t.RawSetString("register_function", L.NewFunction(st.registerFunction))
	if r, ok := st.globals.RawGetString("redis").(*lua.LTable); ok {
		for _, k := range []string{"log", "LOG_DEBUG", "LOG_VERBOSE", "LOG_NOTICE", "LOG_WARNING", "REDIS_VERSION", "REDIS_VERSION_NUM"} {
			t.RawSetString(k, L.GetField(r, k)) // r is the read-only proxy by now
		}
	}
	return st.readOnly(t, L.NewFunction(func(L *lua.LState) int {
		if v := t.RawGet(L.Get(2)); v != lua.LNil {
			L.Push(v)
			return 1
		}
		L.Push(missing)
		L.Push(L.Get(1))
		L.Push(L.Get(2))
		L.Call(2, 0)
		return 0
	}))
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

// errStatsCounted marks an error table made from a command's error reply.
const errStatsCounted = "ignore_error_stats_update"

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
	args, msg := callArgs(L, st.argv[:0])
	if msg != "" {
		return fail("ERR " + msg)
	}
	st.argv = args[:0]
	reply := run.c.scriptCommand(run, args)
	v, _, err := respToLua(L, reply)
	if err != nil {
		return fail("ERR " + err.Error())
	}
	if t, ok := v.(*lua.LTable); ok && t.RawGetString("err") != lua.LNil {
		// Counted in errorstats as the command answered it: not again if
		// the script hands it on (Redis's ignore_error_stats_update).
		t.RawSetString(errStatsCounted, lua.LTrue)
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

// aclCheckCmd is redis.acl_check_cmd(cmd, args…): whether the script's
// user may run the command with those arguments (keys and channels
// included), without running it.
func (st *luaState) aclCheckCmd(L *lua.LState) int {
	run := st.run
	if run == nil {
		raise(L, "redis.acl_check_cmd can only be called inside a script invocation")
	}
	args, msg := callArgs(L, nil)
	if msg != "" {
		raise(L, msg)
	}
	cmd := lookupCommand(args[0])
	if cmd != nil && len(cmd.subs) > 0 && len(args) > 1 {
		cmd = cmd.lookupSub(args[1]) // alone, a container names itself (Redis's lookupCommand)
	}
	if cmd == nil {
		raise(L, "Invalid command passed to redis.acl_check_cmd()")
	}
	allowed := true
	if u, ok := run.c.aclUser(); !ok {
		allowed = false // the user was deleted meanwhile
	} else if u != nil {
		reason, _ := aclDenial(u, cmd, args)
		allowed = reason == ""
	}
	L.Push(lua.LBool(allowed))
	return 1
}

// callArgs converts the arguments of a redis.call-like function into a
// command's (appended to buf), or says why it cannot.
func callArgs(L *lua.LState, buf [][]byte) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "Please specify at least one argument for this redis lib call"
	}
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, []byte(v))
		case lua.LNumber:
			buf = append(buf, callArgNumber(float64(v)))
		default:
			return nil, "Lua redis lib command arguments must be strings or integers"
		}
	}
	return buf, ""
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
	// luaGetStringSds: a string, or a number as its text.
	text := func(v lua.LValue) (string, bool) {
		switch v := v.(type) {
		case lua.LString:
			return string(v), true
		case lua.LNumber:
			return v.String(), true
		}
		return "", false
	}
	switch L.GetTop() {
	case 2:
		name, ok := text(L.Get(1))
		if !ok {
			raise(L, "first argument to redis.register_function must be a string")
		}
		fn, ok := L.Get(2).(*lua.LFunction)
		if !ok {
			raise(L, "second argument to redis.register_function must be a function")
		}
		f.name, cb = name, fn
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			raise(L, "calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		hasName := false
		for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
			key, ok := text(k)
			if !ok {
				raise(L, "named argument key given to redis.register_function is not a string")
			}
			switch strings.ToLower(key) {
			case "function_name":
				if f.name, hasName = text(v); !hasName {
					raise(L, "function_name argument given to redis.register_function must be a string")
				}
			case "description":
				if f.desc, f.hasDesc = text(v); !f.hasDesc {
					raise(L, "description argument given to redis.register_function must be a string")
				}
			case "callback":
				if cb, ok = v.(*lua.LFunction); !ok {
					raise(L, "callback argument given to redis.register_function must be a function")
				}
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					raise(L, "flags argument to redis.register_function must be a table representing function flags")
				}
				for fk, fv := ft.Next(lua.LNil); fk != lua.LNil; fk, fv = ft.Next(fk) {
					name, ok := text(fv)
					fl, known := parseScriptFlag(name)
					if !ok || !known {
						raise(L, "unknown flag given")
					}
					f.flags |= fl
				}
			default:
				raise(L, "unknown argument given to redis.register_function")
			}
		}
		if !hasName {
			raise(L, "redis.register_function must get a function name argument")
		}
		if cb == nil {
			raise(L, "redis.register_function must get a callback argument")
		}
	default:
		raise(L, "wrong number of arguments to redis.register_function")
	}
	if !validName(f.name) {
		// Redis 7.0 words a bad function name as a library's.
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
	st.errCounted = t.RawGetString(errStatsCounted) == lua.LTrue
	out := string(msg)
	src, ok1 := t.RawGetString("source").(lua.LString)
	line, ok2 := t.RawGetString("line").(lua.LNumber)
	if ok1 && ok2 && place {
		out += " script: " + name + ", on " + string(src) + ":" + strconv.Itoa(int(line)) + "."
	}
	return out
}
