package resp_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/server/resp"
)

// luaShowHelpers is prepended to the scripts below, on one line (errors
// are on line 2 for both servers): hex(s), unhex(h), show(v) (a value as
// text: numbers "%.17g", strings in hex, tables by sorted entries) and
// all(...) (every value shown, nils included).
const luaShowHelpers = `local function hex(s) return (s:gsub('.', function(c) return string.format('%02x', c:byte()) end)) end ` +
	`local function unhex(h) h = h:gsub(' ', '') return (h:gsub('..', function(x) return string.char(tonumber(x, 16)) end)) end ` +
	`local function less(a, b) for i = 1, math.min(#a, #b) do local x, y = a:byte(i), b:byte(i) if x ~= y then return x < y end end return #a < #b end ` +
	`local function show(v) local t = type(v) ` +
	`if t == 'number' then if v ~= v then return 'nan' elseif v == 1/0 then return 'inf' elseif v == -1/0 then return '-inf' end return string.format('%.17g', v) ` +
	`elseif t == 'string' then return 's:' .. hex(v) ` +
	`elseif t == 'table' then local parts = {} for k, x in pairs(v) do parts[#parts+1] = show(k) .. '=' .. show(x) end table.sort(parts, less) return '{' .. table.concat(parts, ',') .. '}' end ` +
	`return tostring(v) end ` +
	`local function all(...) local r = {} for i = 1, select('#', ...) do r[i] = show((select(i, ...))) end return r end` + "\n"

