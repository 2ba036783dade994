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
	if len(slots) < 2 {
		return planOneSlot
	}
	one := true
	for _, s := range slots[1:] {
		if s != slots[0] {
			one = false
			break
		}
	}
	if one {
		return planOneSlot
	}
	for _, g := range segs {
		if !served(g) {
			return planCrossSlot
		}
	}
	return planLocal
}

// keysPlanOf applies planKeys to a command's arguments; with planLocal it
// returns the segments to lock, ascending and distinct.
func (c *conn) keysPlanOf(cmd *command, args [][]byte) (keysPlan, []uint16) {
	idx := cmd.keyIndexes(args)
	if len(idx) < 2 {
		return planOneSlot, nil
	}
	slots := make([]uint16, len(idx))
	segs := make([]uint16, len(idx))
	for i, at := range idx {
		k := view(args[at])
		slots[i] = placement.Slot(k)
		segs[i] = placement.SegmentOf(k, c.srv.segs)
	}
	plan := planKeys(slots, segs, c.served)
	if plan != planLocal {
		return plan, nil
	}
	slices.Sort(segs)
	return plan, slices.Compact(segs)
}

// served reports whether this node serves segment seg now.
func (c *conn) served(seg uint16) bool { return c.srv.store.Segment(seg).Owned() }

// unlockedCommands are multi-key commands not run under the multi-segment
// lock: the blocking ones wait for data and must not hold locks while they
// wait (each try runs on its own), WATCH takes the locks itself.
var unlockedCommands = map[string]bool{"blpop": true, "brpop": true, "xread": true, "xreadgroup": true, "watch": true}

// runLocked runs cmd with the write locks of segs held, through the locked
// view (c.tx), unless a transaction's view is already in place (EXEC holds
// every segment its commands name).
func (c *conn) runLocked(cmd *command, args [][]byte, segs []uint16) {
	if c.tx != nil || unlockedCommands[baseName(cmd)] {
		cmd.run(c, args)
		return
	}
	c.srv.store.AtomicallyMany(segs, func(a *store.Atomic) {
		if cmd.flags&flagWrite != 0 && a.Fenced() {
			// A segment is moving (its cut-over's write fence): refuse the
			// whole command rather than write the other segments' keys.
			c.out.Error("TRYAGAIN a key's slot is moving to another node; retry")
			return
		}
		c.tx = a
		defer func() { c.tx = nil }()
		cmd.run(c, args)
	})
}

// cmdSetAlgebra is SINTER/SUNION: the store computes it where the keys
// share a segment; keys of several segments (locked by execute) are
// combined here from each set's members, with Redis's order of checks (a
// wrong type met before a missing key is an error; SINTER stops at the
// first missing key).
func cmdSetAlgebra(op kv.CmdOp, inter bool) func(c *conn, args [][]byte) {
	return func(c *conn, args [][]byte) {
		keys := args[1:]
		first := placement.SegmentOf(view(keys[0]), c.srv.segs)
		one := true
		for _, k := range keys[1:] {
			if placement.SegmentOf(view(k), c.srv.segs) != first {
				one = false
				break
			}
		}
		if one {
			c.exec(op, keys[0], keys[1:], shapeSet)
			return
		}
		sets := make([][]kv.Reply, 0, len(keys))
		empty := false
		for _, k := range keys {
			r := c.execRaw(kv.CmdSMembers, k)
			if r.Status != kv.StatusSuccess {
				c.writeReply(r, shapeSet)
				return
			}
			// A missing key makes the intersection empty, but Redis checks
			// every key's type first (WRONGTYPE wins).
			empty = empty || inter && len(r.Array) == 0
			sets = append(sets, r.Array)
		}
		if empty {
			c.out.Set(0)
			return
		}
		var acc []string
		if inter {
			for _, m := range sets[0] {
				acc = append(acc, string(m.Bulk))
			}
			for _, set := range sets[1:] {
				in := make(map[string]bool, len(set))
				for _, m := range set {
					in[string(m.Bulk)] = true
				}
				acc = slices.DeleteFunc(acc, func(m string) bool { return !in[m] })
			}
		} else {
			seen := map[string]bool{}
			for _, set := range sets {
				for _, m := range set {
					if ms := string(m.Bulk); !seen[ms] {
						seen[ms] = true
						acc = append(acc, ms)
					}
				}
			}
		}
		c.out.Set(len(acc))
		for _, m := range acc {
			c.out.BulkString(m)
		}
	}
}
