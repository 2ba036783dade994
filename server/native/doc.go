// Package native owns the server side of Zaris's native protocol: the
// listener, one goroutine per client connection, the handshake (store name,
// protocol version, token), request dispatch onto the store engine and the
// bounded worker pool for work that may block.
//
// The hot path is built to avoid the costs the latency-floor article lists.
// A connection's reader decodes each pipelined request and executes an
// owner-local read or write inline — no hand-off to another goroutine, no
// second hash of the key (the segment is computed once with the placement
// function), no per-request configuration lookup — and appends the response
// to a connection-local buffer that is written with one syscall when no
// complete request is left in the read buffer (one write per read batch).
// Only large batches go to the worker pool, so one client's bulk call cannot
// stall its other pipelined requests; the pool is bounded (MaxWorkers) so
// the node cannot be driven into unbounded goroutine growth.
//
// Protocol errors (a malformed body, an unknown opcode, a frame over the
// limit) are answered with an error frame by request id and the connection
// carries on; a stream that cannot be resynchronised (a malformed length,
// a truncated frame, a frame that dribbles in slower than FrameTimeout) is
// closed and logged once. Nothing about one connection affects another.
//
// The package imports the store engine and the wire codec; it must not
// import the SDK.
package native
