package store

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
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
		{"a stored string (newStringRecord)", func() *Record { return newStringRecord("key", []byte("value"), 0) }, "key", "value", false, true, nil},
		{"a stored empty value", func() *Record { return newStringRecord("key", []byte{}, 0) }, "key", "", false, true, nil},
		{"a stored big value", func() *Record { return newStringRecord("key", bytes.Repeat([]byte("v"), 4*maxInlineTail), 0) }, "key", strings.Repeat("v", 4*maxInlineTail), false, true, nil},
		{"key and value from two allocations", func() *Record { return recordOf("key", []byte("value"), Record{}) }, "key", "value", false, false, nil},
		{"a key without a value (tombstone, header)", func() *Record { return recordOf("key", nil, Record{}.AsTombstone()) }, "key", "", true, true, nil},
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
			r := newStringRecord("key", []byte("value"), 0)
			r.SetMeta(meta)
			return r
		}, "key", "value", false, false, meta},
		{"no metadata set on a joined record", func() *Record {
			r := newStringRecord("key", []byte("value"), 0)
			r.SetMeta(nil)
			return r
		}, "key", "value", false, true, nil},
		{"a new key on a joined record", func() *Record {
			r := newStringRecord("key", []byte("value"), 0)
			r.SetKey("other")
			return r
		}, "other", "value", false, false, nil},
		{"a new value on a joined record", func() *Record {
			r := newStringRecord("key", []byte("value"), 0)
			r.SetValue([]byte("other"))
			return r
		}, "key", "other", false, false, nil},
		{"a clone of a record with metadata", func() *Record {
			r := newStringRecord("key", []byte("value"), 0)
			r.SetMeta(meta)
			return r.clone()
		}, "key", "value", false, false, meta},
		{"an exported copy", func() *Record {
			e := newStringRecord("key", []byte("value"), 0).exported()
			return &e
		}, "key", "value", false, true, nil},
		{"an op-log header", func() *Record { return newStringRecord("key", []byte("value"), 0).header() }, "key", "", true, true, nil},
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
	rec := Record{Kind: KindList, Revision: 1}.WithVersion(1)
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

// recordModel is what a record should read back.
type recordModel struct {
	key, value string
	nilValue   bool
	version    uint64
	expiresAt  int64
	deleted    bool
	meta       *Metadata
}

func (m recordModel) check(t *testing.T, what string, r *Record) {
	t.Helper()
	v := r.Value()
	if r.Key() != m.key || string(v) != m.value || (v == nil) != m.nilValue || cap(v) != len(v) ||
		r.Version() != m.version || r.ExpiresAt() != m.expiresAt || r.Deleted() != m.deleted || r.Meta() != m.meta {
		t.Fatalf("%s: key equal %v; read back key %d bytes, value %d bytes (nil %v), version %d, expiry %d, deleted %v, meta %p; want %d, %d (nil %v), %d, %d, %v, %p",
			what, r.Key() == m.key, len(r.Key()), len(v), v == nil, r.Version(), r.ExpiresAt(), r.Deleted(), r.Meta(),
			len(m.key), len(m.value), m.nilValue, m.version, m.expiresAt, m.deleted, m.meta)
	}
}

// TestRecordStampsAgreeWithAModel: the 32-byte record (D89) keeps its
// version, expiry and tombstone flag wherever they live — inline, the
// expiry after the value, a wide version or a long key in the ext —
// through every way a record is changed or copied; and no change to one
// record alters another that shares its bytes (the failure it prevents:
// an EXPIRE on a copy moving the expiry of the record it was copied from,
// which a replica or a snapshot still holds).
func TestRecordStampsAgreeWithAModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 89))
	meta := &Metadata{ContentType: "text/plain"}
	bytesOf := func(n int) string { return strings.Repeat(string(rune('a'+rng.IntN(26))), n) }
	length := func() int {
		switch rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return maxInlineTail + rng.IntN(64) - 32 // around the inline limit
		case 2:
			return maxJoinedKey + rng.IntN(4) - 1 // around the joined key limit
		}
		return rng.IntN(64)
	}
	stamp := func() (uint64, int64) {
		vs := []uint64{0, 1, 7, 1<<32 - 1, 1 << 32, 1<<40 + 3, math.MaxUint64}
		es := []int64{0, 0, 1, 1_700_000_000_000_000_000, math.MaxInt64, -1, math.MinInt64}
		return vs[rng.IntN(len(vs))], es[rng.IntN(len(es))]
	}
	type held struct {
		r *Record
		m recordModel
	}
	var all []held
	for round := range 3000 {
		var r *Record
		var m recordModel
		m.version, m.expiresAt = stamp()
		m.key = bytesOf(length())
		if m.key == "" && rng.IntN(2) == 0 {
			m.key = "k"
		}
		m.value = bytesOf(length() % (maxInlineTail + 64))
		switch rng.IntN(4) {
		case 0:
			r = newStringRecord(m.key, []byte(m.value), m.expiresAt)
			r.SetVersion(m.version)
		case 1:
			rec := Record{}.WithVersion(m.version).WithExpiry(m.expiresAt).With(m.key, []byte(m.value))
			r = &rec
		case 2:
			buf := make([]byte, len(m.key)+len(m.value)+8)
			copy(buf[copy(buf, m.key):], m.value)
			r = &Record{}
			r.SetVersion(m.version)
			r.SetJoinedExpiring(buf, len(m.key), true, m.expiresAt)
		case 3:
			r = &Record{}
			r.SetJoined([]byte(m.key+m.value), len(m.key), true)
			r.SetExpiresAt(m.expiresAt)
			r.SetVersion(m.version)
		}
		m.check(t, fmt.Sprintf("round %d: made", round), r)
		for step := range 6 {
			what := fmt.Sprintf("round %d step %d", round, step)
			switch rng.IntN(10) {
			case 0:
				m.version, _ = stamp()
				r.SetVersion(m.version)
			case 1:
				_, m.expiresAt = stamp()
				r.SetExpiresAt(m.expiresAt)
			case 2:
				m.deleted = !m.deleted
				r.SetDeleted(m.deleted)
			case 3:
				m.meta = []*Metadata{nil, meta}[rng.IntN(2)]
				r.SetMeta(m.meta)
			case 4:
				_, exp := stamp()
				c := r.cloneExpiring(exp)
				all = append(all, held{r, m})
				r, m.expiresAt = c, exp
			case 5:
				e := r.exported()
				all = append(all, held{r, m})
				r = &e
			case 6:
				h := r.header()
				all = append(all, held{r, m})
				r, m.value, m.nilValue = h, "", true
			case 7:
				m.key = bytesOf(length())
				r.SetKey(m.key)
			case 8:
				m.value, m.nilValue = bytesOf(length()%(maxInlineTail+64)), false
				r.SetValue([]byte(m.value))
			case 9:
				r.setColl(nil) // materialize's first step: nothing changes
			}
			m.check(t, what, r)
		}
		all = append(all, held{r, m})
	}
	runtime.GC() // a pointer the collector does not follow shows as freed, reused bytes
	junk := make([][]byte, 1<<14)
	for i := range junk {
		junk[i] = bytes.Repeat([]byte{'x'}, 8+i%1024)
	}
	runtime.KeepAlive(junk)
	for i, h := range all {
		h.m.check(t, fmt.Sprintf("record %d, after the others changed", i), h.r)
	}
}
