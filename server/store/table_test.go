package store

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestRecordTableMatchesAMap drives the table and a Go map with the same
// random inserts, replacements and deletes (a small key space, so runs of
// colliding probes form and deletes shift them) and compares every lookup,
// the size and a full walk after each step. The failure it prevents: a
// delete's backward shift leaving a record behind an empty slot, where no
// lookup finds it again — a key that reads as absent after an acknowledged
// write.
func TestRecordTableMatchesAMap(t *testing.T) {
	for _, keys := range []int{4, 60, 3000} {
		t.Run(strconv.Itoa(keys), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(keys), 7))
			tab := newRecordTable(0)
			want := map[string]*Record{}
			for step := range 40_000 {
				k := "k" + strconv.Itoa(rng.IntN(keys))
				switch op := rng.IntN(10); {
				case op < 6:
					r := recordOf(k, nil, Record{}.WithVersion(uint64(step)).WithExpiry(int64(rng.IntN(2))))
					if rng.IntN(8) == 0 {
						r.SetDeleted(true) // a tombstone: never counted as expiring
					}
					if old := tab.swap(r); old != want[k] {
						t.Fatalf("step %d: swap(%s) replaced %p, want %p", step, k, old, want[k])
					}
					want[k] = r
				default:
					if old := tab.delete(k); old != want[k] {
						t.Fatalf("step %d: delete(%s) = %p, want %p", step, k, old, want[k])
					}
					delete(want, k)
				}
				if tab.len() != len(want) {
					t.Fatalf("step %d: len %d, want %d", step, tab.len(), len(want))
				}
				if step%97 == 0 || keys < 100 {
					checkTable(t, &tab, want, keys)
				}
			}
			// Drain: the table shrinks and still finds what is left.
			for k := range want {
				tab.delete(k)
				delete(want, k)
				if len(want)%50 == 0 {
					checkTable(t, &tab, want, keys)
				}
			}
			if len(tab.recs) != tableMinSlots || tab.expiring != 0 {
				t.Fatalf("an empty table kept %d slots", len(tab.recs))
			}
		})
	}
}

func checkTable(t *testing.T, tab *recordTable, want map[string]*Record, keys int) {
	t.Helper()
	for i := range keys {
		k := "k" + strconv.Itoa(i)
		if got := tab.get(k); got != want[k] {
			t.Fatalf("get(%s) = %p, want %p", k, got, want[k])
		}
	}
	seen := 0
	for r := range tab.all() {
		if want[r.Key()] != r {
			t.Fatalf("walk yielded %s's stale or unknown record", r.Key())
		}
		seen++
	}
	if seen != len(want) {
		t.Fatalf("walk yielded %d records, want %d", seen, len(want))
	}
	// The records with a TTL are those whose stored hash says so
	// (expiresBit, D89): all of them, and only them, live ones.
	expiring := 0
	for _, r := range want {
		if r.ExpiresAt() != 0 && !r.Deleted() {
			expiring++
		}
	}
	if tab.expiring != expiring {
		t.Fatalf("%d records counted as expiring, want %d", tab.expiring, expiring)
	}
	seen = 0
	for r := range tab.expiringFrom(uint64(keys)*7919, len(tab.recs)) {
		if want[r.Key()] != r || r.ExpiresAt() == 0 || r.Deleted() {
			t.Fatalf("expiringFrom yielded %s, which does not expire", r.Key())
		}
		seen++
	}
	if seen != expiring {
		t.Fatalf("expiringFrom yielded %d records, want %d", seen, expiring)
	}
	if tab.n > 0 && tab.n*tableGrowDen > len(tab.recs)*tableGrowNum {
		t.Fatalf("%d records in %d slots: over the grow threshold", tab.n, len(tab.recs))
	}
}

// TestRecordTableFromVisitsEverySlotOnce: the eviction sampler's walk from
// a random slot wraps around and yields each record exactly once.
func TestRecordTableFromVisitsEverySlotOnce(t *testing.T) {
	tab := newRecordTable(0)
	for i := range 100 {
		tab.set(recordOf(strconv.Itoa(i), nil, Record{}))
	}
	for _, start := range []uint64{0, 1, 63, 127, 128, 1 << 40} {
		seen := map[string]int{}
		for r := range tab.from(start) {
			seen[r.Key()]++
		}
		if len(seen) != 100 {
			t.Fatalf("start %d: %d distinct records, want 100", start, len(seen))
		}
		for k, n := range seen {
			if n != 1 {
				t.Fatalf("start %d: %s yielded %d times", start, k, n)
			}
		}
	}
}

