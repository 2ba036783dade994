package native

import (
	"runtime/debug"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/internal/wire"
)

// PanicObserver is an optional extension of Observer: an Observer that
// implements it is told of every contained panic (zaris_panics_total).
type PanicObserver interface {
	Panicked()
}

// dispatchContained runs one request so that a panic while serving it
// costs its own connection only: the locks it held are released by their
// defers, the request is answered StatusInternal by its id, and the
// connection is closed once that is written; the node serves on. It
// reports false when the connection must end.
func (c *conn) dispatchContained(f wire.Frame) (ok bool) {
	mark, acks := len(c.out), len(c.acks)
	c.curCmd = 0
	defer func() {
		if v := recover(); v != nil {
			c.exitWrite() // the write gate, if the panic came between admit and exitWrite
			c.out = c.out[:min(mark, len(c.out))]
			c.acks = c.acks[:min(acks, len(c.acks))]
			c.out = appendError(c.out, f.ID, f.Op, kv.StatusInternal, "internal error")
			c.panicked(c.requestName(f.Op), v, debug.Stack())
			if obs := c.srv.cfg.Observer; obs != nil {
				obs.Op(c.shard, f.Op, kv.StatusInternal, 0)
			}
			ok = false
		}
	}()
	c.dispatch(f)
	return true
}

// requestName names a request for the log: its opcode, and for a command
// the command's name — never a key or a value.
func (c *conn) requestName(op wire.Opcode) string {
	if op == wire.OpCommand && c.curCmd != 0 {
		return op.String() + " " + c.curCmd.String()
	}
	return op.String()
}

// panicked logs a contained panic with its stack and counts it.
func (c *conn) panicked(what string, v any, stack []byte) {
	if po, ok := c.srv.cfg.Observer.(PanicObserver); ok {
		po.Panicked()
	}
	c.log.Error("panic while serving a request; its connection is closed, the node serves on",
		"request", what, "panic", panics.Describe(v), "stack", string(stack))
}

// guard is deferred by every goroutine working for one connection (stream
// pushers, worker-pool batches): a panic there closes that connection only.
func (c *conn) guard(what string) {
	if v := recover(); v != nil {
		c.panicked(what, v, debug.Stack())
		c.stopReading()
		c.abort()
	}
}

// guardRequest is guard for a goroutine answering request id: the request
// is answered StatusInternal before the connection closes.
func (c *conn) guardRequest(id uint32, op wire.Opcode, what string) {
	if v := recover(); v != nil {
		c.panicked(what, v, debug.Stack())
		c.write(appendError(nil, id, op, kv.StatusInternal, "internal error"))
		c.stopReading()
		c.abort()
	}
}
