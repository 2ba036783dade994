package store

import (
	"maps"
	"sync/atomic"
)

// Record is the unit of data that moves between nodes (the StoredRecord of
// the design articles): key, value, metadata, the two version numbers and the
// tombstone flag. Replication, snapshots and migration exchange Records.
//
// A Record held by the store is immutable once published; Value must not be
// modified by anyone who receives it from the store.
type Record struct {
	Key   string
	Value []byte

	// Version is the per-key ItemVersion: 1 on create, +1 per value write.
	// Optimistic concurrency (CAS) checks it.
	Version uint64
	// Revision is the per-segment revision of the mutation that produced the
	// record: the total order replication and recovery converge on.
	Revision uint64

	// CreatedAt is when the key was created (Unix ns).
	CreatedAt int64
	// ExpiresAt is the absolute expiry (Unix ns); 0 = no expiry.
	ExpiresAt int64

	// Meta holds the optional metadata; nil when there is none, so that the
	// common record pays nothing for it.
	Meta *Metadata

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

	// coll is the node-local materialized collection of a collection record
	// (nil for strings). Never crosses the wire: Value carries the encoding.
	// Mutated in place under the segment's write lock. Boxed: a pointer
	// costs a string record 8 bytes where the interface cost 16, which puts
	// Record in the 96-byte allocation class instead of 112.
	coll *collBox
}

// collBox holds a record's materialized collection (Record.coll).
type collBox struct{ c collection }

// get is the boxed collection; nil for a string record.
func (b *collBox) get() collection {
	if b == nil {
		return nil
	}
	return b.c
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
	n := int64(len(r.Key) + len(r.Value) + recordOverhead)
	if r.coll != nil {
		n += r.coll.c.size()
	}
	if r.Meta != nil {
		n += int64(len(r.Meta.ContentType)) + 64
		for k, v := range r.Meta.Labels {
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
	c := &Record{
		Key: r.Key, Value: r.Value, Version: r.Version, Revision: r.Revision,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Meta: r.Meta, Deleted: r.Deleted,
		Kind: r.Kind, coll: r.coll,
	}
	c.access = atomic.LoadUint32(&r.access)
	return c
}

// exported returns a copy of the record for callers outside the store
// (snapshots, op-log readers). The value bytes are shared and immutable; a
// collection is encoded into Value (the caller holds the segment lock).
func (r *Record) exported() Record {
	e := Record{
		Key: r.Key, Value: r.Value, Version: r.Version, Revision: r.Revision,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt, Meta: r.Meta, Deleted: r.Deleted,
		Kind: r.Kind,
	}
	if r.coll != nil {
		e.Value = r.coll.c.encode()
	}
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
	return Record{
		Key: r.Key, Version: r.Version, Revision: r.Revision, CreatedAt: r.CreatedAt,
		ExpiresAt: r.ExpiresAt, Meta: r.Meta, Deleted: r.Deleted, Kind: r.Kind,
	}
}
