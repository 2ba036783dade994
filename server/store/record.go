package store

import (
	"encoding/binary"
	"maps"
	"math"
	"strings"
	"sync/atomic"
	"unsafe"
)

// Record is the unit of data that moves between nodes (the StoredRecord of
// the design articles): key, value, metadata, the two version numbers and the
// tombstone flag. Replication, snapshots and migration exchange Records.
//
// A Record held by the store is immutable once published; Value must not be
// modified by anyone who receives it from the store.
//
// It is 32 bytes (D89): a 16-byte key with a 32-byte value is one 80-byte
// allocation. What does not fit is kept where it costs only the records
// that have it: the expiry in the 8 bytes after the value (or in the ext),
// a version past 2^32 and a key past 64 KiB in the ext.
type Record struct {
	// p is the record's one pointer (D84). In the joined form it points at
	// the key's bytes with the value's right after them (klen then vlen
	// bytes, one allocation: newStringRecord's tail, a decoded frame's
	// buffer), then, with formExpiry, the expiry's 8 bytes. In the ext
	// form (form&formExt) it is a *recordExt, which holds the key's and
	// the value's pointers beside the collection, the metadata and the
	// expiry: what a record needs whose bytes are not joined or that has a
	// collection or metadata. One word for the collector to scan.
	//
	// Key, Value, Meta, coll and ExpiresAt read it; SetKey, SetValue,
	// SetJoined, SetMeta, SetExpiresAt and setColl (on a record not yet
	// published) write it. The bytes it points at are never written once
	// a record points at them: records share them (clone, exported,
	// copies by value), so a new expiry is new bytes or a new ext.
	p unsafe.Pointer

	// Revision is the per-segment revision of the mutation that produced the
	// record: the total order replication and recovery converge on.
	Revision uint64

	vlen uint32

	// access is the node-local recency stamp (coarse milliseconds since the
	// store started) read by the LRU sampler. Never crosses the wire; updated
	// atomically by readers.
	access uint32

	// ver is the version's low 32 bits (Version); with formWideVersion the
	// high ones are the ext's.
	ver uint32

	// klen is the key's length in the joined form; the ext has its own.
	klen uint16

	// Kind is the kind of value: a plain string (Value holds the bytes) or a
	// server-side collection. A collection record in a Snapshot or a full
	// Op carries its canonical encoding in Value.
	Kind ValueKind

	// form says how to read p, and holds the tombstone flag.
	form recordForm
}

// recordForm is a Record's layout flags.
type recordForm uint8

const (
	// formValue: the record has a value (Value is non-nil, maybe empty).
	// Without it the record has none: a tombstone, a live collection.
	formValue recordForm = 1 << iota
	// formExt: p is a *recordExt.
	formExt
	// formDeleted marks a tombstone: the record of a delete (Deleted).
	formDeleted
	// formExpiry: the record expires; the expiry is in the ext, or in the
	// joined form the 8 bytes after the value (little-endian Unix ns).
	formExpiry
	// formWideVersion: the version's high 32 bits are the ext's verHi.
	formWideVersion
)

// maxJoinedKey is the longest key the joined form's 16-bit length holds;
// a longer one takes the ext form.
const maxJoinedKey = math.MaxUint16

// recordExt is a record's rarely present part: the materialized collection
// of a collection record, the optional metadata, and the key's and value's
// pointers of a record whose bytes are not joined. Never mutated after it
// is published, except its collection's contents, which change in place
// under the segment's write lock; a record that needs another collection,
// metadata, expiry or version gets a new recordExt.
type recordExt struct {
	key, val *byte
	// c is the materialized collection (nil for strings). Never crosses the
	// wire: Value carries the encoding.
	c collection
	// meta is the optional metadata (content type, labels).
	meta *Metadata
	// pv is a large edited string's value in pages (pagedstr.go); val is
	// nil then, and Value copies the pages.
	pv *pagedValue
	// exp is the expiry when the record has formExpiry.
	exp   int64
	klen  uint32
	verHi uint32
}

func (r *Record) ext() *recordExt {
	if r.form&formExt == 0 {
		return nil
	}
	return (*recordExt)(r.p)
}

func (r *Record) keyData() *byte {
	if e := r.ext(); e != nil {
		return e.key
	}
	return (*byte)(r.p)
}

func (r *Record) keyLen() int {
	if e := r.ext(); e != nil {
		return int(e.klen)
	}
	return int(r.klen)
}

