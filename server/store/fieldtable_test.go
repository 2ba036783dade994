package store

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// checkFieldTable compares t with the model m: every field found with its
// value, nothing else walked, and every field reachable from its home slot
// without crossing an empty slot (a delete that left a hole in a probe
// would lose the fields after it).
func checkFieldTable(t *testing.T, ft *fieldTable, m map[string]string) {
	t.Helper()
	if ft.len() != len(m) {
		t.Fatalf("len %d, model %d", ft.len(), len(m))
	}
	for f, v := range m {
		got, ok := ft.get(f)
		if !ok || string(got) != v {
			t.Fatalf("field %q: %q %v, model %q", f, got, ok, v)
		}
	}
	seen := 0
	for f, v := range ft.all {
		if want, ok := m[f]; !ok || want != string(v) {
			t.Fatalf("walked %q=%q, model %q %v", f, v, want, ok)
		}
		seen++
	}
	if seen != len(m) {
		t.Fatalf("walked %d fields, model %d", seen, len(m))
	}
	if ft.arr != nil && uint64(ft.n-ft.oldN) > (ft.arr.mask+1)/4*3 {
		t.Fatalf("%d fields in %d slots: over 3/4", ft.n-ft.oldN, len(ft.arr.slots))
	}
	if p := ft.drainProblem(); p != "" {
		t.Fatal(p)
	}
}

// drainProblem says what is wrong with a resize under way, "" when
// nothing: the drained slots hold no entry, the old array holds oldN.
func (t *fieldTable) drainProblem() string {
	if t.old == nil {
		if t.oldN != 0 || t.moved != 0 {
			return fmt.Sprintf("no old array, yet %d entries and %d slots moved", t.oldN, t.moved)
		}
		return ""
	}
	left := 0
	for i, s := range t.old.slots {
		switch {
		case live(s.e) && i < t.moved:
			return fmt.Sprintf("slot %d of the old array holds an entry below the %d moved", i, t.moved)
		case live(s.e):
			left++
		}
	}
	if left != t.oldN || left == 0 {
		return fmt.Sprintf("the old array holds %d entries, counted %d", left, t.oldN)
	}
	for _, s := range t.arr.slots {
		if s.e == tombstone {
			return "a tombstone in the new array"
		}
	}
	return ""
}

// TestFieldTableResizesIncrementally: the write that fills the table to
// 3/4 does not rehash it — it moves drainStep slots, and the writes after
// it move the rest — while every field stays found (D129: at 786 k fields
// one HSET rehashed the whole table, 45–94 ms under the segment's lock).
func TestFieldTableResizesIncrementally(t *testing.T) {
	var ft fieldTable
	m := map[string]string{}
	put := func(i int) {
		f, v := fmt.Sprintf("f%d", i), fmt.Sprintf("v%d", i)
		ft.put([]byte(f), []byte(v))
		m[f] = v
	}
	i := 0
	for ; ft.slotCount() < 1<<14; i++ {
		put(i)
	}
	for ft.old != nil { // the resize to 16 384 slots drains
		put(i)
		i++
	}
	slots := ft.slotCount()
	for uint64(ft.n+1) <= uint64(slots)/4*3 {
		put(i)
		i++
	}
	put(i) // over 3/4: a resize starts
	i++
	if ft.slotCount() != 2*slots || ft.old == nil || ft.n-ft.oldN > drainStep+1 {
		t.Fatalf("after the write that filled the table: %d slots (had %d), %d of %d fields moved", ft.slotCount(), slots, ft.n-ft.oldN, ft.n)
	}
	checkFieldTable(t, &ft, m)
	writes := 0
	for ft.old != nil {
		if writes%2 == 0 {
			put(i)
			i++
		} else {
			f := fmt.Sprintf("f%d", writes) // deletes drain too
			ft.del(f)
			delete(m, f)
		}
		writes++
		if writes%251 == 0 {
			checkFieldTable(t, &ft, m)
		}
	}
	if writes > slots/drainStep+1 {
		t.Fatalf("%d writes drained %d old slots", writes, slots)
	}
	checkFieldTable(t, &ft, m)
}

