package resp

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/zaris-io/zaris/internal/glob"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/internal/rdb"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// Scripting (issue #13 item 5): EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT
// LOAD/EXISTS/FLUSH/KILL, FUNCTION LOAD/LIST/DELETE/FLUSH/KILL/STATS,
// FCALL, FCALL_RO, on gopher-lua with Redis 7.0's API, conversions and
// error texts (lua_state.go, lua_conv.go, lua_libs.go).
//
// Atomicity. A script runs with the write locks of the segments of its
// declared keys held (store.AtomicallyMany, the multi-key rule of
// multikey.go): keys of one slot anywhere, keys of several slots when
// this node serves all their segments, CROSSSLOT otherwise; a script that
// declares no key holds every segment this node serves (as a standalone
// redis-server, nothing else runs on them meanwhile). redis.call of a key
// not declared works when its segment is held, and is refused as Redis
// Cluster refuses it otherwise. Every redis.call runs the command's
// ordinary handler against the locked view, so a write makes its ordinary
// store effect: scripts replicate by effects, with nothing of their own.
//
// Time limit. A script running longer than ScriptTimeLimit (Redis's
// busy-reply-threshold, 5 s) makes every other client's command that is
// not allow_busy answer BUSY until it ends; SCRIPT KILL (FUNCTION KILL for
// a function) stops it unless it has written (UNKILLABLE).

// scriptFlag is a flag of a script's shebang or of a registered function.
type scriptFlag uint8

const (
	scriptNoWrites scriptFlag = 1 << iota
	scriptAllowOOM
	scriptAllowStale
	scriptNoCluster
	scriptAllowCrossSlot
)

var scriptFlagNames = []struct {
	f    scriptFlag
	name string
}{{scriptNoWrites, "no-writes"}, {scriptAllowOOM, "allow-oom"}, {scriptAllowStale, "allow-stale"},
	{scriptNoCluster, "no-cluster"}, {scriptAllowCrossSlot, "allow-cross-slot-keys"}}

func parseScriptFlag(s string) (scriptFlag, bool) {
	for _, f := range scriptFlagNames {
		if f.name == s {
			return f.f, true
		}
	}
	return 0, false
}

// DefaultScriptTimeLimit is Redis's busy-reply-threshold.
const DefaultScriptTimeLimit = 5 * time.Second

// maxPooledStates bounds the idle Lua states kept.
const maxPooledStates = 64

const (
	msgNoScript     = "NOSCRIPT No matching script. Please use EVAL."
	msgBusyEval     = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	msgBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
	msgNotBusy      = "NOTBUSY No scripts in execution right now."
	msgUnkillable   = "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command."
	msgROWrite      = "ERR Write commands are not allowed from read-only scripts."
	msgROFlag       = "ERR Can not execute a script with write flag using *_ro command."
)

// scripting is a server's script cache, function libraries and Lua states.
type scripting struct {
	limit atomic.Int64 // ScriptTimeLimit in ns

	mu      sync.Mutex
	scripts map[string]*evalScript // by SHA-1
	libs    map[string]*library
	funcs   map[string]*libFunction
	gen     uint64 // bumped when the libraries change: pooled states reload them
	free    []*luaState
	inuse   map[*luaState]struct{}  // states running a script now
	running map[*scriptRun]struct{} // runs past the time limit, oldest first by started
	busy    atomic.Int32            // len(running): the hot path's one load
	cjson   *cjsonConfig            // the global cjson module's settings, node-wide
	prng    *scriptPRNG             // math.random's generator, node-wide
}

// scriptCacheStats is what INFO memory reports of the script cache and
// the function libraries.
type scriptCacheStats struct {
	scripts, functions, libraries int
	scriptBytes, libraryBytes     int64
}

func (s *scripting) cacheStats() scriptCacheStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := scriptCacheStats{scripts: len(s.scripts), functions: len(s.funcs), libraries: len(s.libs)}
	for sha, es := range s.scripts {
		st.scriptBytes += int64(len(sha) + len(es.body))
	}
	for _, l := range s.libs {
		st.libraryBytes += int64(len(l.name) + len(l.code))
	}
	return st
}

type evalScript struct {
	body  string
	proto *lua.FunctionProto
	flags scriptFlag
	bang  bool // had a shebang: the flags apply (else EVAL may write)
}

type library struct {
	name  string
	code  string
	proto *lua.FunctionProto
	funcs map[string]*libFunction
}

type libFunction struct {
	name    string
	lib     *library
	flags   scriptFlag
	desc    string
	hasDesc bool
}

// scriptRun is one script invocation in progress.
type scriptRun struct {
	c        *conn
	st       *luaState
	name     string // the SHA-1, or the function's name
	function bool
	readOnly bool
	resp     int
	started  time.Time
	wrote    atomic.Bool
	// oomAtStart: the store was out of memory when a script without a
	// shebang began; its first command that may add data fails.
	oomAtStart bool
	killed     atomic.Bool
	mu         sync.Mutex // guards done and the running-set membership
	done       bool
	scratch    []byte   // redis.call's reply buffer
	cmdArgs    []string // for FUNCTION STATS
	timer      *time.Timer
}

func newScripting(limit time.Duration) *scripting {
	s := &scripting{
		scripts: map[string]*evalScript{},
		libs:    map[string]*library{},
		funcs:   map[string]*libFunction{},
		running: map[*scriptRun]struct{}{},
		inuse:   map[*luaState]struct{}{},
		cjson:   newCJSONConfig(),
		prng:    newScriptPRNG(),
	}
	s.limit.Store(int64(limit))
	return s
}

