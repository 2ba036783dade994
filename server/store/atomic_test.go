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
