package store

import (
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"unsafe"
)

// fieldTable is a hash's fields and their values, or a set's members and
// their positions (D88): open addressing
// with linear probing over 16-byte slots, each the field's 64-bit hash and
// a pointer to its entry — one allocation holding the two lengths, the
// field's bytes and the value's. A lookup reads one slot line (four slots)
// and the entry; a Go map read a control word, a 40-byte slot and the key's
// own allocation, three cache misses on a hash of 100 k fields, a quarter
// of HSET's CPU (issue #17). An entry is never written after it is built:
// a new value is a new entry, so field strings and values handed out stay
// what they were. (A set's entry is the exception: its value, the member's
// position in setColl.members, is rewritten in place; nothing hands it
// out, and the read-ahead reads only an entry's first byte.)
//
// Deletion shifts the probe's later entries back (no tombstones); the
// table grows at 3/4 full and shrinks below 1/8.
//
// A resize is incremental (D129): the new array takes every insert while
// each write moves the next drainStep slots of the old one over, so no
// single write rehashes the whole table — at 786 k fields one HSET did,
// for 52–128 ms under the segment's lock. Until the old array is drained a
// lookup that misses the new one probes the old one, whose moved and
// deleted slots are tombstones (a probe goes on past them; nothing is
// ever added to it).
type fieldTable struct {
	arr *fieldArray // nil when the table never held a field
	n   int         // entries, in arr and old together
	// old is the array a resize drains into arr, nil when none: its slots
	// below moved are drained, oldN entries are left in it.
	old   *fieldArray
	moved int
	oldN  int
	// nodes: the entries are a sorted set's skiplist nodes (*slNode, keyed
	// by their member) instead of byte entries.
	nodes bool
	// spare is a large table's next array, allocated ahead on another
	// goroutine (spareAhead): spareRequested while it is being made.
	spare atomic.Pointer[fieldArray]
}

// A large table's next array is allocated before it is needed, off the
// write path: zeroing 32 MiB of slots (a table of 786 k fields growing)
// held one HSET for 8–10 ms under the segment's lock. From spareMinSlots
// slots, a table 9/16 full asks for its doubled array on a goroutine of its
// own; the resize at 3/4 takes it when it is there (3/16 of the slots in
// inserts later: about 200 k at 1 Mi slots), waits for it up to 13/16
// when it is not (a large allocation during a collection pays a large
// assist first), and allocates as before after that.
const spareMinSlots = 1 << 19

// spareRequested marks a spare being allocated.
var spareRequested = &fieldArray{}

// full reports whether one more entry needs a bigger array: over 3/4 full,
// or while the spare is still being allocated, over 13/16 (a few longer
// probes for a while rather than a second allocation under the lock).
func (t *fieldTable) full() bool {
	slots, used := t.arr.mask+1, uint64(t.n-t.oldN+1)
	if used <= slots/4*3 {
		return false
	}
	return used > slots/16*13 || t.spare.Load() != spareRequested
}

// spareAhead asks for the array the next growth needs when t is large and
// 9/16 full (called after an insert; cheap when t is small).
func (t *fieldTable) spareAhead() {
	a := t.arr
	if len(a.slots) < spareMinSlots || uint64(t.n-t.oldN) <= (a.mask+1)/16*9 || t.spare.Load() != nil {
		return
	}
	n := 2 * len(a.slots)
	t.spare.Store(spareRequested)
	go func() {
		next := &fieldArray{slots: make([]fieldSlot, n), mask: uint64(n - 1)}
		// Touch every page: memory fresh from the kernel is zeroed on its
		// first write (2 MiB at a time with huge pages), which would
		// otherwise fall on the writes that drain into it.
		const perPage = 4096 / int(unsafe.Sizeof(fieldSlot{}))
		for i := 0; i < n; i += perPage {
			next.slots[i].hash = 0
		}
		// Only while still asked for: a resize that could not wait for it,
		// or an emptied table, took the request back.
		t.spare.CompareAndSwap(spareRequested, next)
	}()
}

// takeSpare is the array allocated ahead when it has n slots, else nil;
// either way the request is over.
func (t *fieldTable) takeSpare(n int) *fieldArray {
	if t.spare.Load() == nil {
		return nil
	}
	if s := t.spare.Swap(nil); s != spareRequested && len(s.slots) == n {
		return s
	}
	return nil
}

// drainStep is the old slots a write moves (D129) — an insert, an
// overwrite or a delete: a resize that doubles is drained before an eighth
// of the old size in writes, long before the new array can fill (3/4),
// and a shrink before a quarter. Reads do not move anything (they run
// under the segment's read lock); until the drain ends a lookup may probe
// both arrays.
const drainStep = 8