// SetScriptTimeLimit changes the busy threshold (CONFIG SET
// busy-reply-threshold / lua-time-limit).
func (s *Server) SetScriptTimeLimit(d time.Duration) {
	if d <= 0 {
		d = DefaultScriptTimeLimit
	}
	s.scripts.limit.Store(int64(d))
}

// ScriptTimeLimit is the current busy threshold.
func (s *Server) ScriptTimeLimit() time.Duration { return time.Duration(s.scripts.limit.Load()) }

func (s *scripting) get(run *scriptRun) *luaState {
	s.mu.Lock()
	var st *luaState
	if n := len(s.free); n > 0 {
		st, s.free = s.free[n-1], s.free[:n-1]
	}
	gen := s.gen
	var libs []*library
	if st == nil || st.gen != gen {
		libs = s.libList()
	}
	s.mu.Unlock()
	if st == nil {
		st = newLuaState(s)
	}
	s.mu.Lock()
	st.run = run
	s.inuse[st] = struct{}{}
	s.mu.Unlock()
	if st.gen != gen {
		st.loadLibraries(libs)
		st.gen = gen
	}
	return st
}

func (s *scripting) put(st *luaState) {
	st.clean()
	s.mu.Lock()
	st.run = nil
	delete(s.inuse, st)
	if st.broken {
		s.mu.Unlock()
		st.close()
		return
	}
	if len(s.free) < maxPooledStates {
		s.free = append(s.free, st)
		st = nil
	}
	s.mu.Unlock()
	if st != nil {
		st.close()
	}
}

