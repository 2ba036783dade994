package native

import (
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
)

// Writes on a follower cluster (R-OPS-4): while the cluster follows another
// cluster's change feed, Config.WriteGate refuses every write but its
// applier's (StatusReadOnly), and orders the applier's writes by its claim
// (server/follow's fence: a deposed applier's write never lands after one
// of the applier that replaced it). Reads are served.

// admit asks the write gate before frame f's write; ok false means the
// write was refused (answered). held: exitWrite must follow the write.
func (c *conn) admit(f wire.Frame) (held, ok bool) {
	gate := c.srv.cfg.WriteGate
	if gate == nil {
		return false, true
	}
	held, st, msg := gate.Enter(c.clientName)
	if st != kv.StatusSuccess {
		c.refuse(f.ID, f.Op, st, msg)
		return false, false
	}
	return held, true
}

// admitItem is admit for one write of a batch: a refusal is its result.
func (c *conn) admitItem() (held bool, refused kv.Result) {
	gate := c.srv.cfg.WriteGate
	if gate == nil {
		return false, kv.Result{}
	}
	held, st, msg := gate.Enter(c.clientName)
	if st != kv.StatusSuccess {
		return false, kv.Result{Status: st, Detail: msg}
	}
	return held, kv.Result{}
}

// exitWrite ends a write admitted under the gate.
func (c *conn) exitWrite(held bool) {
	if held {
		c.srv.cfg.WriteGate.Exit()
	}
}
