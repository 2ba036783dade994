package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

// listModel runs list operations on a listColl and on a plain slice of
// copies side by side, and checks after each that they agree and that the
// arena's counts are what its blocks hold (D85).
type listModel struct {
	t     testing.TB
	l     *listColl
	want  [][]byte
	given [][]byte // every element handed out, with the bytes it had
	seen  [][]byte
}

func newListModel(t testing.TB) *listModel { return &listModel{t: t, l: newList()} }

func (m *listModel) keep(v []byte) {
	m.seen = append(m.seen, v)
	m.given = append(m.given, bytes.Clone(v))
}

func (m *listModel) do(op byte, arg uint32) {
	size := int(arg % 97)
	switch arg % 13 {
	case 0:
		size = 0
	case 1:
		size = listBlockMax/4 + int(arg%3000) // a block of its own
	}
	v := bytes.Repeat([]byte{byte('a' + arg%26)}, size)
	switch op % 7 {
	case 0:
		m.l.pushBack(v)
		m.want = append(m.want, bytes.Clone(v))
	case 1:
		m.l.pushFront(v)
		m.want = append([][]byte{bytes.Clone(v)}, m.want...)
	case 2:
		if m.l.n > 0 {
			m.keep(m.l.popFront())
			m.want = m.want[1:]
		}
	case 3:
		if m.l.n > 0 {
			m.keep(m.l.popBack())
			m.want = m.want[:len(m.want)-1]
		}
	case 4:
		if m.l.n > 0 {
			i := int(arg) % m.l.n
			m.keep(m.l.at(i))
			m.l.set(i, v)
			m.want[i] = bytes.Clone(v)
		}
	case 5:
		if m.l.n > 0 {
			lo := int(arg) % m.l.n
			hi := lo + int(arg/7)%(m.l.n-lo+1)
			m.l.rebuild(m.l.items(lo, hi))
			m.want = m.want[lo:hi]
		}
	case 6:
		for i := range m.l.n {
			m.keep(m.l.at(i))
		}
	}
	m.check()
}

func (m *listModel) check() {
	m.t.Helper()
	l := m.l
	if l.n != len(m.want) {
		m.t.Fatalf("%d elements, want %d", l.n, len(m.want))
	}
	var live int64
	for i, w := range m.want {
		got := l.at(i)
		if !bytes.Equal(got, w) || cap(got) != len(got) || (len(w) == 0) != (got == nil) {
			m.t.Fatalf("element %d: %q (cap %d), want %q", i, got, cap(got), w)
		}
		live += int64(len(w))
	}
	a := &l.arena
	var used int64
	holes := 0
	for _, b := range a.blocks {
		if b != nil {
			used += int64(len(b.buf))
		} else {
			holes++
		}
	}
	if holes != a.holes || len(a.blocks) > 0 && a.blocks[len(a.blocks)-1] == nil {
		m.t.Fatalf("%d dropped blocks among %d, counted %d (or one trailing)", holes, len(a.blocks), a.holes)
	}
	if a.live != live || a.used != used || a.used < a.live {
		m.t.Fatalf("arena counts live %d used %d, blocks hold %d of which %d live", a.live, a.used, used, live)
	}
	if len(a.blocks) > 0 && a.blocks[0] == nil {
		m.t.Fatal("a leading dropped block was kept")
	}
	if a.sparse() {
		m.t.Fatalf("sparse after an operation: used %d, live %d", a.used, a.live)
	}
	if p := l.indexProblem(); p != "" {
		m.t.Fatal(p)
	}
	for i, v := range m.seen {
		if !bytes.Equal(v, m.given[i]) {
			m.t.Fatalf("bytes handed out earlier changed: %q, were %q", v, m.given[i])
		}
	}
}

// TestListAgreesWithASlice: random pushes, pops, sets and trims at every
// element size (empty, small, a block of its own) leave the list equal to a
// plain slice, every element handed out keeps its bytes however the list
// changes after (replies are encoded past the segment's lock), and the
// arena drops what it no longer needs.
func TestListAgreesWithASlice(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 17))
		m := newListModel(t)
		for range 3000 {
			op := byte(r.IntN(7))
			if r.IntN(3) == 0 {
				op = byte(r.IntN(2)) // lists grow more than they shrink
			}
			m.do(op, r.Uint32())
		}
	}
}