// libList is the libraries in name order; s.mu held.
func (s *scripting) libList() []*library {
	out := make([]*library, 0, len(s.libs))
	for _, l := range s.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// loadLibraries makes the state's functions those of libs (already
// validated by FUNCTION LOAD).
func (st *luaState) loadLibraries(libs []*library) {
	clear(st.fns)
	for _, l := range libs {
		st.loading = map[string]*libFunction{}
		fn := st.L.NewFunctionFromProto(l.proto)
		fn.Env = st.env
		if _, msg := st.call(fn); msg != "" {
			st.broken = true
		}
	}
	st.loading = nil
}

// compile parses and compiles Lua source under chunk name.
func compileLua(src, chunk string) (*lua.FunctionProto, error) {
	stmts, err := parse.Parse(strings.NewReader(src), chunk)
	if err != nil {
		return nil, err
	}
	return lua.Compile(stmts, chunk)
}

func sha1hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

// scriptKeys is the key positions of EVAL/EVALSHA/FCALL (numkeys at 2);
// none when numkeys is not a valid count.
func scriptKeys(args [][]byte) []int {
	if len(args) < 3 {
		return nil
	}
	n, ok := parseInt(args[2])
	if !ok || n <= 0 || n > int64(len(args)-3) {
		return nil
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = 3 + i
	}
	return idx
}

func init() {
	sc := func(c *command) *command { c.group = "scripting"; c.metric = metrics.OpOther; return c }
	evalFlags := flagNoScript | flagStale | flagSkipMonitor | flagNoMandatoryKeys | flagMovableKeys
	register(
		sc(&command{name: "eval", arity: -3, flags: evalFlags, keys: scriptKeys, since: "2.6.0",
			summary: "Executes a server-side Lua script atomically under its keys' segments.", run: cmdEval(false, false)}),
		sc(&command{name: "evalsha", arity: -3, flags: evalFlags, keys: scriptKeys, since: "2.6.0",
			summary: "Executes a cached server-side Lua script by its SHA-1 digest.", run: cmdEval(true, false)}),
		sc(&command{name: "eval_ro", arity: -3, flags: evalFlags | flagReadonly, keys: scriptKeys, since: "7.0.0",
			summary: "Executes a read-only server-side Lua script.", run: cmdEval(false, true)}),
		sc(&command{name: "evalsha_ro", arity: -3, flags: evalFlags | flagReadonly, keys: scriptKeys, since: "7.0.0",
			summary: "Executes a cached read-only server-side Lua script by its SHA-1 digest.", run: cmdEval(true, true)}),
		sc(&command{name: "fcall", arity: -3, flags: evalFlags, keys: scriptKeys, since: "7.0.0",
			summary: "Invokes a function of a loaded library.", run: cmdFcall(false)}),
		sc(&command{name: "fcall_ro", arity: -3, flags: evalFlags | flagReadonly, keys: scriptKeys, since: "7.0.0",
			summary: "Invokes a read-only (no-writes) function of a loaded library.", run: cmdFcall(true)}),
		sc(&command{name: "script", arity: -2, since: "2.6.0",
			summary: "A container for Lua scripts management commands.", subs: []*command{
				{name: "load", arity: 3, flags: flagNoScript | flagStale, summary: "Loads a script into the script cache and returns its SHA-1.", run: cmdScriptLoad},
				{name: "exists", arity: -3, flags: flagNoScript, summary: "Reports which SHA-1 digests are in the script cache.", run: cmdScriptExists},
				{name: "flush", arity: -2, flags: flagNoScript, summary: "Empties the script cache (ASYNC and SYNC alike).", run: cmdScriptFlush},
				{name: "kill", arity: 2, flags: flagNoScript | flagAllowBusy, summary: "Stops the script running past the time limit, unless it has written.", run: cmdScriptKill(false)},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the SCRIPT subcommands.", run: cmdScriptHelp},
			}}),
		sc(&command{name: "function", arity: -2, since: "7.0.0",
			summary: "A container for function commands.", subs: []*command{
				{name: "load", arity: -3, flags: flagWrite | flagDenyOOM | flagNoScript, summary: "Loads a Lua library (#!lua name=<lib>) and registers its functions.", run: cmdFunctionLoad},
				{name: "list", arity: -2, flags: flagNoScript, summary: "Lists the libraries and their functions (LIBRARYNAME pattern, WITHCODE).", run: cmdFunctionList},
				{name: "delete", arity: 3, flags: flagWrite | flagNoScript, summary: "Deletes a library and its functions.", run: cmdFunctionDelete},
				{name: "flush", arity: -2, flags: flagWrite | flagNoScript, summary: "Deletes every library.", run: cmdFunctionFlush},
				{name: "dump", arity: 2, flags: flagNoScript, summary: "Returns the libraries as a payload FUNCTION RESTORE (on Zaris or Redis) loads.", run: cmdFunctionDump},
				{name: "restore", arity: -3, flags: flagWrite | flagDenyOOM | flagNoScript, summary: "Loads the libraries of a FUNCTION DUMP payload of Zaris or Redis ([FLUSH|APPEND|REPLACE], APPEND by default).", run: cmdFunctionRestore},
				{name: "kill", arity: 2, flags: flagNoScript | flagAllowBusy, summary: "Stops the function running past the time limit, unless it has written.", run: cmdScriptKill(true)},
				{name: "stats", arity: 2, flags: flagNoScript | flagAllowBusy, summary: "Reports the function running past the time limit and the engine's counts.", run: cmdFunctionStats},
				{name: "help", arity: 2, flags: flagLoading | flagStale, summary: "Returns helpful text about the FUNCTION subcommands.", run: cmdFunctionHelp},
			}}),
	)
}

// --- EVAL family ---

// numKeys checks EVAL's numkeys (args[2]) as Redis does.
func (c *conn) numKeys(args [][]byte) (int, bool) {
	n, ok := parseInt(args[2])
	switch {
	case !ok:
		c.err(msgNotInteger)
	case n > int64(len(args)-3):
		c.err("ERR Number of keys can't be greater than number of args")
	case n < 0:
		c.err("ERR Number of keys can't be negative")
	default:
		return int(n), true
	}
	return 0, false
}

// parseShebang reads "#!lua [flags=a,b]" on an EVAL script's first line;
// it returns the body with that line blanked (line numbers unchanged).
func parseShebang(body string) (string, scriptFlag, bool, string) {
	if !strings.HasPrefix(body, "#!") {
		return body, 0, false, ""
	}
	line, rest, _ := strings.Cut(body, "\n")
	parts := strings.Fields(line[2:])
	if len(parts) == 0 || !strings.EqualFold(parts[0], "lua") {
		return "", 0, false, "ERR Unexpected engine in script shebang: " + strings.TrimRight(line, "\r")
	}
	var flags scriptFlag
	for _, p := range parts[1:] {
		v, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return "", 0, false, "ERR Unknown lua shebang option: " + p
		}
		for _, f := range strings.Split(v, ",") {
			if f == "" {
				continue
			}
			fl, ok := parseScriptFlag(f)
			if !ok {
				return "", 0, false, "ERR Unexpected flag in script shebang: " + f
			}
			flags |= fl
		}
	}
	return "\n" + rest, flags, true, ""
}

// loadScript compiles body into the cache (EVAL, SCRIPT LOAD) and returns
// it with its SHA-1, or the error to reply.
func (s *scripting) loadScript(body string) (*evalScript, string, string) {
	sha := sha1hex(body)
	s.mu.Lock()
	es := s.scripts[sha]
	s.mu.Unlock()
	if es != nil {
		return es, sha, ""
	}
	src, flags, bang, msg := parseShebang(body)
	if msg != "" {
		return nil, "", msg
	}
	proto, err := compileLua(src, "user_script")
	if err != nil {
		return nil, "", "ERR Error compiling script (new function): " + compileErrorText(err)
	}
	es = &evalScript{body: body, proto: proto, flags: flags, bang: bang}
	s.mu.Lock()
	if prev := s.scripts[sha]; prev != nil {
		es = prev
	} else {
		s.scripts[sha] = es
	}
	s.mu.Unlock()
	return es, sha, ""
}