// cmsgpackOracle: scripts (after luaShowHelpers) whose replies must be
// byte-identical on Zaris and redis-server 7.0. Left out: the order of a
// packed map of several keys (Lua 5.1's hash order; their lengths and
// what unpacks from them are compared), NaN's sign bits.
var cmsgpackOracle = []string{
	// Redis's tcl suite
	`return hex(cmsgpack.pack(0.1))`,
	`return hex(cmsgpack.pack(-1099511627776))`,
	`local a = {x=nil,y=5} local b = {x=a} a['x'] = b local encoded = cmsgpack.pack(a) local h = hex(encoded) ` +
		`local re = cmsgpack.unpack(encoded) assert(re) assert(re.x) assert(re.x.x.y == re.y) assert(re.x.x.x.x.y == re.y) ` +
		`assert(re.x.x.x.x.x.x.y == re.y) assert(re.x.x.x.x.x.x.x.x.x.x.y == re.y) assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.y == re.y) ` +
		`assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x) assert(re.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x.x == nil) ` +
		`return {h, re.x.x.x.x.x.x.x.x.y == re.y, re.y == 5}`,
	`local str_lt_32 = string.rep("x", 30) local str_lt_255 = string.rep("x", 250) local str_lt_65535 = string.rep("x", 65530) ` +
		`local str_long = string.rep("x", 100000) local array_lt_15 = {1, 2, 3, 4, 5} ` +
		`local array_lt_65535 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18} ` +
		`local array_big = {} for i=1, 100000 do array_big[i] = i end local map_lt_15 = {a=1, b=2} ` +
		`local map_big = {} for i=1, 100000 do map_big[tostring(i)] = i end ` +
		`local some_map = {s1=str_lt_32, s2=str_lt_255, s3=str_lt_65535, s4=str_long, d1=0.1, i1=1, i2=250, i3=65530, i4=100000, ` +
		`i5=2^40, i6=-1, i7=-120, i8=-32000, i9=-100000, i10=-3147483648, a1=array_lt_15, a2=array_lt_65535, a3=array_big, ` +
		`m1=map_lt_15, m2=map_big, b1=false, b2=true, n=nil} ` +
		`local encoded = cmsgpack.pack(some_map) local decoded = cmsgpack.unpack(encoded) ` +
		`assert(table.getn(some_map) == table.getn(decoded)) local n = 0 ` +
		`for k,v in pairs(some_map) do n = n + 1 if k == 'a1' or k == 'a2' or k == 'a3' or k == 'm1' or k == 'm2' then ` +
		`assert(table.getn(some_map[k]) == table.getn(decoded[k])) for kk,vv in pairs(some_map[k]) do assert(vv == decoded[k][kk]) end ` +
		`else assert(v == decoded[k]) end end ` +
		`return {#encoded, n, hex(cmsgpack.pack(str_lt_32, str_lt_255, array_lt_15, array_lt_65535, 1, 250, 65530, 100000, 2^40, -1, -120, -32000, -100000, -3147483648)), ` +
		`redis.sha1hex(cmsgpack.pack(str_lt_65535, str_long, array_big))}`,

	// numbers
	`local r = {} for _, n in ipairs({0, 1, 127, 128, 255, 256, 65535, 65536, 2^32-1, 2^32, 2^53, 2^53+2, 2^63-1024, 2^63, 2^64, -2^63, -2^63-4096, ` +
		`-1, -32, -33, -128, -129, -32768, -32769, -2^31, -2^31-1, -2^53, 1.5, -1.5, 0.1, -0.0, 1/0, -1/0, 1e300, -1e-300, 5e-324, ` +
		`3.4028234663852886e38, 3.4028235677973366e38, 1.401298464324817e-45, 16777217, 16777216.5, 0.5, 2^-149, 2^-150}) do r[#r+1] = hex(cmsgpack.pack(n)) end return r`,
	`return hex(cmsgpack.pack(0/0, -(0/0), 0/0*-1))`,
	// strings
	`local r = {} for _, n in ipairs({0, 1, 31, 32, 33, 255, 256, 65535, 65536, 100000}) do local p = cmsgpack.pack(string.rep('a', n)) r[#r+1] = hex(p:sub(1, 6)) r[#r+1] = #p end return r`,
	`return hex(cmsgpack.pack('a\0b\255'))`,
	// other values
	`return hex(cmsgpack.pack(nil, true, false, function() end, cjson.null))`,
	`return hex(cmsgpack.pack(1, 'a', {}, {1}, {a=1}, nil))`,
	`return hex(cmsgpack.pack(nil))`,
	`return cmsgpack.pack()`,
	`return {pcall(cmsgpack.pack)}`,
	// tables
	`local r = {} for _, t in ipairs({{}, {1,2,3}, {1,2,nil,4}, {[1]=1,[2]=2,[4]=4}, {[0]=1}, {[-1]=1}, {[1.5]=1}, {[2^31]=1}, {[2^31-1]=1}, {[2^53]=1}, ` +
		`{a=1}, {[true]='t'}, {[{}]=1}, {[{1,2}]={3}}, {{{{}}}}, {'a', {b='c'}}, {nil, 2}, {[2]=2}, {1, nil}}) do r[#r+1] = hex(cmsgpack.pack(t)) end return r`,
	`local r = {} for _, n in ipairs({15, 16, 65535, 65536}) do local t = {} for i = 1, n do t[i] = i % 3 end local p = cmsgpack.pack(t) r[#r+1] = hex(p:sub(1, 5)) r[#r+1] = #p r[#r+1] = redis.sha1hex(p) end return r`,
	`local r = {} for _, n in ipairs({15, 16, 65535, 65536}) do local t = {} for i = 1, n do t['k' .. i] = i end local p = cmsgpack.pack(t) r[#r+1] = hex(p:sub(1, n <= 15 and 1 or n <= 65535 and 3 or 5)) r[#r+1] = #p ` +
		`local u = cmsgpack.unpack(p) local ok = 0 for i = 1, n do if u['k' .. i] == i then ok = ok + 1 end end r[#r+1] = ok end return r`,
	// nesting: 16 levels, then nil
	`local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return hex(cmsgpack.pack(t))`,
	`local t = {} local c = t for i = 1, 20 do c.k = {} c = c.k end return hex(cmsgpack.pack(t))`,
	`local t = {} t[1] = t return hex(cmsgpack.pack(t))`,
	`local t = {} t[t] = 1 return hex(cmsgpack.pack(t))`,
	`local t = {} t[1] = t return {#cmsgpack.pack(t, t, {t})}`,
	// the stack: 4000 arguments at most, tables that would overflow Lua's C stack
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,4000 do t[i]=i end return t end)()))`,
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,4001 do t[i]=i end return t end)()))`,
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,3999 do t[i]=i end t[4000] = {a=1} return t end)()))`,
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,3999 do t[i]=i end t[4000] = {1} return t end)()))`,
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,3990 do t[i]=i end t[3991] = {{{{{{{{{a=1}}}}}}}}} return t end)()))`,
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,3990 do t[i]=i end t[3991] = {a={a={a={a={a={a={a={a={a=1}}}}}}}}} return t end)()))`,
	`return #cmsgpack.pack(unpack((function() local t = {} for i=1,3990 do t[i]=i end t[3991] = {[{[{[{[{[{[{[{[{a=1}]=1}]=1}]=1}]=1}]=1}]=1}]=1}]=1} return t end)()))`,

	// unpack: every type
	`return all(cmsgpack.unpack(unhex('00017f80ff e0 c0c2c3 cc00 ccff d080 d07f cd0102 cdffff d18000 d17fff ce01020304 ceffffffff d280000000 d27fffffff')))`,
	`return all(cmsgpack.unpack(unhex('cf0000000000000001 cfffffffffffffffff cf0020000000000001 d38000000000000000 d3ffffffffffffffff d37fffffffffffffff')))`,
	`return all(cmsgpack.unpack(unhex('ca3fc00000 ca7f800000 caff800000 ca00000001 cb3fb999999999999a cb7ff0000000000000 cb8000000000000000 cb0000000000000001')))`,
	`return all(cmsgpack.unpack(unhex('a0 a161 bf' .. string.rep('61', 31) .. 'd900 d90362 6364 da0000 da000161 db00000000 db0000000178')))`,
	`return all(cmsgpack.unpack(unhex('90 9101 9f' .. string.rep('01', 15) .. 'dc0000 dc000102 dd00000000 dd0000000103 92 91c0 92c0c3')))`,
	`return all(cmsgpack.unpack(unhex('80 8101a161 81a1610a 82a16101a16202 de0000 de0001c3c2 df00000000 df0000000101c0 8201a101 02a102 81cb3ff0000000000000a178 81910101 81810101c3')))`,
	`return all(cmsgpack.unpack(unhex('8201a102 01a103')))`,
	`return all(cmsgpack.unpack(unhex('8303010101 0202')))`,
	`return all(cmsgpack.unpack(unhex('830401 0101 0402')))`,
	`return all(cmsgpack.unpack(unhex('8201c003c0')))`,
	`return all(cmsgpack.unpack(''))`,
	`return all(cmsgpack.unpack(123))`,
	`return all(cmsgpack.unpack(1.5))`,
	`return all(cmsgpack.unpack(string.char(1), 'a', 'b'))`,
	`return cmsgpack.unpack({})`,
	`return cmsgpack.unpack()`,
	`return cmsgpack.unpack(nil)`,
	// unpack: bad and short input
	`local r = {} for _, c in ipairs({'c1', 'c4', 'c5', 'c6', 'c7', 'c8', 'c9', 'd4', 'd5', 'd6', 'd7', 'd8', 'c400', 'd401', '91c1', '81c1', '8101c1', '01c1'}) do ` +
		`r[#r+1] = select(2, pcall(cmsgpack.unpack, unhex(c))) end return r`,
	`local r = {} for _, c in ipairs({'cc', 'd0', 'cd01', 'd101', 'ce010203', 'd2010203', 'cf01020304050607', 'd301020304050607', 'ca010203', 'cb01020304050607', ` +
		`'a1', 'bf', 'd9', 'd901', 'da00', 'da0001', 'db000000', 'db00000001', 'dc00', 'dc0001', 'dd000000', 'dd00000001', 'de00', 'de0001', 'df000000', 'df00000001', ` +
		`'91', '92c0', '81', '8101', '82010101', '9191', '01cc', 'ddffffffff01020304050607', 'dfffffffff01020304050607', 'dbffffffff01020304050607', 'dcffff', 'deffff'}) do ` +
		`r[#r+1] = select(2, pcall(cmsgpack.unpack, unhex(c))) end return r`,
	`return cmsgpack.unpack(unhex('92 01'))`,
	`return cmsgpack.unpack(unhex('c1'))`,
	`return cmsgpack.unpack(unhex('81c001'))`,
	`return cmsgpack.unpack(unhex('81cbfff800000000000001'))`,
	`return cmsgpack.unpack(unhex('81cb7ff800000000000001'))`,
	`return {pcall(cmsgpack.unpack, unhex('81c001'))}`,
	`return cmsgpack.unpack(unhex('dfffffffff' .. string.rep('01', 10)))`,
	`return cmsgpack.unpack(unhex('ddffffffff' .. string.rep('01', 10)))`,
	`return cmsgpack.unpack(unhex('dbffffffff' .. string.rep('01', 10)))`,
	// unpack: Lua's C stack (8000 values, nesting about 4000 deep)
	`return select('#', cmsgpack.unpack(string.rep(string.char(1), 7999)))`,
	`return select('#', cmsgpack.unpack(string.rep(string.char(1), 8000)))`,
	`return select('#', cmsgpack.unpack(string.rep(string.char(1), 7998), 1))`,
	`return select('#', cmsgpack.unpack(string.rep(string.char(1), 7998), 1, 2))`,
	`return select('#', cmsgpack.unpack_limit(string.rep(string.char(1), 8000), 7998))`,
	`return select('#', cmsgpack.unpack_limit(string.rep(string.char(1), 8000), 7999))`,
	`local function res(ok, e) if ok then return type(e) end return e end local r = {} for _, n in ipairs({3998, 3999, 4000, 100000}) do ` +
		`r[#r+1] = res(pcall(cmsgpack.unpack, string.rep(string.char(0x91), n) .. string.char(1))) ` +
		`r[#r+1] = res(pcall(cmsgpack.unpack, string.rep(string.char(0x81, 1), n) .. string.char(1))) ` +
		`r[#r+1] = res(pcall(cmsgpack.unpack, string.rep(string.char(0x81, 1), n) .. string.char(1), 2)) ` +
		`r[#r+1] = res(pcall(cmsgpack.unpack, string.rep(string.char(0x81, 0x91), n) .. string.char(1, 1))) end ` +
		`for _, n in ipairs({3997, 3998}) do r[#r+1] = res(pcall(cmsgpack.unpack, string.rep(string.char(0x91), n) .. string.char(1), 2, 3, 4)) end return r`,
	`local s = string.rep(string.char(0x91), 3999) .. string.char(7) local v = cmsgpack.unpack(s) for i = 1, 3999 do v = v[1] end return v`,
	// unpack_one and unpack_limit
	`return all(cmsgpack.unpack_one(unhex('010203')))`,
	`return all(cmsgpack.unpack_one(unhex('010203'), 2))`,
	`return all(cmsgpack.unpack_one(unhex('010203'), 3))`,
	`return all(cmsgpack.unpack_one(unhex('010203'), 1.7))`,
	`return all(cmsgpack.unpack_one(unhex('010203'), '1'))`,
	`return all(cmsgpack.unpack_one(unhex('010203'), ' 0x1 '))`,
	`return all(cmsgpack.unpack_one(unhex('010203'), nil))`,
	`return all(cmsgpack.unpack_one(''))`,
	`return all(cmsgpack.unpack_one('', 0))`,
	`return all(cmsgpack.unpack_one(unhex('9201')))`,
	`return all(cmsgpack.unpack_one(unhex('019201')))`,
	`return all(cmsgpack.unpack_one(unhex('a2616201'), 0, 'extra'))`,
	`return cmsgpack.unpack_one(unhex('010203'), 'x')`,
	`return cmsgpack.unpack_one(unhex('010203'), -1)`,
	`return cmsgpack.unpack_one(unhex('010203'), 4)`,
	`return cmsgpack.unpack_one(unhex('010203'), 4294967297)`,
	`return cmsgpack.unpack_one(unhex('010203'), 4294967295)`,
	`return cmsgpack.unpack_one(unhex('010203'), 2^31)`,
	`return cmsgpack.unpack_one(unhex('010203'), 2^63)`,
	`return cmsgpack.unpack_one(unhex('010203'), 0/0)`,
	`return cmsgpack.unpack_one()`,
	`return cmsgpack.unpack_one(nil, 2)`,
	`return cmsgpack.unpack_one(unhex('c1'))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 0))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 0, 0))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 0, 1))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 2))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 2, 1))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 5))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 1, 3))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), 4294967297))`,
	`return all(cmsgpack.unpack_limit(unhex('010203'), '2', '1'))`,
	`return cmsgpack.unpack_limit(unhex('010203'))`,
	`return cmsgpack.unpack_limit(unhex('010203'), -1)`,
	`return cmsgpack.unpack_limit(unhex('010203'), 1, 4)`,
	`return cmsgpack.unpack_limit(unhex('010203'), 1, -5)`,
	`local s, r, off = cmsgpack.pack(1, 'two', {3}, {k=4}, true), {}, 0 while off ~= -1 do local v off, v = cmsgpack.unpack_one(s, off) r[#r+1] = show(v) r[#r+1] = off end return r`,
	`local f = cmsgpack.unpack_limit return f(unhex('01'))`,
	// the library table
	`return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}`,
	`local r = {} for _, k in ipairs({'pack', 'unpack', 'unpack_one', 'unpack_limit', '_NAME', 'cmsgpack_safe', 'encode'}) do r[#r+1] = k .. ':' .. type(cmsgpack[k]) end return r`,
	`cmsgpack.pack = function() end`,
	`cmsgpack.foo = 1`,
	`struct.pack = nil`,
	`local r = {} for _, k in ipairs({'pack', 'unpack', 'size', '_NAME', '_VERSION'}) do r[#r+1] = k .. ':' .. type(struct[k]) end return r`,

	// struct: every format letter, packed and unpacked
	`return all(hex(struct.pack('>bBhHlLTiIfd', -2, 200, -3, 60000, -5, 2^40, 7, -9, 4000000000, 0.5, 0.1)), struct.unpack('>bBhHlLTiIfd', struct.pack('>bBhHlLTiIfd', -2, 200, -3, 60000, -5, 2^40, 7, -9, 4000000000, 0.5, 0.1)))`,
	`return all(hex(struct.pack('<bBhHlLTiIfd', -2, 200, -3, 60000, -5, 2^40, 7, -9, 4000000000, 0.5, 0.1)), struct.unpack('<bBhHlLTiIfd', struct.pack('<bBhHlLTiIfd', -2, 200, -3, 60000, -5, 2^40, 7, -9, 4000000000, 0.5, 0.1)))`,
	`return all(hex(struct.pack('bBhHlLTiIfd', -2, 200, -3, 60000, -5, 2^40, 7, -9, 4000000000, 0.5, 0.1)), struct.size('bBhHlLTiIfd'))`,
	`local r = {} for n = 0, 32 do local f = '>i' .. n local p = struct.pack(f, -2) r[#r+1] = hex(p) r[#r+1] = show(struct.unpack(f, p)) ` +
		`f = '<I' .. n p = struct.pack(f, 2^62 + 2^40 + 5) r[#r+1] = hex(p) r[#r+1] = show(struct.unpack(f, p)) r[#r+1] = show(struct.unpack('<i' .. n, p)) r[#r+1] = struct.size(f) end return r`,
	`local r = {} for _, f in ipairs({'>i9', '>i12', '<i12', '>i16', '<i16', '>I16', '>i24', '<i32', '>I32'}) do for _, b in ipairs({0, 0x40, 0x80, 0xff}) do ` +
		`local s = string.rep(string.char(b), 32) r[#r+1] = show(struct.unpack(f, s)) r[#r+1] = show(struct.unpack(f, string.rep('\1', 31) .. string.char(b))) end end return r`,
	`return all(struct.unpack('>i9', '\0\0\0\0\0\0\0\0\128'), struct.unpack('>i9', '\0\0\0\0\0\0\0\0\64'), struct.unpack('>I8', string.rep('\255', 8)), struct.unpack('>i8', string.rep('\255', 7)..'\254'))`,
	`local r = {} for _, n in ipairs({0, 1, -1, 127, 128, 255, 256, -128, -129, 2^31, -2^31, 2^32, 2^53, 2^63, 2^64, 1e30, -1e30, 1/0, -1/0, 0/0, 2.7, -2.7, 0.5, -0.5}) do ` +
		`r[#r+1] = hex(struct.pack('<b', n)) r[#r+1] = hex(struct.pack('<H', n)) r[#r+1] = hex(struct.pack('>l', n)) r[#r+1] = hex(struct.pack('<I3', n)) r[#r+1] = hex(struct.pack('>L', n)) end return r`,
	`local r = {} for _, n in ipairs({0, 1, -1, 0.1, 1e300, -1e300, 1e-300, 1/0, -1/0, 3.4028235677973366e38, 2^-149, 2^-150, 16777217}) do ` +
		`r[#r+1] = hex(struct.pack('<f', n)) r[#r+1] = hex(struct.pack('>f', n)) r[#r+1] = hex(struct.pack('<d', n)) r[#r+1] = hex(struct.pack('>d', n)) ` +
		`r[#r+1] = show(struct.unpack('<f', struct.pack('<f', n))) r[#r+1] = show(struct.unpack('>d', struct.pack('>d', n))) end return r`,
	`return all(hex(struct.pack('c', 'abc')), hex(struct.pack('c3', 'abc')), hex(struct.pack('c2', 'abc')), hex(struct.pack('c0', 'abc')), hex(struct.pack('c3', 123)), hex(struct.pack('c0', 1.5)), hex(struct.pack('s', 'a\0b')), hex(struct.pack('s', 12)), hex(struct.pack('x')), hex(struct.pack('xx b x', 1)), hex(struct.pack('')), hex(struct.pack('', 1)))`,
	`return all(struct.unpack('c3', 'abcdef'))`,
	`return all(struct.unpack('c3', 'abcdef', 4))`,
	`return all(struct.unpack('bc0', '\3abcd'))`,
	`return all(struct.unpack('c1c0', '3abcd'))`,
	`return all(struct.unpack('Bc0B', '\2ab\9'))`,
	`return all(struct.unpack('Bc0c0', '\2ab\9'))`,
	`return all(struct.unpack('s', 'ab\0cd'))`,
	`return all(struct.unpack('ss', 'ab\0cd\0'))`,
	`return all(struct.unpack('s', '\0'))`,
	`return all(struct.unpack('xxb', 'abc'))`,
	`return all(struct.unpack('c0', '', 1, 'extra'))`,
	`return all(struct.unpack('dc0', struct.pack('d', 2.9) .. 'abc'))`,
	`local r = {} for _, n in ipairs({1e300, -1, 0/0, 2^64+2^12, 2^63, -0.5, 1/0}) do r[#r+1] = table.concat(all(pcall(struct.unpack, 'dc0', struct.pack('d', n) .. 'abc')), ' ') end return r`,
	`return all(struct.unpack('i', 12345), struct.unpack('c3', 12345), struct.unpack('i', 'abcd', '1'), struct.unpack('i', 'abcd', 1.9), struct.unpack('', 'abc', -5), struct.unpack('', 'abc', 10), struct.unpack('>', 'abc', 4), struct.unpack('', 'abcd', 2^64), struct.unpack('', 'abcd', -2^63), struct.unpack('', 'abcd', 2^53+1), struct.unpack('', 'abcd', -1))`,
	`return all(struct.unpack('i0', 'abc'), struct.unpack('I0b', 'abc'), hex(struct.pack('i0', 7)), struct.unpack('i\0b', 'abcd'), hex(struct.pack('b\0garbage', 1)))`,
	`local f = '>!4 b B h H l L T i I i1 I3 i7 I16 f d c3 s x' local p = struct.pack(f, -1, 255, -300, 65535, -2^40, 2^40, 9, -70000, 4e9, -5, 2^23, -2^50, 7, 0.25, 0.1, 'abc', 'zz') ` +
		`return {hex(p), struct.size('>!4 b B h H l L T i I i1 I3 i7 I16 f d c3'), all(struct.unpack(f, p))}`,
	// alignment
	`local r = {} for _, f in ipairs({'!8bd', '!bd', 'bd', '!4bi8', '!16bi32', '!2bh!4bi', '!bT', '!bxh', '!2c3h', '!8bf', '!8bi3', '!8bi6', '!8bi5', '!1bd', '!8b!1d', '>!4bh<h', '!4 b i2 b i'}) do ` +
		`local n = select(2, f:gsub('[bdiThf]', '')) local args = {} for i = 1, n do args[i] = i end ` +
		`if f:find('c') then args = {'abc', 2} end local p = struct.pack(f, unpack(args)) r[#r+1] = f .. '=' .. hex(p) r[#r+1] = struct.size(f) r[#r+1] = table.concat(all(struct.unpack(f, p)), ',') end return r`,
	`return all(struct.unpack('!8bi6', '\1\0\0\0\0\0\0\0\2\0\0\0\0\0'), struct.unpack('!4bi', '\1\0\0\0\2\0\0\0'), struct.unpack('!8d', string.rep('\0', 16), 2))`,
	// struct.size
	`return {struct.size('i'), struct.size('!8bd'), struct.size('c5z'), struct.size(' bhlLTfdxc3'), struct.size(''), struct.size('i0'), struct.size('c2147483647c2147483647'), struct.size('!4 b i2 b i'), struct.size('b\0s')}`,
	// struct errors
	`return struct.pack('i33', 1)`,
	`return struct.pack('c999999999999', 'x')`,
	`return struct.pack('c2147483648', 'x')`,
	`return struct.pack('c2147483647', 'x')`,
	`return struct.pack('i99999999999', 1)`,
	`return struct.pack('!99999999999', 1)`,
	`return struct.pack('c5', 'ab')`,
	`return struct.pack('s', {})`,
	`return struct.pack('z', 'ab')`,
	`return struct.pack('=b', 1)`,
	`return struct.pack('!3', 'ab')`,
	`return struct.pack('!0', 'ab')`,
	`return struct.pack('b')`,
	`return struct.pack('bbbb', 1)`,
	`return struct.pack('bc3', 1)`,
	`return struct.pack('bsb', 1, 'x')`,
	`return struct.pack('b', 'x')`,
	`return struct.pack('b', true)`,
	`return struct.pack('c2', nil)`,
	`return struct.pack()`,
	`return struct.pack(12, 1)`,
	`return {pcall(struct.pack, 'z')}`,
	`local p = struct.pack return p('z')`,
	`return hex(struct.pack('bbbbb', '12', ' 0x10 ', '1e2', '-7', '0x'))`,
	`return hex(struct.pack('bbbbbbb', '12', ' 0x10 ', '1e2', '-7', '\t5\n', '12\0junk', '-0x1p4'))`,
	`return hex(struct.pack('d', 'inf'))`,
	`return struct.unpack('>i2', '\1')`,
	`return struct.unpack('>i2', '\1\2\3', 3)`,
	`return struct.unpack('>i2', '\1\2\3', 0)`,
	`return struct.unpack('>i2', '\1\2\3', -1)`,
	`return struct.unpack('>', '\1\2\3', 10)`,
	`return struct.unpack('>', '\1\2\3', 5)`,
	`return struct.unpack('c0', '\3abcd')`,
	`return struct.unpack('c1c0', 'xabcd')`,
	`return struct.unpack('bc0', '\10abcd')`,
	`return struct.unpack('bc0', '\255abcd')`,
	`return struct.unpack('s', 'abcd')`,
	`return struct.unpack('z', 'abc')`,
	`return struct.unpack('i', 'abcd', '2')`,
	`return struct.unpack('i', 'abcd', 'x')`,
	`return struct.unpack('i')`,
	`return struct.unpack()`,
	`return struct.unpack('c2147483648', 'x')`,
	`return struct.unpack('c999999999', 'x')`,
	`return struct.unpack('i', 'abcd', 2^63)`,
	`return struct.unpack('i', 'abcd', 0/0)`,
	`return struct.unpack('!8d', 'abcd', -1)`,
	`return struct.size('s')`,
	`return struct.size('c0')`,
	`return struct.size('=')`,
	`return struct.size('c9999999999')`,
	`return struct.size('!3')`,
	`return struct.size('i40')`,
	`return struct.size()`,
	// struct: Lua's C stack
	`local r = {} for _, n in ipairs({7997, 7998}) do r[#r+1] = select('#', pcall(struct.unpack, string.rep('b', n), string.rep('a', 8000))) ` +
		`r[#r+1] = tostring(select(2, pcall(struct.unpack, string.rep('b', n), string.rep('a', 8000)))) end ` +
		`r[#r+1] = select('#', struct.unpack(string.rep('b', 7996), string.rep('a', 8000), 1)) r[#r+1] = select('#', struct.unpack(string.rep('x', 9000), string.rep('a', 9000))) return r`,
	`return select('#', struct.unpack(string.rep('b', 7997), string.rep('a', 8000), 1))`,
}

