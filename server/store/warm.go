package store

import (
	"unsafe"

	"github.com/zaris-io/zaris/internal/placement"
)

// WarmBatch is how many keys WarmAhead reads ahead at most.
const WarmBatch = 16

// warmProbe bounds the slots WarmAhead walks from a key's home slot.
const warmProbe = 4

// warmSlot is the slot whose record a lookup of a key hashing to h will
// compare first: the first of its probe (from home, at most warmProbe
// slots on) whose stored hash is h, or that is empty. A key displaced from
// its home slot by a collision — a third of them at the table's usual load
// — would otherwise warm a neighbour's record and leave its own cold (the
// index probe's stall, issue #17, D87).
//
//go:norace
func warmSlot(sh *tableShape, home, h uint32) uint32 {
	i := home
	for range warmProbe {
		if sh.hashes[i]&^expiresBit == h || sh.recs[i] == nil {
			break
		}
		if i++; int(i) == len(sh.recs) {
			i = 0
		}
	}
	return i
}

// WarmAhead reads ahead, without any lock, what the lookups of keys about
// to be run one command after another will touch first: each key's index
// slot and the record there with its key bytes, and the op-log slot its
// segment's next write fills (the trim of a full ring reads it first). A pipeline's commands
// otherwise wait for those cache misses one key at a time (two thirds of
// the index probe's cost for a pipelined GET or INCR, issue #17); loaded
// together, the CPU has them in flight at once. It changes nothing and
// answers nothing: the result only keeps the loads from being dropped.
//
// The reads race with the segments' writers on purpose, which is safe
// because nothing read is trusted: a slot holds some record pointer ever
// written there (one machine word, never torn), a table's shape is
// replaced whole, never changed, the op-log's tail is one pointer into its
// ring, and a stale record or ring is still memory the collector keeps
// while it is referenced. Hence go:norace — the race
// detector would report exactly these reads — and nothing here calls out.
//
//go:norace
func (s *Store) WarmAhead(keys [][]byte) (sum uint) { return s.WarmAheadFields(keys, nil, nil) }

// WarmAheadFields is WarmAhead with each key's command's first and last
// arguments after the key (fields[i] and lasts[i] for keys[i], nil for
// none): where the key holds a hash or a set, the slot a lookup of the
// field or member (the first) starts at and its entry are read ahead too —
// a pipelined HSET's field lookup waited for those two misses — and where
// it holds a sorted set, the member's (the last: ZADD key score member)
// slot, node and neighbours (D88).
//
//go:norace
func (s *Store) WarmAheadFields(keys, fields, lasts [][]byte) (sum uint) {
	return s.warm(keys, 1, fields, lasts)
}

