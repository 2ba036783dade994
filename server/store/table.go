package store

import (
	"hash/maphash"
	"iter"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
)

// recordTable is a segment's index of its records by key (issue #17, D64):
// open addressing with linear probing over two parallel arrays, the records
// and the low 32 bits of their keys' hashes. A slot costs 12 bytes where a
// Go map[string]*Record slot costs 24 plus its control byte. The table
// grows by half (its size need not be a power of two: a hash's home slot
// is hash × size / 2³², D73), so its load stays between 0.53 and 0.8 where
// a doubling table's falls to 0.4 and the map's to 0.44: about 18 bytes per
// key instead of 20 to 30 (and 30 to 56 for the map).
//
// The stored hash makes a probe compare four bytes before it touches a
// record, and lets a resize move slots without reading a single key. Its
// lowest bit is not the key's: it says the record expires (expiresBit), so
// that the sweeper finds the keys with a TTL in the hash array instead of
// an index of its own (D89).
// Deletion shifts the following run back (no tombstones), so a lookup's
// probe ends at the first empty slot.
//
// Not safe for concurrent use: the segment's lock guards it. Iterators
// tolerate a record being replaced under its key while they run, not an
// insert or a delete (they panic: a programmer error the tests catch).
type recordTable struct {
	recs   []*Record
	hashes []uint32
	n      int
	// expiring is how many slots have expiresBit: live records with a TTL.
	expiring int
	// structure counts inserts, deletes and resizes, for the iterators'
	// check.
	structure uint64
	// ident tells one table from its replacement (an installed snapshot)
	// for the scan's cached key snapshots.
	ident uint64
	// shape is recs and hashes as of the last resize, for the lock-free
	// read-ahead (warm.go): a pointer a reader loads in one word, to slice
	// headers that never change, where reading recs itself unlocked could
	// pair one array's address with another's length.
	shape *tableShape
}

// tableShape is a table's arrays at one size.
type tableShape struct {
	recs   []*Record
	hashes []uint32
}

const (
	tableMinSlots = 8
	// A table grows by half past 4/5 full and shrinks below 1/8 full (to
	// 2/3 full), so that a burst of deletes (a flush, an eviction run)
	// gives its memory back without a table that grows and shrinks on
	// every write around one size.
	tableGrowNum, tableGrowDen = 4, 5
	tableShrinkDen             = 8
)

var (
	tableSeed   = maphash.MakeSeed()
	tableIdents atomic.Uint64
)

// hashKey is a key's hash as a table compares it: the lowest bit clear,
// for expiresBit.
func hashKey(key string) uint32 { return uint32(maphash.String(tableSeed, key)) &^ expiresBit }

// expiresBit, in a stored hash, marks a live record with an expiry.
const expiresBit = 1

// slotHash is what a table stores for r, whose key hashes to h.
func slotHash(r *Record, h uint32) uint32 {
	if r.form&(formExpiry|formDeleted) == formExpiry {
		return h | expiresBit
	}
	return h
}

// newRecordTable returns an empty table sized for n records.
func newRecordTable(n int) recordTable {
	t := recordTable{ident: tableIdents.Add(1)}
	if n > 0 {
		t.resize(tableSlotsFor(n))
	}
	return t
}

// tableSlotsFor is the size that holds n records 2/3 full.
func tableSlotsFor(n int) int {
	return max(tableMinSlots, n+n/2+1)
}

// home is the slot a hash's probe starts at: the hash scaled to the
// table's size (a multiply, where a power-of-two size would mask).
func (t *recordTable) home(h uint32) uint32 {
	return uint32(uint64(h) * uint64(len(t.recs)) >> 32)
}

// next is the slot after i, wrapping at the end.
func (t *recordTable) next(i uint32) uint32 {
	if i++; int(i) == len(t.recs) {
		return 0
	}
	return i
}

// len is the number of records in the table.
func (t *recordTable) len() int { return t.n }

// find returns the slot holding key, or -1.
func (t *recordTable) find(key string, h uint32) int {
	if t.n == 0 {
		return -1
	}
	for i := t.home(h); ; i = t.next(i) {
		r := t.recs[i]
		if r == nil {
			return -1
		}
		if t.hashes[i]&^expiresBit == h && r.Key() == key {
			return int(i)
		}
	}
}