// tombstone marks a slot of a draining array whose entry moved or went.
var tombstone = unsafe.Pointer(new(byte))

func live(e unsafe.Pointer) bool { return e != nil && e != tombstone }

// fieldArray is the table's slots. Growth replaces it whole, so the
// read-ahead, which reads it without the segment's lock, always sees a
// slice header and a mask that belong together.
type fieldArray struct {
	slots []fieldSlot // a power of two long
	mask  uint64
}

type fieldSlot struct {
	e    unsafe.Pointer // the entry (fieldEntryHeader bytes, the field, the value); nil = empty
	hash uint64
}

// fieldEntryHeader is an entry's two little-endian uint32 lengths.
const fieldEntryHeader = 8

const minFieldSlots = 8

var fieldSeed = maphash.MakeSeed()

func fieldHash(f []byte) uint64       { return maphash.Bytes(fieldSeed, f) }
func fieldHashString(f string) uint64 { return maphash.String(fieldSeed, f) }

// newFieldEntry builds the entry of field f with value v.
func newFieldEntry(f, v []byte) unsafe.Pointer {
	buf := make([]byte, fieldEntryHeader+len(f)+len(v))
	*(*uint32)(unsafe.Pointer(&buf[0])) = uint32(len(f))
	*(*uint32)(unsafe.Pointer(&buf[4])) = uint32(len(v))
	copy(buf[fieldEntryHeader:], f)
	copy(buf[fieldEntryHeader+len(f):], v)
	return unsafe.Pointer(&buf[0])
}

// entryField is the entry's field, over the entry's bytes.
func entryField(e unsafe.Pointer) string {
	n := *(*uint32)(e)
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(e, fieldEntryHeader)), n)
}

// entryValue is the entry's value, over the entry's bytes (capacity =
// length: an append copies).
func entryValue(e unsafe.Pointer) []byte {
	f, n := *(*uint32)(e), *(*uint32)(unsafe.Add(e, 4))
	if n == 0 {
		return unsafe.Slice(&emptyValue, 0) // not nil: a present empty value
	}
	return unsafe.Slice((*byte)(unsafe.Add(e, fieldEntryHeader+uintptr(f))), n)
}

func (t *fieldTable) len() int { return t.n }

// keyOf is the field (or member) entry e is found by.
func (t *fieldTable) keyOf(e unsafe.Pointer) string {
	if t.nodes {
		return (*slNode)(e).member
	}
	return entryField(e)
}

// fieldPos is where a lookup found a field (slot ≥ 0, in the draining
// array when old) or where its probe starts (slot < 0): putAt inserts
// there without hashing again.
type fieldPos struct {
	slot int
	hash uint64
	old  bool
}

// find looks the field with hash h up.
func (t *fieldTable) find(f string, h uint64) fieldPos {
	if t.n == 0 {
		return fieldPos{slot: -1, hash: h}
	}
	a := t.arr
	for i := h & a.mask; ; i = (i + 1) & a.mask {
		s := &a.slots[i]
		if s.e == nil {
			break
		}
		if s.hash == h && t.keyOf(s.e) == f {
			return fieldPos{slot: int(i), hash: h}
		}
	}
	if a = t.old; a != nil && t.oldN > 0 {
		for i := h & a.mask; ; i = (i + 1) & a.mask {
			s := &a.slots[i]
			if s.e == nil {
				break
			}
			if s.hash == h && s.e != tombstone && t.keyOf(s.e) == f {
				return fieldPos{slot: int(i), hash: h, old: true}
			}
		}
	}
	return fieldPos{slot: -1, hash: h}
}

// entryAt is the entry at a position find returned for a field it found.
func (t *fieldTable) entryAt(pos fieldPos) unsafe.Pointer {
	if pos.old {
		return t.old.slots[pos.slot].e
	}
	return t.arr.slots[pos.slot].e
}

// get is the value of field f.
func (t *fieldTable) get(f string) ([]byte, bool) {
	if t.n == 0 {
		return nil, false
	}
	if pos := t.find(f, fieldHashString(f)); pos.slot >= 0 {
		return entryValue(t.entryAt(pos)), true
	}
	return nil, false
}

// lookup finds f: its current value, and the position putAt takes.
func (t *fieldTable) lookup(f []byte) (pos fieldPos, old []byte, exists bool) {
	pos = t.find(unsafe.String(unsafe.SliceData(f), len(f)), fieldHash(f))
	if pos.slot < 0 {
		return pos, nil, false
	}
	return pos, entryValue(t.entryAt(pos)), true
}