// TestLargeFieldTableGrowsIntoItsSpare: a table of spareMinSlots slots
// asks for its next array at 5/8 full, on another goroutine, and the
// growth at 3/4 takes that array instead of allocating (and zeroing) it
// under the segment's lock; every field stays found.
func TestLargeFieldTableGrowsIntoItsSpare(t *testing.T) {
	var ft fieldTable
	i := 0
	put := func() {
		ft.put(fmt.Appendf(nil, "f%d", i), []byte("v"))
		i++
	}
	for ft.slotCount() < spareMinSlots || ft.old != nil {
		put()
		if ft.slotCount() < spareMinSlots && ft.spare.Load() != nil {
			t.Fatalf("a table of %d slots asked for a spare", ft.slotCount())
		}
	}
	for uint64(ft.n) <= uint64(spareMinSlots)/16*9 {
		if ft.spare.Load() != nil {
			t.Fatalf("a spare asked for at %d of %d slots", ft.n, spareMinSlots)
		}
		put()
	}
	if ft.spare.Load() == nil {
		t.Fatalf("no spare asked for at %d of %d slots", ft.n, spareMinSlots)
	}
	var spare *fieldArray
	deadline := time.Now().Add(30 * time.Second)
	for spare = ft.spare.Load(); spare == spareRequested; spare = ft.spare.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the spare was never allocated")
		}
		time.Sleep(time.Millisecond) // poll interval
	}
	if len(spare.slots) != 2*spareMinSlots {
		t.Fatalf("the spare has %d slots, want %d", len(spare.slots), 2*spareMinSlots)
	}
	for ft.slotCount() == spareMinSlots {
		put()
	}
	if ft.arr != spare || ft.spare.Load() != nil {
		t.Fatalf("the growth allocated its array (spare used: %v, left: %v)", ft.arr == spare, ft.spare.Load())
	}
	ft.settle()
	for j := range i {
		if _, ok := ft.get(fmt.Sprintf("f%d", j)); !ok {
			t.Fatalf("f%d lost in the growth", j)
		}
	}
}

// TestFieldTableSpareNotReadyInTime: a growth that comes before the spare
// allocates as before and takes the request back, so the spare allocated
// late is dropped rather than kept beside the table; a spare of another
// size is not used; a table waits for a spare under way up to 13/16 full.
func TestFieldTableSpareNotReadyInTime(t *testing.T) {
	var ft fieldTable
	ft.spare.Store(spareRequested)
	if got := ft.takeSpare(1 << 20); got != nil || ft.spare.Load() != nil {
		t.Fatalf("a spare still being allocated was taken: %v, left %v", got, ft.spare.Load())
	}
	late := &fieldArray{slots: make([]fieldSlot, 8), mask: 7}
	if ft.spare.CompareAndSwap(spareRequested, late) || ft.spare.Load() != nil {
		t.Fatal("a spare allocated after the growth was kept")
	}
	ft.spare.Store(late)
	if got := ft.takeSpare(16); got != nil || ft.spare.Load() != nil {
		t.Fatalf("a spare of 8 slots was taken for 16: %v", got)
	}

	// While a spare is being allocated, a table past 3/4 waits for it up
	// to 13/16 full, then grows without it (and takes the request back).
	var wait fieldTable
	i := 0
	for wait.slotCount() < 256 || wait.old != nil {
		wait.put(fmt.Appendf(nil, "f%d", i), nil)
		i++
	}
	for wait.n < 256/4*3 {
		wait.put(fmt.Appendf(nil, "f%d", i), nil)
		i++
	}
	wait.spare.Store(spareRequested)
	for wait.n < 256/16*13 {
		wait.put(fmt.Appendf(nil, "f%d", i), nil)
		i++
		if wait.slotCount() != 256 {
			t.Fatalf("grew at %d of 256 slots while its spare was being allocated", wait.n)
		}
	}
	wait.put(fmt.Appendf(nil, "f%d", i), nil)
	if wait.slotCount() != 512 || wait.spare.Load() != nil {
		t.Fatalf("past 13/16 without its spare: %d slots, spare %v", wait.slotCount(), wait.spare.Load())
	}
}

