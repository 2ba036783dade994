package store

import (
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
type Record struct {
	// p is the record's one pointer (D84). In the joined form it points at
	// the key's bytes with the value's right after them (klen then vlen
	// bytes, one allocation: newStringRecord's tail, a decoded frame's
	// buffer). In the ext form (form&formExt) it is a *recordExt, which
	// holds the key's and the value's pointers beside the collection and
	// the metadata: what a record needs whose bytes are not joined or
	// that has a collection or metadata. One pointer where there were
	// three (key, value, ext) makes a record 48 bytes: a 16-byte key with
	// a 32-byte value one 96-byte allocation, with one word for the
	// collector to scan.
	//
	// Key, Value, Meta and coll read it; SetKey, SetValue, SetJoined,
	// SetMeta and setColl (on a record not yet published) write it.
	p          unsafe.Pointer
	klen, vlen uint32

	// Version is the per-key ItemVersion: 1 on create, +1 per value write.
	// Optimistic concurrency (CAS) checks it.
	Version uint64
	// Revision is the per-segment revision of the mutation that produced the
	// record: the total order replication and recovery converge on.
	Revision uint64

	// ExpiresAt is the absolute expiry (Unix ns); 0 = no expiry.
	ExpiresAt int64

	// access is the node-local recency stamp (coarse milliseconds since the
	// store started) read by the LRU sampler. Never crosses the wire; updated
	// atomically by readers.
	access uint32

	// Deleted marks a tombstone: the record of a delete.
	Deleted bool

	// Kind is the kind of value: a plain string (Value holds the bytes) or a
	// server-side collection. A collection record in a Snapshot or a full
	// Op carries its canonical encoding in Value.
	Kind ValueKind

	// form says how to read p.
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
)

// recordExt is a record's rarely present part: the materialized collection
// of a collection record, the optional metadata, and the key's and value's
// pointers of a record whose bytes are not joined. Never mutated after it
// is published, except its collection's contents, which change in place
// under the segment's write lock; a record that needs another collection or
// metadata gets a new recordExt.
type recordExt struct {
	key, val *byte
	// c is the materialized collection (nil for strings). Never crosses the
	// wire: Value carries the encoding.
	c collection
	// meta is the optional metadata (content type, labels).
	meta *Metadata
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

// Key is the record's key. It shares the record's bytes: a caller that
// keeps it keeps the record's allocation alive.
func (r *Record) Key() string { return unsafe.String(r.keyData(), r.klen) }

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
		return unsafe.Slice((*recordExt)(r.p).val, r.vlen)
	}
	return unsafe.Slice((*byte)(unsafe.Add(r.p, r.klen)), r.vlen)
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
// yet published; it keeps the record's collection and metadata.
func (r *Record) SetJoined(buf []byte, keyLen int, hasValue bool) {
	var v []byte
	if hasValue {
		v = buf[keyLen:len(buf):len(buf)]
	}
	r.setParts(unsafe.String(unsafe.SliceData(buf), keyLen), v, true, r.coll(), r.Meta())
}

// joined reports whether the record's key and value are in the joined
// form (one allocation, the value right after the key).
func (r *Record) joined() bool { return r.form&formExt == 0 }

// setParts sets key, value (neither copied), collection and metadata. The
// record takes the joined form when nothing needs an ext: no collection, no
// metadata, and either the caller says the value follows the key in one
// allocation (joined) or at most one of them has bytes. Two allocations
// are never taken for one because they are adjacent in memory: the
// collector would see only the first.
func (r *Record) setParts(key string, v []byte, joined bool, c collection, m *Metadata) {
	kp := unsafe.StringData(key)
	r.klen, r.vlen, r.form = keyLen32(len(key)), 0, 0
	var vp *byte
	if v != nil {
		r.vlen, r.form = valueLen(len(v)), formValue
		if len(v) > 0 {
			vp = unsafe.SliceData(v)
		}
	}
	switch {
	case c != nil || m != nil || vp != nil && len(key) > 0 && !joined:
		r.p = unsafe.Pointer(&recordExt{key: kp, val: vp, c: c, meta: m})
		r.form |= formExt
	case len(key) == 0:
		r.p = unsafe.Pointer(vp) // no key bytes: the value starts at p
	default:
		r.p = unsafe.Pointer(kp)
	}
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
func (r *Record) SetMeta(m *Metadata) { r.setParts(r.Key(), r.Value(), r.joined(), r.coll(), m) }

// setColl makes the record hold c as its materialized collection, keeping
// its key, value and metadata. Only on a record not yet published.
func (r *Record) setColl(c collection) { r.setParts(r.Key(), r.Value(), r.joined(), c, r.Meta()) }

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

// clone returns a shallow copy that the caller may modify before publishing.
func (r *Record) clone() *Record {
	var c *Record
	if n := int(r.klen) + int(r.vlen); r.form&formValue != 0 && n <= maxInlineTail {
		// A small string record's key and value live in its own allocation
		// (newStringRecord): a clone that pointed at them kept that whole
		// allocation alive beside its own — a key given a TTL by EXPIRE
		// cost 64 bytes more for as long as it lived. Copied, the old one
		// goes. (Larger bytes have an allocation of their own, shared.)
		c = newStringRecord(r.Key(), r.Value())
		if e := r.ext(); e != nil {
			c.setParts(c.Key(), c.Value(), true, e.c, e.meta)
		}
	} else {
		c = &Record{p: r.p, klen: r.klen, vlen: r.vlen, form: r.form}
	}
	c.Version, c.Revision, c.ExpiresAt, c.Deleted, c.Kind = r.Version, r.Revision, r.ExpiresAt, r.Deleted, r.Kind
	c.access = atomic.LoadUint32(&r.access)
	return c
}

// exported returns a copy of the record for callers outside the store
// (snapshots, op-log readers). The value bytes are shared and immutable; a
// collection is encoded into Value (the caller holds the segment lock),
// and the copy never carries the live collection.
func (r *Record) exported() Record {
	e := Record{Version: r.Version, Revision: r.Revision, ExpiresAt: r.ExpiresAt, Deleted: r.Deleted, Kind: r.Kind}
	if c := r.coll(); c != nil {
		e.setParts(r.Key(), c.encode(), false, nil, r.Meta())
	} else {
		e.p, e.klen, e.vlen, e.form = r.p, r.klen, r.vlen, r.form // nothing to drop: share the bytes
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
	if r.Deleted || r.Kind == KindString {
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
	h := Record{Version: r.Version, Revision: r.Revision, ExpiresAt: r.ExpiresAt, Deleted: r.Deleted, Kind: r.Kind}
	h.setParts(r.Key(), nil, false, nil, r.Meta())
	return h
}