// warm reads ahead keys[0], keys[step], … (at most WarmBatch of them), and
// the fields and members of those holding collections when fields and
// lasts are not nil (WarmAheadFields).
//
//go:norace
func (s *Store) warm(keys [][]byte, step int, fields, lasts [][]byte) (sum uint) {
	var shapes [WarmBatch]*tableShape
	var slots, hashes [WarmBatch]uint32
	var recs [WarmBatch]*Record
	var at [WarmBatch]int     // recs[j] is keys[at[j]]'s
	var again [WarmBatch]bool // keys[at[j]] is the key before it again
	n, prev := 0, ""
	for ki, seen := 0, 0; ki < len(keys) && seen < WarmBatch; ki, seen = ki+step, seen+1 {
		k := keys[ki]
		key := unsafe.String(unsafe.SliceData(k), len(k))
		if n > 0 && key == prev {
			// One key over and over (a pipeline of LPUSH or HSET on one
			// list or hash): its slot and record are loading already; only
			// its field is read ahead.
			again[n], at[n] = true, ki
			n++
			continue
		}
		g := s.segments[placement.SegmentOf(key, len(s.segments))]
		if e := g.log.tail; e != nil {
			sum += uint(e.rev)
		}
		sh := g.items.shape
		if sh == nil || len(sh.recs) == 0 {
			continue
		}
		h := hashKey(key)
		shapes[n], hashes[n] = sh, h
		slots[n] = uint32(uint64(h) * uint64(len(sh.recs)) >> 32)
		at[n], prev = ki, key
		n++
	}
	for j := range n {
		if again[j] {
			recs[j] = recs[j-1]
			continue
		}
		i := warmSlot(shapes[j], slots[j], hashes[j])
		recs[j] = shapes[j].recs[i]
		sum += uint(shapes[j].hashes[i])
	}
	for j := range n {
		if again[j] {
			continue
		}
		if r := recs[j]; r != nil && r.p != nil {
			sum += uint(*(*byte)(r.p))
			if r.form&formExt == 0 && r.klen > 1 {
				// The key's last byte too: a key may cross into the
				// record's next cache line, which the comparison reads.
				sum += uint(*(*byte)(unsafe.Add(r.p, r.klen-1)))
			}
			if r.form&(formExt|formExpiry) == formExpiry {
				// The expiry after the value (D89), which liveAt reads:
				// a record with one is 96 bytes and crosses a cache line.
				sum += uint(*(*byte)(unsafe.Add(r.p, uintptr(r.klen)+uintptr(r.vlen))))
			}
		}
	}
	if fields == nil {
		return sum
	}
	// Each level of every field is loaded before the next level of any:
	// the slots, then their entries (a hash's or a set's entry, a sorted
	// set's node), then a node's member bytes and neighbours. Field after
	// field, each waited for its own chain of misses in turn (a tenth of
	// a pipelined HSET's CPU was that wait).
	var fslots [WarmBatch]*fieldSlot // the field's or member's home slot, for j
	var zset [WarmBatch]bool         // fslots[j] is a sorted set's
	for j := range n {
		// A record's collection is set before the record is published and
		// never after: the interface read is whole.
		r := recs[j]
		if r == nil || r.form&formExt == 0 || r.p == nil {
			continue
		}
		f, last := fields[at[j]], []byte(nil)
		if lasts != nil {
			last = lasts[at[j]]
		}
		switch c := (*recordExt)(r.p).c.(type) {
		case *hashColl:
			if f != nil {
				fslots[j] = c.t.homeSlot(f)
			}
		case *setColl:
			if f != nil {
				fslots[j] = c.t.homeSlot(f)
			}
		case *zsetColl:
			if last != nil {
				fslots[j], zset[j] = c.nodes.homeSlot(last), true
			}
		}
		if fs := fslots[j]; fs != nil {
			sum += uint(fs.hash)
		}
	}
	var members [WarmBatch]*byte
	var nexts, prevs [WarmBatch]*slNode
	for j, fs := range fslots[:n] {
		if fs == nil {
			continue
		}
		e := fs.e
		switch {
		case e == nil, e == tombstone: // an array a resize drains (D129) may be the one read
		case !zset[j]:
			sum += uint(*(*byte)(e))
		default:
			// A node's member is set before the node is published and
			// never after; its links are single words.
			nd := (*slNode)(e)
			if len(nd.member) > 0 {
				members[j] = unsafe.StringData(nd.member)
			}
			nexts[j], prevs[j] = nd.lv0.next, nd.prev
		}
	}
	for j := range n {
		if !zset[j] {
			continue
		}
		if m := members[j]; m != nil {
			sum += uint(*m)
		}
		if next := nexts[j]; next != nil {
			sum += uint(next.lv0.height)
		}
		if prev := prevs[j]; prev != nil {
			sum += uint(prev.lv0.height)
		}
	}
	return sum
}

// WarmAheadOps is WarmAhead for the keys of the first WarmBatch of ops: a
// replica applies a shipped batch one op after another, and each lookup
// otherwise waited for its index slot and record alone (the replica's
// find was a third of its apply's CPU, issue #17).
//
//go:norace
func (s *Store) WarmAheadOps(ops []Op) (sum uint) {
	var keys [WarmBatch][]byte
	n := 0
	for i := range ops[:min(len(ops), WarmBatch)] {
		k := ops[i].Record.Key()
		if ops[i].Cmd != nil {
			k = ops[i].Cmd.Key
		}
		keys[n] = unsafe.Slice(unsafe.StringData(k), len(k))
		n++
	}
	if n < 2 {
		return 0 // one lookup has nothing to overlap with
	}
	return s.warm(keys[:n], 1, nil, nil)
}
