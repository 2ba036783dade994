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

func (sl *skiplist) insert(score float64, member string) {
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
	lvl := sl.randomLevel()
	if lvl > sl.level {
		for i := sl.level; i < lvl; i++ {
			rank[i] = 0
			update[i] = sl.head
			update[i].levels[i].span = sl.length
		}
		sl.level = lvl
	}
	n := &slNode{member: member, score: score, levels: make([]slLevel, lvl)}
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
		return false
	}
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
	return true
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
