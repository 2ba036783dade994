package store

import (
	"fmt"

	"github.com/zaris-io/zaris/internal/kv"
)

// The per-key caps (R-MEM-3). A key is bounded in two dimensions of bytes
// (itemsize.go): its item size — what it holds as serialised: a string's
// value, a collection's members, fields, values and entries with their
// encoding's framing — by MaxItemBytes, the same bound for a string and a
// collection; and a collection's accounted bytes — in memory, elements plus
// their bookkeeping, what the memory budget is charged — by
// MaxCollectionBytes and the store's cap. MaxCollectionBytes (64 MiB) is
// what the snapshot, migration and replication frames are sized for, so it
// bounds a collection's item size too when MaxItemBytes is raised past it:
// no collection record outgrows a frame, whichever of its two sizes is the
// larger (a pending stream entry weighs more serialised than in memory
// when its consumer's name is long). MaxCollectionElements bounds its
// elements.
//
// Every growing command computes its exact growth in all three before it
// mutates: a refused command changes nothing. A replica replaying an effect
// does not check (the owner did, and a replica configured with a smaller
// cap must not diverge from its owner).

// capHit names the cap a command would pass.
type capHit uint8

const (
	capNone capHit = iota
	capElements
	capItemBytes // MaxItemBytes, of the item size
	capAccounted // MaxCollectionBytes or the store's cap, of the accounted bytes
	capMemory    // the store's cap under no-eviction
)

// keyFits is the per-key cap rule, pure: may a collection of size cur grow
// by grow within limit? A mutation that does not grow a dimension never
// trips that dimension's cap, so a key already over a cap lowered since (or
// received from a node with a larger one) can still shrink or be rewritten
// in place at the same size.
func keyFits(cur, grow, limit keySize) capHit {
	switch {
	case grow.elems > 0 && cur.elems+grow.elems > limit.elems:
		return capElements
	case grow.item > 0 && cur.item+grow.item > limit.item:
		return capItemBytes
	case grow.acct > 0 && cur.acct+grow.acct > limit.acct:
		return capAccounted
	}
	return capNone
}

// keyLimits is the most one collection may hold in each dimension.
func (s *Store) keyLimits() keySize {
	return keySize{
		elems: s.cfg.MaxCollectionElements,
		item:  min(int64(s.cfg.MaxItemBytes), s.cfg.MaxCollectionBytes),
		acct:  min(s.cfg.MaxCollectionBytes, s.maxMemory()),
	}
}

// sizeOf is a collection's size in the three dimensions.
func sizeOf(c collection) keySize {
	if s, ok := c.(*streamColl); ok {
		return s.current()
	}
	return keySize{c.count(), c.itemSize(), c.size()}
}

// recordFits reports whether a whole new record passes the per-key caps
// (COPY builds one): a string's value, a collection's size from nothing.
func (s *Store) recordFits(r *Record) bool {
	if c := r.coll(); c != nil {
		return keyFits(keySize{}, sizeOf(c), s.keyLimits()) == capNone
	}
	return r.ValueLen() <= s.cfg.MaxItemBytes
}

// fits reports whether the command's collection may grow by grow (negative
// dimensions: it shrinks). On false the handler returns x.tooLarge()
// before mutating anything.
func (x *execCtx) fits(grow keySize) bool {
	if x.apply || x.coll == nil {
		return true
	}
	return x.fitsFrom(sizeOf(x.coll), grow)
}

// fitsFrom is fits for a caller that knows the collection's current size
// better than sizeOf (a stream counts its live entries; a new collection
// replacing the key starts from nothing).
func (x *execCtx) fitsFrom(cur, grow keySize) bool {
	if x.apply {
		return true
	}
	s := x.seg.store
	x.capHit = keyFits(cur, grow, s.keyLimits())
	if x.capHit == capNone && !x.admitted() && s.storeFull(x.seg, grow.acct) {
		x.capHit = capMemory
	}
	return x.capHit == capNone
}

