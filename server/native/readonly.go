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

// admit asks the write gate before frame f's write (on the connection's
// reader: one at a time); false means the write was refused (answered).
// exitWrite must follow the write; a contained panic calls it too (a gate
// left held would stall the next claim's writes on this node for good).
func (c *conn) admit(f wire.Frame) bool {
	gate := c.srv.cfg.WriteGate
	if gate == nil {
		return true
	}
	held, st, msg := gate.Enter(c.clientName)
	if st != kv.StatusSuccess {
		c.refuse(f.ID, f.Op, st, msg)
		return false
	}
	c.gateHeld = held
	return true
}

// exitWrite ends the write admit admitted, if it held the gate.
func (c *conn) exitWrite() {
	if c.gateHeld {
		c.gateHeld = false
		c.srv.cfg.WriteGate.Exit()
	}
}

// admitItem is admit for one write of a batch, which may run on a worker
// beside the reader: held is the caller's (exitItem, deferred), a refusal
// is the item's result.
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

// exitItem ends a batch write admitItem admitted under the gate.
func (c *conn) exitItem(held bool) {
	if held {
		c.srv.cfg.WriteGate.Exit()
	}
}