func compileErrorText(err error) string {
	if ae, ok := err.(*lua.ApiError); ok {
		return ae.Object.String()
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func cmdEval(bySHA, ro bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		nk, ok := c.numKeys(args)
		if !ok {
			return
		}
		s := c.srv.scripts
		var es *evalScript
		var sha string
		if bySHA {
			sha = strings.ToLower(string(args[1]))
			s.mu.Lock()
			es = s.scripts[sha]
			s.mu.Unlock()
			if es == nil || len(sha) != 40 {
				c.err(msgNoScript)
				return
			}
		} else {
			var msg string
			if es, sha, msg = s.loadScript(string(args[1])); msg != "" {
				c.err(msg)
				return
			}
		}
		readOnly := ro
		if es.bang {
			if ro && es.flags&scriptNoWrites == 0 {
				c.err(msgROFlag)
				return
			}
			readOnly = readOnly || es.flags&scriptNoWrites != 0
			if c.scriptDeniedOOM(es.flags) {
				c.rejectCmd(lookupCommand(args[0]), msgOOM)
				return
			}
		}
		keys, argv := args[3:3+nk], args[3+nk:]
		run := &scriptRun{c: c, name: sha, readOnly: readOnly, resp: 2}
		// A script without a shebang may write until memory runs out: its
		// first denyoom call fails instead (Redis's eval compatibility).
		run.oomAtStart = !es.bang && c.tx == nil && c.srv.store.OutOfMemory()
		c.runScript(run, keys, func(st *luaState) (lua.LValue, string) {
			L := st.L
			st.globals.RawSetString("KEYS", luaStrings(L, keys))
			st.globals.RawSetString("ARGV", luaStrings(L, argv))
			fn := L.NewFunctionFromProto(es.proto)
			fn.Env = st.env
			return st.call(fn)
		})
	}
}

func luaStrings(L *lua.LState, items [][]byte) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, it := range items {
		t.RawSetInt(i+1, lua.LString(it))
	}
	return t
}

// runScript runs body under the locks of the declared keys' segments (or
// of every served segment when there is none) and writes its reply.
func (c *conn) runScript(run *scriptRun, keys [][]byte, body func(st *luaState) (lua.LValue, string)) {
	mark, flushes := len(c.out.B), c.flushes
	exec := func() {
		s := c.srv.scripts
		st := s.get(run)
		if st.broken { // a library failed to load in this state
			s.put(st)
			st = s.get(run)
		}
		run.st = st
		run.started = time.Now()
		run.scratch = make([]byte, 0, 256)
		limit := time.Duration(s.limit.Load())
		run.timer = time.AfterFunc(limit, func() { s.overdue(run) })
		v, msg := body(st)
		run.timer.Stop()
		s.finished(run)
		if run.killed.Load() {
			st.broken = true
		}
		replyAt, errsBefore := len(c.out.B), c.errReplies
		if msg != "" {
			c.out.B = appendScriptError(c.out.B, msg)
			if !st.errCounted && c.out.OnError != nil {
				c.out.OnError(msg)
			}
			st.errCounted = false
			c.status = kv.StatusBadRequest
		} else {
			writeLuaReply(&c.out, v, run.resp, 0)
		}
		if len(c.out.B) > replyAt && c.out.B[replyAt] == '-' && c.errReplies == errsBefore {
			// An error a command answered (counted then) fails the script
			// too, though errorstats do not count it twice.
			c.errReplies++
		}
		s.put(st)
	}
	if c.tx != nil { // inside EXEC or runLocked: the segments are held already
		exec()
	} else {
		segs, msg := c.scriptSegments(keys)
		if msg != "" {
			c.err(msg)
			return
		}
		if len(segs) == 0 {
			exec()
		} else {
			c.srv.store.AtomicallyMany(segs, func(a *store.Atomic) {
				if !run.oomAtStart {
					a.Admit() // under the cap when it began: its writes run, as in Redis
				}
				c.tx = a
				defer func() { c.tx = nil }()
				exec()
			})
		}
	}
	if run.wrote.Load() && c.srv.cfg.WriteBarrier != nil {
		// The script's writes wait for sync replication like any write's.
		c.multiSeg = true
		c.hold(mark, flushes)
	}
}

// scriptSegments is the segments a script locks: its keys' (the first
// must be this node's, MOVED otherwise, as for any keyed command), or
// every segment this node serves when it declares none.
func (c *conn) scriptSegments(keys [][]byte) ([]uint16, string) {
	if len(keys) == 0 {
		var segs []uint16
		for g := range c.srv.segs {
			if c.served(uint16(g)) {
				segs = append(segs, uint16(g))
			}
		}
		return segs, ""
	}
	segs := make([]uint16, 0, len(keys))
	for i, k := range keys {
		g := placement.SegmentOf(view(k), c.srv.segs)
		if !c.served(g) {
			if i == 0 {
				return nil, c.movedError(k)
			}
			return nil, msgCrossSlot
		}
		segs = append(segs, g)
	}
	slices.Sort(segs)
	return slices.Compact(segs), ""
}

// scriptNodeWide are the commands that read or write every segment of the
// node (their locks): a script holds its segments' write locks while it
// runs, so they are refused from scripts, as from MULTI, rather than wait
// for those locks forever.
var scriptNodeWide = map[string]bool{
	"keys": true, "scan": true, "dbsize": true, "randomkey": true, "flushdb": true, "flushall": true,
	"info": true, "cluster|countkeysinslot": true, "cluster|getkeysinslot": true,
}

const msgScriptNodeWide = "ERR This command reads or writes every key of the node and is not allowed from a script in Zaris (the script holds its keys' locks)"