// Key is the record's key. It shares the record's bytes: a caller that
// keeps it keeps the record's allocation alive.
func (r *Record) Key() string { return unsafe.String(r.keyData(), r.keyLen()) }

// Value is the record's value bytes, nil for a record without a value
// (a tombstone, a live collection). Its capacity is its length. Never
// modified: the caller must not write into it.
func (r *Record) Value() []byte {
	switch {
	case r.form&formValue == 0:
		return nil
	case r.vlen == 0:
		return unsafe.Slice(&emptyValue, 0)
	case r.form&formExt != 0:
		if e := (*recordExt)(r.p); e.pv != nil {
			return e.pv.flat()
		}
		return unsafe.Slice((*recordExt)(r.p).val, r.vlen)
	}
	return unsafe.Slice((*byte)(unsafe.Add(r.p, r.klen)), r.vlen)
}

// Version is the per-key ItemVersion: 1 on create, +1 per value write.
// Optimistic concurrency (CAS) checks it.
func (r *Record) Version() uint64 {
	v := uint64(r.ver)
	if r.form&formWideVersion != 0 {
		v |= uint64((*recordExt)(r.p).verHi) << 32
	}
	return v
}

// SetVersion sets the version. Only on a record not yet published.
func (r *Record) SetVersion(v uint64) {
	r.ver = uint32(v)
	hi := uint32(v >> 32)
	if hi == 0 {
		r.form &^= formWideVersion
		return
	}
	e := r.ownExt()
	e.verHi = hi
	r.form |= formWideVersion
}

// ExpiresAt is the absolute expiry (Unix ns); 0 = no expiry.
func (r *Record) ExpiresAt() int64 {
	switch {
	case r.form&formExpiry == 0:
		return 0
	case r.form&formExt != 0:
		return (*recordExt)(r.p).exp
	}
	return int64(binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(r.p, uintptr(r.klen)+uintptr(r.vlen))), 8)))
}

// SetExpiresAt sets the expiry (Unix ns; 0: none). Only on a record not
// yet published. It never writes into bytes the record already points at:
// a joined record's key and value move to new bytes with the expiry after
// them (a copy: at most maxInlineTail bytes), or, when bigger, into the ext
// form beside them.
func (r *Record) SetExpiresAt(ns int64) {
	if ns == r.ExpiresAt() {
		return
	}
	if r.form&formExt != 0 {
		r.ownExt().exp = ns
	} else if ns != 0 {
		r.rejoin(r.Key(), r.Value(), ns)
		return
	}
	if ns == 0 {
		r.form &^= formExpiry
	} else {
		r.form |= formExpiry
	}
}

// Deleted reports a tombstone: the record of a delete.
func (r *Record) Deleted() bool { return r.form&formDeleted != 0 }

// SetDeleted sets the tombstone flag. Only on a record not yet published.
func (r *Record) SetDeleted(d bool) {
	if d {
		r.form |= formDeleted
	} else {
		r.form &^= formDeleted
	}
}

// WithVersion, WithExpiry and AsTombstone return r with the version, the
// expiry or the tombstone flag set: a record literal's fields.
func (r Record) WithVersion(v uint64) Record { r.SetVersion(v); return r }

// WithExpiry returns r with its expiry set (see WithVersion).
func (r Record) WithExpiry(ns int64) Record { r.SetExpiresAt(ns); return r }

// AsTombstone returns r marked as a tombstone (see WithVersion).
func (r Record) AsTombstone() Record { r.SetDeleted(true); return r }

// ownExt makes the record's ext one of its own — a copy of the one it
// shares, or a new one holding its joined bytes' pointers — and returns it.
func (r *Record) ownExt() *recordExt {
	var e recordExt
	if old := r.ext(); old != nil {
		e = *old
	} else {
		e = recordExt{key: (*byte)(r.p), klen: uint32(r.klen)}
		if r.form&formExpiry != 0 {
			e.exp = r.ExpiresAt()
		}
		if r.vlen > 0 {
			e.val = (*byte)(unsafe.Add(r.p, r.klen))
		}
	}
	r.p = unsafe.Pointer(&e)
	r.form |= formExt
	return &e
}

