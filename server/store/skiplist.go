package store

import (
	"math/rand/v2"
	"unsafe"
)

// skiplist orders (score, member) pairs, with per-level spans so rank
// queries (ZRANK, ZRANGE by index) are O(log n). It is the index of a sorted
// set; the member → score map lives beside it.
type skiplist struct {
	head   *slNode
	tail   *slNode
	length int
	level  int
	rng    *rand.Rand
}

const slMaxLevel = 32

// slLevel is one level of a node: the next node on it and how many
// elements that link skips. The span fits 32 bits: a member counts at
// least 12 bytes of item size and the item cap is below 2³² (MaxItemBytes ≤
// MaxRecordBytes), so a sorted set stays far below 2³¹ members.
type slLevel struct {
	next *slNode
	span int32
	// height, in a node's level 0 only, is the node's number of levels
	// (room the alignment leaves there anyway).
	height int32
}

// slNode is a skiplist node. Its levels 1… follow lv0 in the same
// allocation (slTall), reached by level(i) rather than through a slice: a
// walk is cache misses, and a node of one level is then 48 bytes (a size
// class of its own) where a slice header and inline levels made it 80, and
// a step reads the level without first loading a slice's pointer.
type slNode struct {
	score  float64
	member string
	prev   *slNode
	lv0    slLevel // must stay the last field: level(i) indexes past it
}

// slTall is a node of more than one level: more holds levels 1… right after
// the node's lv0 (TestSkiplistNodeLayout checks that they are contiguous).
type slTall[A any] struct {
	slNode
	more A
}

// level returns the node's level i (0 ≤ i < its height).
func (n *slNode) level(i int) *slLevel {
	return (*slLevel)(unsafe.Add(unsafe.Pointer(&n.lv0), uintptr(i)*unsafe.Sizeof(slLevel{})))
}

// next is the following node in order (level 0), or nil.
func (n *slNode) next() *slNode { return n.lv0.next }

// height is the node's number of levels.
func (n *slNode) height() int { return int(n.lv0.height) }

// clearLevels unlinks the node's levels (before it is linked elsewhere).
func (n *slNode) clearLevels() {
	for i := range n.height() {
		l := n.level(i)
		l.next, l.span = nil, 0
	}
}

func tallNode[A any]() *slNode { return &new(slTall[A]).slNode }

// newSlNode allocates a node of lvl levels, in the smallest variant that
// holds them; with p = 1/4, 99.6 % of nodes are at most 4 levels high.
func newSlNode(lvl int, score float64, member string) *slNode {
	var n *slNode
	switch {
	case lvl == 1:
		n = new(slNode)
	case lvl == 2:
		n = tallNode[[1]slLevel]()
	case lvl == 3:
		n = tallNode[[2]slLevel]()
	case lvl == 4:
		n = tallNode[[3]slLevel]()
	case lvl <= 6:
		n = tallNode[[5]slLevel]()
	case lvl <= 8:
		n = tallNode[[7]slLevel]()
	case lvl <= 12:
		n = tallNode[[11]slLevel]()
	case lvl <= 16:
		n = tallNode[[15]slLevel]()
	default:
		n = tallNode[[slMaxLevel - 1]slLevel]()
	}
	n.lv0.height = int32(lvl)
	n.member, n.score = member, score
	return n
}

func newSkiplist() *skiplist {
	return &skiplist{head: newSlNode(slMaxLevel, 0, ""), level: 1,
		rng: rand.New(rand.NewPCG(0x5eed, 0x2a))}
}

// less orders by score, then member bytes (Redis's order).
func less(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

func (sl *skiplist) randomLevel() int {
	lvl := 1
	for lvl < slMaxLevel && sl.rng.Uint32()&3 == 0 { // p = 1/4
		lvl++
	}
	return lvl
}

func (sl *skiplist) insert(score float64, member string) *slNode {
	n := newSlNode(sl.randomLevel(), score, member)
	sl.insertNode(n)
	return n
}

// insertNode links n (its levels zeroed) at its place, on n.height()
// levels.
func (sl *skiplist) insertNode(n *slNode) {
	score, member := n.score, n.member
	var update [slMaxLevel]*slNode
	var rank [slMaxLevel]int
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		if i < sl.level-1 {
			rank[i] = rank[i+1]
		}
		for x.level(i).next != nil && less(x.level(i).next.score, x.level(i).next.member, score, member) {
			rank[i] += int(x.level(i).span)
			x = x.level(i).next
		}
		update[i] = x
	}
	lvl := n.height()
	if lvl > sl.level {
		for i := sl.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = sl.head
			update[i].level(i).span = int32(sl.length)
		}
		sl.level = lvl
	}
	for i := 0; i < lvl; i++ {
		n.level(i).next = update[i].level(i).next
		update[i].level(i).next = n
		n.level(i).span = update[i].level(i).span - int32(rank[0]-rank[i])
		update[i].level(i).span = int32(rank[0] - rank[i] + 1)
	}
	for i := lvl; i < sl.level; i++ {
		update[i].level(i).span++
	}
	if update[0] != sl.head {
		n.prev = update[0]
	}
	if n.next() != nil {
		n.next().prev = n
	} else {
		sl.tail = n
	}
	sl.length++
}