// TestFieldTableAgreesWithAMap runs random sets and deletes on a small key
// space (long probes, many backward shifts, growth and shrinking) against
// a Go map.
func TestFieldTableAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 20 {
		var ft fieldTable
		m := map[string]string{}
		space := 1 + rng.IntN(300)
		handed := map[string][]byte{} // values handed out earlier: never rewritten
		for op := range 3000 {
			f := fmt.Sprintf("f%d", rng.IntN(space))
			if rng.IntN(3) == 0 {
				old, ok := ft.del(f)
				want, had := m[f]
				if ok != had || ok && string(old) != want {
					t.Fatalf("round %d op %d: del %q = %q %v, model %q %v", round, op, f, old, ok, want, had)
				}
				delete(m, f)
			} else {
				v := fmt.Sprintf("v%d-%d", op, rng.IntN(1000))
				if rng.IntN(10) == 0 {
					v = "" // empty values are values
				}
				_, had := m[f]
				if isNew := ft.put([]byte(f), []byte(v)); isNew == had {
					t.Fatalf("round %d op %d: put %q new=%v, model had it %v", round, op, f, isNew, had)
				}
				m[f] = v
				got, _ := ft.get(f)
				handed[v] = got
			}
			if op%97 == 0 {
				checkFieldTable(t, &ft, m)
			}
		}
		checkFieldTable(t, &ft, m)
		for v, b := range handed {
			if !bytes.Equal(b, []byte(v)) {
				t.Fatalf("a value handed out changed: %q became %q", v, b)
			}
		}
	}
}

// TestFieldTableEmptyField: "" is a field like any other, and an emptied
// table keeps no slots.
func TestFieldTableEmptyField(t *testing.T) {
	var ft fieldTable
	ft.put(nil, nil)
	if v, ok := ft.get(""); !ok || v == nil || len(v) != 0 {
		t.Fatalf("get \"\" = %v %v", v, ok)
	}
	for i := range 100 {
		ft.put(fmt.Appendf(nil, "x%d", i), []byte("y"))
	}
	for i := range 100 {
		if _, ok := ft.del(fmt.Sprintf("x%d", i)); !ok {
			t.Fatalf("x%d lost", i)
		}
	}
	if _, ok := ft.get(""); !ok || ft.len() != 1 || len(ft.arr.slots) > 16 {
		t.Fatalf("after the deletes: len %d, %d slots", ft.len(), len(ft.arr.slots))
	}
	ft.del("")
	if ft.arr != nil || ft.len() != 0 {
		t.Fatal("an emptied table keeps its slots")
	}
}

// FuzzFieldTable: any program of sets and deletes agrees with a map.
func FuzzFieldTable(f *testing.F) {
	f.Add([]byte{1, 2, 3, 130, 2, 1})
	f.Fuzz(func(t *testing.T, prog []byte) {
		var ft fieldTable
		m := map[string]string{}
		for i, b := range prog {
			key := fmt.Sprintf("k%d", b&63)
			if b&128 != 0 {
				ft.del(key)
				delete(m, key)
			} else {
				v := fmt.Sprint(i)
				ft.put([]byte(key), []byte(v))
				m[key] = v
			}
		}
		checkFieldTable(t, &ft, m)
	})
}

// BenchmarkHashMemoryPerField is the heap a hash of 1 M fields of
// redis-benchmark's shape ("element:N", 32-byte values) holds per field.
func BenchmarkHashMemoryPerField(b *testing.B) {
	v := bytes.Repeat([]byte("v"), 32)
	heapPerItem(b, 1_000_000, "field", func(n int) any {
		h := newHash()
		for i := range n {
			h.set(fmt.Appendf(nil, "element:%d", i), v)
		}
		return h
	})
}

// BenchmarkHashSetGet is HSET then HGET of one field of a hash of 100 k
// fields (redis-benchmark's HSET key space), without the read-ahead.
func BenchmarkHashSetGet(b *testing.B) {
	const n = 100_000
	v := bytes.Repeat([]byte("v"), 32)
	h := newHash()
	fields := make([][]byte, n)
	for i := range fields {
		fields[i] = fmt.Appendf(nil, "element:%d", i)
		h.set(fields[i], v)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	for b.Loop() {
		f := fields[rng.IntN(n)]
		h.set(f, v)
		if _, ok := h.get(f); !ok {
			b.Fatal("lost")
		}
	}
}

// BenchmarkSetMemoryPerMember is the heap a set of 1 M members of
// redis-benchmark's shape ("element:N") holds per member.
func BenchmarkSetMemoryPerMember(b *testing.B) {
	heapPerItem(b, 1_000_000, "member", func(n int) any {
		s := newSet()
		for i := range n {
			s.addBytes(fmt.Appendf(nil, "element:%d", i))
		}
		return s
	})
}