func TestCMsgpackSameRepliesAsRedis(t *testing.T) {
	redisAddr := startRedis(t, false)
	n := startNode(t)
	want := dialRaw(t, redisAddr)
	got := dialRaw(t, n.RESPAddr().String())
	var diffs []string
	for _, s := range cmsgpackOracle {
		script := luaShowHelpers + s
		w, g := want.doSlow("EVAL", script, "0"), got.doSlow("EVAL", script, "0")
		if w != g {
			diffs = append(diffs, fmt.Sprintf("%s\n    redis: %.2000q\n    zaris: %.2000q", s, w, g))
		}
	}
	// Functions see both libraries; a library's loading code sees neither.
	for _, c := range [][]string{
		{"FUNCTION", "LOAD", "#!lua name=mp\nredis.register_function('mp', function(keys, args) return {cmsgpack.unpack(cmsgpack.pack(args[1], 2, {3})), " +
			"struct.size('i'), struct.unpack('>h', struct.pack('>h', -2))} end)"},
		{"FCALL", "mp", "0", "x"},
		{"FUNCTION", "LOAD", "#!lua name=mp2\ncmsgpack.pack = 1"},
		{"FUNCTION", "DELETE", "mp"},
	} {
		if w, g := want.do(c...), got.do(c...); w != g {
			diffs = append(diffs, fmt.Sprintf("%q\n    redis: %q\n    zaris: %q", c, w, g))
		}
	}
	require.Empty(t, diffs, "replies differ from Redis:\n%s", strings.Join(diffs, "\n"))
}