// putAt sets f to v at the position lookup returned, with no change to the
// table in between. It returns the new entry.
func (t *fieldTable) putAt(pos fieldPos, f, v []byte) unsafe.Pointer {
	e := newFieldEntry(f, v)
	t.setAt(pos, e)
	return e
}

// setAt stores entry e at the position lookup returned (replacing the
// entry found there, or inserting).
func (t *fieldTable) setAt(pos fieldPos, e unsafe.Pointer) {
	switch {
	case pos.slot >= 0 && pos.old:
		t.old.slots[pos.slot].e = e
		t.drain(drainStep) // after: the step may move this very slot
		return
	case pos.slot >= 0:
		t.arr.slots[pos.slot].e = e
		t.drain(drainStep) // a table only overwritten must drain too
		return
	}
	if t.arr == nil || t.full() {
		t.resize(max(minFieldSlots, 2*t.slotCount()))
	}
	t.insert(fieldSlot{e: e, hash: pos.hash})
	t.n++
	t.drain(drainStep)
	t.spareAhead()
}

// lookupEntry finds f: its entry (nil when absent) and the position setAt
// takes.
func (t *fieldTable) lookupEntry(f []byte) (fieldPos, unsafe.Pointer) {
	pos := t.find(unsafe.String(unsafe.SliceData(f), len(f)), fieldHash(f))
	if pos.slot < 0 {
		return pos, nil
	}
	return pos, t.entryAt(pos)
}

// put sets f to v and reports whether f is new.
func (t *fieldTable) put(f, v []byte) bool {
	pos, _, exists := t.lookup(f)
	t.putAt(pos, f, v)
	return !exists
}

func (t *fieldTable) slotCount() int {
	if t.arr == nil {
		return 0
	}
	return len(t.arr.slots)
}

// insert places s in arr, at its probe's first empty slot (arr has room).
func (t *fieldTable) insert(s fieldSlot) {
	a := t.arr
	i := s.hash & a.mask
	for a.slots[i].e != nil {
		i = (i + 1) & a.mask
	}
	a.slots[i] = s
}

// resize starts moving the table into n slots (a power of two with room
// for every field); the writes that follow drain the old slots. A resize
// still draining is finished first (not expected: see drainStep).
func (t *fieldTable) resize(n int) {
	t.drain(-1)
	old := t.arr
	if t.arr = t.takeSpare(n); t.arr == nil {
		t.arr = &fieldArray{slots: make([]fieldSlot, n), mask: uint64(n - 1)}
	}
	if old != nil && t.n > 0 {
		t.old, t.moved, t.oldN = old, 0, t.n
	}
}

// drain moves up to k slots of the old array (all of them when k < 0),
// and drops it once nothing is left in it. It returns the slots it went
// through.
func (t *fieldTable) drain(k int) int {
	o := t.old
	if o == nil {
		return 0
	}
	from := t.moved
	for ; k != 0 && t.moved < len(o.slots) && t.oldN > 0; k-- {
		if s := &o.slots[t.moved]; live(s.e) {
			t.insert(*s)
			t.oldN--
			// A tombstone, not an empty slot: a probe of a later entry
			// may pass here. The slots empty before stay empty (a
			// quarter at least), so every probe of the old array ends.
			s.e = tombstone
		}
		t.moved++
	}
	went := t.moved - from
	if t.oldN == 0 {
		t.old, t.moved = nil, 0
	}
	return went
}

// settle finishes a drain: a table built in one operation (a decode, a
// RESTORE) leaves it settled rather than to later writes or the sweeper.
func (t *fieldTable) settle() { t.drain(-1) }

// del removes field f and returns its value.
func (t *fieldTable) del(f string) ([]byte, bool) {
	e := t.delEntry(f)
	if e == nil {
		return nil, false
	}
	return entryValue(e), true
}

// delEntry removes f and returns its entry (nil when absent).
func (t *fieldTable) delEntry(f string) unsafe.Pointer {
	pos := t.find(f, fieldHashString(f))
	if pos.slot < 0 {
		return nil
	}
	if pos.old {
		old := t.old.slots[pos.slot].e
		t.old.slots[pos.slot].e = tombstone
		t.oldN--
		t.n--
		t.afterDelete()
		return old
	}
	i := pos.slot
	a := t.arr
	old := a.slots[i].e
	// Backward shift: every later entry of the run whose home is not
	// between the hole and itself moves into the hole, so no probe meets
	// an empty slot before its field.
	hole := uint64(i)
	for j := (hole + 1) & a.mask; a.slots[j].e != nil; j = (j + 1) & a.mask {
		home := a.slots[j].hash & a.mask
		if (j-home)&a.mask >= (j-hole)&a.mask {
			a.slots[hole] = a.slots[j]
			hole = j
		}
	}
	a.slots[hole] = fieldSlot{}
	t.n--
	t.afterDelete()
	return old
}

