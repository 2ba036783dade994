package store

import (
	"testing"
	"time"
	"unsafe"

	"github.com/zaris-io/zaris/internal/kv"
)

// watchKey is RESP WATCH of one key through the key's segment.
func watchKey(s *Store, key string) (m WatchMark) {
	s.SegmentFor(key).Atomically(func(a *Atomic) { m = a.Watch(key) })
	return m
}

func changed(s *Store, key string, m WatchMark) (c bool) {
	s.SegmentFor(key).Atomically(func(a *Atomic) { c = a.Changed(key, m) })
	return c
}

// TestWatchAbsentKeyCreatedAndDeleted: a key absent at WATCH, then created
// and deleted again, has changed — even after the pruner ran, because the
// watch keeps the key's tombstone; once unwatched the tombstone goes.
func TestWatchAbsentKeyCreatedAndDeleted(t *testing.T) {
	s, _ := newTestStore(t)
	m := watchKey(s, "k")
	if !m.Absent() {
		t.Fatal("k is absent at WATCH")
	}
	if changed(s, "k", m) {
		t.Fatal("nothing happened yet")
	}
	mustStatus(t, s.Put("other", []byte("v"), nil), kv.StatusSuccess)
	mustStatus(t, s.Delete("other"), kv.StatusSuccess)
	if changed(s, "k", m) {
		t.Fatal("another key's writes are not k's")
	}
	mustStatus(t, s.Put("k", []byte("v"), nil), kv.StatusSuccess)
	mustStatus(t, s.Delete("k"), kv.StatusSuccess)
	if _, pruned := s.SweepOnce(); pruned != 1 {
		t.Fatalf("pruned %d tombstones, want 1 (other's; k's is kept while watched)", pruned)
	}
	if !changed(s, "k", m) {
		t.Fatal("k was created and deleted after WATCH: changed")
	}
	s.Unwatch("k", m)
	if _, pruned := s.SweepOnce(); pruned != 1 {
		t.Fatalf("pruned %d tombstones after the unwatch, want 1", pruned)
	}
}

// TestWatchExpiredKeyRemoved: a key already expired (not yet swept) at
// WATCH and removed by the sweeper afterwards has not changed (Redis: it
// was logically absent all along); recreated, it has.
func TestWatchExpiredKeyRemoved(t *testing.T) {
	s, clk := newTestStore(t)
	mustStatus(t, s.Put("k", []byte("v"), &kv.PutOptions{TTL: time.Second}), kv.StatusSuccess)
	clk.Advance(2 * time.Second)
	m := watchKey(s, "k")
	if !m.Absent() {
		t.Fatal("an expired key is absent at WATCH")
	}
	if expired, _ := s.SweepOnce(); expired != 1 {
		t.Fatalf("swept %d, want 1", expired)
	}
	if changed(s, "k", m) {
		t.Fatal("the expiry of a key already expired at WATCH is no change")
	}
	mustStatus(t, s.Put("k", []byte("w"), nil), kv.StatusSuccess)
	if !changed(s, "k", m) {
		t.Fatal("recreated after WATCH: changed")
	}
	s.Unwatch("k", m)
}

// TestWatchPresentKey: a present key changes with any write, a delete or
// an expiry.
func TestWatchPresentKey(t *testing.T) {
	s, clk := newTestStore(t)
	mustStatus(t, s.Put("k", []byte("v"), nil), kv.StatusSuccess)
	m := watchKey(s, "k")
	if m.Absent() || changed(s, "k", m) {
		t.Fatal("present and unchanged")
	}
	mustStatus(t, s.Put("k", []byte("v"), nil), kv.StatusSuccess)
	if !changed(s, "k", m) {
		t.Fatal("rewritten: changed")
	}
	m = watchKey(s, "k")
	mustStatus(t, s.Expire("k", time.Second), kv.StatusSuccess)
	if !changed(s, "k", m) {
		t.Fatal("TTL set: changed")
	}
	m = watchKey(s, "k")
	clk.Advance(2 * time.Second)
	if !changed(s, "k", m) {
		t.Fatal("expired: changed")
	}
}

// TestWatchAbsentKeyOwnsItsCopy: the watch registry keeps its own copy of
// the key — RESP hands the store views of its read buffer, which the next
// request overwrites.
func TestWatchAbsentKeyOwnsItsCopy(t *testing.T) {
	s, _ := newTestStore(t)
	buf := []byte("k1")
	key := unsafe.String(&buf[0], len(buf))
	m := watchKey(s, key)
	copy(buf, "zz") // the next request reuses the buffer
	mustStatus(t, s.Put("k1", []byte("v"), nil), kv.StatusSuccess)
	mustStatus(t, s.Delete("k1"), kv.StatusSuccess)
	s.SweepOnce()
	if !changed(s, "k1", m) {
		t.Fatal("k1's tombstone was pruned while watched: the registry held the overwritten view")
	}
	s.Unwatch("k1", m)
}
