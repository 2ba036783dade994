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
// is checked in TestScriptErrors), non-integral numbers turned into text
// by concatenation or string.format's %s (gopher-lua prints the shortest
// round-trip form, Lua 5.1 "%.14g"; tostring is Lua's), and
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
	// RESP3 maps and sets reach the script as {map=…} and {set=…}
	{"EVAL", "redis.call('hset', KEYS[1], 'field', 'value') redis.setresp(3) return redis.call('hgetall', KEYS[1])", "1", "h3"},
	{"EVAL", "redis.setresp(3) local t = redis.call('hgetall', KEYS[1]) return {type(t.map), t.map.field, type(t.field)}", "1", "h3"},
	{"EVAL", "redis.setresp(2) return redis.call('hgetall', KEYS[1])", "1", "h3"},
	{"EVAL", "redis.call('sadd', KEYS[1], 'm') redis.setresp(3) local t = redis.call('smembers', KEYS[1]) return {type(t.set), tostring(t.set.m)}", "1", "s3"},
	{"EVAL", "redis.setresp(3) return redis.call('smembers', KEYS[1])", "1", "s3"},
	// blocking commands: refused (Redis 7.0's noscript), or run without blocking
	{"EVAL", "return redis.pcall('blpop', KEYS[1], 0)", "1", "bl"}, {"EVAL", "return redis.pcall('brpop', KEYS[1], 0)", "1", "bl"},
	{"EVAL", "return redis.pcall('brpoplpush', KEYS[1], KEYS[1], 0)", "1", "bl"},
	{"EVAL", "return redis.pcall('blmove', KEYS[1], KEYS[1], 'LEFT', 'LEFT', 0)", "1", "bl"},
	{"EVAL", "return redis.pcall('bzpopmin', KEYS[1], 0)", "1", "bl"}, {"EVAL", "return redis.pcall('bzpopmax', KEYS[1], 0)", "1", "bl"},
	{"EVAL", "return redis.pcall('blmpop', 0, 1, KEYS[1], 'LEFT')", "1", "bl"}, {"EVAL", "return redis.pcall('bzmpop', 0, 1, KEYS[1], 'MIN')", "1", "bl"},
	{"EVAL", "return redis.pcall('xread', 'STREAMS', KEYS[1], '$')", "1", "bs"},
	{"EVAL", "return redis.pcall('xread', 'BLOCK', 0, 'STREAMS', KEYS[1], '$')", "1", "bs"},
	{"EVAL", "redis.call('xgroup', 'create', KEYS[1], 'g', '$', 'MKSTREAM') return redis.pcall('xreadgroup', 'GROUP', 'g', 'c', 'BLOCK', 0, 'STREAMS', KEYS[1], '>')", "1", "bs"},
	{"EVAL", "return redis.pcall('xreadgroup', 'GROUP', 'g', 'c', 'STREAMS', KEYS[1], '>')", "1", "bs"},
	// tostring of numbers as Lua 5.1 prints them
	{"EVAL", "return {tostring(0/0), tostring(-(0/0)), tostring(1/0), tostring(-1/0), tostring(1/3), tostring(1e15), tostring(2^53), tostring(-0), tostring(1e100), tostring(0.1), tostring(-2.5), tostring(123)}", "0"},
	{"EVAL", "return {tostring(math.huge), tostring(-math.huge), math.huge > 1e308, tostring(math.huge == 1/0)}", "0"},
	// math.random is Redis's generator: seeded, the same numbers
	{"EVAL", "math.randomseed(0) return {tostring(math.random()), math.random(10), math.random(5, 7), math.random(-3, -3)}", "0"},
	{"EVAL", "math.randomseed(ARGV[1]) return tostring(math.random())", "0", "10"},
	{"EVAL", "math.randomseed(2^40) local a = math.random() math.randomseed(-5.7) return {tostring(a), tostring(math.random())}", "0"},
	{"EVAL", "return math.random(0)", "0"}, {"EVAL", "return math.random(3, 2)", "0"}, {"EVAL", "return math.random(1, 2, 3)", "0"},
	{"EVAL", "math.randomseed('x')", "0"},
	// redis.acl_check_cmd as the default user
	{"EVAL", "return {redis.acl_check_cmd('set', 'k', 'v'), redis.acl_check_cmd('config'), redis.acl_check_cmd('config', 'get', 'x')}", "0"},
	{"EVAL", "return redis.acl_check_cmd('config', 'nope')", "0"}, {"EVAL", "return redis.acl_check_cmd('nosuch')", "0"},
	{"EVAL", "return redis.acl_check_cmd()", "0"}, {"EVAL", "return redis.acl_check_cmd('get', {})", "0"},
	// global protection
	{"EVAL", "setmetatable(_G, {})", "0"}, {"EVAL", "local g = getmetatable(_G) g.__index = {}", "0"},
	{"EVAL", "cjson.encode = function() return 1 end", "0"}, {"EVAL", "return type(getmetatable(_G))", "0"},
	// cjson: lua-cjson 2.1.0's settings, limits and errors
	{"EVAL", "return {cjson.encode_max_depth(), cjson.decode_max_depth(), cjson.encode_number_precision(), tostring(cjson.encode_keep_buffer()), tostring(cjson.encode_invalid_numbers()), tostring(cjson.decode_invalid_numbers())}", "0"},
	{"EVAL", "local a, b, c = cjson.encode_sparse_array() return {tostring(a), b, c}", "0"},
	{"EVAL", "return {cjson._NAME, cjson._VERSION, type(cjson.new), cjson.new().encode({1})}", "0"},
	{"EVAL", "local ok, e = pcall(cjson.encode, {[true] = 1}) return e", "0"},
	{"EVAL", "local ok, e = pcall(cjson.encode, {f = cjson.encode}) return e", "0"},
	{"EVAL", "local ok, e = pcall(cjson.encode, {1/0}) return e", "0"},
	{"EVAL", "local ok, e = pcall(cjson.encode, {[1] = 1, [20] = 2}) return e", "0"},
	{"EVAL", "return cjson.encode({[1] = 1, [2] = 2, [4] = 4})", "0"},
	{"EVAL", "cjson.encode_sparse_array(true) local s = cjson.encode({[1] = 1, [20] = 2}) cjson.encode_sparse_array(false) return s", "0"},
	{"EVAL", "cjson.encode_invalid_numbers(true) local s = cjson.encode({0/0, 1/0, -1/0}) cjson.encode_invalid_numbers(false) return s", "0"},
	{"EVAL", "cjson.encode_invalid_numbers('null') local s = cjson.encode({0/0, 1/0}) cjson.encode_invalid_numbers(false) return s", "0"},
	{"EVAL", "cjson.encode_number_precision(3) local s = cjson.encode({3.14159, 12345.6, 7}) cjson.encode_number_precision(14) return s", "0"},
	{"EVAL", "cjson.encode_max_depth(1) local ok, e = pcall(cjson.encode, {{1}}) cjson.encode_max_depth(1000) return e", "0"},
	{"EVAL", "cjson.decode_max_depth(1) local ok, e = pcall(cjson.decode, ARGV[1]) cjson.decode_max_depth(1000) return e", "0", `{"obj": {"array": [1,2,3,4]}}`},
	{"EVAL", "local ok, e = pcall(cjson.encode_max_depth, 0) return tostring(ok)", "0"},
	{"EVAL", "local ok, e = pcall(cjson.encode_sparse_array, 'x') return tostring(ok)", "0"},
	{"EVAL", "return cjson.encode(cjson.decode(ARGV[1]))", "0", `[0x1F, -0x10, 1e2, 01, 1., +1, "\u00e9\ud83d\ude00\/\n", {"a": null}]`},
	{"EVAL", "return tostring(cjson.decode('[-Infinity]')[1])", "0"},
	{"EVAL", "cjson.decode_invalid_numbers(false) local ok, e = pcall(cjson.decode, '[0x10]') cjson.decode_invalid_numbers(true) return e", "0"},
	{"EVAL", "cjson.decode_invalid_numbers(false) local ok, e = pcall(cjson.decode, '[inf]') cjson.decode_invalid_numbers(true) return e", "0"},
	// out of memory (maxmemory 1): a script without a shebang fails at its
	// first denyoom command; one with flags does not start unless it is
	// no-writes or allow-oom
	{"CONFIG", "SET", "maxmemory", "1"},
	{"EVAL", "return redis.call('set', KEYS[1], 'y')", "1", "oom"},
	{"EVAL", "local t = redis.pcall('set', KEYS[1], 'y') return t.err", "1", "oom"},
	{"EVAL", "return redis.call('get', KEYS[1])", "1", "oom"}, {"EVAL", "return redis.call('del', KEYS[1])", "1", "oom"},
	{"EVAL", "#!lua\nreturn 1", "0"}, {"EVAL", "#!lua flags=no-writes\nreturn 1", "0"},
	{"EVAL", "#!lua flags=allow-oom\nreturn redis.call('set', KEYS[1], 'y')", "1", "oom"},
	{"CONFIG", "SET", "maxmemory", "0"},
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
	// a library's top-level code sees only register_function, log and the version
	{"FUNCTION", "LOAD", "#!lua name=l1\nmath.random()"}, {"FUNCTION", "LOAD", "#!lua name=l2\nredis.call('ping')"},
	{"FUNCTION", "LOAD", "#!lua name=l3\nredis.setresp(3)"}, {"FUNCTION", "LOAD", "#!lua name=l4\nlocal x = string"},
	{"FUNCTION", "LOAD", "#!lua name=l5\nredis.log(redis.LOG_NOTICE, 'x') redis.register_function('f5', function() return {redis.REDIS_VERSION_NUM > 0, string.upper('a'), math.floor(1.5)} end)"},
	{"FCALL", "f5", "0"},
	{"FUNCTION", "LOAD", "#!lua name=l6\nredis.register_function('f6', function() return redis.register_function('x', function() end) end)"},
	// register_function's argument errors
	{"FUNCTION", "LOAD", "#!lua name=r1\nredis.register_function(1, function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=r2\nredis.register_function({}, function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=r3\nredis.register_function('f', 'x')"},
	{"FUNCTION", "LOAD", "#!lua name=r4\nredis.register_function('f')"},
	{"FUNCTION", "LOAD", "#!lua name=r5\nredis.register_function{function_name={}, callback=function() end}"},
	{"FUNCTION", "LOAD", "#!lua name=r6\nredis.register_function{function_name='f', callback='x'}"},
	{"FUNCTION", "LOAD", "#!lua name=r7\nredis.register_function{function_name='f', callback=function() end, description={}}"},
	{"FUNCTION", "LOAD", "#!lua name=r8\nredis.register_function{function_name='f'}"},
	{"FUNCTION", "LOAD", "#!lua name=r9\nredis.register_function{callback=function() end}"},
	{"FUNCTION", "LOAD", "#!lua name=r10\nredis.register_function{function_name='f', callback=function() end, flags='x'}"},
	{"FUNCTION", "LOAD", "#!lua name=r11\nredis.register_function{function_name='f', callback=function() end, flags={'bogus'}}"},
	{"FUNCTION", "LOAD", "#!lua name=r12\nredis.register_function{function_name='f', callback=function() end, other=1}"},
	{"FUNCTION", "LOAD", "#!lua name=r13\nredis.register_function('a', 'b', 'c')"},
	{"FUNCTION", "LOAD", "#!lua name=r14\nredis.register_function{FUNCTION_NAME='f14', CALLBACK=function() return 14 end, DESCRIPTION=7}"},
	{"FCALL", "f14", "0"}, {"FCALL", "F14", "0"}, {"FUNCTION", "LIST", "LIBRARYNAME", "r14"},
	{"FUNCTION", "LOAD", "#!lua name=r15\nredis.register_function('F14', function() return 15 end)"},
	{"FUNCTION", "LOAD", "#!lua name=r16\nredis.register_function('g', function() return 1 end) redis.register_function('G', function() return 2 end)"},
	{"FUNCTION", "LIST", "LIBRARYNAME"}, {"FUNCTION", "LIST", "LIBRARYNAME", "a", "LIBRARYNAME", "b"},
	{"FUNCTION", "LIST", "WITHCODE", "WITHCODE"}, {"FUNCTION", "FLUSH", "SYNC", "extra"},
	{"FUNCTION", "FLUSH"},
	// library metadata: Redis's sdssplitargs words
	{"FUNCTION", "LOAD", "#! name=test\nredis.register_function('foo', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=foo name=bar\nredis.register_function('foo', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=\"q1\"\nredis.register_function('q1', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua NAME='q2'\nredis.register_function('q2', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=\"q3\nredis.register_function('q3', function() return 1 end)"},
	{"FUNCTION", "LOAD", "#!lua name=\"q\"x\nreturn 1"}, {"FUNCTION", "LOAD", "#!lua name=q5"},
	{"FUNCTION", "LOAD", "#!nope name=q6\nreturn 1"}, {"FUNCTION", "LOAD", "#!lua name=a-b\nreturn 1"},
	{"FUNCTION", "LOAD", "#!lua name=\"\\x71\\x37\"\nredis.register_function('q7', function() return 1 end)"},
	{"FUNCTION", "FLUSH"},
}

