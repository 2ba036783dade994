package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// checkSkiplist verifies every invariant a walk relies on: level 0 in
// (score, member) order with prev pointers back, every link's span the
// distance it skips, and the length.
func checkSkiplist(t *testing.T, sl *skiplist, step string) {
	t.Helper()
	pos := map[*slNode]int{sl.head: 0}
	var prev *slNode
	i := 0
	for n := sl.head.levels[0].next; n != nil; n = n.levels[0].next {
		i++
		pos[n] = i
		if n.prev != prev {
			t.Fatalf("%s: node %q has the wrong prev", step, n.member)
		}
		if prev != nil && !less(prev.score, prev.member, n.score, n.member) {
			t.Fatalf("%s: %v/%q before %v/%q", step, prev.score, prev.member, n.score, n.member)
		}
		prev = n
	}
	if i != sl.length || sl.tail != prev {
		t.Fatalf("%s: length %d tail %p, walked %d last %p", step, sl.length, sl.tail, i, prev)
	}
	for n := range pos {
		for lv := range min(len(n.levels), sl.level) {
			l := n.levels[lv]
			if l.next == nil {
				continue
			}
			if l.span != pos[l.next]-pos[n] {
				t.Fatalf("%s: level %d span %d, distance %d", step, lv, l.span, pos[l.next]-pos[n])
			}
		}
	}
}

// TestSkiplistKeepsItsInvariants drives a sorted set through inserts,
// removals and score changes (in place and moving, with ties on scores,
// which order by member) against a sorted model: ranks, counts and bounds
// must follow every change.
func TestSkiplistKeepsItsInvariants(t *testing.T) {
	z := newZSet()
	model := map[string]float64{}
	rng := rand.New(rand.NewPCG(7, 9))
	for step := range 20000 {
		member := fmt.Sprintf("m%03d", rng.IntN(300))
		score := float64(rng.IntN(40)) // ties on purpose
		if rng.IntN(4) == 0 && model[member] != 0 {
			score = model[member] + 0.5 // a small move: often in place
		}
		switch rng.IntN(5) {
		case 0:
			z.rem(member)
			delete(model, member)
		default:
			z.set(member, score)
			model[member] = score
		}
		if step%97 == 0 {
			checkSkiplist(t, z.sl, fmt.Sprint("step ", step))
		}
	}
	checkSkiplist(t, z.sl, "end")
	type entry struct {
		s float64
		m string
	}
	var want []entry
	for m, s := range model {
		want = append(want, entry{s, m})
	}
	slices.SortFunc(want, func(a, b entry) int {
		if less(a.s, a.m, b.s, b.m) {
			return -1
		}
		return 1
	})
	for r, e := range want {
		if n := z.sl.byRank(r); n == nil || n.member != e.m || n.score != e.s {
			t.Fatalf("rank %d: %+v, want %v/%q", r, n, e.s, e.m)
		}
		if got := z.sl.rank(e.s, e.m); got != r {
			t.Fatalf("rank of %q: %d, want %d", e.m, got, r)
		}
	}
	for _, v := range []float64{-1, 0, 10, 10.5, 39, 100} {
		below, upTo := 0, 0
		for _, e := range want {
			if e.s < v {
				below++
			}
			if e.s <= v {
				upTo++
			}
		}
		if got := z.sl.countBefore(v, false); got != below {
			t.Errorf("countBefore(%v): %d, want %d", v, got, below)
		}
		if got := z.sl.countBefore(v, true); got != upTo {
			t.Errorf("countBefore(%v, or equal): %d, want %d", v, got, upTo)
		}
		if n := z.sl.firstAtLeast(v, false); below < len(want) && (n == nil || n.member != want[below].m) ||
			below == len(want) && n != nil {
			t.Errorf("firstAtLeast(%v): %+v", v, n)
		}
		if n := z.sl.lastAtMost(v, false); upTo > 0 && (n == nil || n.member != want[upTo-1].m) || upTo == 0 && n != nil {
			t.Errorf("lastAtMost(%v): %+v", v, n)
		}
	}
}