// OutOfMemory reports whether no write that adds data can succeed now, the
// state in which Redis refuses its denyoom commands before they run (and
// while MULTI queues them): under no-eviction the owned bytes are past the
// cap; under an evicting policy the cap is below the smallest record, so
// evicting everything would not make room (Redis's maxmemory 1). An
// evicting store over its cap otherwise still takes writes: its evictor
// makes the room.
func (s *Store) OutOfMemory() bool {
	if s.evictionPolicy() == NoEviction {
		return s.owned.Load() > s.maxMemory()
	}
	return s.maxMemory() < recordOverhead
}

// storeFull is the no-eviction rule for a write growing the owned data by
// grow bytes: refused (CapacityExceeded) when it would pass the cap, as a
// Put is. Replica segments and shrinking writes are never refused.
func (s *Store) storeFull(g *Segment, grow int64) bool {
	return s.evictionPolicy() == NoEviction && g.owned && grow > 0 && s.owned.Load()+grow > s.maxMemory()
}

// tooLarge is the refusal of a command fits refused: ItemTooLarge with the
// same text a string over the cap gets when the item size would pass its
// cap, its own text for the element and accounted-bytes caps;
// under no-eviction, CapacityExceeded when the store is full.
func (x *execCtx) tooLarge() kv.Reply {
	s := x.seg.store
	switch x.capHit {
	case capMemory:
		return kv.StatusReply(kv.StatusCapacityExceeded)
	case capElements:
		return kv.Reply{Status: kv.StatusItemTooLarge,
			Message: fmt.Sprintf("collection would exceed the maximum of %d elements", s.cfg.MaxCollectionElements)}
	case capAccounted:
		return kv.Reply{Status: kv.StatusItemTooLarge,
			Message: fmt.Sprintf("collection would exceed the maximum of %d bytes in memory", s.keyLimits().acct)}
	}
	return kv.Reply{Status: kv.StatusItemTooLarge, Message: itemTooLargeMessage(s.keyLimits().item)}
}

// itemTooLargeMessage is the one text of a key refused for its size, for a
// string value and a collection alike (RESP answers "-OOM " + it).
func itemTooLargeMessage(limit int64) string {
	return fmt.Sprintf("value exceeds the maximum item size of %d bytes", limit)
}

// hashSetGrowth is what setting the field/value pairs would add to h
// (negative when values shrink). A field named twice counts once, with its
// last value, as the command leaves it.
func hashSetGrowth(h *hashColl, pairs [][]byte) keySize {
	var grow keySize
	var earlier map[string][]byte // fields set by this command before, with their value
	if len(pairs) > 2 {
		earlier = make(map[string][]byte, len(pairs)/2)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		f, v := pairs[i], pairs[i+1]
		old, exists := earlier[string(f)]
		if !exists {
			old, exists = h.get(f)
		}
		grow = grow.plus(hashFieldSize(len(f), len(v)))
		if exists {
			grow = grow.minus(hashFieldSize(len(f), len(old)))
		}
		if earlier != nil {
			earlier[string(f)] = v
		}
	}
	return grow
}

// setAddGrowth is what adding members would add to s: its new members,
// each counted once.
func setAddGrowth(s *setColl, members [][]byte) keySize {
	var grow keySize
	var earlier map[string]struct{}
	if len(members) > 1 {
		earlier = make(map[string]struct{}, len(members))
	}
	for _, m := range members {
		if s.has(m) {
			continue
		}
		if earlier != nil {
			if _, ok := earlier[string(m)]; ok {
				continue
			}
			earlier[string(m)] = struct{}{}
		}
		grow = grow.plus(setMemberSize(len(m)))
	}
	return grow
}

// zsetAddGrowth is what ZADD's score/member pairs would add to z: members
// not yet present, each counted once. A moved score costs nothing; with XX
// nothing is added.
func zsetAddGrowth(z *zsetColl, pairs [][]byte, onlyExisting bool) keySize {
	var grow keySize
	if onlyExisting {
		return grow
	}
	var earlier map[string]struct{}
	if len(pairs) > 2 {
		earlier = make(map[string]struct{}, len(pairs)/2)
	}
	for i := 1; i < len(pairs); i += 2 {
		m := pairs[i]
		if z.node(m) != nil {
			continue
		}
		if earlier != nil {
			if _, ok := earlier[string(m)]; ok {
				continue
			}
			earlier[string(m)] = struct{}{}
		}
		grow = grow.plus(zsetMemberSize(len(m)))
	}
	return grow
}
