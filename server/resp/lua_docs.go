package resp

// docsScripting is the Scripting section of docs/RESP.md (issue #13 item 5).
const docsScripting = `
## Scripting

EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT LOAD/EXISTS/FLUSH/KILL/HELP,
FUNCTION LOAD/LIST/DELETE/FLUSH/DUMP/RESTORE/KILL/STATS/HELP, FCALL and FCALL_RO run Lua
5.1 on github.com/yuin/gopher-lua with Redis 7.0's API and replies, checked
byte for byte against a redis-server 7.0 (` + "`TestScriptSameRepliesAsRedis`" + `,
RESP2 and RESP3).

- **API**: ` + "`redis.call`" + `, ` + "`redis.pcall`" + `, ` + "`redis.error_reply`" + `, ` + "`redis.status_reply`" + `,
  ` + "`redis.sha1hex`" + `, ` + "`redis.log`" + ` (accepted, not kept), ` + "`redis.setresp`" + `,
  ` + "`redis.set_repl`" + ` and ` + "`redis.replicate_commands`" + ` (scripts always replicate by
  effects), ` + "`redis.breakpoint`" + `/` + "`redis.debug`" + ` (no debugger), ` + "`redis.acl_check_cmd`" + `
  (the script's user, keys included), ` + "`redis.register_function`" + ` (positional or
  named form with ` + "`flags`" + ` and ` + "`description`" + `, Redis's argument errors; only
  while a library loads, whose top-level code sees nothing but
  ` + "`redis.register_function`" + `, ` + "`redis.log`" + ` and the version, as in Redis 7), the ` + "`LOG_*`" + `,
  ` + "`REPL_*`" + `, ` + "`REDIS_VERSION`" + ` and ` + "`REDIS_VERSION_NUM`" + ` constants; ` + "`KEYS`" + ` and ` + "`ARGV`" + `
  globals for EVAL, ` + "`(keys, args)`" + ` arguments for functions; ` + "`#!lua flags=…`" + `
  shebangs on EVAL scripts (no-writes, allow-oom, allow-stale, no-cluster,
  allow-cross-slot-keys: parsed; no-writes and allow-oom enforced). Out of
  memory, a script without a shebang fails at its first command that may add
  data (` + "`-OOM …`" + `, unless it wrote already); one with flags, or a function,
  does not start unless it is no-writes or allow-oom. The blocking commands
  Redis 7.0 marks noscript (BLPOP, BRPOP, BRPOPLPUSH, BLMOVE, BZPOPMIN,
  BZPOPMAX) are refused from scripts, XREAD/XREADGROUP with BLOCK answer
  Redis's error, BLMPOP/BZMPOP run without blocking. FCALL finds a function
  whatever its case. A script's commands count in INFO commandstats and
  errorstats as Redis counts them (a command's error once, when the command
  answers it).
- **Conversions** as Redis's: integer → number, bulk → string, null →
  false, status → ` + "`{ok=…}`" + `, error → ` + "`{err=…}`" + ` (raised by redis.call, returned by
  redis.pcall; Lua's ` + "`pcall`" + ` hands a caught ` + "`{err=…}`" + ` over as its text, as
  Redis 7's does); RESP3 types after ` + "`redis.setresp(3)`" + `. Back: numbers truncate to
  integers, ` + "`true`" + ` → 1, ` + "`false`" + `/nil → null, ` + "`{ok=}`" + ` status, ` + "`{err=}`" + `
  error, ` + "`{double=}`" + `, ` + "`{map=}`" + `, ` + "`{set=}`" + `, other tables → arrays up to the first
  nil. Numbers passed to redis.call are integers when integral, else
  ` + "`%.17g`" + ` (Redis 7.0). Errors carry Redis's suffix
  ` + "`script: <sha or function>, on @user_script:<line>.`" + ` (` + "`@user_function`" + ` for
  functions) and its texts (NOSCRIPT, "Write commands are not allowed from
  read-only scripts.", "Unknown Redis command called from script", "Script
  attempted to access nonexistent global variable", "Attempt to modify a
  readonly table", …).
- **Libraries**: base, table, string, math — ` + "`math.random`" + `/` + "`math.randomseed`" + ` are
  Redis's generator (a seeded script draws Redis's numbers; one sequence per
  node, as Redis's one Lua state), ` + "`tostring`" + ` of a number Lua 5.1's ` + "`%.14g`" + `
  (inf, -nan), ` + "`math.huge`" + ` infinity; ` + "`cjson`" + ` (lua-cjson 2.1.0 as Redis ships it,
  written in Go: encode, decode, null, new, and the settings encode_sparse_array,
  encode_max_depth, decode_max_depth, encode_number_precision,
  encode_keep_buffer, encode_invalid_numbers, decode_invalid_numbers — kept
  node-wide like Redis's one state; its parse errors name the token and the
  character as lua-cjson's do; hexadecimal, inf and nan numbers decoded as
  strtod reads them) and ` + "`bit`" + ` (LuaBitOp's 32-bit tobit, tohex, bnot, band, bor, bxor, lshift,
  rshift, arshift, rol, ror, bswap); ` + "`cmsgpack`" + ` (lua-cmsgpack 0.4.0's pack,
  unpack, unpack_one, unpack_limit) and ` + "`struct`" + ` (lua_struct's pack, unpack,
  size), written in Go, their encodings, limits (tables packed 16 levels deep,
  Lua 5.1's C stack of 8000 values) and error texts compared byte for byte
  with a redis-server 7.0 (` + "`TestCMsgpackSameRepliesAsRedis`" + `); cmsgpack.unpack
  refuses map integer keys that would open more than 64K + 2 × the input's
  length empty array slots in all (gopher-lua keeps integer keys below 2^26
  in a table's array part).
- **Sandbox**: no os, io, loadfile, dofile, print, require/module,
  getfenv/setfenv (a function's environment would reach the real globals);
  the globals and library tables are read-only, a global that does not exist
  is an error, and a state a script left altered (rawset into a protected
  table) is discarded, so nothing outlives a script.
- **Differences**: Lua syntax error texts after
  ` + "`ERR Error compiling script (new function): `" + ` are gopher-lua's; concatenation
  and ` + "`string.format('%s')`" + ` print non-integral numbers in the shortest round-trip
  form (Lua 5.1: ` + "`%.14g`" + `; ` + "`tostring`" + ` is Lua's); runtime error texts of the VM
  (indexing nil, calling nil: "attempt to call a non-function object") are
  gopher-lua's; ` + "`string.dump`" + ` gives a binary chunk's header only (gopher-lua has
  no bytecode) and ` + "`loadstring`" + ` refuses binary chunks, as Redis's does; the
  read-only library tables look empty to ` + "`pairs`" + `; a library's functions in one
  load that differ only in case are both kept, FCALL reaching one of them;
  the commands that
  read or write every key of the node — KEYS, SCAN, DBSIZE, RANDOMKEY,
  FLUSHDB, FLUSHALL, INFO, CLUSTER COUNTKEYSINSLOT/GETKEYSINSLOT — are
  refused from a script (` + "`ERR This command reads or writes every key of the node …`" + `),
  as from MULTI: they would wait for the segment locks the script holds.

**Atomicity.** A script runs under the write locks of the segments of its
declared keys (the store's ` + "`AtomicallyMany`" + `, ascending order), through each
command's ordinary handler, so no other client's command on those segments
runs in between. The keys follow the multi-key rule: on a lone node any
keys; in a multi-node cluster the keys of one slot (hash tags), or of several
slots whose segments this node serves, else ` + "`-CROSSSLOT`" + ` (and ` + "`-MOVED`" + ` when
the first key is another node's), as Redis Cluster. A script declaring no
key holds every segment this node serves — like a standalone redis-server,
nothing else touches the node's keys meanwhile. ` + "`redis.call`" + ` of a key not
declared works when its segment is held; a key of another node answers
Redis Cluster's ` + "`Script attempted to access a non local key in a cluster node`" + `,
one of this node in a segment not held ` + "`Script attempted to access keys that do not hash to the same slot`" + `
(Redis 7.2's text; Redis 7.0 would run it unlocked). Inside MULTI/EXEC a
script runs under the transaction's locks. Scripts replicate by effects:
every write a script makes is the command's ordinary store effect, and a
script that wrote waits for the write barrier (sync replication) like any
write command.

**Limits.** A script running longer than the script time limit (resp
` + "`Config.ScriptTimeLimit`" + `, Redis's busy-reply-threshold, 5 s) makes every other
client's command that is not allow_busy answer
` + "`-BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.`" + `
(FUNCTION KILL for a function) until it ends; a command that arrived before
the limit passed and waits for a segment the script holds keeps waiting.
` + "`SCRIPT KILL`" + ` (` + "`FUNCTION KILL`" + `) stops a script that has not written — its caller
gets ` + "`-ERR Script killed by user with SCRIPT KILL... script: …`" + ` — and answers
` + "`-UNKILLABLE …`" + ` for one that wrote, ` + "`-NOTBUSY …`" + ` when none is past the limit.
Closing the server stops running scripts. A call stack of 1000 frames, a
reply nested at most 1000 deep (` + "`-ERR reached lua stack limit`" + `), ` + "`string.rep`" + `
up to 512 MB, a library's top-level code 500 ms (FUNCTION LOAD).
The script cache and the libraries are per node and in memory, as in Redis
Cluster: ` + "`SCRIPT LOAD`" + ` and ` + "`FUNCTION LOAD`" + ` go to every node (go-redis's
ClusterClient sends SCRIPT LOAD to all of them). FUNCTION DUMP writes every library's
code in Redis's payload (RDB_OPCODE_FUNCTION2 per library, RDB version 10, CRC64) and
FUNCTION RESTORE reads Zaris's and Redis's (a release candidate's function too, as Redis
7.0 reads it) under FLUSH, APPEND (the default) or REPLACE: the libraries are compiled
first, then joined all or none, with Redis's errors (` + "`TestFunctionDumpRestoreWithRedis`" + `).

**Cost.** Lua states are pooled (up to 64 idle): a call reuses one, with the
compiled script cached by SHA-1; ` + "`BenchmarkPooledLuaCall`" + ` (take a state, set
KEYS/ARGV, run a cached script, convert its reply) and
` + "`BenchmarkEvalSHA`" + ` (go-redis, parallel, beside redis-server and a plain
INCRBY) measure it.
`
