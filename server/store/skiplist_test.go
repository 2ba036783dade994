package store

import (
	"testing"
	"unsafe"
)

// checkSkiplist verifies every invariant a walk relies on: level 0 in
// (score, member) order with prev pointers back, every link's span the
// distance it skips, and the length.
func checkSkiplist(t *testing.T, sl *skiplist, step string) {
	t.Helper()
	pos := map[*slNode]int{sl.head: 0}
	var prev *slNode
	i := 0
	for n := sl.head.next(); n != nil; n = n.next() {
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
		for lv := range min(n.height(), sl.level) {
			l := n.level(lv)
			if l.next == nil {
				continue
			}
			if int(l.span) != pos[l.next]-pos[n] {
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

// A node's levels past lv0 are reached by arithmetic on its address
// (slNode.level): the variants must put them right after lv0, and every
// height must get a variant with room for all its levels. Under -race,
// checkptr also fails a level(i) that leaves the node's allocation.
func TestSkiplistNodeLayout(t *testing.T) {
	var tall slTall[[3]slLevel]
	if got, want := unsafe.Offsetof(tall.more), unsafe.Sizeof(slNode{}); got != want {
		t.Fatalf("levels 1… start at offset %d, the node ends at %d", got, want)
	}
	var n slNode
	if end := unsafe.Offsetof(n.lv0) + unsafe.Sizeof(slLevel{}); end != unsafe.Sizeof(slNode{}) {
		t.Fatalf("lv0 ends at %d, the node at %d: lv0 must be the last field", end, unsafe.Sizeof(slNode{}))
	}
	if unsafe.Sizeof(slNode{}) != 48 {
		t.Fatalf("a node of one level is %d bytes, want 48", unsafe.Sizeof(slNode{}))
	}
	for h := 1; h <= slMaxLevel; h++ {
		n := newSlNode(h, float64(h), "m")
		if n.height() != h {
			t.Fatalf("height %d: node says %d", h, n.height())
		}
		for i := range h {
			n.level(i).span = int32(100*h + i)
		}
		for i := range h {
			if n.level(i).span != int32(100*h+i) {
				t.Fatalf("height %d: level %d overlaps another", h, i)
			}
		}
		if n.height() != h || n.score != float64(h) || n.member != "m" {
			t.Fatalf("height %d: writing the levels overwrote the node", h)
		}
	}
}
