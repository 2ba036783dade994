package resp

// docsDiffTesting is the "Differential testing" section of docs/RESP.md.
const docsDiffTesting = `
## Differential testing

The RESP front end is fuzzed against a real redis-server 7.0
(` + "`internal/respdiff`" + `, tests in ` + "`server/resp/difffuzz_test.go`" + `):

- **Commands** come from the command table at run time (every command and
  subcommand this file lists), so a command added to the table is fuzzed
  without touching the fuzzer. Their argument grammar — tokens, options,
  choices, repeated blocks, ` + "`numkeys`" + ` — comes from the redis-server's own
  ` + "`COMMAND DOCS`" + `. Commands redis-server 7.0 lacks (Zaris extensions) are
  skipped; commands redis-server has and Zaris lacks are counted, not sent.
- **Arguments**: mostly well-formed commands, then mutated ones (a hostile
  value in place of a good one, one argument too few or too many) and
  shapeless ones (random values up to the arity and beyond): ±2^63, 2^64−1,
  2^63, −1, 0, ` + "`+2`, `02`, ` 1`" + `, inf, −inf, nan, 1e309, ` + "`1.5e`" + `, hexadecimal,
  empty, binary (NUL, CR LF, 0xff), huge (16–64 KiB), stream ids at the
  limits; six keys, so commands meet on the same keys of every type and
  take the WRONGTYPE paths. Values that only make redis-server allocate
  hundreds of megabytes (offsets near 2^32 bits) and ids from the clock
  (` + "`XADD … *`" + `) are left out; expiry times in milliseconds are ≥ 100 s or
  ≤ 0 so no key expires between the two servers' replies.
- **Comparison**, after each command, which both servers run in lock step
  followed by a PING (liveness: a Zaris panic, ` + "`-ERR internal error`" + `, a
  closed connection or a missing PONG fails the run at once): errors by
  their exact text; unordered replies (SMEMBERS, SINTER, SUNION, SDIFF,
  KEYS, HKEYS, HVALS, HGETALL, RESP3 maps and sets) sorted first; random
  ones (SRANDMEMBER, SPOP, RANDOMKEY, HRANDFIELD, ZRANDMEMBER) by type and
  count, with SPOP's pick then made the same on Zaris; SORT … BY as a set
  (a set's ties come in its hash table's order, which Redis leaves
  unspecified); cursors (SCAN, SSCAN,
  HSCAN, ZSCAN) by shape; clock readings (TTL, PTTL, EXPIRETIME, PEXPIRETIME,
  XPENDING idle times) within 1 s; replies inside EXEC by the class of each
  queued command. Server-specific commands are not sent: INFO, CLIENT,
  CONFIG, DEBUG, TIME, OBJECT, MEMORY, CLUSTER, COMMAND, HELLO, SELECT,
  subscribe modes, blocking commands, scripting (random Lua only compares
  two interpreters' error texts), XINFO, replication and persistence.
- **Episodes** of 200 commands start from FLUSHALL on fresh connections,
  in RESP2 or RESP3. A mismatch is replayed on fresh state, up to three
  times (one that none of them reproduces is counted as flaky and left
  out: a replay can meet a random choice — a set's order among ties — that
  ends it early at an accepted difference), then shrunk by delta
  debugging to the shortest sequence that still ends in the same mismatch,
  and printed as a row for ` + "`server/resp/diff_regress_test.go`" + `, whose table
  replays every fixed mismatch on both servers.
- **Accepted differences** (` + "`respdiff.Allowlist`" + `), each a place where Zaris
  differs on purpose:
  - *shortest float digits*: Redis 7.0 prints scores with ` + "`%.17g`" + `
    (0.10000000000000001); Zaris prints the shortest digits that read back
    as the same double (0.1), as Redis 7.2 does, in ` + "`%.17g`" + `'s notation.
  - *empty or oversized key*: DECISIONS D2, a key is 1 byte to 16 KiB.
  - *node-wide commands inside MULTI*: KEYS, SCAN, DBSIZE, FLUSHALL,
    FLUSHDB and RANDOMKEY are refused while queuing (see Transactions
    above).
  - *DBSIZE counts only live keys*: redis-server still counts a key that
    expired until its expire cycle reclaims it. Zaris leaves such a key out
    exactly while its segment holds up to 64 keys with a TTL; in a larger
    one it counts it until the sweeper removes it, as Redis does (a walk of
    every key with a TTL per DBSIZE cost 130 ms for a million of them).
  - *expiry capped at year 2262*: expiry times are int64 nanoseconds, so
    ` + "`PEXPIREAT k 9223372036854775807`" + ` keeps the key until 2262-04-11
    (TTL and EXPIRETIME say so) where Redis keeps int64 milliseconds.
  - *SORT after a number that overflowed*: redis-server 7.0's SORT reads an
    errno it never cleared, so a denormal or overflowing number in an
    earlier command (5e-324, 1e309) makes it refuse valid scores, which
    Zaris sorts. Probed: accepted when the same SORT sent to redis-server on
    a new connection (whose accept resets errno) answers what Zaris
    answered — the re-run also stores what a SORT … STORE stored on Zaris.
  An accepted difference that may leave the key spaces apart ends the
  episode.
- **Open mismatches** (` + "`respdiff.OpenMismatches`" + `) are reported with their
  reproducers without failing the run: EXPIRE GT/LT with a new expiry
  equal to the current one to the millisecond (the front end reads the wall
  clock, the store its coarse 1 ms clock); and SORT after a stale ERANGE
  inside a transaction (the same errno as the accepted difference above,
  where no probe can re-run the command alone).

Run it: ` + "`make test`" + ` runs a bounded pass (seeds 1–4, 3 000 commands each,
a few seconds) that fails on any mismatch that is neither accepted nor
open; ` + "`make fuzz-resp FUZZTIME=10m`" + ` runs one long pass seeded by the clock
(it prints the seed; ` + "`FUZZSEED=n`" + ` replays one; ` + "`FUZZONLY=xadd,xgroup,set`" + `
draws only the commands named) with commands/s and every mismatch
minimised. The native protocol reaches the same engine:
` + "`FuzzNativeMatchesRESP`" + ` (in ` + "`make fuzz`" + `) sends random ` + "`kv.Cmd`" + `s — op numbers from
kv's table, extreme arguments — through a real native listener and checks
that each is answered by its id with a typed status, that the node keeps
answering, and that an op's reply equals its RESP twin's on the same state.

Measured on the 2-core development machine while other jobs ran (load
average above 20), redis-server 7.0.15: 6 084 compared commands/s over a
6-minute run (2.18 million commands; each command and a PING on both
servers, in lock step), 7 500–8 300 commands/s in the bounded pass. The
first run found 83 distinct mismatches (command × kind) in 6 000 commands;
with the long runs, 47 were fixed (integers read as string2ll, floats as
strtod, score bounds as zslParseRange, arguments checked before or after
the key's type as Redis does, EXPIRE/GETEX/ZRANGE option order, EXPIRE GT/LT
on absolute milliseconds (up to the store's 1 ms clock), EXECABORT, error texts, MSETNX with a repeated
key, SINTER type checks, SCAN cursors, PUBSUB in MULTI, score notation) and
are rows of the regression table; 16 fall under the accepted differences,
3 were the fuzzer's own (HELP texts, PINGs queued in MULTI), and the rest
are the open items. After the fixes the bounded pass finds none outside
those two lists; a 4-minute run (1.34 million commands) found two more,
now on them (the 2262 expiry cap, accepted; WATCH, open).

Issue 13's last round: ` + "`make fuzz-resp FUZZTIME=5m`" + ` compared 2 785 010 commands
in 5 minutes, 9 305 commands/s (redis-server 7.0.15, load average 12–19 on
the 2 cores). With it and a 3-minute and a 5-minute run before, 29 more
mismatches were fixed (76 in all), each a row of the regression table: WATCH
of a key absent at WATCH that is created and removed again; stream ids read
as string2ull on a C string (` + "`\" 1\"`" + `, ` + "`+2`" + `, leading zeros, 127 bytes at most);
NOGROUP texts cut at a NUL byte; RENAME of a stream; XADD, XRANGE, XREVRANGE
and XTRIM parsing before the key's type and XDEL and XACK looking the key up
first, with Redis's texts and option order; and a node that stopped
answering — SPUBLISH inside EXEC waited forever for the segment lock its own
EXEC held (a script's SPUBLISH, KEYS, SCAN, DBSIZE, RANDOMKEY, FLUSHDB,
FLUSHALL, INFO and CLUSTER COUNTKEYSINSLOT/GETKEYSINSLOT did the same; see
Scripting). Three more were the fuzzer's own (SORT … BY compared in order;
its SPOP realignment queued into Zaris's transaction) and one is a new open
item (SORT after a stale ERANGE). The final run found, besides those fixed
after it, only open items: 18 stream mismatches (command × kind) and SORT
after a stale ERANGE (an EXPIRE … GT at the same millisecond showed once and
did not reproduce: counted as flaky).

The stream open item was then closed: runs aimed at the streams
(` + "`FUZZONLY`" + ` = the 14 stream commands with SET, LPUSH, HSET, SADD, ZADD, DEL,
MULTI, EXEC and DISCARD: 27 compared with the XGROUP subcommands) first
found 29 stream mismatches (command × kind) in 789 686 commands, all of
them checks in another order than Redis 7.0's. With them fixed (XPENDING,
XAUTOCLAIM, XSETID and XGROUP parse before the key's type; XCLAIM and
XREADGROUP look the key and group up first; XREAD checks ` + "`>`" + ` after the
type; 34 regression rows, 11 inside MULTI/EXEC), a 2-minute and two
6-minute runs (1 028 131, 3 597 155 and 3 138 955 commands) found three
more: ZADD NX … INCR refusing a NaN before its NX skip, and XREADGROUP
reading the last possible id as a history id where Redis takes it for ` + "`>`" + `
(both fixed, rows of the table), and ` + "`~`" + ` trimming (now accepted). The final
6-minute run compared 3 147 072 commands (8 743 commands/s, load from other
jobs on the 2 cores) and found none; 8 approximate trims were accepted, and
one XADD with a clock id (` + "`*`" + `, drawn by a mutation) did not reproduce and
was counted as flaky.
`