// The tcl suite's cmsgpack cases and hostile input, on Zaris alone (with no
// redis-server too): each script's reply must start with want, and come
// quickly — nothing is allocated or looped over from a length the input
// only claims.
func TestCMsgpackStructExpectedReplies(t *testing.T) {
	n := startNode(t)
	r := dialRaw(t, n.RESPAddr().String())
	// Any unpack of these is an error lua-cmsgpack has, never a Go panic
	// ("Error running script"): counted in the reply as "bad".
	const errKinds = `local function kind(ok, e) if ok then return 'ok' end for _, k in ipairs({'Missing bytes in input.', 'Bad data format in input.', ` +
		`'table index is nil', 'table index is NaN', 'stack overflow (', 'Sparse table index '}) do ` +
		`if string.find(e, k, 1, true) then return 'err' end end return 'bad: ' .. e end `
	for _, c := range []struct{ script, want string }{
		// Redis's tcl suite (scripting.tcl)
		{`return hex(cmsgpack.pack(0.1))`, "$18\r\ncb3fb999999999999a\r\n"},
		{`return hex(cmsgpack.pack(-1099511627776))`, "$18\r\nd3ffffff0000000000\r\n"},
		{cmsgpackOracle[2], "*3\r\n$146\r\n82a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a17882a17905a17881a178c0\r\n:1\r\n:1\r\n"},
		{cmsgpackOracle[3], "*4\r\n:1491977\r\n:22\r\n$700\r\nbe7878"},
		// read-only library tables
		{`cmsgpack.pack = function() end`, "-ERR user_script:2: Attempt to modify a readonly table script: "},
		{`struct.unpack = nil`, "-ERR user_script:2: Attempt to modify a readonly table script: "},
		{`cmsgpack.new = 1`, "-ERR user_script:2: Attempt to modify a readonly table script: "},
		// claimed lengths far beyond the input
		{`return cmsgpack.unpack(unhex('dfffffffff 0102030405'))`, "-ERR user_script:2: Missing bytes in input. script: "},
		{`return cmsgpack.unpack(unhex('ddffffffff 0102030405'))`, "-ERR user_script:2: Missing bytes in input. script: "},
		{`return cmsgpack.unpack(unhex('dbffffffff 0102030405'))`, "-ERR user_script:2: Missing bytes in input. script: "},
		{`return cmsgpack.unpack(unhex('deffff 01'))`, "-ERR user_script:2: Missing bytes in input. script: "},
		{`return cmsgpack.unpack(string.rep(unhex('ddffffffff'), 5000))`, "-ERR user_script:2: stack overflow (in function mp_decode_to_lua_array) script: "},
		{`return cmsgpack.unpack(string.rep(unhex('dfffffffff01'), 5000))`, "-ERR user_script:2: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.) script: "},
		{`return cmsgpack.unpack(string.rep(string.char(0x91), 1000000))`, "-ERR user_script:2: stack overflow (in function mp_decode_to_lua_array) script: "},
		// every prefix of a value is short
		{`local p = cmsgpack.pack({1, 'two', {k = {3.5, -2^40, true}}, string.rep('x', 300), 0.1}) local r = {} ` +
			`for i = 1, #p - 1 do local ok, e = pcall(cmsgpack.unpack, p:sub(1, i)) r[e] = (r[e] or 0) + 1 end return {r['Missing bytes in input.'], #p - 1}`,
			"*2\r\n:336\r\n:336\r\n"},
		// sparse integer keys: gopher-lua would fill its array part up to them
		{`return show(cmsgpack.unpack(unhex('81cdffff01')))`, "$9\r\n{65535=1}\r\n"},
		{`return show(cmsgpack.unpack(unhex('81ce0001000001')))`, "$9\r\n{65536=1}\r\n"},
		{`return cmsgpack.unpack(unhex('81ce000f424001'))`, "-ERR user_script:2: Sparse table index 1000000 in input beyond what this decoder allocates. script: "},
		{`return cmsgpack.unpack(unhex('82ce000f424001a170db0007a120') .. string.rep('x', 500000))[1000000]`, ":1\r\n"}, // a longer input has room for more
		{`return show(cmsgpack.unpack(unhex('81ce03ffffffc0')))`, "$2\r\n{}\r\n"},
		{`return cmsgpack.unpack(unhex('81ce03ffffff01'))`, "-ERR user_script:2: Sparse table index 67108863 in input beyond what this decoder allocates. script: "},
		{`return cmsgpack.unpack(unhex('82cdffff01ce0002000002'))`, "-ERR user_script:2: Sparse table index 131072 in input beyond what this decoder allocates. script: "},
		{`return show(cmsgpack.unpack(unhex('81ce0400000001')))`, "$12\r\n{67108864=1}\r\n"},
		// random bytes: only lua-cmsgpack's errors
		{errKinds + `math.randomseed(7) local r = {} for i = 1, 3000 do local b = {} for j = 1, math.random(1, 40) do b[j] = string.char(math.random(0, 255)) end ` +
			`local k = kind(pcall(cmsgpack.unpack, table.concat(b))) r[k] = (r[k] or 0) + 1 end local bad = {} ` +
			`for k in pairs(r) do if k ~= 'ok' and k ~= 'err' then bad[#bad+1] = k end end return {#bad, bad[1]}`, "*1\r\n:0\r\n"},
		// struct: counts from the format are never allocated
		{`return struct.pack('c999999999999', 'x')`, "-ERR user_script:2: integral size overflow script: "},
		{`return struct.pack('c2147483647', 'x')`, "-ERR user_script:2: bad argument #3 to 'pack' (string too short) script: "},
		{`return struct.unpack('c2147483647', 'x')`, "-ERR user_script:2: bad argument #2 to 'unpack' (data string too short) script: "},
		{`return struct.unpack('!8bc0', '\127abc')`, "-ERR user_script:2: bad argument #2 to 'unpack' (data string too short) script: "},
		{`return struct.unpack('dc0', struct.pack('d', 1e300) .. 'abc')`, "$0\r\n\r\n"}, // (size_t)1e300 is 0 on x86-64, as in Redis
		{`return struct.unpack('dc0', struct.pack('d', -1) .. 'abc')`, "-ERR user_script:2: bad argument #2 to 'unpack' (data string too short) script: "},
		{`return struct.size('i99999999999')`, "-ERR user_script:2: integral size overflow script: "},
		{`return struct.pack('!2147483648', 1)`, "-ERR user_script:2: integral size overflow script: "},
		{`return struct.pack('!1073741824bd', 1, 2):len()`, ":16\r\n"},
		{`return select('#', struct.unpack(string.rep('x', 1000000), string.rep('a', 1000000)))`, ":1\r\n"},
		{`return struct.unpack(string.rep('b', 100000), string.rep('a', 100000))`, "-ERR user_script:2: stack overflow (too many results) script: "},
		// round trips of every option
		{`local f = '>!4 b B h H l L T i I i1 I3 i7 I16 f d c3 s x' local p = struct.pack(f, -1, 255, -300, 65535, -2^40, 2^40, 9, -70000, 4e9, -5, 2^23, -2^50, 7, 0.25, 0.1, 'abc', 'zz') ` +
			`return {hex(p), struct.size('>!4 b B h H l L T i I i1 I3 i7 I16 f d c3'), all(struct.unpack(f, p))}`, "*3\r\n$"},
	} {
		got := r.doSlow("EVAL", luaShowHelpers+c.script, "0")
		require.True(t, strings.HasPrefix(got, c.want), "%s\n    got  %.300q\n    want %q…", c.script, got, c.want)
	}
}