// get returns the key's record, or nil.
func (t *recordTable) get(key string) *Record {
	if i := t.find(key, hashKey(key)); i >= 0 {
		return t.recs[i]
	}
	return nil
}

// swap puts r under its key and returns the record it replaced (nil when
// the key was absent): one probe for the commit path's read-then-write.
func (t *recordTable) swap(r *Record) (old *Record) {
	h := hashKey(r.Key())
	sh := slotHash(r, h)
	t.expiring += int(sh & expiresBit)
	if i := t.find(r.Key(), h); i >= 0 {
		t.expiring -= int(t.hashes[i] & expiresBit)
		old, t.recs[i], t.hashes[i] = t.recs[i], r, sh
		return old
	}
	if (t.n+1)*tableGrowDen > len(t.recs)*tableGrowNum {
		t.resize(max(len(t.recs)+len(t.recs)/2, tableMinSlots))
	}
	t.place(r, sh)
	t.n++
	t.structure++
	return nil
}

// set puts r under its key.
func (t *recordTable) set(r *Record) { t.swap(r) }

// place puts r in the first empty slot of its probe sequence, with sh,
// its stored hash.
func (t *recordTable) place(r *Record, sh uint32) {
	i := t.home(sh &^ expiresBit)
	for t.recs[i] != nil {
		i = t.next(i)
	}
	t.recs[i], t.hashes[i] = r, sh
}

// delete removes the key's record and returns it (nil when absent).
func (t *recordTable) delete(key string) *Record {
	at := t.find(key, hashKey(key))
	if at < 0 {
		return nil
	}
	old := t.recs[at]
	t.expiring -= int(t.hashes[at] & expiresBit)
	size := uint32(len(t.recs))
	// dist is how far slot to lies after slot from, cyclically.
	dist := func(from, to uint32) uint32 {
		if to >= from {
			return to - from
		}
		return to + size - from
	}
	// Shift back every record of the run after the hole whose home slot
	// does not lie (cyclically) after the hole, so that no probe meets an
	// empty slot before the record it looks for.
	hole := uint32(at)
	for j := t.next(hole); t.recs[j] != nil; j = t.next(j) {
		if dist(t.home(t.hashes[j]&^expiresBit), j) >= dist(hole, j) {
			t.recs[hole], t.hashes[hole] = t.recs[j], t.hashes[j]
			hole = j
		}
	}
	t.recs[hole], t.hashes[hole] = nil, 0
	t.n--
	t.structure++
	if len(t.recs) > tableMinSlots && t.n*tableShrinkDen < len(t.recs) {
		t.resize(tableSlotsFor(t.n))
	}
	return old
}

// resize moves every record into a table of about size slots (pageFit).
func (t *recordTable) resize(size int) {
	size = pageFit(size, t.n)
	recs, hashes := t.recs, t.hashes
	dropIndexArrays(len(recs))
	t.recs, t.hashes = make([]*Record, size), make([]uint32, size)
	t.shape = &tableShape{recs: t.recs, hashes: t.hashes}
	for i, r := range recs {
		if r != nil {
			t.place(r, hashes[i])
		}
	}
	t.structure++
}

// pageSlots is a slot count whose records array fills whole pages: past
// 32 KiB the allocator gives an array whole 8 KiB pages, and a table that
// grows by half would leave half a page of each unused on average (a
// fifth of the records array of a 4 000-key segment: 5 166 slots took 6
// pages for 5.04 pages' worth). The hashes array, half as wide, then
// fills its size class or its pages too.
const pageSlots = 8 << 10 / int(unsafe.Sizeof((*Record)(nil)))

// pageFit is the size a table asked for size slots gets, holding n
// records: past 32 KiB of records array, the multiple of pageSlots
// nearest to size, and one more when that is not enough for n+1 records
// under the grow threshold (a shrink or a fresh table sized for n).
func pageFit(size, n int) int {
	if size*int(unsafe.Sizeof((*Record)(nil))) <= 32<<10 {
		return size
	}
	fit := (size + pageSlots/2) / pageSlots * pageSlots
	for (n+1)*tableGrowDen > fit*tableGrowNum {
		fit += pageSlots
	}
	return fit
}

