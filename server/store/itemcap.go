package store

import (
	"fmt"

	"github.com/zaris-io/zaris/internal/kv"
)

// The per-key cap (R-MEM-3). MaxItemBytes bounds what one key holds: a
// string's value bytes, and a collection's accounted bytes (its elements plus
// their bookkeeping, what the memory budget is charged for). A collection
// record travels as one value in snapshots, migration and replication
// frames, so it must obey the same bound as a string. MaxCollectionBytes and
// MaxCollectionElements may bound a collection further.
//
// Every growing command checks before it mutates: a refused command changes
// nothing. A replica replaying an effect does not check (the owner did, and a
// replica configured with a smaller cap must not diverge from its owner).

// capHit names the cap a command would pass.
type capHit uint8

const (
	capNone capHit = iota
	capElements
	capBytes
	capMemory // the store's cap under no-eviction
)

// keyFits is the per-key cap rule, pure: may a collection holding count
// elements in size accounted bytes grow by addElems and addBytes? A mutation
// that does not grow a dimension never trips that dimension's cap, so a key
// already over a cap lowered since (or received from a node with a larger
// one) can still shrink or be rewritten in place at the same size.
func keyFits(count int, size int64, addElems int, addBytes int64, maxElems int, maxBytes int64) capHit {
	switch {
	case addElems > 0 && count+addElems > maxElems:
		return capElements
	case addBytes > 0 && size+addBytes > maxBytes:
		return capBytes
	}
	return capNone
}

// collectionByteCap is the most accounted bytes one collection may hold.
func (s *Store) collectionByteCap() int64 {
	return min(int64(s.cfg.MaxItemBytes), s.cfg.MaxCollectionBytes, s.maxMemory())
}

// fits reports whether the command's collection may grow by addElems
// elements and addBytes accounted bytes (negative: it shrinks). On false the
// handler returns x.tooLarge() before mutating anything.
func (x *execCtx) fits(addElems int, addBytes int64) bool {
	if x.apply || x.coll == nil {
		return true
	}
	return x.fitsFrom(x.coll.count(), x.coll.size(), addElems, addBytes)
}

// fitsFrom is fits for a caller that knows the collection's current count
// and size better than collection.count (a stream counts its live entries).
func (x *execCtx) fitsFrom(count int, size int64, addElems int, addBytes int64) bool {
	if x.apply {
		return true
	}
	s := x.seg.store
	x.capHit = keyFits(count, size, addElems, addBytes, s.cfg.MaxCollectionElements, s.collectionByteCap())
	if x.capHit == capNone && s.storeFull(x.seg, addBytes) {
		x.capHit = capMemory
	}
	return x.capHit == capNone
}

// storeFull is the no-eviction rule for a write growing the owned data by
// grow bytes: refused (CapacityExceeded) when it would pass the cap, as a
// Put is. Replica segments and shrinking writes are never refused.
func (s *Store) storeFull(g *Segment, grow int64) bool {
	return s.evictionPolicy() == NoEviction && g.owned && grow > 0 && s.owned.Load()+grow > s.maxMemory()
}

// tooLarge is the refusal of a command fits refused: ItemTooLarge with the
// same text a string over the cap gets, or the element cap passed; under
// no-eviction, CapacityExceeded when the store is full.
func (x *execCtx) tooLarge() kv.Reply {
	s := x.seg.store
	if x.capHit == capMemory {
		return kv.StatusReply(kv.StatusCapacityExceeded)
	}
	if x.capHit == capElements {
		return kv.Reply{Status: kv.StatusItemTooLarge,
			Message: fmt.Sprintf("collection would exceed the maximum of %d elements", s.cfg.MaxCollectionElements)}
	}
	return kv.Reply{Status: kv.StatusItemTooLarge, Message: itemTooLargeMessage(s.collectionByteCap())}
}

// itemTooLargeMessage is the one text of a key refused for its size, for a
// string value and a collection alike (RESP answers "-OOM " + it).
func itemTooLargeMessage(limit int64) string {
	return fmt.Sprintf("value exceeds the maximum item size of %d bytes", limit)
}

// hashSetGrowth is what setting the field/value pairs would add to h: new
// fields and accounted bytes (negative when values shrink). A field named
// twice counts once, with its last value, as the command leaves it.
func hashSetGrowth(h *hashColl, pairs [][]byte) (fields int, bytes int64) {
	var earlier map[string][]byte // fields set by this command before, with their value
	if len(pairs) > 2 {
		earlier = make(map[string][]byte, len(pairs)/2)
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		f, v := pairs[i], pairs[i+1]
		old, exists := earlier[string(f)]
		if !exists {
			old, exists = h.m[string(f)]
		}
		if exists {
			bytes += int64(len(v) - len(old))
		} else {
			fields++
			bytes += int64(len(f)+len(v)) + hashFieldOverhead
		}
		if earlier != nil {
			earlier[string(f)] = v
		}
	}
	return fields, bytes
}

// setAddGrowth is what adding members would add to s: new members (each
// counted once) and their accounted bytes.
func setAddGrowth(s *setColl, members [][]byte) (added int, bytes int64) {
	var earlier map[string]struct{}
	if len(members) > 1 {
		earlier = make(map[string]struct{}, len(members))
	}
	for _, m := range members {
		if _, ok := s.m[string(m)]; ok {
			continue
		}
		if earlier != nil {
			if _, ok := earlier[string(m)]; ok {
				continue
			}
			earlier[string(m)] = struct{}{}
		}
		added++
		bytes += int64(len(m)) + setMemberOverhead
	}
	return added, bytes
}

// zsetAddGrowth is what ZADD's score/member pairs would add to z: members
// not yet present (each counted once) and their accounted bytes. A moved
// score costs nothing; with XX nothing is added.
func zsetAddGrowth(z *zsetColl, pairs [][]byte, onlyExisting bool) (added int, bytes int64) {
	if onlyExisting {
		return 0, 0
	}
	var earlier map[string]struct{}
	if len(pairs) > 2 {
		earlier = make(map[string]struct{}, len(pairs)/2)
	}
	for i := 1; i < len(pairs); i += 2 {
		m := pairs[i]
		if _, ok := z.scores[string(m)]; ok {
			continue
		}
		if earlier != nil {
			if _, ok := earlier[string(m)]; ok {
				continue
			}
			earlier[string(m)] = struct{}{}
		}
		added++
		bytes += int64(len(m)) + zsetMemberOverhead
	}
	return added, bytes
}
