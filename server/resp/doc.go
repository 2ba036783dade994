// Package resp owns the Redis-protocol front end of a Zaris node (R-RESP):
// the listener, one goroutine per client connection, the RESP2/RESP3 codec
// and the command table that maps Redis commands onto the store engine.
//
// The codec is pure and apart from the connection loop (STYLE 10): Parser
// reads requests from a byte buffer (multibulk and inline, with Redis's
// limits and error texts, fuzzed), Writer appends replies in the protocol
// the client chose with HELLO. The connection loop reads, executes every
// complete pipelined command inline on the reader goroutine — a key's
// segment is found once with the placement function, nothing is handed to
// another goroutine — and writes the replies of the whole batch at once.
// Replies the socket does not take at once go to a per-connection
// background writer, so a client that reads slowly never stalls the reader
// and one that does not read at all is disconnected at OutputBufferLimit.
//
// Every command is implemented once, in the store engine (store.Get/Put/…
// and store.Exec with the kv command ops); this package only parses
// arguments and shapes replies, so RESP, the native protocol and embedded
// mode share one implementation (R-DS). The command table (name, arity,
// flags, key positions, handler) answers COMMAND, enforces Redis Cluster's
// one-slot rule for multi-key commands (CROSSSLOT) and generates
// docs/RESP.md.
//
// The package imports the store engine, the kv vocabulary, the placement
// function and the metrics recorder; it must not import the server wiring
// or the SDK.
package resp
