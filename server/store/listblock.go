package store

import "math"

// listArena holds a list's element bytes packed in blocks (D85). Every
// element was one allocation of its own — a 32-byte LPUSH cost a malloc, a
// 24-byte slice header in the ring and a pointer the collector followed on
// every cycle, for as long as the list lived. Here an element is an 8-byte
// listRef (no pointer) into a block; a block is a byte buffer of fixed
// capacity, filled in order and never written twice, so bytes handed out
// (a reply, a popped element) stay valid however the list changes after.
//
// Blocks grow with the list, from 64 bytes to listBlockMax; an element
// larger than a quarter of that gets a block of its own. A block whose
// elements are all released is dropped at once (a queue frees its oldest
// blocks as it drains); released bytes in a block that still holds live
// ones are only counted, and the list compacts into fresh blocks once they
// outweigh the live bytes (sparse).
type listArena struct {
	// blocks[i] is block number base+i; a dropped block is nil, and leading
	// dropped blocks are cut off (base grows).
	blocks []*listBlock
	base   uint32
	holes  int        // dropped blocks between kept ones
	expect int        // the bytes a rebuild is about to store (sizes its first block)
	cur    *listBlock // the block being filled (also in blocks)
	curNo  uint32
	// used is the bytes written into the blocks kept, live those of the
	// live elements: used − live are released bytes still held.
	used, live int64
}

type listBlock struct {
	buf  []byte // fixed capacity: never appended past it
	live int    // bytes of the live elements in it
}

// listRef is an element: n bytes at off in block blk — or, when n is
// ownBlock, the whole of block blk (an element over listBlockMax/4, which
// has a block of its own). 8 bytes: shared blocks are at most listBlockMax
// long and hold elements of at most listBlockMax/4.
type listRef struct {
	blk    uint32
	off, n uint16
}

// ownBlock is listRef.n of an element that has a block of its own.
const ownBlock = math.MaxUint16

const (
	listBlockMin = 64
	listBlockMax = 16 << 10
	// A list compacts when its blocks hold more released bytes than live
	// ones, and at least this many.
	listSparseSlack = 4 << 10
)

// bytes is the element r refers to: nil for an empty one (as a copy of an
// empty slice was), its capacity its length.
func (a *listArena) bytes(r listRef) []byte {
	if r.n == 0 {
		return nil
	}
	b := a.blocks[r.blk-a.base]
	if r.n == ownBlock {
		return b.buf[:len(b.buf):len(b.buf)]
	}
	end := int(r.off) + int(r.n)
	return b.buf[r.off:end:end]
}

// size is the length of the element r refers to.
func (a *listArena) size(r listRef) int {
	if r.n == ownBlock {
		return len(a.blocks[r.blk-a.base].buf)
	}
	return int(r.n)
}

// store copies v into the arena.
func (a *listArena) store(v []byte) listRef {
	if len(v) == 0 {
		return listRef{}
	}
	n := len(v)
	if n > listBlockMax/4 || a.cur == nil || cap(a.cur.buf)-len(a.cur.buf) < n {
		a.startBlock(n)
	}
	b := a.cur
	off := len(b.buf)
	b.buf = append(b.buf, v...) // within its capacity: never moves
	b.live += n
	a.live += int64(n)
	a.used += int64(n)
	if n > listBlockMax/4 {
		return listRef{blk: a.curNo, n: ownBlock} // startBlock gave it one of its own
	}
	return listRef{blk: a.curNo, off: uint16(off), n: uint16(n)}
}

// startBlock makes a block that holds at least n bytes the current one.
func (a *listArena) startBlock(n int) {
	size := listBlockMin
	if a.cur != nil {
		size = min(2*cap(a.cur.buf), listBlockMax)
	} else if a.expect > 0 {
		size = min(max(size, a.expect), listBlockMax) // a rebuild's bytes in as few blocks as fit
	}
	if n > listBlockMax/4 {
		size = n // a large element: a block of its own
	}
	size = max(size, n)
	if old := a.cur; old != nil && old.live == 0 {
		// Its elements were pushed and popped while it was being filled:
		// nothing refers to it now that it stops being filled.
		a.cur = nil
		a.drop(int(a.curNo - a.base))
	}
	b := &listBlock{buf: make([]byte, 0, size)}
	if len(a.blocks) == 0 {
		a.base = 0
	}
	a.cur, a.curNo = b, a.base+uint32(len(a.blocks))
	a.blocks = append(a.blocks, b)
}

// release marks r's bytes released, dropping its block if nothing in it is
// live any more.
func (a *listArena) release(r listRef) {
	if r.n == 0 {
		return
	}
	n := a.size(r)
	i := int(r.blk - a.base)
	b := a.blocks[i]
	b.live -= n
	a.live -= int64(n)
	if b.live > 0 || b == a.cur {
		return
	}
	a.drop(i)
}

// drop forgets blocks[i], which holds nothing live, and cuts off the
// leading dropped blocks.
func (a *listArena) drop(i int) {
	a.used -= int64(len(a.blocks[i].buf))
	a.blocks[i] = nil
	a.holes++
	// Trailing ones: nothing refers to them, so their numbers can be
	// given out again.
	n := len(a.blocks)
	for n > 0 && a.blocks[n-1] == nil {
		n--
	}
	k := 0
	for k < n && a.blocks[k] == nil {
		k++
	}
	a.holes -= len(a.blocks) - n + k
	a.base += uint32(k)
	a.blocks = a.blocks[k:n]
	if cap(a.blocks) > 2*len(a.blocks)+8 {
		a.blocks = append([]*listBlock(nil), a.blocks...) // give the cut-off array back
	}
}

// sparse reports that the kept blocks hold many more released bytes than
// live ones, that most block numbers in use name dropped blocks (LSETs
// whose blocks died between two live ones), or that block numbers are
// running out (a queue that has cycled through two billion blocks): the
// list is due for fresh blocks, numbered from 0 again.
func (a *listArena) sparse() bool {
	return a.used-a.live > listSparseSlack && a.used > 2*a.live ||
		a.holes > 16 && a.holes > len(a.blocks)/2 || a.curNo >= listRenumberAt
}

// listRenumberAt is the first block number past which a list compacts.
const listRenumberAt = 1 << 31
