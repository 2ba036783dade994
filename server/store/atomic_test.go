package store

import (
	"strconv"
	"sync"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

// A block under Atomically sees no other write of its segment in between:
// read-modify-write of two keys of one hash tag keeps their invariant.
func TestAtomicallyIsolatesTheBlock(t *testing.T) {
	s, _ := newTestStore(t)
	a, b := "{acct}:a", "{acct}:b"
	s.Put(a, []byte("100"), nil)
	s.Put(b, []byte("0"), nil)
	g := s.SegmentFor(a)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				g.Atomically(func(x *Atomic) {
					va, _ := strconv.Atoi(string(x.Get(a).Value))
					vb, _ := strconv.Atoi(string(x.Get(b).Value))
					x.Put(a, []byte(strconv.Itoa(va-1)), nil) // a transfer of 1 from a to b
					x.Put(b, []byte(strconv.Itoa(vb+1)), nil)
				})
			}
		}()
	}
	wg.Wait()
	va, _ := strconv.Atoi(string(s.Get(a).Value))
	vb, _ := strconv.Atoi(string(s.Get(b).Value))
	total := va + vb
	if total != 100 {
		t.Fatalf("total %d, want 100: a block was interleaved", total)
	}
	g.Atomically(func(x *Atomic) {
		if r := x.Exec(kv.NewCmd(kv.CmdIncrBy, "{acct}:n", "2")); r.Int != 2 {
			t.Errorf("exec in a block: %+v", r)
		}
		if v, _ := x.Version(a); v == 0 {
			t.Error("version of a live key")
		}
		if r := x.Get("elsewhere-key-not-in-segment-zz"); x.Segment() != s.SegmentFor("elsewhere-key-not-in-segment-zz") && r.Status != kv.StatusBadRequest {
			t.Errorf("a key of another segment: %v", r.Status)
		}
	})
}

// AtomicallyMany holds every named segment: a writer of two keys of
// different segments is never seen half-done by a reader of both, and
// callers naming the segments in any order do not deadlock (the locks are
// taken in ascending order).
func TestAtomicallyManyIsAtomicAcrossSegments(t *testing.T) {
	s, _ := newTestStore(t)
	a, b := "alpha", "beta"
	sa, sb := s.SegmentFor(a).ID(), s.SegmentFor(b).ID()
	if sa == sb {
		t.Fatal("pick keys of two segments")
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 2000 {
			v := []byte(strconv.Itoa(i))
			s.AtomicallyMany([]uint16{sb, sa}, func(x *Atomic) { // descending on purpose
				x.Put(a, v, nil)
				x.Put(b, v, nil)
			})
		}
	}()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
		}
		s.AtomicallyMany([]uint16{sa, sb}, func(x *Atomic) {
			if va, vb := x.Get(a), x.Get(b); string(va.Value) != string(vb.Value) {
				t.Errorf("half-applied write seen: %q vs %q", va.Value, vb.Value)
			}
		})
	}
	s.AtomicallyMany([]uint16{sa}, func(x *Atomic) {
		if r := x.Get(b); r.Status != kv.StatusBadRequest {
			t.Errorf("a key of a segment not held: %v", r.Status)
		}
	})
}

// Prefetch only reads: keys of segments the view does not hold, absent
// keys, empty segments and more keys than one chunk leave every value and
// version as it was, and what the view reads after it is what it wrote.
func TestPrefetchChangesNothing(t *testing.T) {
	s, _ := newTestStore(t)
	a, b := "alpha", "beta"
	sa := s.SegmentFor(a).ID()
	var args [][]byte
	for i := range 3 * WarmBatch {
		k := "{alpha}" + strconv.Itoa(i)
		if i%3 == 0 {
			s.Put(k, []byte(k), nil)
		}
		args = append(args, []byte(k), []byte("value")) // MSET's shape: step 2
	}
	args = append(args, []byte(b), []byte("v"), []byte(""), []byte("v"))
	s.AtomicallyMany([]uint16{sa}, func(x *Atomic) {
		x.Prefetch(args, 2)
		x.Prefetch(args[1:], 2) // values as keys: absent, or of other segments
		x.Prefetch(nil, 1)
		for i := 0; i < len(args)-4; i += 2 {
			k := string(args[i])
			r := x.Get(k)
			if n, _ := strconv.Atoi(k[len("{alpha}"):]); n%3 == 0 {
				if r.Status != kv.StatusSuccess || string(r.Value) != k || r.Version != 1 {
					t.Fatalf("%s after Prefetch: %v %q v%d", k, r.Status, r.Value, r.Version)
				}
			} else if r.Status != kv.StatusNotFound {
				t.Fatalf("%s after Prefetch: %v, want NotFound", k, r.Status)
			}
		}
	})
	empty, _ := newTestStore(t)
	empty.AtomicallyMany([]uint16{sa}, func(x *Atomic) { x.Prefetch(args, 2) })
	if n := empty.DBSize(); n != 0 {
		t.Fatalf("an empty store holds %d keys after Prefetch", n)
	}
}
