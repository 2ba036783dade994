package store

import "math/rand/v2"

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

type slLevel struct {
	next *slNode
	span int // elements skipped by following next (1 for adjacent nodes)
}

type slNode struct {
	member string
	score  float64
	prev   *slNode
	levels []slLevel
}

// Nodes of the usual heights carry their levels in the same allocation (the
// levels slice points into the node), so that a step of a search, which
// reads a node's level and then the next node's score, touches one object
// instead of two: the walk is cache misses, and this halves them (ZADD on a
// 100 k-member set, BenchmarkExecZAdd). With p = 1/4, 99.6 % of nodes are
// at most 4 levels high.
type (
	slNode1 struct {
		slNode
		inline [1]slLevel
	}
	slNode2 struct {
		slNode
		inline [2]slLevel
	}
	slNode3 struct {
		slNode
		inline [3]slLevel
	}
	slNode4 struct {
		slNode
		inline [4]slLevel
	}
)

func newSlNode(lvl int, score float64, member string) *slNode {
	var n *slNode
	switch lvl {
	case 1:
		c := &slNode1{}
		c.levels, n = c.inline[:], &c.slNode
	case 2:
		c := &slNode2{}
		c.levels, n = c.inline[:], &c.slNode
	case 3:
		c := &slNode3{}
		c.levels, n = c.inline[:], &c.slNode
	case 4:
		c := &slNode4{}
		c.levels, n = c.inline[:], &c.slNode
	default:
		n = &slNode{levels: make([]slLevel, lvl)}
	}
	n.member, n.score = member, score
	return n
}

func newSkiplist() *skiplist {
	return &skiplist{head: &slNode{levels: make([]slLevel, slMaxLevel)}, level: 1,
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

// insertNode links n (its levels zeroed) at its place; its height is
// len(n.levels).
func (sl *skiplist) insertNode(n *slNode) {
	score, member := n.score, n.member
	var update [slMaxLevel]*slNode
	var rank [slMaxLevel]int
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		if i < sl.level-1 {
			rank[i] = rank[i+1]
		}
		for x.levels[i].next != nil && less(x.levels[i].next.score, x.levels[i].next.member, score, member) {
			rank[i] += x.levels[i].span
			x = x.levels[i].next
		}
		update[i] = x
	}
	lvl := len(n.levels)
	if lvl > sl.level {
		for i := sl.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = sl.head
			update[i].levels[i].span = sl.length
		}
		sl.level = lvl
	}
	for i := 0; i < lvl; i++ {
		n.levels[i].next = update[i].levels[i].next
		update[i].levels[i].next = n
		n.levels[i].span = update[i].levels[i].span - (rank[0] - rank[i])
		update[i].levels[i].span = rank[0] - rank[i] + 1
	}
	for i := lvl; i < sl.level; i++ {
		update[i].levels[i].span++
	}
	if update[0] != sl.head {
		n.prev = update[0]
	}
	if n.levels[0].next != nil {
		n.levels[0].next.prev = n
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
		for x.levels[i].next != nil && less(x.levels[i].next.score, x.levels[i].next.member, score, member) {
			x = x.levels[i].next
		}
		update[i] = x
	}
	x = x.levels[0].next
	if x == nil || x.score != score || x.member != member {
		return nil, update
	}
	return x, update
}

// unlink takes x out of the list; update is find's path to it.
func (sl *skiplist) unlink(x *slNode, update *[slMaxLevel]*slNode) {
	for i := 0; i < sl.level; i++ {
		if update[i].levels[i].next == x {
			update[i].levels[i].span += x.levels[i].span - 1
			update[i].levels[i].next = x.levels[i].next
		} else {
			update[i].levels[i].span--
		}
	}
	if x.levels[0].next != nil {
		x.levels[0].next.prev = x.prev
	} else {
		sl.tail = x.prev
	}
	for sl.level > 1 && sl.head.levels[sl.level-1].next == nil {
		sl.level--
	}
	sl.length--
}

// rescore moves node x of the list to score new. A node whose new score
// keeps its place between its neighbours is changed in place, without a
// walk (Redis's zslUpdateScore walks first); otherwise it is unlinked and
// the same node relinked.
func (sl *skiplist) rescore(x *slNode, new float64) {
	next := x.levels[0].next
	if (x.prev == nil || less(x.prev.score, x.prev.member, new, x.member)) &&
		(next == nil || less(new, x.member, next.score, next.member)) {
		x.score = new
		return
	}
	_, update := sl.find(x.score, x.member)
	sl.unlink(x, &update)
	clear(x.levels)
	x.prev, x.score = nil, new
	sl.insertNode(x)
}

// rank returns the 0-based rank of (score, member), or -1.
func (sl *skiplist) rank(score float64, member string) int {
	r := 0
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.levels[i].next != nil && !less(score, member, x.levels[i].next.score, x.levels[i].next.member) {
			r += x.levels[i].span
			x = x.levels[i].next
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
		for x.levels[i].next != nil && traversed+x.levels[i].span <= target {
			traversed += x.levels[i].span
			x = x.levels[i].next
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
		for x.levels[i].next != nil && (x.levels[i].next.score < min || exclusive && x.levels[i].next.score == min) {
			x = x.levels[i].next
		}
	}
	return x.levels[0].next
}

// countBefore is how many nodes score below v (at most v when orEqual):
// the rank of the first node past that bound, summed from the spans.
func (sl *skiplist) countBefore(v float64, orEqual bool) int {
	r, x := 0, sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.levels[i].next != nil && (x.levels[i].next.score < v || orEqual && x.levels[i].next.score == v) {
			r += x.levels[i].span
			x = x.levels[i].next
		}
	}
	return r
}

// lastAtMost returns the last node with score ≤ max (< max when exclusive).
func (sl *skiplist) lastAtMost(max float64, exclusive bool) *slNode {
	x := sl.head
	for i := sl.level - 1; i >= 0; i-- {
		for x.levels[i].next != nil && (x.levels[i].next.score < max || !exclusive && x.levels[i].next.score == max) {
			x = x.levels[i].next
		}
	}
	if x == sl.head {
		return nil
	}
	return x
}
