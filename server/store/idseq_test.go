package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// layoutProblem checks idSeq's chunk invariants (D131): every chunk but the
// last is full, no chunk outgrows idChunk, off lies in the first chunk and
// the items counted are the slots held.
func (q *idSeq[V]) layoutProblem() string {
	if len(q.chunks) == 0 {
		if q.n != 0 || q.off != 0 || q.live != 0 {
			return fmt.Sprintf("no chunks but n=%d off=%d live=%d", q.n, q.off, q.live)
		}
		return ""
	}
	slots := 0
	for c, ch := range q.chunks {
		if cap(ch) > idChunk || len(ch) == 0 {
			return fmt.Sprintf("chunk %d: len %d cap %d", c, len(ch), cap(ch))
		}
		if c < len(q.chunks)-1 && len(ch) != idChunk {
			return fmt.Sprintf("chunk %d of %d is not full: %d", c, len(q.chunks), len(ch))
		}
		slots += len(ch)
	}
	if q.off >= len(q.chunks[0]) || slots != q.off+q.n {
		return fmt.Sprintf("off %d, n %d, %d slots in %d chunks", q.off, q.n, slots, len(q.chunks))
	}
	live := 0
	for it := range q.all() {
		if !it.dead {
			live++
		}
	}
	if live != q.live {
		return fmt.Sprintf("live %d, counted %d", q.live, live)
	}
	return ""
}

type seqRef struct {
	id   streamID
	val  int
	dead bool
}

// TestIDSeqLikeAFlatSlice runs random appends, out-of-order inserts,
// replacements, removals and tidies on an idSeq and on a plain sorted
// slice (the former representation), comparing every read: an index
// mistake at a chunk edge or after leading chunks were dropped shows as a
// different item.
func TestIDSeqLikeAFlatSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 131))
	for round := range 20 {
		checkIDSeqOps(t, fmt.Sprint("round ", round), 2000+r.IntN(6000), r.IntN)
	}
}

// FuzzIDSeq is TestIDSeqLikeAFlatSlice with the fuzzer choosing the ops.
func FuzzIDSeq(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 200, 90, 60, 87, 99, 250})
	f.Fuzz(func(t *testing.T, ops []byte) {
		i := 0
		pick := func(n int) int {
			if n <= 0 {
				return 0
			}
			v := 0
			for range 3 { // up to 24 bits: leading runs over several chunks
				if i < len(ops) {
					v = v<<8 | int(ops[i])
				}
				i++
			}
			return v % n
		}
		// Three bytes per choice and about three choices a step; long
		// inputs also append in bulk so the chunks fill.
		checkIDSeqOps(t, "fuzz", len(ops)/6+3*idChunk, pick)
	})
}

// checkIDSeqOps runs steps random operations chosen by pick (a number in
// [0, n)) on an idSeq and on a flat sorted slice, failing at the first
// difference.
func checkIDSeqOps(t *testing.T, name string, steps int, pick func(n int) int) {
	t.Helper()
	var q idSeq[int]
	var ref []seqRef
	refLive := func() int {
		n := 0
		for _, it := range ref {
			if !it.dead {
				n++
			}
		}
		return n
	}
	next := uint64(1)
	for step := range steps {
		switch op := pick(100); {
		case op < 55: // append
			next += 1 + uint64(pick(3))
			id := streamID{ms: next}
			q.put(id, step)
			ref = append(ref, seqRef{id: id, val: step})
		case op < 62 && next > 2: // an id below the last: insert or replace
			id := streamID{ms: uint64(pick(int(next)))}
			q.put(id, step)
			i, found := slices.BinarySearchFunc(ref, id, func(a seqRef, b streamID) int { return a.id.cmp(b) })
			if found {
				ref[i].val, ref[i].dead = step, false
			} else {
				ref = slices.Insert(ref, i, seqRef{id: id, val: step})
			}
		case op < 85 && q.len() > 0: // remove
			i := pick(q.len())
			if !q.at(i).dead {
				q.killAt(i)
				ref[i].dead, ref[i].val = true, 0
			}
		case op < 88 && q.len() > 0: // remove a leading run (XTRIM)
			for i := range min(q.len(), pick(3*idChunk)) {
				if !q.at(i).dead {
					q.killAt(i)
					ref[i].dead, ref[i].val = true, 0
				}
			}
		default:
			q.tidy()
			k := 0
			for k < len(ref) && ref[k].dead {
				k++
			}
			ref = ref[k:]
			if live := refLive(); len(ref)-live > 16 && len(ref)-live > live {
				ref = slices.DeleteFunc(ref, func(it seqRef) bool { return it.dead })
			}
			if refLive() == 0 {
				ref = nil
			}
		}
		if p := q.layoutProblem(); p != "" {
			t.Fatalf("%s step %d: %s", name, step, p)
		}
		if q.len() != len(ref) || q.live != refLive() {
			t.Fatalf("%s step %d: %d items (%d live), want %d (%d)", name, step, q.len(), q.live, len(ref), refLive())
		}
		i := 0
		for it := range q.all() {
			if it.id != ref[i].id || it.val != ref[i].val || it.dead != ref[i].dead {
				t.Fatalf("%s step %d: item %d = %+v, want %+v", name, step, i, *it, ref[i])
			}
			i++
		}
		for range 4 {
			id := streamID{ms: uint64(pick(int(next) + 2))}
			want, _ := slices.BinarySearchFunc(ref, id, func(a seqRef, b streamID) int { return a.id.cmp(b) })
			if got := q.search(id); got != want {
				t.Fatalf("%s step %d: search(%v) = %d, want %d", name, step, id, got, want)
			}
			v := q.get(id)
			if live := want < len(ref) && ref[want].id == id && !ref[want].dead; live != (v != nil) || live && *v != ref[want].val {
				t.Fatalf("%s step %d: get(%v) = %v", name, step, id, v)
			}
		}
		wantLast := len(ref) - 1
		for wantLast >= 0 && ref[wantLast].dead {
			wantLast--
		}
		if got := q.lastLive(); got != wantLast {
			t.Fatalf("%s step %d: lastLive = %d, want %d", name, step, got, wantLast)
		}
	}
}

// TestIDSeqGrowsWithoutCopying: past the first chunk an append never moves
// an item written before — the flat slice copied every entry in the append
// that outgrew it (D131).
func TestIDSeqGrowsWithoutCopying(t *testing.T) {
	var q idSeq[[][]byte]
	for i := range idChunk + 1 {
		q.put(streamID{ms: uint64(i + 1)}, nil)
	}
	first, second := q.at(0), q.at(idChunk)
	for i := range 300 * idChunk {
		q.put(streamID{ms: uint64(idChunk + 2 + i)}, nil)
	}
	if q.at(0) != first || q.at(idChunk) != second {
		t.Fatal("items written before the sequence grew moved")
	}
	// Trimming from the front drops whole chunks instead of keeping them.
	for i := range 200 * idChunk {
		q.killAt(i)
	}
	q.tidy()
	if len(q.chunks) > 102 || q.at(0).id.ms != uint64(200*idChunk+1) {
		t.Fatalf("after trimming 200 chunks' worth: %d chunks, first id %v", len(q.chunks), q.at(0).id)
	}
	if p := q.layoutProblem(); p != "" {
		t.Fatal(p)
	}
}

func (a streamID) cmp(b streamID) int {
	switch {
	case a.less(b):
		return -1
	case b.less(a):
		return 1
	}
	return 0
}