// rejoin points the record at a copy of key and value joined, followed by
// ns (nonzero) — or, past maxInlineTail bytes, at an ext beside them (not
// copied). The record's version is below 2^32; its form's value flag is
// set for v.
func (r *Record) rejoin(key string, v []byte, ns int64) {
	n := len(key) + len(v)
	if n > maxInlineTail || len(key) > maxJoinedKey {
		e := &recordExt{key: unsafe.StringData(key), exp: ns, klen: keyLen32(len(key))}
		if len(v) > 0 {
			e.val = unsafe.SliceData(v)
		}
		r.p, r.klen, r.form = unsafe.Pointer(e), 0, r.form|formExt|formExpiry
		return
	}
	buf := make([]byte, n+8)
	copy(buf[copy(buf, key):], v)
	binary.LittleEndian.PutUint64(buf[n:], uint64(ns))
	r.p, r.klen, r.form = unsafe.Pointer(&buf[0]), uint16(len(key)), r.form|formExpiry
}

// SetKey sets the record's key (not copied), keeping its value,
// collection and metadata. Only on a record not yet published.
func (r *Record) SetKey(k string) { r.setParts(k, r.Value(), false, r.coll(), r.Meta()) }

// SetValue sets the record's value (not copied; nil: no value), keeping its
// key, collection and metadata. Only on a record not yet published.
func (r *Record) SetValue(v []byte) { r.setParts(r.Key(), v, false, r.coll(), r.Meta()) }

// SetJoined sets the record's key and value from one buffer: the key's
// keyLen bytes, then the value's (none when hasValue is false: the record
// has no value). Neither is copied: the record keeps buf's allocation,
// which must hold nothing else the record outlives. Only on a record not
// yet published; it keeps the record's collection, metadata and expiry.
func (r *Record) SetJoined(buf []byte, keyLen int, hasValue bool) {
	var v []byte
	if hasValue {
		v = buf[keyLen:len(buf):len(buf)]
	}
	r.setParts(unsafe.String(unsafe.SliceData(buf), keyLen), v, true, r.coll(), r.Meta())
}

// SetJoinedExpiring is SetJoined for a buffer whose last 8 bytes are the
// room for the record's expiry: it writes ns there (0: the record does not
// expire). The record keeps its collection and metadata.
func (r *Record) SetJoinedExpiring(buf []byte, keyLen int, hasValue bool, ns int64) {
	n := len(buf) - 8
	r.SetExpiresAt(0)
	if r.coll() != nil || r.Meta() != nil || keyLen > maxJoinedKey || r.form&formWideVersion != 0 {
		r.SetJoined(buf[:n:n], keyLen, hasValue)
		r.SetExpiresAt(ns)
		return
	}
	binary.LittleEndian.PutUint64(buf[n:], uint64(ns))
	r.SetJoined(buf[:n:n], keyLen, hasValue)
	if ns != 0 {
		r.form |= formExpiry
		if n == 0 {
			r.p = unsafe.Pointer(&buf[0]) // no key or value bytes: p is the room
		}
	}
}

// joined reports whether the record's key and value are in the joined
// form (one allocation, the value right after the key).
func (r *Record) joined() bool { return r.form&formExt == 0 }

// setParts sets key, value (neither copied), collection and metadata,
// keeping the record's version, expiry and tombstone flag. The record
// takes the joined form when nothing needs an ext: no collection, no
// metadata, no version past 2^32, a key within maxJoinedKey, and either
// the caller says the value follows the key in one allocation (joined) or
// at most one of them has bytes; an expiry then needs bytes with room for
// it (rejoin). Two allocations are never taken for one because they are
// adjacent in memory: the collector would see only the first.
func (r *Record) setParts(key string, v []byte, joined bool, c collection, m *Metadata) {
	r.setPartsStamped(key, v, joined, c, m, r.ExpiresAt(), r.Version())
}

// setPartsStamped is setParts with the record's expiry and version.
func (r *Record) setPartsStamped(key string, v []byte, joined bool, c collection, m *Metadata, exp int64, version uint64) {
	r.ver = uint32(version)
	verHi := uint32(version >> 32)
	kp := unsafe.StringData(key)
	if c == nil && m == nil && verHi == 0 && r.sameJoinedParts(kp, len(key), v) && exp == r.ExpiresAt() {
		return // the parts it has (materialize's setColl(nil), a clone's)
	}
	r.vlen, r.form = 0, r.form&formDeleted
	var vp *byte
	if v != nil {
		r.vlen, r.form = valueLen(len(v)), r.form|formValue
		if len(v) > 0 {
			vp = unsafe.SliceData(v)
		}
	}
	switch {
	case c != nil || m != nil || verHi != 0 || len(key) > maxJoinedKey || vp != nil && len(key) > 0 && !joined:
		r.p = unsafe.Pointer(&recordExt{key: kp, val: vp, c: c, meta: m, exp: exp, klen: keyLen32(len(key)), verHi: verHi})
		r.klen, r.form = 0, r.form|formExt
		if exp != 0 {
			r.form |= formExpiry
		}
		if verHi != 0 {
			r.form |= formWideVersion
		}
		return
	case exp != 0:
		r.rejoin(key, v, exp)
		return
	case len(key) == 0:
		r.p = unsafe.Pointer(vp) // no key bytes: the value starts at p
	default:
		r.p = unsafe.Pointer(kp)
	}
	r.klen = uint16(len(key))
}

