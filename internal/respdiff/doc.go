// Package respdiff is the differential fuzzer of the RESP front end: it
// draws commands from the command table (the names and arities a Zaris
// node serves, with argument grammars taken at run time from a real
// redis-server's COMMAND DOCS), runs the same sequence on redis-server and
// on a Zaris node, and compares the replies: exactly where Redis's reply is
// deterministic, normalised where it is unordered (sets, hashes, KEYS),
// by shape where it is random (SRANDMEMBER, SPOP, RANDOMKEY) or a cursor,
// within a tolerance where it reads a clock (TTL, PTTL). A mismatch is
// replayed on fresh state to prove it, then shrunk by delta debugging to a
// short reproducer printed as a regression row.
//
// The package holds the engine only; the tests that start the two servers
// live in server/resp (difffuzz_test.go, diff_regress_test.go).
package respdiff