func (sl *skiplist) remove(score float64, member string) bool {
	x, update := sl.find(score, member)
	if x == nil {
		return false
	}
	sl.unlink(x, &update)
	return true
}

// find returns the node of (score, member), or nil, and the rightmost node
// before it on every level (what unlink needs).
func (sl *skiplist) find(score float64, member string) (*slNode, [slMaxLevel]*slNode) {
	var update [slMaxLevel]*slNode
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && less(x.level(i).next.score, x.level(i).next.member, score, member) {
			x = x.level(i).next
		}
		update[i] = x
	}
	x = x.next()
	if x == nil || x.score != score || x.member != member {
		return nil, update
	}
	return x, update
}

// unlinkFirst takes the first node out of the non-empty list: the path to
// it is the head on every level.
func (sl *skiplist) unlinkFirst() {
	var update [slMaxLevel]*slNode
	for i := range sl.level {
		update[i] = sl.head
	}
	sl.unlink(sl.head.next(), &update)
}

// unlink takes x out of the list; update is find's path to it.
func (sl *skiplist) unlink(x *slNode, update *[slMaxLevel]*slNode) {
	for i := 0; i < sl.level; i++ {
		if update[i].level(i).next == x {
			update[i].level(i).span += x.level(i).span - 1
			update[i].level(i).next = x.level(i).next
		} else {
			update[i].level(i).span--
		}
	}
	if x.next() != nil {
		x.next().prev = x.prev
	} else {
		sl.tail = x.prev
	}
	for sl.level > 1 && sl.head.level(sl.level-1).next == nil {
		sl.level--
	}
	sl.length--
}

// rescore moves node x of the list to score new. A node whose new score
// keeps its place between its neighbours is changed in place, without a
// walk (Redis's zslUpdateScore walks first); otherwise it is unlinked and
// the same node relinked.
func (sl *skiplist) rescore(x *slNode, new float64) {
	next := x.next()
	if (x.prev == nil || less(x.prev.score, x.prev.member, new, x.member)) &&
		(next == nil || less(new, x.member, next.score, next.member)) {
		x.score = new
		return
	}
	_, update := sl.find(x.score, x.member)
	sl.unlink(x, &update)
	x.clearLevels()
	x.prev, x.score = nil, new
	sl.insertNode(x)
}

// rank returns the 0-based rank of (score, member), or -1.
func (sl *skiplist) rank(score float64, member string) int {
	r := 0
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && !less(score, member, x.level(i).next.score, x.level(i).next.member) {
			r += int(x.level(i).span)
			x = x.level(i).next
		}
		if x != sl.head && x.score == score && x.member == member {
			return r - 1
		}
	}
	return -1
}

// byRank returns the node at 0-based rank r (0 ≤ r < length).
func (sl *skiplist) byRank(r int) *slNode {
	traversed := 0
	x := sl.head
	target := r + 1
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && traversed+int(x.level(i).span) <= target {
			traversed += int(x.level(i).span)
			x = x.level(i).next
		}
		if traversed == target {
			return x
		}
	}
	return nil
}

// firstAtLeast returns the first node with score ≥ min (> min when
// exclusive), or nil.
func (sl *skiplist) firstAtLeast(min float64, exclusive bool) *slNode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && (x.level(i).next.score < min || exclusive && x.level(i).next.score == min) {
			x = x.level(i).next
		}
	}
	return x.next()
}

// countBefore is how many nodes score below v (at most v when orEqual):
// the rank of the first node past that bound, summed from the spans.
func (sl *skiplist) countBefore(v float64, orEqual bool) int {
	r, x := 0, sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && (x.level(i).next.score < v || orEqual && x.level(i).next.score == v) {
			r += int(x.level(i).span)
			x = x.level(i).next
		}
	}
	return r
}

// lastAtMost returns the last node with score ≤ max (< max when exclusive).
func (sl *skiplist) lastAtMost(max float64, exclusive bool) *slNode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.level(i).next != nil && (x.level(i).next.score < max || !exclusive && x.level(i).next.score == max) {
			x = x.level(i).next
		}
	}
	if x == sl.head {
		return nil
	}
	return x
}