// indexProblem says what is wrong with the list's index, "" when nothing.
func (l *listColl) indexProblem() string {
	if l.chunks == nil {
		if len(l.refs) > listChunk || l.n > len(l.refs) {
			return fmt.Sprintf("a ring of %d holding %d elements (a chunk holds %d)", len(l.refs), l.n, listChunk)
		}
		return ""
	}
	if len(l.chunks)&(len(l.chunks)-1) != 0 || l.off < 0 || l.off >= listChunk && l.n > 0 {
		return fmt.Sprintf("chunk ring of %d, offset %d", len(l.chunks), l.off)
	}
	if want := (l.off + l.n + listChunk - 1) / listChunk; l.nchunks != want {
		return fmt.Sprintf("%d chunks for %d elements from offset %d, want %d", l.nchunks, l.n, l.off, want)
	}
	for i := range len(l.chunks) {
		inUse := (i-l.chunkHead)&(len(l.chunks)-1) < l.nchunks
		if inUse != (l.chunks[i] != nil) {
			return fmt.Sprintf("chunk slot %d: in use %v, holds a chunk %v", i, inUse, l.chunks[i] != nil)
		}
	}
	return ""
}

// TestLongListIndexInChunks: a list that grows past one chunk of
// references and shrinks back, at both ends, through empty, keeps every
// element at its index — the chunked index of D128 against a slice.
func TestLongListIndexInChunks(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 29))
		l := newList()
		var want []int
		val := func(k int) []byte { return fmt.Appendf(nil, "%d", k) }
		grow := true
		for step := range 40_000 {
			switch {
			case len(want) > 4*listChunk+int(seed)*37:
				grow = false
			case len(want) == 0:
				grow = true
			}
			front := r.IntN(2) == 0
			if push := r.IntN(10) < 7 == grow; push {
				if front {
					l.pushFront(val(step))
					want = append([]int{step}, want...)
				} else {
					l.pushBack(val(step))
					want = append(want, step)
				}
			} else if len(want) > 0 {
				var got []byte
				var w int
				if front {
					got, w, want = l.popFront(), want[0], want[1:]
				} else {
					got, w, want = l.popBack(), want[len(want)-1], want[:len(want)-1]
				}
				if string(got) != string(val(w)) {
					t.Fatalf("seed %d step %d: popped %q, want %d", seed, step, got, w)
				}
			}
			if l.n != len(want) {
				t.Fatalf("seed %d step %d: %d elements, want %d", seed, step, l.n, len(want))
			}
			if p := l.indexProblem(); p != "" {
				t.Fatalf("seed %d step %d: %s", seed, step, p)
			}
			if len(want) > 0 {
				i := r.IntN(len(want))
				if string(l.at(i)) != string(val(want[i])) {
					t.Fatalf("seed %d step %d: element %d is %q, want %d", seed, step, i, l.at(i), want[i])
				}
			}
			if step%1000 == 0 {
				for i, w := range want {
					if string(l.at(i)) != string(val(w)) {
						t.Fatalf("seed %d step %d: element %d is %q, want %d", seed, step, i, l.at(i), w)
					}
				}
			}
		}
	}
}

// TestLongListGrowsWithoutCopyingItsIndex: past one chunk, pushes at either
// end add chunks and never move the references already written — a
// doubling index copied the whole of it under the segment's lock at every
// power of two, the tail of a pipelined LPUSH (D128).
func TestLongListGrowsWithoutCopyingItsIndex(t *testing.T) {
	l := newList()
	for range listChunk + 1 {
		l.pushBack([]byte("x"))
	}
	first := l.ref(0)
	last := l.ref(listChunk)
	for i := range 200 * listChunk {
		if i%2 == 0 {
			l.pushFront([]byte("f"))
		} else {
			l.pushBack([]byte("b"))
		}
	}
	if l.ref(100*listChunk) != first || l.ref(100*listChunk+listChunk) != last {
		t.Fatal("the references written before the list grew moved")
	}
	if p := l.indexProblem(); p != "" {
		t.Fatal(p)
	}
}

