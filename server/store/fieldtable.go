package store

import (
	"hash/maphash"
	"math/rand/v2"
	"slices"
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
type fieldTable struct {
	arr *fieldArray // nil when the table never held a field
	n   int
	// nodes: the entries are a sorted set's skiplist nodes (*slNode, keyed
	// by their member) instead of byte entries.
	nodes bool
}

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

// fieldPos is where a lookup found a field (slot ≥ 0) or where its probe
// starts (slot < 0): putAt inserts there without hashing again.
type fieldPos struct {
	slot int
	hash uint64
}

// find looks the field with hash h up.
func (t *fieldTable) find(f string, h uint64) int {
	if t.n == 0 {
		return -1
	}
	a := t.arr
	for i := h & a.mask; ; i = (i + 1) & a.mask {
		s := &a.slots[i]
		if s.e == nil {
			return -1
		}
		if s.hash == h && t.keyOf(s.e) == f {
			return int(i)
		}
	}
}

// get is the value of field f.
func (t *fieldTable) get(f string) ([]byte, bool) {
	if t.n == 0 {
		return nil, false
	}
	if i := t.find(f, fieldHashString(f)); i >= 0 {
		return entryValue(t.arr.slots[i].e), true
	}
	return nil, false
}

// lookup finds f: its current value, and the position putAt takes.
func (t *fieldTable) lookup(f []byte) (pos fieldPos, old []byte, exists bool) {
	h := fieldHash(f)
	i := t.find(unsafe.String(unsafe.SliceData(f), len(f)), h)
	if i < 0 {
		return fieldPos{slot: -1, hash: h}, nil, false
	}
	return fieldPos{slot: i, hash: h}, entryValue(t.arr.slots[i].e), true
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
	if pos.slot >= 0 {
		t.arr.slots[pos.slot].e = e
		return
	}
	if t.arr == nil || uint64(t.n+1) > (t.arr.mask+1)/4*3 {
		t.resize(max(minFieldSlots, 2*t.slotCount()))
	}
	t.insert(fieldSlot{e: e, hash: pos.hash})
	t.n++
}

// lookupEntry finds f: its entry (nil when absent) and the position setAt
// takes.
func (t *fieldTable) lookupEntry(f []byte) (fieldPos, unsafe.Pointer) {
	h := fieldHash(f)
	i := t.find(unsafe.String(unsafe.SliceData(f), len(f)), h)
	if i < 0 {
		return fieldPos{slot: -1, hash: h}, nil
	}
	return fieldPos{slot: i, hash: h}, t.arr.slots[i].e
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

// insert places s in its probe's first empty slot (the table has room).
func (t *fieldTable) insert(s fieldSlot) {
	a := t.arr
	i := s.hash & a.mask
	for a.slots[i].e != nil {
		i = (i + 1) & a.mask
	}
	a.slots[i] = s
}

// resize rehashes into n slots (a power of two with room for every field).
func (t *fieldTable) resize(n int) {
	old := t.arr
	t.arr = &fieldArray{slots: make([]fieldSlot, n), mask: uint64(n - 1)}
	if old == nil {
		return
	}
	for _, s := range old.slots {
		if s.e != nil {
			t.insert(s)
		}
	}
}

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
	i := t.find(f, fieldHashString(f))
	if i < 0 {
		return nil
	}
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
	switch {
	case t.n == 0:
		t.arr = nil // an emptied hash keeps no slots
	case len(a.slots) > minFieldSlots && t.n < len(a.slots)/8:
		t.resize(len(a.slots) / 2)
	}
	return old
}

// entryOf is field f's entry, nil when f is not in the table.
func (t *fieldTable) entryOf(f string) unsafe.Pointer {
	if t.n == 0 {
		return nil
	}
	if i := t.find(f, fieldHashString(f)); i >= 0 {
		return t.arr.slots[i].e
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
}

// all yields every field and value (a byte table), in slot order. The table must not
// change during the walk.
func (t *fieldTable) all(yield func(f string, v []byte) bool) {
	if t.n == 0 {
		return
	}
	for _, s := range t.arr.slots {
		if s.e != nil && !yield(entryField(s.e), entryValue(s.e)) {
			return
		}
	}
}

// randomProbes bounds randomEntry's draws of a slot before it walks.
const randomProbes = 64

// randomEntry is an entry of the non-empty table, each equally likely: a
// random slot until one is taken. A table is kept at least 1/8 full, so
// randomProbes draws all miss with probability at most (7/8)^64 ≈ 2·10⁻⁴;
// only then does it take the first entry after the last slot drawn (which
// favours an entry after a long empty run). O(1) expected: a draw reads one
// slot, and only the entry found is read — a walk collecting the fields
// around a random slot read each of their entries, a cache miss apiece on
// a large table, and was uniform only to within 0.4–1.9× (issue #17).
func (t *fieldTable) randomEntry() unsafe.Pointer {
	a := t.arr
	i := rand.Uint64() & a.mask
	for range randomProbes {
		if e := a.slots[i].e; e != nil {
			return e
		}
		i = rand.Uint64() & a.mask
	}
	for ; ; i = (i + 1) & a.mask {
		if e := a.slots[i].e; e != nil {
			return e
		}
	}
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