// afterDelete drops the slots of an emptied table, starts a shrink below
// 1/8 full, or drains a step of a resize under way.
func (t *fieldTable) afterDelete() {
	switch {
	case t.n == 0:
		t.arr, t.old, t.moved, t.oldN = nil, nil, 0, 0 // an emptied hash keeps no slots
		t.spare.Store(nil)
	case len(t.arr.slots) > minFieldSlots && t.n < len(t.arr.slots)/8:
		t.resize(len(t.arr.slots) / 2)
	default:
		t.drain(drainStep)
	}
}

// entryOf is field f's entry, nil when f is not in the table.
func (t *fieldTable) entryOf(f string) unsafe.Pointer {
	if t.n == 0 {
		return nil
	}
	if pos := t.find(f, fieldHashString(f)); pos.slot >= 0 {
		return t.entryAt(pos)
	}
	return nil
}

// entries yields every entry, in slot order. The table must not change
// during the walk.
func (t *fieldTable) entries(yield func(e unsafe.Pointer) bool) {
	if t.n == 0 {
		return
	}
	for _, s := range t.arr.slots {
		if s.e != nil && !yield(s.e) {
			return
		}
	}
	if t.old != nil {
		for _, s := range t.old.slots[t.moved:] {
			if live(s.e) && !yield(s.e) {
				return
			}
		}
	}
}

// all yields every field and value (a byte table), in slot order. The table must not
// change during the walk.
func (t *fieldTable) all(yield func(f string, v []byte) bool) {
	for e := range t.entries {
		if !yield(entryField(e), entryValue(e)) {
			return
		}
	}
}

// randomProbes bounds randomEntry's draws of a slot before it walks.
const randomProbes = 64

// randomEntry is an entry of the non-empty table, each equally likely: a
// random slot until one is taken. A table is kept at least 1/8 full, so
// randomProbes draws all miss with probability at most (7/8)^64 ≈ 2·10⁻⁴;
// only then does it count its way to a random entry. O(1) expected: a draw
// reads one slot, and only the entry found is read — a walk collecting the
// fields around a random slot read each of their entries, a cache miss
// apiece on a large table, and was uniform only to within 0.4–1.9× (issue
// #17).
//
// While a resize drains (D129), the array drawn from is picked in
// proportion to the entries each holds, and the old one is drawn from
// above its drained slots; either may be sparser than 1/8 then (a shrink
// starts below it), which the counted fallback keeps uniform.
func (t *fieldTable) randomEntry() unsafe.Pointer {
	if t.old != nil && rand.IntN(t.n) < t.oldN {
		return drawEntry(t.old.slots[t.moved:], t.oldN)
	}
	return drawEntry(t.arr.slots, t.n-t.oldN)
}

// drawEntry is one of the count entries of slots, each equally likely.
func drawEntry(slots []fieldSlot, count int) unsafe.Pointer {
	for range randomProbes {
		if e := slots[rand.IntN(len(slots))].e; live(e) {
			return e
		}
	}
	k := rand.IntN(count)
	var last unsafe.Pointer
	for _, s := range slots {
		if live(s.e) {
			if k == 0 {
				return s.e
			}
			k, last = k-1, s.e
		}
	}
	return last // not reached while count is right
}

// randomDistinct is n distinct entries of the table (n at most a third of
// them: a draw repeats with probability ≤ 1/3), drawn with randomEntry, so
// every n-subset is equally likely.
func (t *fieldTable) randomDistinct(n int) []unsafe.Pointer {
	return distinctDraws(n, t.randomEntry)
}

// entryList is every entry, in slot order.
func (t *fieldTable) entryList() []unsafe.Pointer {
	return slices.AppendSeq(make([]unsafe.Pointer, 0, t.n), t.entries)
}

// homeSlot is the slot a lookup of f starts at, nil for a table without
// slots; read without any lock (the array is replaced whole).
//
//go:norace
func (t *fieldTable) homeSlot(f []byte) *fieldSlot {
	a := t.arr
	if a == nil {
		return nil
	}
	return &a.slots[fieldHash(f)&a.mask]
}
