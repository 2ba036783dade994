package resp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/resp"
)

// scriptOracle is run on a standalone redis-server 7.0 and on a lone Zaris
// node (a one-node cluster: scripts may touch any key); replies must be
// byte-identical. Left out on purpose: Lua syntax error texts (gopher-lua's
// parser words them differently; the "ERR Error compiling script" prefix
// is checked in TestScriptErrors), tostring of non-integral numbers
// (gopher-lua prints the shortest round-trip form, Lua 5.1 "%.14g"), and
// the iteration order of Lua tables with string keys (cjson.encode of
// several keys, map replies).
var scriptOracle = [][]string{
	// Lua → RESP conversions
	{"EVAL", "return 1", "0"}, {"EVAL", "return 3.99", "0"}, {"EVAL", "return -3.99", "0"}, {"EVAL", "return 'x'", "0"},
	{"EVAL", "return true", "0"}, {"EVAL", "return false", "0"}, {"EVAL", "return nil", "0"}, {"EVAL", "return {}", "0"},
	{"EVAL", "return {1,2,3.7,'x',nil,4}", "0"}, {"EVAL", "return {1,{2,{3,'a'}},false,true}", "0"},
	{"EVAL", "return {ok='fine'}", "0"}, {"EVAL", "return {err='bad'}", "0"}, {"EVAL", "return {err='MY code here'}", "0"},
	{"EVAL", "return {ok='a\\r\\nb'}", "0"}, {"EVAL", "return {err='x\\ny'}", "0"}, {"EVAL", "return {ok=1}", "0"},
	{"EVAL", "return redis.error_reply('E2 x')", "0"}, {"EVAL", "return redis.error_reply('bad')", "0"},
	{"EVAL", "return redis.error_reply('-WRONGTYPE y')", "0"}, {"EVAL", "return redis.status_reply('S')", "0"},
	{"EVAL", "return {double=3.5}", "0"}, {"EVAL", "return 1e300", "0"}, {"EVAL", "return -0.5", "0"},
	{"EVAL", "return redis.sha1hex('')", "0"}, {"EVAL", "return redis.sha1hex('abc')", "0"},
	{"EVAL", "return {KEYS[1],ARGV[1],ARGV[2],#KEYS,#ARGV}", "1", "k", "a", "b"},
	{"EVAL", "return 1", "-1"}, {"EVAL", "return 1", "2", "a"}, {"EVAL", "return 1", "x"}, {"EVAL", "return 1"},
	{"EVAL", "return 1", "99999999999999999999"},
	// RESP → Lua conversions through redis.call
	{"EVAL", "return redis.call('set',KEYS[1],'v')", "1", "s"}, {"EVAL", "return redis.call('get',KEYS[1])", "1", "s"},
	{"EVAL", "return redis.call('get',KEYS[1])", "1", "nokey"}, {"EVAL", "return type(redis.call('get',KEYS[1]))", "1", "nokey"},
	{"EVAL", "return redis.call('incr',KEYS[1])", "1", "n"}, {"EVAL", "return redis.call('incrby',KEYS[1], 5)", "1", "n"},
	{"EVAL", "return redis.call('incrby',KEYS[1], 2.0)", "1", "n"}, {"EVAL", "return redis.call('set',KEYS[1], 1.5)", "1", "f"},
	{"EVAL", "return redis.call('get',KEYS[1])", "1", "f"}, {"EVAL", "return redis.call('set',KEYS[1], 123456789012345)", "1", "f"},
	{"EVAL", "return redis.call('get',KEYS[1])", "1", "f"},
	{"EVAL", "return redis.call('rpush',KEYS[1],'a','b','c')", "1", "l"}, {"EVAL", "return redis.call('lrange',KEYS[1],0,-1)", "1", "l"},
	{"EVAL", "local t = redis.call('set',KEYS[1],'v') return t.ok", "1", "s"}, {"EVAL", "return redis.call('ping')", "0"},
	{"EVAL", "return redis.call('hgetall',KEYS[1])", "1", "nokey"},
	{"EVAL", "redis.call('hset',KEYS[1],'f','v') return redis.call('hgetall',KEYS[1])", "1", "h"},
	{"EVAL", "return redis.call('exists',KEYS[1],KEYS[2])", "2", "s", "nokey"},
	// errors raised by redis.call and returned by redis.pcall
	{"EVAL", "return redis.call('incr',KEYS[1])", "1", "s"}, {"EVAL", "return redis.pcall('incr',KEYS[1])", "1", "s"},
	{"EVAL", "local t = redis.pcall('incr',KEYS[1]) return type(t)..':'..t.err", "1", "s"},
	{"EVAL", "return redis.call('lpush',KEYS[1],'x')", "1", "s"}, {"EVAL", "return redis.pcall('lpush',KEYS[1],'x')", "1", "s"},
	{"EVAL", "return redis.call('nosuch')", "0"}, {"EVAL", "return redis.pcall('nosuch')", "0"},
	{"EVAL", "return redis.call('get')", "0"}, {"EVAL", "return redis.pcall('get')", "0"},
	{"EVAL", "return redis.call()", "0"}, {"EVAL", "return redis.pcall()", "0"},
	{"EVAL", "return redis.call('get',{})", "0"}, {"EVAL", "return redis.pcall('get',nil)", "0"},
	{"EVAL", "return redis.call('eval','return 1','0')", "0"}, {"EVAL", "return redis.call('multi')", "0"},
	{"EVAL", "\n\nreturn redis.call('incr',KEYS[1])", "1", "s"},
	// errors raised by the script
	{"EVAL", "error('boom')", "0"}, {"EVAL", "error({err='MY thing'})", "0"}, {"EVAL", "error({err='MY thing'}, 0)", "0"},
	{"EVAL", "\nerror('on two')", "0"}, {"EVAL", "return foo", "0"}, {"EVAL", "x = 1", "0"}, {"EVAL", "return os", "0"},
	{"EVAL", "return loadfile", "0"}, {"EVAL", "return dofile", "0"}, {"EVAL", "return io", "0"},
	{"EVAL", "local ok, e = pcall(function() error({err='X y'}) end) return e.err", "0"},
	{"EVAL", "local ok, e = pcall(redis.call, 'nosuch') return {tostring(ok), e.err}", "0"},
	{"EVAL", "local ok = pcall(error, 'z') return tostring(ok)", "0"},
	{"EVAL", "redis.setresp(4)", "0"}, {"EVAL", "string.foo = 1", "0"}, {"EVAL", "redis.call = nil", "0"},
	// read-only scripts
	{"EVAL_RO", "return redis.call('get',KEYS[1])", "1", "s"}, {"EVAL_RO", "return redis.call('set',KEYS[1],'x')", "1", "s"},
	{"EVAL_RO", "return redis.pcall('set',KEYS[1],'x')", "1", "s"},
	{"EVAL", "#!lua flags=no-writes\nreturn redis.call('set',KEYS[1],'x')", "1", "s"},
	{"EVAL", "#!lua flags=no-writes\nreturn redis.call('get',KEYS[1])", "1", "s"},
	{"EVAL_RO", "#!lua\nreturn 1", "0"}, {"EVAL", "#!lua flags=bogus\nreturn 1", "0"}, {"EVAL", "#!nope\nreturn 1", "0"},
	// the cache
	{"SCRIPT", "LOAD", "return 'loaded'"}, {"EVALSHA", "db5c2ad0ab6f5b5a67e6b5dc9a3ffd0f3de7ce7e", "0"},
	{"EVALSHA", "DB5C2AD0AB6F5B5A67E6B5DC9A3FFD0F3DE7CE7E", "0"}, {"EVALSHA_RO", "db5c2ad0ab6f5b5a67e6b5dc9a3ffd0f3de7ce7e", "0"},
	{"EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"}, {"EVALSHA", "short", "0"},
	{"SCRIPT", "EXISTS", "db5c2ad0ab6f5b5a67e6b5dc9a3ffd0f3de7ce7e", "ffffffffffffffffffffffffffffffffffffffff"},
	{"EVAL", "return 'cached by eval'", "0"}, {"SCRIPT", "EXISTS", "5f4b4e4cd6a9fc8da1e6fe4d2ac3a5d1e1dcb0fe"},
	{"SCRIPT", "FLUSH", "BOGUS"}, {"SCRIPT", "FLUSH"}, {"SCRIPT", "FLUSH", "ASYNC"},
	{"EVALSHA", "db5c2ad0ab6f5b5a67e6b5dc9a3ffd0f3de7ce7e", "0"}, {"SCRIPT", "KILL"}, {"SCRIPT", "NOPE"}, {"SCRIPT"},
	{"FUNCTION", "KILL"},
	// libraries
	{"EVAL", "return cjson.encode({1,2,'x',{a=1}})", "0"}, {"EVAL", "return cjson.encode({})", "0"},
	{"EVAL", "return cjson.encode('a/b\"c')", "0"}, {"EVAL", "return cjson.encode({[1]=1,[3]=3})", "0"},
	{"EVAL", "return cjson.decode('[1,2,{\"a\":3}]')[3].a", "0"}, {"EVAL", "return cjson.decode('{\"a\":[1,2,3]}').a", "0"},
	{"EVAL", "return tostring(cjson.decode('[null]')[1] == cjson.null)", "0"},
	{"EVAL", "return cjson.encode(cjson.decode('{\"k\":[true,false,null,1.5,\"s\"]}'))", "0"},
	{"EVAL", "return {bit.band(0xff, 0x0f), bit.bor(1,2,4), bit.bxor(5,1), bit.bnot(0), bit.lshift(1,31), bit.rshift(-1,28), bit.arshift(-16,2), bit.tohex(255), bit.tohex(-1, -4), bit.tobit(4294967297)}", "0"},
	{"EVAL", "return {string.format('%d-%s', 5, 'x'), string.rep('ab', 3), math.floor(7.9), table.concat({'a','b'}, ','), #'xyz', tonumber('12')}", "0"},
	{"EVAL", "return {redis.REDIS_VERSION_NUM > 0, redis.LOG_WARNING}", "0"}, {"EVAL", "redis.log(redis.LOG_WARNING, 'hi') return 1", "0"},
	{"EVAL", "return redis.replicate_commands()", "0"}, {"EVAL", "redis.setresp(3) return redis.call('ping')", "0"},
	{"EVAL", "redis.setresp(3) return redis.call('get', KEYS[1])", "1", "nokey"},
	{"EVAL", "local t = {} for i = 1, 100 do t[i] = i * 2 end return t", "0"},
	// functions
	{"FUNCTION", "FLUSH"}, {"FCALL", "nofunc", "0"},
	{"FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('myset', function(keys, args) return redis.call('set', keys[1], args[1]) end)\n" +
		"redis.register_function{function_name='myget', callback=function(keys) return redis.call('get', keys[1]) end, flags={'no-writes'}}\n" +
		"redis.register_function('myerr', function(keys) return redis.call('incr', keys[1]) end)"},
	{"FUNCTION", "LOAD", "#!lua name=mylib\nredis.register_function('other', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=lib2\nredis.register_function('myset', function() return 1 end)"},
	{"FUNCTION", "LOAD", "return 1"}, {"FUNCTION", "LOAD", "#!lua\nreturn 1"}, {"FUNCTION", "LOAD", "#!lua name=bad-name\nreturn 1"},
	{"FUNCTION", "LOAD", "#!lua name=empty\nlocal x = 1"}, {"FUNCTION", "LOAD", "#!lua name=x foo=bar\nreturn 1"},
	{"FUNCTION", "LOAD", "#!lua name=badfn\nredis.register_function('a-b', function() end)"},
	{"FCALL", "myset", "1", "fk", "fv"}, {"FCALL", "myget", "1", "fk"}, {"FCALL_RO", "myget", "1", "fk"},
	{"FCALL_RO", "myset", "1", "fk", "x"}, {"FCALL", "myerr", "1", "fk"}, {"FCALL", "myset", "x"}, {"FCALL", "myset", "5", "a"},
	{"FUNCTION", "LOAD", "REPLACE", "#!lua name=mylib\nredis.register_function('myset', function(keys, args) return 'replaced' end)"},
	{"FCALL", "myset", "1", "fk", "fv"}, {"FCALL", "myget", "1", "fk"},
	{"FUNCTION", "LIST"}, {"FUNCTION", "LIST", "WITHCODE"}, {"FUNCTION", "LIST", "LIBRARYNAME", "nomatch*"},
	{"FUNCTION", "DELETE", "nolib"}, {"FUNCTION", "DELETE", "mylib"}, {"FCALL", "myset", "0"}, {"FUNCTION", "LIST"},
	{"FUNCTION", "FLUSH", "SYNC"}, {"FUNCTION", "FLUSH", "NOPE"},
}

func TestScriptSameRepliesAsRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	for _, proto := range []string{"2", "3"} {
		t.Run("RESP"+proto, func(t *testing.T) {
			want := dialRaw(t, redisAddr)
			got := dialRaw(t, n.RESPAddr().String())
			require.Equal(t, want.do("FLUSHALL"), got.do("FLUSHALL"))
			if proto == "3" {
				want.do("HELLO", "3")
				got.do("HELLO", "3")
			}
			var diffs []string
			for _, c := range scriptOracle {
				w, g := want.do(c...), got.do(c...)
				if w != g {
					diffs = append(diffs, fmt.Sprintf("%q:\n    redis: %q\n    zaris: %q", c, w, g))
				}
			}
			require.Empty(t, diffs, "replies differ from Redis %s:\n%s", proto, strings.Join(diffs, "\n"))
		})
	}
}

// A script past the time limit: other clients get BUSY (polled, no
// sleep), SCRIPT KILL stops a read-only one (its caller gets Redis's
// error), the node serves again; one that wrote is UNKILLABLE and runs to
// its end.
func TestScriptBusyAndKill(t *testing.T) {
	n, _ := startCustom(t, resp.Config{ScriptTimeLimit: 50 * time.Millisecond})
	addr := n.RESPAddr().String()
	t.Cleanup(func() { // a failed check must not leave a script spinning: the node could not stop
		r := dialRaw(t, addr)
		r.do("SCRIPT", "KILL")
		r.do("FUNCTION", "KILL")
	})
	other := dialRaw(t, addr)
	require.Equal(t, "-NOTBUSY No scripts in execution right now.\r\n", other.do("SCRIPT", "KILL"))

	looper := dialRaw(t, addr)
	looper.send(cmd("EVAL", "local i = 0\nwhile true do i = i + 1 end", "0"))
	waitFor(t, 10*time.Second, "BUSY for another client", func() bool {
		// PING: a command on a key of a segment the script holds would wait
		// for the lock (it came before the limit passed).
		return other.do("PING") == "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	})
	require.Equal(t, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n", other.do("GET", "x"))
	// A transaction's EXEC refused while busy discards it (Redis's tcl
	// suite, "EXEC and script timeout": a client left in MULTI answered
	// BUSY to everything after).
	tx := dialRaw(t, addr)
	require.Equal(t, "+OK\r\n", tx.do("MULTI")) // MULTI may run while busy, as in Redis
	require.Equal(t, "-EXECABORT Transaction discarded because of: BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n", tx.do("EXEC"))
	require.Equal(t, "-ERR DISCARD without MULTI\r\n", tx.do("DISCARD"), "the transaction was discarded")
	require.Equal(t, "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n", other.do("FUNCTION", "KILL"))
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	reply := looper.reply()
	require.True(t, strings.HasPrefix(reply, "-ERR Script killed by user with SCRIPT KILL... script: "), reply)
	require.True(t, strings.HasSuffix(reply, ", on @user_script:2.\r\n"), reply)
	require.Equal(t, "$-1\r\n", other.do("GET", "x"))
	require.Equal(t, "+PONG\r\n", looper.do("PING"), "the killed script's connection serves on")

	// A script that wrote cannot be killed; it ends by itself.
	looper.send(cmd("EVAL", "redis.call('set', KEYS[1], 'w')\nlocal n, limit = 0, tonumber(ARGV[1])\nwhile n < limit do n = n + 1 end\nreturn n", "1", "w", "5000000"))
	sawBusy := false
	waitFor(t, 60*time.Second, "the writing script ends", func() bool {
		switch r := other.do("SCRIPT", "KILL"); r {
		case "-UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.\r\n":
			sawBusy = true
			return false
		case "-NOTBUSY No scripts in execution right now.\r\n":
			return sawBusy
		default:
			t.Fatalf("SCRIPT KILL: %q", r)
			return true
		}
	})
	require.Equal(t, ":5000000\r\n", looper.reply())
	require.Equal(t, "$1\r\nw\r\n", other.do("GET", "w"))

	// A function past the limit: FUNCTION KILL, and SCRIPT KILL refuses.
	require.Equal(t, "$3\r\nspn\r\n", other.do("FUNCTION", "LOAD", "#!lua name=spn\nredis.register_function{function_name='spin', callback=function() while true do end end, flags={'no-writes'}}"))
	looper.send(cmd("FCALL", "spin", "0"))
	waitFor(t, 10*time.Second, "BUSY for another client", func() bool {
		return other.do("PING") == "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n"
	})
	require.Equal(t, "-BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE.\r\n", other.do("SCRIPT", "KILL"))
	require.Equal(t, "+OK\r\n", other.do("FUNCTION", "KILL"))
	require.Equal(t, "-ERR Script killed by user with SCRIPT KILL... script: spin, on @user_function:2.\r\n", looper.reply())
	require.Equal(t, "+PONG\r\n", other.do("PING"))
}

// Hostile scripts: none takes the node down, each gets an answer.
func TestScriptHostile(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	big, err := newClient(t, n, func(o *redis.Options) { o.ReadTimeout = time.Minute }).Eval(ctxT(t), "local t = {} for i = 1, 1000000 do t[i] = i end return t", nil).Slice()
	require.NoError(t, err)
	require.Len(t, big, 1000000)
	require.Equal(t, int64(1), big[0])
	require.Equal(t, int64(1000000), big[999999])
	require.Equal(t, "*2\r\n$-1\r\n$13\r\nuser_script:1\r\n", r.do("EVAL", "local ok, e = pcall(function() error('boom') end) return {ok, string.sub(e, 1, 13)}", "0"))
	require.Equal(t, "$1\r\nx\r\n", r.do("EVAL", "local ok, e = pcall(function() error({err='x'}) end) return e", "0"))
	selfRef := r.do("EVAL", "local t = {} t[1] = t return t", "0")
	require.True(t, strings.HasSuffix(selfRef, "-ERR reached lua stack limit\r\n"), "%.60q", selfRef)
	deep := r.do("EVAL", "local function f(n) return f(n + 1) + 1 end return f(1)", "0")
	require.True(t, strings.HasPrefix(deep, "-ERR "), deep)
	rep := r.do("EVAL", "return string.rep('x', 1073741824)", "0")
	require.True(t, strings.HasPrefix(rep, "-ERR user_script:1: resulting string too large script: "), rep)
	require.Equal(t, ":1\r\n", r.do("EVAL", "return redis.call('rpush', KEYS[1], string.rep('y', 100))", "1", "l"))
	for _, s := range []string{
		"return redis.call('setrange', KEYS[1], 9223372036854775807, 'x')",
		"return redis.call('lrange', KEYS[1], -9223372036854775808, 9223372036854775807)",
		"return redis.call('expire', KEYS[1], 9223372036854775807)",
		"return redis.call('set', KEYS[1], 'v', 'EX', 1e308)",
		"return redis.call('incrbyfloat', KEYS[1], 0/0)",
		"return redis.call(string.rep('x', 100000))",
		"return cjson.decode(string.rep('[', 100000))",
		"return cjson.encode(setmetatable({}, {__index = function() error('x') end}))",
		"getmetatable('').__index.upper = nil",
		"rawset(_G, 'leak', 1) return 1",
	} {
		require.NotContains(t, r.do("EVAL", s, "1", "h"), "internal error", s)
	}
	require.True(t, strings.HasPrefix(r.do("EVAL", "return leak", "0"), "-ERR user_script:1: Script attempted to access nonexistent global variable 'leak' script: "),
		"a rawset into the globals does not outlive its script")
	require.Equal(t, "+PONG\r\n", r.do("PING"))
}
