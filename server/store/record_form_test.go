package store

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// TestRecordFormsReadBack: every way a record gets its key and value reads
// them back (a nil value stays nil, an empty one non-nil and empty), and
// takes the joined form — its one pointer at the key's bytes — exactly when
// nothing needs an ext (D84): no collection, no metadata, and key and value
// not two allocations.
func TestRecordFormsReadBack(t *testing.T) {
	joinedBuf := []byte("keyvalue")
	meta := &Metadata{ContentType: "text/plain"}
	cases := []struct {
		name       string
		rec        func() *Record
		key, value string
		nilValue   bool
		wantJoined bool
		wantMeta   *Metadata
	}{
		{"a stored string (newStringRecord)", func() *Record { return newStringRecord("key", []byte("value")) }, "key", "value", false, true, nil},
		{"a stored empty value", func() *Record { return newStringRecord("key", []byte{}) }, "key", "", false, true, nil},
		{"a stored big value", func() *Record { return newStringRecord("key", bytes.Repeat([]byte("v"), 4*maxInlineTail)) }, "key", strings.Repeat("v", 4*maxInlineTail), false, true, nil},
		{"key and value from two allocations", func() *Record { return recordOf("key", []byte("value"), Record{}) }, "key", "value", false, false, nil},
		{"a key without a value (tombstone, header)", func() *Record { return recordOf("key", nil, Record{Deleted: true}) }, "key", "", true, true, nil},
		{"a non-nil empty value", func() *Record { return recordOf("key", []byte{}, Record{}) }, "key", "", false, true, nil},
		{"a value without key bytes", func() *Record { return recordOf("", []byte("value"), Record{}) }, "", "value", false, true, nil},
		{"nothing at all", func() *Record { return &Record{} }, "", "", true, true, nil},
		{"a decoded frame (SetJoined)", func() *Record {
			r := &Record{}
			r.SetJoined(joinedBuf, 3, true)
			return r
		}, "key", "value", false, true, nil},
		{"a decoded frame without a value", func() *Record {
			r := &Record{}
			r.SetJoined(joinedBuf[:3], 3, false)
			return r
		}, "key", "", true, true, nil},
		{"metadata added", func() *Record {
			r := newStringRecord("key", []byte("value"))
			r.SetMeta(meta)
			return r
		}, "key", "value", false, false, meta},
		{"no metadata set on a joined record", func() *Record {
			r := newStringRecord("key", []byte("value"))
			r.SetMeta(nil)
			return r
		}, "key", "value", false, true, nil},
		{"a new key on a joined record", func() *Record {
			r := newStringRecord("key", []byte("value"))
			r.SetKey("other")
			return r
		}, "other", "value", false, false, nil},
		{"a new value on a joined record", func() *Record {
			r := newStringRecord("key", []byte("value"))
			r.SetValue([]byte("other"))
			return r
		}, "key", "other", false, false, nil},
		{"a clone of a record with metadata", func() *Record {
			r := newStringRecord("key", []byte("value"))
			r.SetMeta(meta)
			return r.clone()
		}, "key", "value", false, false, meta},
		{"an exported copy", func() *Record {
			e := newStringRecord("key", []byte("value")).exported()
			return &e
		}, "key", "value", false, true, nil},
		{"an op-log header", func() *Record { return newStringRecord("key", []byte("value")).header() }, "key", "", true, true, nil},
	}
	for _, c := range cases {
		r := c.rec()
		if r.Key() != c.key {
			t.Errorf("%s: key %q, want %q", c.name, r.Key(), c.key)
		}
		if v := r.Value(); (v == nil) != c.nilValue || string(v) != c.value || cap(v) != len(v) {
			t.Errorf("%s: value %q (nil %v, cap %d), want %q (nil %v, cap = len)", c.name, v, v == nil, cap(v), c.value, c.nilValue)
		}
		if r.joined() != c.wantJoined {
			t.Errorf("%s: joined %v, want %v", c.name, r.joined(), c.wantJoined)
		}
		if r.Meta() != c.wantMeta || r.coll() != nil {
			t.Errorf("%s: meta %v, collection %v", c.name, r.Meta(), r.coll())
		}
	}
}

// TestSeparateKeyAndValueStayAlive: a record made of a key and a value from
// two allocations keeps both alive through collections, however they lie
// in memory — the joined form, which the collector reads as one pointer to
// the key's allocation, must never be taken for them (a value freed under
// a live record).
func TestSeparateKeyAndValueStayAlive(t *testing.T) {
	const n = 2000
	recs := make([]*Record, n)
	for i := range recs {
		key := string(bytes.Repeat([]byte{'k'}, 8)) // a fresh 8-byte allocation
		value := bytes.Repeat([]byte{byte('a' + i%26)}, 8)
		recs[i] = recordOf(key, value, Record{})
	}
	for range 3 {
		runtime.GC()
		junk := make([][]byte, 4*n) // reuse of anything freed would overwrite it
		for i := range junk {
			junk[i] = bytes.Repeat([]byte{'x'}, 8)
		}
		runtime.KeepAlive(junk)
	}
	for i, r := range recs {
		if r.Key() != "kkkkkkkk" || string(r.Value()) != strings.Repeat(string(rune('a'+i%26)), 8) {
			t.Fatalf("record %d: %q = %q after collections", i, r.Key(), r.Value())
		}
	}
}

// TestReceivedCollectionKeepsItsOwnKey: a replicated or snapshot
// collection record arrives with its key joined to its encoding in one
// buffer; the record the store keeps must not point into that buffer, or
// the whole encoding stays alive beside the materialized collection.
func TestReceivedCollectionKeepsItsOwnKey(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	g := s.Segment(0)
	l := newList()
	l.pushBack([]byte("element"))
	enc := l.encode()
	buf := append([]byte("mylist"), enc...)
	rec := Record{Kind: KindList, Version: 1, Revision: 1}
	rec.SetJoined(buf, len("mylist"), true)
	if applied, err := g.ApplyRecord(rec, OpPut); err != nil || !applied {
		t.Fatalf("ApplyRecord: applied %v, %v", applied, err)
	}
	got := g.items.get("mylist")
	if got == nil || got.coll() == nil || got.coll().count() != 1 || got.Value() != nil {
		t.Fatalf("stored record: %+v", got)
	}
	start, end := uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&buf[0]))+uintptr(len(buf))
	if k := uintptr(unsafe.Pointer(unsafe.StringData(got.Key()))); k >= start && k < end {
		t.Fatal("the stored collection record's key points into the received buffer")
	}
}
