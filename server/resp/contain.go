package resp

import (
	"runtime/debug"
	"strings"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/server/metrics"
)

// msgInternal answers a command whose execution panicked.
const msgInternal = "ERR internal error"

// executeContained runs one command so that a panic while serving it costs
// its own connection only: the locks it held are released by their defers,
// the reply written so far is dropped for "-ERR internal error", the
// connection closes once that is written, and the node serves on.
func (c *conn) executeContained(args [][]byte) {
	mark, held := len(c.out.B), len(c.held)
	defer func() {
		if v := recover(); v != nil {
			c.recovered(args, mark, held, v)
		}
	}()
	c.execute(args)
	if c.trk.active {
		c.trackCommandDone(args)
	}
}

// recovered handles a panic of the command args, whose reply began at mark
// in out (held: the barrier-held replies before it).
func (c *conn) recovered(args [][]byte, mark, held int, v any) {
	name := commandName(args)
	c.panicked(name, v, debug.Stack())
	c.tx = nil // EXEC's segment lock was released by Atomically's defer
	c.txReset()
	c.out.B = c.out.B[:min(mark, len(c.out.B))]
	c.held = c.held[:min(held, len(c.held))]
	c.out.Error(msgInternal)
	c.closing = true
	if cmd := lookupCommand(args[0]); cmd != nil {
		c.srv.cfg.Metrics.Op(cmd.metric, kv.StatusInternal, 0)
	}
}

// panicked logs a contained panic — the command's name and the stack, never
// its arguments — and counts it.
func (c *conn) panicked(what string, v any, stack []byte) {
	c.srv.cfg.Metrics.Panic(metrics.ProtoRESP)
	c.logger().Error("panic while serving a request; its connection is closed, the node serves on",
		"command", what, "panic", panics.Describe(v), "stack", string(stack))
}

// guard is deferred by every goroutine working for one connection
// (pub/sub forwarder, blocking-command relays, barrier waits, the
// background writer): a panic there closes that connection only.
func (c *conn) guard(what string) {
	if v := recover(); v != nil {
		c.panicked(what, v, debug.Stack())
		c.abort()
	}
}

// commandName is the command's lower-case name (with its subcommand), for
// logs: the name of a command not in the table is not logged (it may be a
// value sent as a command).
func commandName(args [][]byte) string {
	cmd := lookupCommand(args[0])
	if cmd == nil {
		return "(unknown)"
	}
	if len(cmd.subs) > 0 && len(args) >= 2 {
		if sub := cmd.lookupSub(args[1]); sub != nil {
			return sub.name
		}
	}
	return strings.ToLower(cmd.name)
}
