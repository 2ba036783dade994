package store

import (
	"maps"
	"math"
	"sync/atomic"
	"unsafe"
)

// Record is the unit of data that moves between nodes (the StoredRecord of
// the design articles): key, value, metadata, the two version numbers and the
// tombstone flag. Replication, snapshots and migration exchange Records.
//
// A Record held by the store is immutable once published; Value must not be
// modified by anyone who receives it from the store.
type Record struct {
	// key and val point at the key's and the value's bytes, klen and vlen
	// are their lengths: two pointers and two lengths where a string and a
	// slice header took 40 bytes (D75). val is nil when the record has no
	// value (a tombstone, a live collection): Value then returns nil, and a
	// non-nil empty value stays non-nil. Key and Value read them; SetKey and
	// SetValue (on a record not yet published) write them.
	key, val   *byte
	klen, vlen uint32

	// Version is the per-key ItemVersion: 1 on create, +1 per value write.
	// Optimistic concurrency (CAS) checks it.
	Version uint64
	// Revision is the per-segment revision of the mutation that produced the
	// record: the total order replication and recovery converge on.
	Revision uint64

	// ExpiresAt is the absolute expiry (Unix ns); 0 = no expiry.
	ExpiresAt int64

	// Deleted marks a tombstone: the record of a delete.
	Deleted bool

	// Kind is the kind of value: a plain string (Value holds the bytes) or a
	// server-side collection. A collection record in a Snapshot or a full
	// Op carries its canonical encoding in Value.
	Kind ValueKind

	// access is the node-local recency stamp (coarse milliseconds since the
	// store started) read by the LRU sampler. Never crosses the wire; updated
	// atomically by readers. (Declared here to share a word with Deleted
	// and Kind.)
	access uint32

	// ext holds what most records do not have: the node-local materialized
	// collection of a collection record and the optional metadata (Meta).
	// nil for a plain string without metadata, so that the common record
	// pays one pointer for both (D73: Record is 80 bytes, a 16-byte key with
	// a 32-byte value one 128-byte allocation).
	ext *recordExt
}

// Key is the record's key. It shares the record's bytes: a caller that
// keeps it keeps the record's allocation alive.
func (r *Record) Key() string { return unsafe.String(r.key, r.klen) }

// Value is the record's value bytes, nil for a record without a value
// (a tombstone, a live collection). Its capacity is its length. Never
// modified: the caller must not write into it.
func (r *Record) Value() []byte {
	if r.val == nil {
		return nil
	}
	return unsafe.Slice(r.val, r.vlen)
}

// SetKey sets the record's key (not copied). Only on a record not yet
// published.
func (r *Record) SetKey(k string) { r.key, r.klen = unsafe.StringData(k), keyLen(len(k)) }

// SetValue sets the record's value (not copied; nil: no value). Only on a
// record not yet published.
func (r *Record) SetValue(v []byte) {
	switch {
	case v == nil:
		r.val, r.vlen = nil, 0
	case len(v) == 0:
		r.val, r.vlen = &emptyValue, 0
	default:
		r.val, r.vlen = unsafe.SliceData(v), valueLen(len(v))
	}
}

// With returns r with key and value set (neither copied): a record
// literal's key and value.
func (r Record) With(key string, value []byte) Record {
	r.SetKey(key)
	r.SetValue(value)
	return r
}

// recordOf is &r with key and value set.
func recordOf(key string, value []byte, r Record) *Record {
	r.SetKey(key)
	r.SetValue(value)
	return &r
}

// emptyValue is what a non-nil empty value points at.
var emptyValue byte

// MaxRecordBytes bounds a record's key and its value each: their lengths
// are 32-bit (D75). The item cap (--max-item-bytes) must stay under it.
const MaxRecordBytes = math.MaxUint32