// sameJoinedParts reports whether the record is in the joined form with
// the key at kp (klen bytes) and exactly v after it.
func (r *Record) sameJoinedParts(kp *byte, klen int, v []byte) bool {
	if r.form&formExt != 0 || klen == 0 || unsafe.Pointer(kp) != r.p || klen != int(r.klen) {
		return false
	}
	if v == nil {
		return r.form&formValue == 0
	}
	return r.form&formValue != 0 && len(v) == int(r.vlen) &&
		(len(v) == 0 || unsafe.Pointer(unsafe.SliceData(v)) == unsafe.Add(r.p, r.klen))
}

// With returns r with key and value set (neither copied): a record
// literal's key and value.
func (r Record) With(key string, value []byte) Record {
	r.setParts(key, value, false, nil, nil)
	return r
}

// recordOf is &r with key and value set.
func recordOf(key string, value []byte, r Record) *Record {
	r.setParts(key, value, false, nil, nil)
	return &r
}

// emptyValue is what a non-nil empty value points at.
var emptyValue byte

// MaxRecordBytes bounds a record's key and its value each: their lengths
// are 32-bit (D75). The item cap (--max-item-bytes) must stay under it.
const MaxRecordBytes = math.MaxUint32

func keyLen32(n int) uint32 {
	if n > MaxRecordBytes {
		panic("store: a key past MaxRecordBytes")
	}
	return uint32(n)
}

func valueLen(n int) uint32 {
	if n > MaxRecordBytes {
		panic("store: a value past MaxRecordBytes")
	}
	return uint32(n)
}

// coll is the record's materialized collection; nil for a string record.
func (r *Record) coll() collection {
	if e := r.ext(); e != nil {
		return e.c
	}
	return nil
}

// Meta is the record's optional metadata; nil when there is none.
func (r *Record) Meta() *Metadata {
	if e := r.ext(); e != nil {
		return e.meta
	}
	return nil
}

// SetMeta sets the record's metadata (nil: none), keeping its key, value
// and collection. Only on a record not yet published.
func (r *Record) SetMeta(m *Metadata) {
	if r.paged() != nil {
		r.ownExt().meta = m // a paged value stays paged
		return
	}
	r.setParts(r.Key(), r.Value(), r.joined(), r.coll(), m)
}

// setColl makes the record hold c as its materialized collection, keeping
// its key, value and metadata. Only on a record not yet published.
func (r *Record) setColl(c collection) {
	if c == nil && r.paged() != nil {
		return // a string: no collection to drop, and its pages stay
	}
	r.setParts(r.Key(), r.Value(), r.joined(), c, r.Meta())
}

// Metadata is the optional part of a record's metadata (R-KV). Absent
// (nil) when empty.
type Metadata struct {
	ContentType string
	Labels      map[string]string
}

func newMetadata(contentType string, labels map[string]string) *Metadata {
	if contentType == "" && len(labels) == 0 {
		return nil
	}
	m := &Metadata{ContentType: contentType}
	if len(labels) > 0 {
		m.Labels = maps.Clone(labels)
	}
	return m
}

// recordOverhead approximates the bytes a record costs beyond its key and
// value: the 32-byte Record, its index slot (12 bytes at a load of 0.53–0.8)
// and the allocator's rounding to a size class (D89: 52.8 bytes of heap
// beside a 16-byte key and a 32-byte value; 68.8 with an expiry). It is the
// node-local accounting rule: every node recomputes accountedBytes from the
// record itself instead of trusting a sender (the AccountedBytes lesson).
const recordOverhead = 64