// cjsonParseErrors are texts cjson.decode refuses; the message names the
// token and the character as lua-cjson's does.
var cjsonParseErrors = []string{
	`[1,2`, `{1:2}`, `[1] x`, ``, `"abc`, `[1e5x]`, `-`, `[.5]`, `{"a":1,}`, `{"a" 1}`, `[1 2]`, `[truex]`,
	`[nanx]`, `"a\x"`, `"\ud800"`, `"\udc00x"`, `"\u12"`, `["a" "b"]`, `[1,]`, `tru`, "\f1", `{"a":[1,{"b":[}]}`,
	"a\x00b", "[1]\x00x",
}

func init() {
	for _, text := range cjsonParseErrors {
		scriptOracle = append(scriptOracle, []string{"EVAL", "local ok, e = pcall(cjson.decode, ARGV[1]) return {tostring(ok), e}", "0", text})
	}
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

// scriptErrorCounts is what INFO says about errors after one command:
// the errorstat_ lines, total_error_replies, and calls / rejected_calls /
// failed_calls of the commands named.
func scriptErrorCounts(t *testing.T, c *rawConn, cmds ...string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(c.do("INFO", "errorstats"), "\r\n") {
		if strings.HasPrefix(line, "errorstat_") {
			out = append(out, line)
		}
	}
	for _, line := range strings.Split(c.do("INFO", "stats"), "\r\n") {
		if strings.HasPrefix(line, "total_error_replies:") {
			out = append(out, line)
		}
	}
	stats := c.do("INFO", "commandstats")
	for _, name := range cmds {
		for _, line := range strings.Split(stats, "\r\n") {
			if !strings.HasPrefix(line, "cmdstat_"+name+":") {
				continue
			}
			var keep []string
			for _, f := range strings.Split(strings.TrimPrefix(line, "cmdstat_"+name+":"), ",") {
				if k, _, _ := strings.Cut(f, "="); k == "calls" || k == "rejected_calls" || k == "failed_calls" {
					keep = append(keep, f)
				}
			}
			out = append(out, name+":"+strings.Join(keep, ","))
		}
	}
	return out
}

// A script's errors are counted once, as Redis counts them: a command's
// error when the command answers it (rejected or failed), not again when
// the script hands it on; an error the script makes itself
// (redis.error_reply, error()) when the script answers it.
func TestScriptErrorStatsLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	want := dialRaw(t, redisAddr)
	got := dialRaw(t, n.RESPAddr().String())
	cases := []struct {
		setup  [][]string
		script []string
		cmds   []string
	}{
		{script: []string{"EVAL", "return redis.error_reply('MY_ERR_CODE custom msg')", "0"}, cmds: []string{"eval"}},
		{script: []string{"EVAL", "return redis.error_reply('')", "0"}, cmds: []string{"eval"}},
		{script: []string{"EVAL", "return {err='OWN text'}", "0"}, cmds: []string{"eval"}},
		{script: []string{"EVAL", "error('boom')", "0"}, cmds: []string{"eval"}},
		{setup: [][]string{{"SET", "s", "x"}}, script: []string{"EVAL", "return redis.call('incr', KEYS[1])", "1", "s"}, cmds: []string{"eval", "incr"}},
		{setup: [][]string{{"SET", "s", "x"}}, script: []string{"EVAL", "return redis.pcall('incr', KEYS[1])", "1", "s"}, cmds: []string{"eval", "incr"}},
		{setup: [][]string{{"SET", "s", "x"}}, script: []string{"EVAL", "local t = redis.pcall('incr', KEYS[1]) return 1", "1", "s"}, cmds: []string{"eval", "incr"}},
		{setup: [][]string{{"CONFIG", "SET", "maxmemory", "1"}}, script: []string{"EVAL", "return redis.call('set', KEYS[1], 'y')", "1", "x"}, cmds: []string{"eval", "set"}},
		{setup: [][]string{{"CONFIG", "SET", "maxmemory", "1"}}, script: []string{"EVAL", "return redis.pcall('set', KEYS[1], 'y')", "1", "x"}, cmds: []string{"eval", "set"}},
		{setup: [][]string{{"CONFIG", "SET", "maxmemory", "1"}}, script: []string{"EVAL", "local t = redis.pcall('set', KEYS[1], 'y') return 1", "1", "x"}, cmds: []string{"eval", "set"}},
	}
	for _, tc := range cases {
		for _, c := range []*rawConn{want, got} {
			for _, s := range tc.setup {
				c.do(s...)
			}
			c.do("CONFIG", "RESETSTAT")
		}
		w, g := want.do(tc.script...), got.do(tc.script...)
		require.Equal(t, w, g, "%q", tc.script)
		require.Equal(t, scriptErrorCounts(t, want, tc.cmds...), scriptErrorCounts(t, got, tc.cmds...), "%q", tc.script)
		for _, c := range []*rawConn{want, got} {
			c.do("CONFIG", "SET", "maxmemory", "0")
		}
	}
}