// droppedIndex is what the record tables' resizes have let go, process
// wide: the bytes of the arrays a resize replaced, garbage until the
// collector's next cycle, and the channels to tell (D97).
var droppedIndex struct {
	bytes  atomic.Int64
	mu     sync.Mutex // serializes NotifyIndexDropped and StopIndexDropped
	notify atomic.Pointer[[]chan<- struct{}]
}

// indexSlotBytes is what a slot costs in a table's two arrays.
const indexSlotBytes = int64(unsafe.Sizeof((*Record)(nil)) + unsafe.Sizeof(uint32(0)))

func dropIndexArrays(slots int) {
	if slots == 0 {
		return
	}
	droppedIndex.bytes.Add(int64(slots) * indexSlotBytes)
	if chans := droppedIndex.notify.Load(); chans != nil {
		for _, c := range *chans {
			select {
			case c <- struct{}{}:
			default:
			}
		}
	}
}

// DroppedIndexBytes is how many bytes of index arrays the record tables'
// resizes have let go since the process started, in every store it holds.
// A table grows by half at 4/5 full, and the segments of a store filling
// evenly grow together: a wave of resizes drops about two thirds of the
// index within a few thousand writes, RSS until the collector's next cycle
// frees it for reuse (D97).
func DroppedIndexBytes() int64 { return droppedIndex.bytes.Load() }

// NotifyIndexDropped makes the record tables' resizes send to c after they
// let index arrays go, in any store of the process. A send never blocks: a
// full c misses it, so a capacity of one coalesces a wave into one value.
func NotifyIndexDropped(c chan<- struct{}) {
	droppedIndex.mu.Lock()
	defer droppedIndex.mu.Unlock()
	var chans []chan<- struct{}
	if cur := droppedIndex.notify.Load(); cur != nil {
		chans = slices.Clone(*cur)
	}
	chans = append(chans, c)
	droppedIndex.notify.Store(&chans)
}

// StopIndexDropped undoes NotifyIndexDropped(c).
func StopIndexDropped(c chan<- struct{}) {
	droppedIndex.mu.Lock()
	defer droppedIndex.mu.Unlock()
	if cur := droppedIndex.notify.Load(); cur != nil {
		chans := slices.DeleteFunc(slices.Clone(*cur), func(x chan<- struct{}) bool { return x == c })
		droppedIndex.notify.Store(&chans)
	}
}

// all yields every record, in slot order.
func (t *recordTable) all() iter.Seq[*Record] {
	return func(yield func(*Record) bool) { t.walk(0, yield) }
}

// from yields every record once, starting at a slot chosen by start (the
// eviction sampler's random position).
func (t *recordTable) from(start uint64) iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		if len(t.recs) > 0 {
			t.walk(int(start%uint64(len(t.recs))), yield)
		}
	}
}

// expiringFrom yields the records with a TTL (expiresBit) among at most
// limit slots from a slot chosen by start: the sweeper's and TTLStats'
// samples, a read of the hash array with no index of their own. The
// caller must not change the table while it runs.
func (t *recordTable) expiringFrom(start uint64, limit int) iter.Seq[*Record] {
	return func(yield func(*Record) bool) {
		size := len(t.recs)
		if size == 0 || t.expiring == 0 {
			return
		}
		i := int(start % uint64(size))
		for range min(limit, size) {
			if t.hashes[i]&expiresBit != 0 && !yield(t.recs[i]) {
				return
			}
			if i++; i == size {
				i = 0
			}
		}
	}
}

func (t *recordTable) walk(start int, yield func(*Record) bool) {
	structure, recs := t.structure, t.recs
	for k := range recs {
		i := start + k
		if i >= len(recs) {
			i -= len(recs)
		}
		r := recs[i]
		if r == nil {
			continue
		}
		if !yield(r) {
			return
		}
		if t.structure != structure {
			panic("store: a record table changed under its iterator")
		}
	}
}