// scriptCommand runs one redis.call/redis.pcall command and returns its
// reply (RESP bytes, in the script's RESP version).
func (c *conn) scriptCommand(run *scriptRun, args [][]byte) []byte {
	w := Writer{Proto: run.resp, B: run.scratch[:0], OnError: c.out.OnError} // errorstats count a command's errors
	// A command's error is the script's failure only if the script
	// answers it (runScript).
	errsBefore := c.errReplies
	fail := func(msg string) []byte {
		w.Error(msg)
		c.errReplies = errsBefore
		run.scratch = w.B
		return w.B
	}
	cmd := lookupCommand(args[0])
	if cmd != nil && len(cmd.subs) > 0 {
		if len(args) < 2 {
			cmd = nil
		} else {
			cmd = cmd.lookupSub(args[1])
		}
	}
	if cmd == nil {
		return fail("ERR Unknown Redis command called from script")
	}
	if !cmd.arityOK(len(args)) {
		return fail("ERR Wrong number of args calling Redis command from script")
	}
	if cmd.flags&flagNoScript != 0 {
		return fail("ERR This Redis command is not allowed from script")
	}
	if (cmd.name == "xread" || cmd.name == "xreadgroup") && blockOptionGiven(args) {
		return fail("ERR " + cmd.name + " command is not allowed with BLOCK option from scripts")
	}
	if msg := c.aclScriptCheck(cmd, args); msg != "" {
		return fail(msg)
	}
	if scriptNodeWide[cmd.name] || scriptNodeWide[baseName(cmd)] {
		return fail(msgScriptNodeWide)
	}
	if cmd.flags&flagWrite != 0 {
		if run.readOnly {
			return fail(msgROWrite)
		}
		if c.readOnly() {
			return fail(msgReadOnly)
		}
	}
	idx := cmd.keyIndexes(args)
	for _, i := range idx {
		k := view(args[i])
		if c.tx != nil && c.tx.Holds(k) {
			continue
		}
		if !c.served(placement.SegmentOf(k, c.srv.segs)) {
			return fail("ERR Script attempted to access a non local key in a cluster node")
		}
		return fail("ERR Script attempted to access keys that do not hash to the same slot")
	}
	if run.oomAtStart && cmd.flags&flagDenyOOM != 0 && !run.wrote.Load() {
		c.srv.cmdStats.reject(c.id, cmd)
		return fail(msgOOM) // nothing written yet: the script may still stop cleanly
	}
	if cmd.flags&flagWrite != 0 {
		run.wrote.Store(true)
	}
	saved, savedKey, savedStatus, savedReply := c.out, c.curKey, c.status, c.reply
	c.out, c.reply = w, replyOn
	c.setCurKey(nil)
	if len(idx) > 0 {
		c.setCurKey(args[idx[0]])
	}
	start, wasInScript := time.Now(), c.inScript
	c.inScript = true
	c.runContained(cmd, args)
	c.inScript = wasInScript
	c.errReplies = errsBefore
	out := c.out.B
	// INFO commandstats counts a script's commands as Redis does.
	c.srv.cmdStats.record(c.id, cmd, time.Since(start), len(out) > 0 && out[0] == '-')
	c.out, c.status, c.reply = saved, savedStatus, savedReply
	c.setCurKey(savedKey)
	run.scratch = out
	return out
}

// scriptDeniedOOM is Redis's rule for a script that declares its flags
// (a shebang, or any function): unless it is no-writes or allow-oom, it
// does not start while the store is out of memory.
func (c *conn) scriptDeniedOOM(flags scriptFlag) bool {
	return flags&(scriptNoWrites|scriptAllowOOM) == 0 && c.tx == nil && c.srv.store.OutOfMemory()
}

// blockOptionGiven reports a BLOCK option before XREAD's STREAMS.
func blockOptionGiven(args [][]byte) bool {
	for _, a := range args[1:] {
		if eq(a, "STREAMS") {
			return false
		}
		if eq(a, "BLOCK") {
			return true
		}
	}
	return false
}

// runContained runs a script's command; a panic (a bug) is logged and
// counted like any contained panic and answered -ERR internal error to the
// script (gopher-lua would otherwise turn it into a script error silently).
func (c *conn) runContained(cmd *command, args [][]byte) {
	mark := len(c.out.B)
	defer func() {
		if v := recover(); v != nil {
			c.panicked(commandName(args), v, debug.Stack())
			c.out.B = c.out.B[:mark]
			c.out.Error(msgInternal)
		}
	}()
	cmd.run(c, args)
}

// --- time limit: BUSY and KILL ---

// overdue is the run's timer: past the limit, it joins the running set
// and other clients get BUSY.
func (s *scripting) overdue(run *scriptRun) {
	run.mu.Lock()
	defer run.mu.Unlock()
	if run.done {
		return
	}
	s.mu.Lock()
	s.running[run] = struct{}{}
	s.busy.Store(int32(len(s.running)))
	s.mu.Unlock()
}

func (s *scripting) finished(run *scriptRun) {
	run.mu.Lock()
	defer run.mu.Unlock()
	run.done = true
	s.mu.Lock()
	if _, ok := s.running[run]; ok {
		delete(s.running, run)
		s.busy.Store(int32(len(s.running)))
	}
	s.mu.Unlock()
}

// killAll stops every script running (the server is closing: their
// connections are being closed and must be able to end).
func (s *scripting) killAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.inuse {
		if r := st.run; r != nil {
			r.killed.Store(true)
		}
		st.cancel()
	}
}

// oldestOverdue is the run past the limit that started first, or nil.
func (s *scripting) oldestOverdue() *scriptRun {
	s.mu.Lock()
	defer s.mu.Unlock()
	var old *scriptRun
	for r := range s.running {
		if old == nil || r.started.Before(old.started) {
			old = r
		}
	}
	return old
}