// redis.acl_check_cmd answers for the script's user, keys included, as
// Redis does (the tcl suite's "Script ACL check").
func TestScriptACLCheckCmdLikeRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	for _, addr := range []string{redisAddr, n.RESPAddr().String()} {
		admin := dialRaw(t, addr)
		require.Equal(t, "+OK\r\n", admin.do("ACL", "SETUSER", "bob", "on", ">123", "+@scripting", "+set", "~x*"))
		t.Cleanup(func() { admin.do("ACL", "DELUSER", "bob") })
	}
	want, got := dialRaw(t, redisAddr), dialRaw(t, n.RESPAddr().String())
	for _, c := range [][]string{
		{"AUTH", "bob", "123"},
		{"EVAL", "return redis.acl_check_cmd('set','xx',1)", "1", "xx"},
		{"EVAL", "return redis.acl_check_cmd('hset','xx','f',1)", "1", "xx"},
		{"EVAL", "return redis.acl_check_cmd('set','yy',1)", "0"},
		{"EVAL", "return redis.acl_check_cmd('invalid-cmd','arg')", "0"},
	} {
		require.Equal(t, want.do(c...), got.do(c...), "%q", c)
	}
}

// INFO memory counts the script cache and the libraries, and SCRIPT FLUSH
// empties it (the tcl suite's "SCRIPTING FLUSH ASYNC").
func TestInfoCountsCachedScripts(t *testing.T) {
	n := startNode(t)
	c := dialRaw(t, n.RESPAddr().String())
	field := func(name string) string {
		for _, line := range strings.Split(c.do("INFO", "memory"), "\r\n") {
			if v, ok := strings.CutPrefix(line, name+":"); ok {
				return v
			}
		}
		t.Fatalf("INFO memory has no %s", name)
		return ""
	}
	require.Equal(t, "0", field("number_of_cached_scripts"))
	for i := range 100 {
		c.do("SCRIPT", "LOAD", fmt.Sprintf("return %d", i))
	}
	require.Equal(t, "100", field("number_of_cached_scripts"))
	require.NotEqual(t, "0", field("used_memory_scripts_eval"))
	c.do("FUNCTION", "LOAD", "#!lua name=lib\nredis.register_function('f1', function() return 1 end)\nredis.register_function('f2', function() return 2 end)")
	require.Equal(t, "2", field("number_of_functions"))
	require.Equal(t, "1", field("number_of_libraries"))
	require.Equal(t, "+OK\r\n", c.do("SCRIPT", "FLUSH", "ASYNC"))
	require.Equal(t, "0", field("number_of_cached_scripts"))
	require.Equal(t, "0", field("used_memory_scripts_eval"))
}
