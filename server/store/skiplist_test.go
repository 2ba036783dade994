package store

import "testing"

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

// checkScoreBounds checks the score walks (ZCOUNT, ZRANGEBYSCORE's ends)
// against the set in order: scores and members of every element, sorted.
func checkScoreBounds(t *testing.T, sl *skiplist, scores []float64, members []string) {
	t.Helper()
	for _, v := range []float64{-1, 0, 10, 10.25, 39, 100} {
		below, upTo := 0, 0
		for _, s := range scores {
			if s < v {
				below++
			}
			if s <= v {
				upTo++
			}
		}
		if got := sl.countBefore(v, false); got != below {
			t.Fatalf("countBefore(%v): %d, want %d", v, got, below)
		}
		if got := sl.countBefore(v, true); got != upTo {
			t.Fatalf("countBefore(%v, or equal): %d, want %d", v, got, upTo)
		}
		if n := sl.firstAtLeast(v, false); below < len(scores) && (n == nil || n.member != members[below]) ||
			below == len(scores) && n != nil {
			t.Fatalf("firstAtLeast(%v): %+v", v, n)
		}
		if n := sl.lastAtMost(v, false); upTo > 0 && (n == nil || n.member != members[upTo-1]) || upTo == 0 && n != nil {
			t.Fatalf("lastAtMost(%v): %+v", v, n)
		}
	}
}