// TestRecordTableIteratorRefusesStructuralChange: replacing a record under
// its key while walking is allowed (a flush tombstones every key in place);
// an insert or a delete would make the walk skip or repeat records, so it
// panics instead of answering wrongly.
func TestRecordTableIteratorRefusesStructuralChange(t *testing.T) {
	tab := newRecordTable(0)
	for i := range 10 {
		tab.set(recordOf(strconv.Itoa(i), nil, Record{}))
	}
	n := 0
	for r := range tab.all() {
		tab.set(recordOf(r.Key(), nil, Record{}.AsTombstone()))
		n++
	}
	if n != 10 {
		t.Fatalf("walk with in-place replacements yielded %d records, want 10", n)
	}
	for r := range tab.all() {
		if !r.Deleted() {
			t.Fatalf("%s kept its old record", r.Key())
		}
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a delete during a walk did not panic")
		}
	}()
	for r := range tab.all() {
		tab.delete(r.Key())
	}
}

func BenchmarkRecordTableGet(b *testing.B) {
	tab := newRecordTable(0)
	keys := make([]string, 4096)
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i*7919)
		tab.set(recordOf(keys[i], nil, Record{}))
	}
	i := 0
	for b.Loop() {
		if tab.get(keys[i&4095]) == nil {
			b.Fatal("missing")
		}
		i++
	}
}

// FuzzRecordTable runs the table and a Go map through the same byte-coded
// inserts and deletes over a 64-key space and compares them after each.
func FuzzRecordTable(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0x80, 0x81, 4, 0x82})
	f.Add([]byte{5, 5, 5, 0x85, 0x85, 6, 7, 8, 9, 0x86, 0x87})
	f.Fuzz(func(t *testing.T, ops []byte) {
		tab := newRecordTable(0)
		want := map[string]*Record{}
		for _, op := range ops {
			k := "k" + strconv.Itoa(int(op&63))
			if op&0x80 == 0 {
				r := recordOf(k, nil, Record{}.WithExpiry(int64(op>>6&1)))
				if old := tab.swap(r); old != want[k] {
					t.Fatalf("swap(%s) replaced %p, want %p", k, old, want[k])
				}
				want[k] = r
			} else {
				if old := tab.delete(k); old != want[k] {
					t.Fatalf("delete(%s) = %p, want %p", k, old, want[k])
				}
				delete(want, k)
			}
			checkTable(t, &tab, want, 64)
		}
	})
}

// TestPageFitFillsPagesAndKeepsRoom: past 32 KiB a table's records array
// takes whole pages (D98), and the size it gets still holds its records
// under the grow threshold.
func TestPageFitFillsPagesAndKeepsRoom(t *testing.T) {
	for _, c := range []struct {
		name    string
		size, n int
		want    int
	}{
		{"a small table keeps its size: its array is in a size class", 3444, 2755, 3444},
		{"the 4 000-key segment's table: 5 pages, not 5.04 on 6", 5166, 2756, 5120},
		{"rounded up when nearer", 5700, 3800, 6144},
		{"a shrink or a fresh table sized for n gets room for n+1", 4200, 4095, 5120},
	} {
		if got := pageFit(c.size, c.n); got != c.want {
			t.Errorf("%s: pageFit(%d, %d) = %d, want %d", c.name, c.size, c.n, got, c.want)
		}
	}
	for size := 4097; size < 200_000; size += 997 {
		for _, n := range []int{0, size * 4 / 5, size*4/5 - 1} {
			got := pageFit(size, n)
			if got%pageSlots != 0 || (n+1)*tableGrowDen > got*tableGrowNum {
				t.Fatalf("pageFit(%d, %d) = %d: not whole pages, or no room for %d records", size, n, got, n+1)
			}
		}
	}
}