// busyError is the BUSY reply for a command of c while a script runs past
// the limit ("" when none does, or it is c's own).
func (s *scripting) busyError(c *conn) string {
	r := s.oldestOverdue()
	if r == nil || r.c == c {
		return ""
	}
	if r.function {
		return msgBusyFunction
	}
	return msgBusyEval
}

func cmdScriptKill(function bool) func(c *conn, args [][]byte) {
	return func(c *conn, _ [][]byte) {
		r := c.srv.scripts.oldestOverdue()
		switch {
		case r == nil:
			c.err(msgNotBusy)
		case r.wrote.Load():
			c.err(msgUnkillable)
		case !function && r.function:
			c.err(msgBusyFunction)
		case function && !r.function:
			c.err(msgBusyEval)
		default:
			r.killed.Store(true)
			r.st.cancel()
			c.out.OK()
		}
	}
}

// --- SCRIPT ---

func cmdScriptLoad(c *conn, args [][]byte) {
	_, sha, msg := c.srv.scripts.loadScript(string(args[2]))
	if msg != "" {
		c.err(msg)
		return
	}
	c.out.BulkString(sha)
}

func cmdScriptExists(c *conn, args [][]byte) {
	s := c.srv.scripts
	c.out.Array(len(args) - 2)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range args[2:] {
		if s.scripts[strings.ToLower(string(a))] != nil {
			c.out.Int(1)
		} else {
			c.out.Int(0)
		}
	}
}

// flushMode checks SCRIPT/FUNCTION FLUSH's optional ASYNC|SYNC.
func (c *conn) flushMode(args [][]byte, msg string) bool {
	switch {
	case len(args) == 2:
		return true
	case len(args) == 3 && (strings.EqualFold(string(args[2]), "async") || strings.EqualFold(string(args[2]), "sync")):
		return true
	}
	c.err(msg)
	return false
}

func cmdScriptFlush(c *conn, args [][]byte) {
	if !c.flushMode(args, "ERR SCRIPT FLUSH only support SYNC|ASYNC option") {
		return
	}
	s := c.srv.scripts
	s.mu.Lock()
	s.scripts = map[string]*evalScript{}
	s.mu.Unlock()
	c.out.OK()
}

func cmdScriptHelp(c *conn, _ [][]byte) {
	lines := []string{
		"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
		"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache.",
		"KILL", "    Kill the currently executing Lua script.",
		"LOAD <script>", "    Load a script into the scripts cache without executing it.",
		"HELP", "    Prints this help.",
	}
	c.out.Array(len(lines))
	for _, l := range lines {
		c.out.Simple(l)
	}
}

// --- FUNCTION and FCALL ---

// parseLibraryHeader reads "#!lua name=<lib>" on a library's first line.
func parseLibraryHeader(code string) (string, string) {
	if !strings.HasPrefix(code, "#!") {
		return "", "ERR Missing library metadata"
	}
	line, _, found := strings.Cut(code, "\n")
	if !found {
		return "", "ERR Invalid library metadata"
	}
	parts, ok := SplitArgs([]byte(line), nil) // Redis's sdssplitargs, as for an inline command
	if !ok || len(parts) == 0 {
		return "", "ERR Invalid library metadata"
	}
	engine := strings.TrimPrefix(string(parts[0]), "#!")
	name, named := "", false
	for _, p := range parts[1:] {
		if len(p) >= 5 && strings.EqualFold(string(p[:5]), "name=") {
			if named {
				return "", "ERR Invalid metadata value, name argument was given multiple times"
			}
			name, named = string(p[5:]), true
			continue
		}
		return "", "ERR Invalid metadata value given: " + string(p)
	}
	if !named {
		return "", "ERR Library name was not given"
	}
	if !strings.EqualFold(engine, "lua") {
		return "", "ERR Engine '" + engine + "' not found"
	}
	if !validName(name) {
		return "", "ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"
	}
	return name, ""
}

// libraryLoadTimeout bounds a library's top-level code (Redis's 500 ms).
const libraryLoadTimeout = 500 * time.Millisecond

func cmdFunctionLoad(c *conn, args [][]byte) {
	replace := false
	for _, a := range args[2 : len(args)-1] {
		if !strings.EqualFold(string(a), "replace") {
			c.err("ERR Unknown option given: " + string(a))
			return
		}
		replace = true
	}
	lib, msg := c.srv.scripts.compileLibrary(string(args[len(args)-1]))
	if msg != "" {
		c.err(msg)
		return
	}
	s := c.srv.scripts
	s.mu.Lock()
	defer s.mu.Unlock()
	if msg := s.joinLocked([]*library{lib}, replace, false); msg != "" {
		c.err(msg)
		return
	}
	c.out.BulkString(lib.name)
}

// compileLibrary compiles a library's code and runs it once in a fresh
// state, with a deadline, to learn its functions (refusing it whole if
// anything is wrong). msg is the error reply.
func (s *scripting) compileLibrary(code string) (lib *library, msg string) {
	name, msg := parseLibraryHeader(code)
	if msg != "" {
		return nil, msg
	}
	_, body, _ := strings.Cut(code, "\n")
	proto, err := compileLua("\n"+body, "user_function")
	if err != nil {
		return nil, "ERR Error compiling function: " + compileErrorText(err)
	}
	lib = &library{name: name, code: code, proto: proto}
	st := newLuaState(s)
	defer st.close()
	ctx, cancel := context.WithTimeout(context.Background(), libraryLoadTimeout)
	defer cancel()
	st.L.SetContext(ctx)
	st.loading = map[string]*libFunction{}
	fn := st.L.NewFunctionFromProto(proto)
	fn.Env = st.env
	if _, msg := st.callBare(fn); msg != "" {
		if ctx.Err() != nil {
			msg = "FUNCTION LOAD timeout"
		}
		return nil, "ERR Error registering functions: " + msg
	}
	if len(st.loading) == 0 {
		return nil, "ERR No functions registered"
	}
	lib.funcs = st.loading
	for _, f := range lib.funcs {
		f.lib = lib
	}
	return lib, ""
}

