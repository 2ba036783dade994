package store

import (
	"iter"
	"sort"
)

// idSeq is a sequence of values ordered by id: stream entries and pending
// lists. Ids mostly arrive in increasing order, so adding is an append;
// removal leaves a dead slot that keeps its id (binary search still works),
// and tidy drops leading dead slots and compacts once the dead outnumber the
// live, so iteration stays proportional to the live items and the cost is
// amortised O(1) per removal. Indexes are invalidated only by put and tidy.
//
// The items live in chunks of idChunk (D131): one growing slice while the
// sequence is short, then fixed chunks, so an append never copies more
// than a chunk — a flat slice doubled by copying every item in the one
// XADD that outgrew it (the worst append of a million took 25–306 ms,
// under the segment's lock). Item i is at position off+i of the chunks,
// where every chunk but the last is full and off counts the dropped slots
// of the first.
type idSeq[V any] struct {
	chunks [][]idItem[V]
	off    int // slots of chunks[0] before item 0
	n      int // items, dead included
	live   int
}

type idItem[V any] struct {
	id   streamID
	val  V
	dead bool
}

const (
	idChunkShift = 8
	idChunk      = 1 << idChunkShift // items per chunk: 12 KiB of stream entries
	idChunkMask  = idChunk - 1
)

// len is the number of items, dead included.
func (q *idSeq[V]) len() int { return q.n }

// at returns item i (0 <= i < len()).
func (q *idSeq[V]) at(i int) *idItem[V] {
	p := q.off + i
	return &q.chunks[p>>idChunkShift][p&idChunkMask]
}

// all yields every item in order, dead included (the sequence must not
// change meanwhile, except by killAt).
func (q *idSeq[V]) all() iter.Seq[*idItem[V]] {
	return func(yield func(*idItem[V]) bool) {
		for c, ch := range q.chunks {
			lo := 0
			if c == 0 {
				lo = q.off
			}
			for j := lo; j < len(ch); j++ {
				if !yield(&ch[j]) {
					return
				}
			}
		}
	}
}

// search returns the first index whose id is >= id.
func (q *idSeq[V]) search(id streamID) int {
	// The chunk first, by its last id, then inside it: a lookup touches
	// two or three cache lines per step less than a search over at().
	c := sort.Search(len(q.chunks), func(c int) bool {
		ch := q.chunks[c]
		return !ch[len(ch)-1].id.less(id)
	})
	if c == len(q.chunks) {
		return q.n
	}
	ch := q.chunks[c]
	lo := 0
	if c == 0 {
		lo = q.off
	}
	j := lo + sort.Search(len(ch)-lo, func(j int) bool { return !ch[lo+j].id.less(id) })
	return c<<idChunkShift + j - q.off
}

// get returns the live value under id (valid until the next put or tidy).
func (q *idSeq[V]) get(id streamID) *V {
	if i := q.search(id); i < q.n {
		if it := q.at(i); it.id == id && !it.dead {
			return &it.val
		}
	}
	return nil
}

// put stores v under id, replacing a live value.
func (q *idSeq[V]) put(id streamID, v V) {
	if q.n == 0 || q.at(q.n-1).id.less(id) {
		q.push(idItem[V]{id: id, val: v})
		q.live++
		return
	}
	i := q.search(id)
	if it := q.at(i); it.id == id {
		if it.dead {
			it.dead = false
			q.live++
		}
		it.val = v
		return
	}
	// An id below the last (a pending entry claimed out of order): shift
	// the tail by one, as an insert into a flat slice would.
	q.push(idItem[V]{})
	for j := q.n - 1; j > i; j-- {
		*q.at(j) = *q.at(j - 1)
	}
	*q.at(i) = idItem[V]{id: id, val: v}
	q.live++
}

// push appends it. The first chunk grows like a slice up to idChunk; later
// chunks are allocated whole.
func (q *idSeq[V]) push(it idItem[V]) {
	p := q.off + q.n
	c := p >> idChunkShift
	if c == len(q.chunks) {
		size := idChunk
		if c == 0 {
			size = 4
		}
		q.chunks = append(q.chunks, make([]idItem[V], 0, size))
	}
	ch := q.chunks[c]
	if len(ch) == cap(ch) {
		grown := make([]idItem[V], len(ch), min(2*cap(ch), idChunk))
		copy(grown, ch)
		ch = grown
	}
	q.chunks[c] = append(ch, it)
	q.n++
}

// killAt marks the live slot i dead.
func (q *idSeq[V]) killAt(i int) {
	var zero V
	it := q.at(i)
	it.val, it.dead = zero, true
	q.live--
}

// nextLive returns the first live index >= i (len() if none).
func (q *idSeq[V]) nextLive(i int) int {
	for i < q.n && q.at(i).dead {
		i++
	}
	return i
}

// lastLive returns the last live index (-1 if none).
func (q *idSeq[V]) lastLive() int {
	i := q.n - 1
	for i >= 0 && q.at(i).dead {
		i--
	}
	return i
}

func (q *idSeq[V]) tidy() {
	if q.live == 0 {
		*q = idSeq[V]{}
		return
	}
	k := q.nextLive(0)
	q.off += k
	q.n -= k
	for q.off >= idChunk {
		q.chunks[0] = nil
		q.chunks = q.chunks[1:]
		q.off -= idChunk
	}
	if dead := q.n - q.live; dead > 16 && dead > q.live {
		var kept idSeq[V]
		for i := range q.n {
			if it := q.at(i); !it.dead {
				kept.push(*it)
			}
		}
		kept.live = q.live
		*q = kept
	}
}