// accountedBytes is the memory this record is charged against the budget.
func (r *Record) accountedBytes() int64 {
	n := int64(len(r.Key()) + r.ValueLen() + recordOverhead)
	if c := r.coll(); c != nil {
		n += c.size()
	}
	if m := r.Meta(); m != nil {
		n += int64(len(m.ContentType)) + 64
		for k, v := range m.Labels {
			n += int64(len(k)+len(v)) + 48
		}
	}
	return n
}

// expiredAt reports whether the record has expired at now (Unix ns).
func (r *Record) expiredAt(now int64) bool {
	return r.form&formExpiry != 0 && now >= r.ExpiresAt()
}

// liveAt reports whether a read at now sees the record.
func (r *Record) liveAt(now int64) bool {
	return !r.Deleted() && !r.expiredAt(now)
}

func (r *Record) touch(stamp uint32) {
	// Read before write: a hot key read by many cores must not bounce its
	// cache line on every read.
	if atomic.LoadUint32(&r.access) != stamp {
		atomic.StoreUint32(&r.access, stamp)
	}
}

// clone returns a shallow copy that the caller may modify before publishing.
func (r *Record) clone() *Record { return r.cloneExpiring(r.ExpiresAt()) }

// cloneExpiring is clone with the expiry ns (0: none): a new expiry is new
// bytes (SetExpiresAt), made here with the copy.
func (r *Record) cloneExpiring(ns int64) *Record {
	if n := r.keyLen() + int(r.vlen); r.form&formValue != 0 && n <= maxInlineTail {
		// A small string record's key and value live in its own allocation
		// (newStringRecord): a clone that pointed at them kept that whole
		// allocation alive beside its own — a key given a TTL by EXPIRE
		// cost 64 bytes more for as long as it lived. Copied, the old one
		// goes. (Larger bytes have an allocation of their own, shared.)
		c := newStringRecord(r.Key(), r.Value(), ns)
		if e := r.ext(); e != nil && (e.c != nil || e.meta != nil) {
			c.setParts(c.Key(), c.Value(), true, e.c, e.meta)
		}
		c.SetVersion(r.Version())
		c.Revision, c.Kind = r.Revision, r.Kind
		c.SetDeleted(r.Deleted())
		c.access = atomic.LoadUint32(&r.access)
		return c
	}
	c := r.header32()
	c.SetExpiresAt(ns)
	c.access = atomic.LoadUint32(&r.access)
	return &c
}

// header32 is a copy of the record's 32 bytes but the access stamp, which
// readers write: it shares the record's bytes and ext, which nobody writes.
func (r *Record) header32() Record {
	return Record{p: r.p, Revision: r.Revision, vlen: r.vlen, ver: r.ver, klen: r.klen, Kind: r.Kind, form: r.form}
}

// exported returns a copy of the record for callers outside the store
// (snapshots, op-log readers). The value bytes are shared and immutable; a
// collection is encoded into Value (the caller holds the segment lock),
// and the copy never carries the live collection.
func (r *Record) exported() Record {
	e := r.header32()
	if c := r.coll(); c != nil {
		e.setParts(r.Key(), c.encode(), false, nil, r.Meta())
	}
	return e
}

// materialize makes a received record (a snapshot's, an op's) one the store
// keeps: a collection record's encoding (Value) becomes its materialized
// collection, under a key of its own, so that the encoding's buffer — which
// a decoder may have joined to the key — is not kept alive by it. It drops
// any collection the record came with.
func (r *Record) materialize() error {
	r.setColl(nil)
	if r.Deleted() || r.Kind == KindString {
		return nil
	}
	c, err := decodeCollection(r.Kind, r.Value())
	if err != nil {
		return err
	}
	r.setParts(strings.Clone(r.Key()), nil, false, c, r.Meta())
	return nil
}

// header returns a copy of the record without its value or collection: what
// an op-log entry keeps of a collection record, whose collection keeps
// changing after the entry is written.
func (r *Record) header() *Record {
	h := r.headerValue()
	return &h
}

func (r *Record) headerValue() Record {
	var h Record
	r.headerInto(&h)
	return h
}

// headerInto makes *h what headerValue returns, in place: a copy of the
// whole record then the parts changed, where building the header field by
// field and copying it out made the copy's wide loads wait for the
// narrow stores just made (a store-forwarding stall: 1.8 % of a pipelined
// LPUSH's CPU, issue #17).
func (r *Record) headerInto(h *Record) {
	*h = *r
	h.access = 0
	h.setParts(r.Key(), nil, false, nil, r.Meta())
}
