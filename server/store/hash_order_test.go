package store

import (
	"fmt"
	"slices"
	"testing"
)

// TestHashOrderAndItsCopy: a small hash answers in insertion order (what
// HKEYS answers, as Redis's listpack), a field set again keeping its place;
// its encoding stays canonical (sorted by field: two copies with the same
// content encode — and digest — the same whatever their histories), so a
// copy decoded from it holds the same fields and values in field order.
func TestHashOrderAndItsCopy(t *testing.T) {
	h := newHash()
	for _, f := range []string{"z", "a", "m", "b"} {
		h.set([]byte(f), []byte("v"+f))
	}
	h.set([]byte("a"), []byte("again")) // keeps its place
	h.del("m")
	h.set([]byte("m"), []byte("back")) // goes to the end
	want := []string{"z", "a", "b", "m"}
	if got := h.fieldNames(); !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	other := newHash() // the same content, added in another order
	for _, f := range []string{"m", "b", "a", "z"} {
		v, _ := h.get([]byte(f))
		other.set([]byte(f), v)
	}
	if !slices.Equal(h.encode(), other.encode()) {
		t.Fatal("two hashes with the same content encode differently")
	}
	c, err := decodeCollection(KindHash, h.encode())
	if err != nil {
		t.Fatal(err)
	}
	copied := c.(*hashColl)
	if got := copied.fieldNames(); !slices.Equal(got, []string{"a", "b", "m", "z"}) {
		t.Fatalf("the copy's fields %v, want them in field order", got)
	}
	if v, _ := copied.get([]byte("a")); string(v) != "again" {
		t.Fatalf("the copy's a = %q", v)
	}

	// Past 512 fields: big for good, and order is dropped.
	for i := range 600 {
		h.set([]byte(fmt.Sprint("f", i)), []byte("v"))
	}
	for i := range 600 {
		h.del(fmt.Sprint("f", i))
	}
	if !h.big || h.order != nil || h.count() != 4 {
		t.Fatalf("after growing past 512 and shrinking: big %v, order %d, count %d", h.big, len(h.order), h.count())
	}
}

// TestHashOrderMatchesTheTable: while ordered, order holds exactly the
// table's entries, through random sets and deletes.
func TestHashOrderMatchesTheTable(t *testing.T) {
	h := newHash()
	for i := range 5000 {
		f := []byte(fmt.Sprint("f", (i*7919)%97))
		if i%3 == 0 {
			h.del(string(f))
		} else {
			h.set(f, []byte(fmt.Sprint(i)))
		}
		if len(h.order) != h.count() {
			t.Fatalf("step %d: order %d entries, table %d", i, len(h.order), h.count())
		}
	}
	for f, v := range h.all {
		if got, _ := h.get([]byte(f)); string(got) != string(v) {
			t.Fatalf("%s: order says %q, table %q", f, v, got)
		}
	}
}