func keyLen(n int) uint32 {
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

// recordExt is a record's rarely present part (Record.ext). Never mutated
// after it is published, except its collection's contents, which change in
// place under the segment's write lock; a record that needs another
// collection or metadata gets a new recordExt.
type recordExt struct {
	// c is the materialized collection (nil for strings). Never crosses the
	// wire: Value carries the encoding.
	c collection
	// meta is the optional metadata (content type, labels).
	meta *Metadata
}

// coll is the record's materialized collection; nil for a string record.
func (r *Record) coll() collection {
	if r.ext == nil {
		return nil
	}
	return r.ext.c
}

// Meta is the record's optional metadata; nil when there is none.
func (r *Record) Meta() *Metadata {
	if r.ext == nil {
		return nil
	}
	return r.ext.meta
}

// SetMeta sets the record's metadata (nil: none), keeping its collection.
// Only on a record not yet published.
func (r *Record) SetMeta(m *Metadata) {
	r.setExt(r.coll(), m)
}

// setColl makes the record hold c as its materialized collection, keeping
// its metadata. Only on a record not yet published.
func (r *Record) setColl(c collection) {
	r.setExt(c, r.Meta())
}

func (r *Record) setExt(c collection, m *Metadata) {
	if c == nil && m == nil {
		r.ext = nil
		return
	}
	r.ext = &recordExt{c: c, meta: m}
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
// value (the Record struct, its map slot and allocator rounding). It is the
// node-local accounting rule: every node recomputes accountedBytes from the
// record itself instead of trusting a sender (the AccountedBytes lesson).
const recordOverhead = 112

// accountedBytes is the memory this record is charged against the budget.
func (r *Record) accountedBytes() int64 {
	n := int64(len(r.Key()) + len(r.Value()) + recordOverhead)
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
	return r.ExpiresAt != 0 && now >= r.ExpiresAt
}

// liveAt reports whether a read at now sees the record.
func (r *Record) liveAt(now int64) bool {
	return !r.Deleted && !r.expiredAt(now)
}

func (r *Record) touch(stamp uint32) {
	// Read before write: a hot key read by many cores must not bounce its
	// cache line on every read.
	if atomic.LoadUint32(&r.access) != stamp {
		atomic.StoreUint32(&r.access, stamp)
	}
}

// metaOnly is an ext holding the record's metadata without its collection
// (what an exported copy or a header keeps).
func (r *Record) metaOnly() *recordExt {
	switch {
	case r.ext == nil || r.ext.c == nil:
		return r.ext
	case r.ext.meta == nil:
		return nil
	}
	return &recordExt{meta: r.ext.meta}
}

// clone returns a shallow copy that the caller may modify before publishing.
func (r *Record) clone() *Record {
	var c *Record
	if n := int(r.klen) + int(r.vlen); r.val != nil && n <= maxInlineTail {
		// A small string record's key and value live in its own allocation
		// (newStringRecord): a clone that pointed at them kept that whole
		// allocation alive beside its own — a key given a TTL by EXPIRE
		// cost 64 bytes more for as long as it lived. Copied, the old one
		// goes. (Larger bytes have an allocation of their own, shared.)
		c = newStringRecord(r.Key(), r.Value())
	} else {
		c = recordOf(r.Key(), r.Value(), Record{})
	}
	c.Version, c.Revision, c.ExpiresAt, c.Deleted, c.Kind, c.ext = r.Version, r.Revision, r.ExpiresAt, r.Deleted, r.Kind, r.ext
	c.access = atomic.LoadUint32(&r.access)
	return c
}

// exported returns a copy of the record for callers outside the store
// (snapshots, op-log readers). The value bytes are shared and immutable; a
// collection is encoded into Value (the caller holds the segment lock).
func (r *Record) exported() Record {
	e := Record{Version: r.Version, Revision: r.Revision, ExpiresAt: r.ExpiresAt, Deleted: r.Deleted, Kind: r.Kind}.With(r.Key(), r.Value())
	if c := r.coll(); c != nil {
		e.SetValue(c.encode())
	}
	e.ext = r.metaOnly()
	return e
}

// header returns a copy of the record without its value or collection: what
// an op-log entry keeps of a collection record, whose collection keeps
// changing after the entry is written.
func (r *Record) header() *Record {
	h := r.headerValue()
	return &h
}

func (r *Record) headerValue() Record {
	return Record{Version: r.Version, Revision: r.Revision, ExpiresAt: r.ExpiresAt, Deleted: r.Deleted, Kind: r.Kind, ext: r.metaOnly()}.With(r.Key(), nil)
}