// joinLocked adds libs to the loaded libraries, all or none: a library
// already loaded is refused unless replace, a function name another
// library registers always (Redis's libraryJoin). msg is the error reply
// (FUNCTION RESTORE names a library already loaded without LOAD's quotes,
// as Redis does). s.mu held.
func (s *scripting) joinLocked(libs []*library, replace, restoring bool) (msg string) {
	libExists := func(name string) string {
		if restoring {
			return "ERR Library " + name + " already exists"
		}
		return "ERR Library '" + name + "' already exists"
	}
	replaced, named, registered := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, lib := range libs {
		if named[lib.name] {
			return "ERR Library '" + lib.name + "' already exists" // a payload's twice: as Redis's loader says it
		}
		named[lib.name] = true
		for fname := range lib.funcs {
			if registered[fname] {
				return "ERR Function " + fname + " already exists"
			}
			registered[fname] = true
		}
		if _, exists := s.libs[lib.name]; exists {
			if !replace {
				return libExists(lib.name)
			}
			replaced[lib.name] = true
		}
	}
	for _, lib := range libs {
		for fname := range lib.funcs {
			if f, ok := s.funcs[strings.ToLower(fname)]; ok && !replaced[f.lib.name] && f.lib.name != lib.name {
				return "ERR Function " + fname + " already exists"
			}
		}
	}
	for _, lib := range libs {
		if old := s.libs[lib.name]; old != nil {
			for fname := range old.funcs {
				delete(s.funcs, strings.ToLower(fname))
			}
		}
		s.libs[lib.name] = lib
		for fname, f := range lib.funcs {
			// FCALL finds a function whatever its case, as Redis's
			// case-insensitive function table does.
			s.funcs[strings.ToLower(fname)] = f
		}
	}
	s.gen++
	return ""
}

// cmdFunctionDump is FUNCTION DUMP: every library's code, in name order,
// in Redis's payload (internal/rdb).
func cmdFunctionDump(c *conn, _ [][]byte) {
	s := c.srv.scripts
	s.mu.Lock()
	libs := s.libList()
	s.mu.Unlock()
	codes := make([][]byte, len(libs))
	for i, lib := range libs {
		codes[i] = []byte(lib.code)
	}
	c.out.Bulk(rdb.DumpFunctions(codes))
}

// cmdFunctionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]:
// the payload's libraries are compiled first, then joined to the loaded
// ones all or none (FLUSH: instead of them), with Redis's errors.
func cmdFunctionRestore(c *conn, args [][]byte) {
	if len(args) > 4 {
		c.err("ERR unknown subcommand or wrong number of arguments for '" + cString(truncate(args[1], 128)) + "'. Try FUNCTION HELP.")
		return
	}
	policy := "APPEND"
	if len(args) == 4 {
		switch {
		case eq(args[3], "APPEND"), eq(args[3], "REPLACE"), eq(args[3], "FLUSH"):
			policy = strings.ToUpper(string(args[3]))
		default:
			c.err("ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, err := rdb.RestoreFunctions(args[2])
	if err != nil {
		c.err("ERR " + err.Error())
		return
	}
	s := c.srv.scripts
	libs := make([]*library, 0, len(codes))
	for _, code := range codes {
		lib, msg := s.compileLibrary(string(code))
		if msg != "" {
			c.err(msg)
			return
		}
		libs = append(libs, lib)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if policy == "FLUSH" {
		old, oldFuncs := s.libs, s.funcs
		s.libs, s.funcs = map[string]*library{}, map[string]*libFunction{}
		if msg := s.joinLocked(libs, false, true); msg != "" {
			s.libs, s.funcs = old, oldFuncs
			c.err(msg)
			return
		}
		c.out.OK()
		return
	}
	if msg := s.joinLocked(libs, policy == "REPLACE", true); msg != "" {
		c.err(msg)
		return
	}
	c.out.OK()
}

func cmdFunctionDelete(c *conn, args [][]byte) {
	s := c.srv.scripts
	s.mu.Lock()
	defer s.mu.Unlock()
	lib := s.libs[string(args[2])]
	if lib == nil {
		c.err("ERR Library not found")
		return
	}
	for fname := range lib.funcs {
		delete(s.funcs, strings.ToLower(fname))
	}
	delete(s.libs, lib.name)
	s.gen++
	c.out.OK()
}

func cmdFunctionFlush(c *conn, args [][]byte) {
	if len(args) > 3 {
		c.err("ERR unknown subcommand or wrong number of arguments for '" + string(args[1]) + "'. Try FUNCTION HELP.")
		return
	}
	if !c.flushMode(args, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option") {
		return
	}
	s := c.srv.scripts
	s.mu.Lock()
	s.libs = map[string]*library{}
	s.funcs = map[string]*libFunction{}
	s.gen++
	s.mu.Unlock()
	c.out.OK()
}

func cmdFunctionList(c *conn, args [][]byte) {
	pattern, withCode := "", false
	hasPattern := false
	for i := 2; i < len(args); i++ {
		// Redis 7.0: an option given twice is an unknown argument.
		switch {
		case !withCode && strings.EqualFold(string(args[i]), "withcode"):
			withCode = true
		case !hasPattern && strings.EqualFold(string(args[i]), "libraryname"):
			if i+1 >= len(args) {
				c.err("ERR library name argument was not given")
				return
			}
			i++
			pattern, hasPattern = string(args[i]), true
		default:
			c.err("ERR Unknown argument " + string(args[i]))
			return
		}
	}
	s := c.srv.scripts
	s.mu.Lock()
	libs := s.libList()
	s.mu.Unlock()
	if hasPattern {
		libs = slices.DeleteFunc(libs, func(l *library) bool { return !glob.Match(pattern, l.name) })
	}
	c.out.Array(len(libs))
	for _, l := range libs {
		n := 3
		if withCode {
			n++
		}
		c.out.Map(n)
		c.out.BulkString("library_name")
		c.out.BulkString(l.name)
		c.out.BulkString("engine")
		c.out.BulkString("LUA")
		c.out.BulkString("functions")
		names := make([]string, 0, len(l.funcs))
		for fname := range l.funcs {
			names = append(names, fname)
		}
		sort.Strings(names)
		c.out.Array(len(names))
		for _, fname := range names {
			f := l.funcs[fname]
			c.out.Map(3)
			c.out.BulkString("name")
			c.out.BulkString(f.name)
			c.out.BulkString("description")
			if f.hasDesc {
				c.out.BulkString(f.desc)
			} else {
				c.out.Null()
			}
			c.out.BulkString("flags")
			var fl []string
			for _, n := range scriptFlagNames {
				if f.flags&n.f != 0 {
					fl = append(fl, n.name)
				}
			}
			c.out.Set(len(fl))
			for _, x := range fl {
				c.out.BulkString(x)
			}
		}
		if withCode {
			c.out.BulkString("library_code")
			c.out.BulkString(l.code)
		}
	}
}

func cmdFunctionStats(c *conn, _ [][]byte) {
	s := c.srv.scripts
	r := s.oldestOverdue()
	s.mu.Lock()
	nlibs, nfuncs := len(s.libs), len(s.funcs)
	s.mu.Unlock()
	c.out.Map(2)
	c.out.BulkString("running_script")
	if r == nil || !r.function {
		c.out.Null()
	} else {
		c.out.Map(3)
		c.out.BulkString("name")
		c.out.BulkString(r.name)
		c.out.BulkString("command")
		c.out.Array(len(r.cmdArgs))
		for _, a := range r.cmdArgs {
			c.out.BulkString(a)
		}
		c.out.BulkString("duration_ms")
		c.out.Int(time.Since(r.started).Milliseconds())
	}
	c.out.BulkString("engines")
	c.out.Map(1)
	c.out.BulkString("LUA")
	c.out.Map(2)
	c.out.BulkString("libraries_count")
	c.out.Int(int64(nlibs))
	c.out.BulkString("functions_count")
	c.out.Int(int64(nfuncs))
}

func cmdFunctionHelp(c *conn, _ [][]byte) {
	lines := []string{
		"FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
		"LOAD [REPLACE] <FUNCTION CODE>", "    Create a new library with the given library name and code.",
		"DELETE <LIBRARY NAME>", "    Delete the given library.",
		"LIST [LIBRARYNAME PATTERN] [WITHCODE]", "    Return general information on all the libraries.",
		"STATS", "    Return information about the current function running.",
		"KILL", "    Kill the current running function.",
		"FLUSH [ASYNC|SYNC]", "    Delete all the libraries.",
		"HELP", "    Prints this help.",
	}
	c.out.Array(len(lines))
	for _, l := range lines {
		c.out.Simple(l)
	}
}

func cmdFcall(ro bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		if _, ok := parseInt(args[2]); !ok {
			c.err("ERR Bad number of keys provided")
			return
		}
		nk, ok := c.numKeys(args)
		if !ok {
			return
		}
		s := c.srv.scripts
		name := string(args[1])
		key := strings.ToLower(name)
		s.mu.Lock()
		f := s.funcs[key]
		s.mu.Unlock()
		if f == nil {
			c.err("ERR Function not found")
			return
		}
		if ro && f.flags&scriptNoWrites == 0 {
			c.err(msgROFlag)
			return
		}
		if c.scriptDeniedOOM(f.flags) {
			c.rejectCmd(lookupCommand(args[0]), msgOOM)
			return
		}
		keys, argv := args[3:3+nk], args[3+nk:]
		run := &scriptRun{c: c, name: name, function: true, readOnly: ro || f.flags&scriptNoWrites != 0, resp: 2}
		run.cmdArgs = make([]string, len(args))
		for i, a := range args {
			run.cmdArgs[i] = string(a)
		}
		c.runScript(run, keys, func(st *luaState) (lua.LValue, string) {
			fn := st.fns[f.name]
			if fn == nil { // deleted or replaced between the lookup and now
				return nil, "ERR Function not found"
			}
			L := st.L
			return st.call(fn, luaStrings(L, keys), luaStrings(L, argv))
		})
	}
}
