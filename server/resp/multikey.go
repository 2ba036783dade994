package resp

import (
	"slices"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/store"
)

// Multi-key commands (issue #13 item 4). Redis Cluster refuses a command
// naming keys of several slots (CROSSSLOT) because no node can serve it
// atomically. A Zaris node can whenever it owns every key's segment: it
// takes their locks in ascending segment order (the store's lock order)
// and runs the command's ordinary handler against the locked view. So on
// a lone node — the default, a one-node cluster owning everything — every
// multi-key command works across slots exactly as on a standalone
// redis-server; in a multi-node cluster it works when all its keys are on
// this node, and is CROSSSLOT otherwise, as in Redis Cluster.

// keysPlan is how a command's keys let it run.
type keysPlan uint8

const (
	// planOneSlot: at most one slot — the ordinary path (the store answers
	// Moved when the slot is not this node's).
	planOneSlot keysPlan = iota
	// planLocal: several slots, every segment owned and served here — run
	// under the segments' locks, atomically.
	planLocal
	// planCrossSlot: several slots, at least one segment not served here
	// (another node's, or one changing hands): refused with CROSSSLOT.
	planCrossSlot
)

// planKeys is the rule, pure: the keys' slots and segments, and which
// segments this node serves now.
func planKeys(slots, segs []uint16, served func(seg uint16) bool) keysPlan {
	if oneSlot(slots) {
		return planOneSlot
	}
	for _, g := range segs {
		if !served(g) {
			return planCrossSlot
		}
	}
	return planLocal
}

// oneSlot reports whether the keys' slots are at most one.
func oneSlot(slots []uint16) bool {
	for _, s := range slots {
		if s != slots[0] {
			return false
		}
	}
	return true
}

// keysPlanOf applies planKeys to a command's arguments; with planLocal it
// returns the segments to lock, ascending and distinct, and with
// planOneSlot the slot's segment when the command is slotLocked (whether
// this node serves it is the store's to answer under the lock: MOVED).
func (c *conn) keysPlanOf(cmd *command, args [][]byte) (keysPlan, []uint16) {
	var idxBuf [16]int
	idx := cmd.appendKeyIndexes(idxBuf[:0], args)
	if len(idx) < 2 {
		return planOneSlot, nil
	}
	// Each key placed once (its segment from its slot); the slots on the
	// stack for a command of a few keys; ownership asked once a segment.
	var slotBuf [16]uint16
	slots := slotBuf[:0]
	for _, at := range idx {
		slots = append(slots, placement.Slot(view(args[at])))
	}
	if oneSlot(slots) { // the common case, decided before the segments are listed
		if cmd.slotLocked {
			return planOneSlot, append(c.planSegs[:0], placement.SegmentOfSlot(slots[0], c.srv.segs))
		}
		return planOneSlot, nil
	}
	// In the connection's room: runLocked has read them before the
	// command runs, so a command it runs (a script's) may plan again.
	segs := c.planSegs[:0]
	if len(slots) > len(c.planSegs) {
		segs = make([]uint16, 0, len(slots))
	}
	for _, sl := range slots {
		segs = append(segs, placement.SegmentOfSlot(sl, c.srv.segs))
	}
	slices.Sort(segs)
	segs = slices.Compact(segs)
	plan := planKeys(slots, segs, c.served)
	if plan != planLocal {
		return plan, nil
	}
	return plan, segs
}

// atomicallyMany is the store's AtomicallyMany with the view in the
// connection's room unless a view of it is already running there.
func (c *conn) atomicallyMany(segs []uint16, fn func(a *store.Atomic)) {
	if c.viewBusy {
		c.srv.store.AtomicallyMany(segs, fn)
		return
	}
	c.viewBusy = true
	defer func() { c.viewBusy = false }()
	c.srv.store.AtomicallyManyIn(&c.view, segs, fn)
}

// served reports whether this node serves segment seg now.
func (c *conn) served(seg uint16) bool { return c.srv.store.Segment(seg).Owned() }

// unlockedCommands are multi-key commands not run under the multi-segment
// lock: the blocking ones wait for data and must not hold locks while they
// wait (each try runs on its own), WATCH takes the locks itself.
var unlockedCommands = map[string]bool{"blpop": true, "brpop": true, "xread": true, "xreadgroup": true, "watch": true,
	"bzpopmin": true, "bzpopmax": true, "bzmpop": true,
	"sort":    true, // SORT locks what its patterns reach itself (cmd_keys2.go)
	"migrate": true, // one key at a time, never while it waits for the target (cmd_migrate.go)
	// Shard channels are no data: the command checks their slot's owner.
	"ssubscribe": true, "sunsubscribe": true}

// runLocked runs cmd with the write locks of segs held, through the locked
// view (c.tx), unless a transaction's view is already in place (EXEC holds
// every segment its commands name).
func (c *conn) runLocked(cmd *command, args [][]byte, segs []uint16) {
	if c.tx != nil || unlockedCommands[baseName(cmd)] {
		cmd.run(c, args)
		return
	}
	c.atomicallyMany(segs, func(a *store.Atomic) {
		if cmd.flags&flagWrite != 0 && a.Fenced() {
			// A segment is moving (its cut-over's write fence): refuse the
			// whole command rather than write the other segments' keys.
			c.out.Error("TRYAGAIN a key's slot is moving to another node; retry")
			return
		}
		if cmd.flags&flagWrite != 0 {
			a.Admit() // past deniedOOM: written whole, as Redis writes it
		}
		c.tx = a
		defer func() { c.tx = nil }()
		cmd.run(c, args)
	})
}

// prefetch has the locked view read ahead the keys a multi-key command
// is about to look up one by one (keys[0], keys[step], …): nothing to do
// outside a locked view, nor for keys of one segment, whose lookups the CPU
// overlaps by itself — there the read-ahead cost an MGET of ten keys of one
// slot 20 % more CPU, where across segments it saves a quarter (D117).
func (c *conn) prefetch(keys [][]byte, step int) {
	if c.tx != nil && len(keys) > 1 && !c.oneSegLocked {
		c.tx.Prefetch(keys, step)
	}
}

// cmdSetAlgebra is SINTER/SUNION: the store computes it over the keys'
// segments, held by the command (execAcross), with Redis 7.0's order of
// checks (every key's type is checked, a missing key is an empty set).
func cmdSetAlgebra(op kv.CmdOp) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		c.writeReply(c.execAcross(args[1:], kv.Cmd{Op: op, Key: view(args[1]), Args: args[2:]}), shapeSet)
	}
}

// atomically runs fn with the write locks of the keys' segments held and
// c.tx set to the locked view, so that a command reading and writing
// several keys is one atomic step (on a multi-node cluster execute has
// already refused keys that are not all here). Inside EXEC, or under the
// locks execute took, the view in place is used. A write meets a
// migration fence as TRYAGAIN, whole.
func (c *conn) atomically(write bool, keys [][]byte, fn func()) {
	if c.tx != nil {
		fn()
		return
	}
	segs := make([]uint16, len(keys))
	for i, k := range keys {
		segs[i] = placement.SegmentOf(view(k), c.srv.segs)
	}
	c.atomicallyMany(segs, func(a *store.Atomic) {
		if write && a.Fenced() {
			c.out.Error("TRYAGAIN a key's slot is moving to another node; retry")
			return
		}
		c.tx = a
		defer func() { c.tx = nil }()
		fn()
	})
}
