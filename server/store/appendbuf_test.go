package store

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// TestAppendGrowsInPlaceWithoutChangingHandedOutValues: APPEND on a large
// string extends one buffer (no copy per call once it has room), every
// value read before stays what it was and cannot be appended into, an
// EXPIRE between appends keeps the buffer, and the spare capacity counts
// against the budget until the key is deleted.
func TestAppendGrowsInPlaceWithoutChangingHandedOutValues(t *testing.T) {
	st, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	g := st.Segment(0)
	before := st.Stats().OwnedBytes
	want := strings.Repeat("a", 2000)
	st.Put("log", []byte(want), nil)
	var held [][]byte // values read along the way
	var held0 []string
	for i := range 200 {
		chunk := strings.Repeat(string(rune('b'+i%20)), 37)
		if r := run(t, st, kv.CmdAppend, "log", chunk); r.Int != int64(len(want)+len(chunk)) {
			t.Fatalf("APPEND %d: %s", i, flat(r))
		}
		want += chunk
		if i == 50 {
			st.Expire("log", time.Hour) // a new record, the same value
		}
		v := st.Get("log").Value
		if string(v) != want {
			t.Fatalf("after %d appends GET differs from what was appended", i+1)
		}
		if cap(v) != len(v) {
			t.Fatalf("a handed-out value has room to append into: len %d cap %d", len(v), cap(v))
		}
		held, held0 = append(held, v), append(held0, string(v))
	}
	for i, v := range held {
		if string(v) != held0[i] {
			t.Fatalf("value read after append %d changed under its reader", i+1)
		}
	}
	g.mu.RLock()
	e := g.growable["log"]
	g.mu.RUnlock()
	if e == nil || e.used != len(want) || &e.buf[0] != &held[len(held)-1][0] {
		t.Fatal("the appends did not share one buffer")
	}
	buffers := map[*byte]bool{}
	for _, v := range held {
		buffers[&v[0]] = true
	}
	if len(buffers) > 4 { // 2 037 → 9 400 bytes: doubling takes 3 buffers
		t.Fatalf("200 appends used %d buffers: appends with room left copied the value", len(buffers))
	}
	grown := st.Stats().OwnedBytes - before
	if grown < int64(len(e.buf)) {
		t.Fatalf("accounted %d bytes for a buffer of %d", grown, len(e.buf))
	}
	st.Delete("log")
	g.mu.RLock()
	left := len(g.growable)
	g.mu.RUnlock()
	if left != 0 {
		t.Fatal("the buffer outlived its key")
	}
	// What stays accounted is the tombstone, as after SET + DEL.
	ref, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	refBefore := ref.Stats().OwnedBytes
	ref.Put("log", []byte(want), nil)
	ref.Delete("log")
	if a, b := st.Stats().OwnedBytes-before, ref.Stats().OwnedBytes-refBefore; a != b {
		t.Fatalf("after DEL %d bytes stay accounted, %d after SET + DEL", a, b)
	}
}

// TestAppendNeverWritesOverANewerRecord: when an older record of the key
// comes back (an install from a snapshot taken before the last appends),
// the next APPEND copies instead of writing over the bytes the newer
// record — still held by a reader — covers.
func TestAppendNeverWritesOverANewerRecord(t *testing.T) {
	st, _ := newTestStore(t, func(c *Config) { c.Segments = 1 })
	g := st.Segment(0)
	st.Put("k", []byte(strings.Repeat("x", 3000)), nil)
	run(t, st, kv.CmdAppend, "k", "1111")
	older := g.Snapshot()
	run(t, st, kv.CmdAppend, "k", "2222")
	newer := st.Get("k").Value
	newerCopy := bytes.Clone(newer)
	g.InstallSnapshot(older)
	run(t, st, kv.CmdAppend, "k", "3333")
	if !bytes.Equal(newer, newerCopy) {
		t.Fatal("an APPEND after an older record came back wrote over a newer record's bytes")
	}
	if got := string(st.Get("k").Value); got != strings.Repeat("x", 3000)+"1111"+"3333" {
		t.Fatalf("value %q…", got[len(got)-12:])
	}
	// The same through the commit path: an older prefix of the buffer the
	// key appends into now, applied again.
	older2 := g.Snapshot()
	run(t, st, kv.CmdAppend, "k", "4444")
	held := st.Get("k").Value
	heldCopy := bytes.Clone(held)
	old := older2.Records[0]
	if &old.Value()[0] != &held[0] {
		t.Fatal("setup: the snapshot's value is not a prefix of the current buffer")
	}
	old.Revision = g.Revision() + 1
	old.SetVersion(99)
	if _, err := g.ApplyRecord(old, OpPut); err != nil {
		t.Fatal(err)
	}
	run(t, st, kv.CmdAppend, "k", "5555")
	if !bytes.Equal(held, heldCopy) {
		t.Fatal("an APPEND after an older prefix was applied wrote over a newer record's bytes")
	}
	if got := string(st.Get("k").Value); got != strings.Repeat("x", 3000)+"1111"+"3333"+"5555" {
		t.Fatalf("value …%q", got[len(got)-12:])
	}
}