// doSlow is do for a script that builds tables of 100 000 elements: under
// the race detector on a busy machine it may take longer than do's 10 s.
func (c *rawConn) doSlow(args ...string) string {
	c.t.Helper()
	c.send(cmd(args...))
	_ = c.nc.SetReadDeadline(time.Now().Add(2 * time.Minute))
	s, err := readReply(c.r)
	require.NoError(c.t, err)
	return s
}

// Packing a table that holds itself several times is a 16-deep copy of
// k^16 values: it runs until SCRIPT KILL (or the result passes 512 MB), as
// the encoder looks at the script's context while it works.
func TestCMsgpackPackIsKillable(t *testing.T) {
	n, _ := startCustom(t, resp.Config{ScriptTimeLimit: 50 * time.Millisecond})
	addr := n.RESPAddr().String()
	t.Cleanup(func() { dialRaw(t, addr).do("SCRIPT", "KILL") })
	looper, other := dialRaw(t, addr), dialRaw(t, addr)
	looper.send(cmd("EVAL", "local t = {} for i = 1, 8 do t[i] = t end return #cmsgpack.pack(t)", "0"))
	waitFor(t, 10*time.Second, "BUSY for another client", func() bool {
		return other.do("PING") == "-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.\r\n"
	})
	require.Equal(t, "+OK\r\n", other.do("SCRIPT", "KILL"))
	reply := looper.reply()
	require.True(t, strings.HasPrefix(reply, "-ERR Script killed by user with SCRIPT KILL... script: "), reply)
	require.Equal(t, "+PONG\r\n", looper.do("PING"))
}
