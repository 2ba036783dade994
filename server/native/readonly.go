package native

import (
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// Writes on a follower cluster (R-OPS-4): while the cluster follows another
// cluster's change feed, Config.ReadOnly refuses every write but the
// applier's with StatusReadOnly; reads are served.

// readOnly refuses frame f when it writes and the gate says so; true =
// refused (answered).
func (c *conn) readOnly(f wire.Frame) bool {
	gate := c.srv.cfg.ReadOnly
	if gate == nil {
		return false
	}
	msg := gate(c.clientName)
	if msg == "" || !frameWrites(f) {
		return false
	}
	c.refuse(f.ID, f.Op, kv.StatusReadOnly, msg)
	return true
}

// frameWrites reports whether f changes data. A malformed body reports
// false: its handler answers BadRequest.
func frameWrites(f wire.Frame) bool {
	switch f.Op {
	case wire.OpPut, wire.OpDelete, wire.OpPersist, wire.OpExpire:
		return true
	case wire.OpCommand:
		var cmd kv.Cmd
		if wire.DecodeCommandRequest(f.Body, &cmd) != nil {
			return false
		}
		return store.CommandWrites(cmd.Op)
	case wire.OpBatch:
		items, err := wire.DecodeBatchRequest(f.Body, nil)
		if err != nil {
			return false
		}
		for i := range items {
			if items[i].Op != wire.BatchGet {
				return true
			}
		}
	}
	return false
}
