package resp

import (
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// HyperLogLog commands (issue #13 item 5). PFADD and one-key PFCOUNT run in
// the store engine (server/store/hll.go); PFCOUNT of several keys and
// PFMERGE combine the registers here, under the keys' segment locks.

const (
	msgNotHLL     = "WRONGTYPE Key is not a valid HyperLogLog string value."
	msgInvalidHLL = "INVALIDOBJ Corrupted HLL object detected"
)

func init() {
	h := func(c *command) *command { c.group = "hyperloglog"; return c }
	register(
		h(&command{name: "pfadd", arity: -2, flags: writeFlags | flagFast, first: 1, last: 1, step: 1, since: "2.8.9",
			summary: "Adds elements to a HyperLogLog key. Creates the key if it doesn't exist.", run: execCoded(kv.CmdPFAdd, shapePlain)}),
		h(&command{name: "pfcount", arity: -2, flags: flagReadonly, first: 1, last: -1, step: 1, since: "2.8.9",
			summary: "Returns the approximated cardinality of the set(s) observed by the HyperLogLog key(s); keys of any slot on one node.", run: cmdPFCount}),
		h(&command{name: "pfmerge", arity: -2, flags: writeFlags, first: 1, last: -1, step: 1, since: "2.8.9",
			summary: "Merges one or more HyperLogLog values into a single key; keys of any slot on one node.", run: cmdPFMerge}),
	)
}

// mergeHLLs raises max to the registers of every HLL among keys (missing
// keys are skipped): whether one was dense, and the value of each key
// (nil when missing); false after writing the error.
func (c *conn) mergeHLLs(max []uint8, keys [][]byte) (dense bool, vals [][]byte, ok bool) {
	vals = make([][]byte, len(keys))
	for i, kb := range keys {
		v, ok := c.getString(kb)
		if !ok {
			return false, nil, false
		}
		if v == nil {
			continue
		}
		if !store.HLLValid(v) {
			c.err(msgNotHLL)
			return false, nil, false
		}
		dense = dense || store.HLLDense(v)
		if !store.HLLMerge(max, v) {
			c.err(msgInvalidHLL)
			return false, nil, false
		}
		vals[i] = v
	}
	return dense, vals, true
}

func cmdPFCount(c *conn, args [][]byte) {
	if len(args) == 2 {
		c.writeCoded(c.execRaw(kv.CmdPFCount, args[1]), shapePlain)
		return
	}
	c.atomically(false, args[1:], func() {
		max := make([]uint8, store.HLLRegisters)
		if _, _, ok := c.mergeHLLs(max, args[1:]); !ok {
			return
		}
		c.out.Int(int64(store.HLLCount(max)))
	})
}

func cmdPFMerge(c *conn, args [][]byte) {
	c.atomically(true, args[1:], func() {
		max := make([]uint8, store.HLLRegisters)
		dense, vals, ok := c.mergeHLLs(max, args[1:])
		if !ok {
			return
		}
		v, ok := store.HLLStore(vals[0], max, dense)
		if !ok {
			c.err(msgInvalidHLL)
			return
		}
		// The destination is modified in place in Redis: its expiry stays,
		// and the keyspace event is "pfadd", not "set" and "expire".
		g := c.segment(view(args[1]))
		opts := kv.PutOptions{KeepTTL: vals[0] != nil}
		if len(v) > c.srv.store.MaxItemBytes() {
			c.storeError(kv.StatusItemTooLarge, "")
			return
		}
		var st kv.Status
		if a, ok := g.(*store.Atomic); ok {
			st = a.PutNamed(string(args[1]), v, &opts, kv.CmdPFAdd)
		} else {
			st = g.PutStatus(string(args[1]), v, &opts)
		}
		if st != kv.StatusSuccess {
			c.setCurKey(args[1])
			c.storeError(st, "")
			return
		}
		c.out.OK()
	})
}