// TestListQueueKeepsFewBlocks: a queue that has carried a million elements
// through holds about as much as the elements in it — the blocks they were
// written in are dropped as they drain, not kept by the list.
func TestListQueueKeepsFewBlocks(t *testing.T) {
	l := newList()
	v := bytes.Repeat([]byte("q"), 32)
	for i := range 1_000_000 {
		l.pushFront(v)
		if i >= 100 {
			l.popBack()
		}
	}
	a := &l.arena
	if l.n != 100 || a.live != 3200 || a.used > 3200+2*listBlockMax || len(a.blocks) > 4 {
		t.Fatalf("%d elements: %d blocks, %d bytes used for %d live", l.n, len(a.blocks), a.used, a.live)
	}
	// A stack: pushed and popped at the same end, in the block being filled.
	for range 1_000_000 {
		l.pushBack(v)
		l.popBack()
	}
	if a.used > 3200+2*listBlockMax || len(a.blocks) > 4 {
		t.Fatalf("after a million pushes and pops at one end: %d blocks, %d bytes used for %d live", len(a.blocks), a.used, a.live)
	}
	// LSET over and over of one element between two others that stay.
	l.pushFront(v)
	for range 1_000_000 {
		l.set(1, v)
	}
	if a.used > 3232+2*listBlockMax || len(a.blocks) > 40 {
		t.Fatalf("after a million LSETs: %d blocks (%d dropped), %d bytes used for %d live", len(a.blocks), a.holes, a.used, a.live)
	}
}

// TestListRenumbersItsBlocks: block numbers only grow while a list lives;
// past listRenumberAt the list compacts into blocks numbered from 0, so a
// queue of large elements (one block each) never runs out of them.
func TestListRenumbersItsBlocks(t *testing.T) {
	l := newList()
	big := bytes.Repeat([]byte("B"), listBlockMax)
	l.pushBack(big)
	l.pushBack([]byte("x"))
	const shift = listRenumberAt - 3 // as if two billion blocks had come and gone
	l.arena.base += shift
	l.arena.curNo += shift
	for i := range l.n {
		l.ref(i).blk += shift
	}
	l.pushBack(big) // block number listRenumberAt - 1
	if l.arena.curNo != listRenumberAt-1 {
		t.Fatalf("block number %d, want %d", l.arena.curNo, listRenumberAt-1)
	}
	l.pushBack(big) // the limit: fresh blocks
	if l.arena.base != 0 || l.arena.curNo > 4 || l.n != 4 || !bytes.Equal(l.at(0), big) || string(l.at(1)) != "x" || !bytes.Equal(l.at(3), big) {
		t.Fatalf("after passing the renumbering point: base %d, block %d, %d elements", l.arena.base, l.arena.curNo, l.n)
	}
}

// FuzzListOps runs a program of list operations (pairs of op and argument
// bytes) against the slice model.
func FuzzListOps(f *testing.F) {
	f.Add([]byte{0, 1, 0, 200, 1, 13, 2, 0, 3, 0, 4, 9, 5, 77, 6, 0})
	f.Add(bytes.Repeat([]byte{1, 1, 0, 14}, 40))
	f.Fuzz(func(t *testing.T, prog []byte) {
		if len(prog) > 4096 {
			return
		}
		m := newListModel(t)
		for i := 0; i+1 < len(prog); i += 2 {
			m.do(prog[i], uint32(prog[i+1])*2654435761)
		}
	})
}

func BenchmarkListPushPop(b *testing.B) {
	for _, size := range []int{8, 32, 512} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			l := newList()
			v := bytes.Repeat([]byte("v"), size)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				l.pushFront(v)
				if l.n > 1000 {
					l.popBack()
				}
			}
		})
	}
}

// BenchmarkListMemoryPerElement reports the heap a list of 1 M 32-byte
// elements holds per element (D85).
func BenchmarkListMemoryPerElement(b *testing.B) {
	v := bytes.Repeat([]byte("e"), 32)
	heapPerItem(b, 1_000_000, "element", func(n int) any {
		l := newList()
		for range n {
			l.pushFront(v)
		}
		return l
	})
}

// heapPerItem reports, as heap-bytes/<unit>, the heap that build's
// collection of n items holds per item, measured after a collection on
// both sides.
func heapPerItem(b *testing.B, n int, unit string, build func(n int) any) {
	b.Helper()
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		c := build(n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heap-bytes/"+unit)
		runtime.KeepAlive(c)
	}
}

// BenchmarkListIndex reads a window of 100 elements by index (LRANGE) of a
// 10 000-element list: the index in chunks (D128).
func BenchmarkListIndex(b *testing.B) {
	l := newList()
	for range 10_000 {
		l.pushBack([]byte("0123456789abcdef0123456789abcdef"))
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		lo := (i * 7919) % (l.n - 100)
		_ = l.items(lo, lo+100)
	}
}
