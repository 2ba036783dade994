package store

import (
	"bytes"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/mpsafe"
)

// listColl is the materialized form of a list: a deque of element
// references, so pushes and pops at both ends are O(1) and indexing is
// O(1), over packed element bytes (listblock.go, D85): the elements are
// copied into the list's own blocks, not allocated one by one, so a list
// of n elements is a few dozen objects with no pointer per element for the
// collector to follow.
//
// The references of a list that fits one chunk (listChunk) are a ring
// that doubles as it fills; a longer list's are fixed chunks in a ring of
// chunks, so that growing never copies the whole index: a doubling ring
// copied (and faulted in) megabytes under the segment's lock at each
// power of two, and every request behind it waited (D128).
type listColl struct {
	refs []listRef // the ring, from head, while chunks is nil
	head int
	n    int
	// chunks is the index of a long list, a ring (a power of two long) of
	// nchunks chunks from chunkHead: element i is slot (off+i)%listChunk of
	// chunk (off+i)/listChunk.
	chunks    []*listChunkRefs
	chunkHead int
	nchunks   int
	off       int
	arena     listArena
	bytes     int64 // accounted
	item      int64 // item size
}

// listChunk is the references of one chunk: 4 KiB.
const listChunk = 512

type listChunkRefs [listChunk]listRef

const listElemOverhead = 24

func newList() *listColl            { return &listColl{} }
func (l *listColl) kind() ValueKind { return KindList }
func (l *listColl) size() int64     { return l.bytes }
func (l *listColl) itemSize() int64 { return l.item }
func (l *listColl) count() int      { return l.n }

func (l *listColl) ref(i int) *listRef {
	if l.chunks == nil {
		return &l.refs[(l.head+i)%len(l.refs)]
	}
	g := uint(l.off + i)
	return &l.chunks[(uint(l.chunkHead)+g/listChunk)&uint(len(l.chunks)-1)][g%listChunk]
}

// run is the references of elements i, i+1, … that lie together in the
// index, at most up to element hi-1: a walk over a range reads them run
// by run rather than computing each one's place.
func (l *listColl) run(i, hi int) []listRef {
	if l.chunks == nil {
		at := (l.head + i) % len(l.refs)
		return l.refs[at:min(len(l.refs), at+hi-i)]
	}
	g := uint(l.off + i)
	c := l.chunks[(uint(l.chunkHead)+g/listChunk)&uint(len(l.chunks)-1)]
	at := int(g % listChunk)
	return c[at:min(listChunk, at+hi-i)]
}

// at is element i. Its bytes are never written again (the arena only
// appends, and compacts into new blocks), so a reply may hold them past
// the segment's lock; its capacity is its length.
func (l *listColl) at(i int) []byte { return l.arena.bytes(*l.ref(i)) }

func (l *listColl) items(lo, hi int) [][]byte {
	out := make([][]byte, 0, hi-lo)
	for i := lo; i < hi; {
		run := l.run(i, hi)
		for _, r := range run {
			out = append(out, l.arena.bytes(r))
		}
		i += len(run)
	}
	return out
}

func (l *listColl) encode() []byte { return mustMarshal(l.items(0, l.n)) }

func (l *listColl) decode(b []byte) error {
	var items [][]byte
	if err := mpsafe.Unmarshal(b, &items); err != nil {
		return err
	}
	l.rebuild(items)
	return nil
}

// makeRoom makes sure the index has a free place at the front or the
// back.
func (l *listColl) makeRoom(front bool) {
	if l.chunks == nil {
		switch {
		case l.n < len(l.refs):
			return
		case len(l.refs) < listChunk:
			l.growRing()
			return
		}
		l.toChunks()
	}
	switch {
	case front && l.off == 0:
		l.addChunk(true)
		l.off = listChunk
	case !front && l.off+l.n == l.nchunks*listChunk:
		l.addChunk(false)
	}
}

// growRing doubles the ring, up to one chunk.
func (l *listColl) growRing() {
	nr := make([]listRef, min(max(2*len(l.refs), 8), listChunk))
	for i := 0; i < l.n; i++ {
		nr[i] = *l.ref(i)
	}
	l.refs, l.head = nr, 0
}

// toChunks turns a full ring of one chunk's size into the first chunk.
func (l *listColl) toChunks() {
	c := new(listChunkRefs)
	for i := 0; i < l.n; i++ {
		c[i] = *l.ref(i)
	}
	l.chunks = make([]*listChunkRefs, 4)
	l.chunks[0], l.chunkHead, l.nchunks, l.off = c, 0, 1, 0
	l.refs, l.head = nil, 0
}

func (l *listColl) addChunk(front bool) {
	if l.nchunks == len(l.chunks) {
		grown := make([]*listChunkRefs, 2*len(l.chunks))
		for i := range l.nchunks {
			grown[i] = l.chunks[(l.chunkHead+i)&(len(l.chunks)-1)]
		}
		l.chunks, l.chunkHead = grown, 0
	}
	mask := len(l.chunks) - 1
	c := new(listChunkRefs)
	if front {
		l.chunkHead = (l.chunkHead - 1) & mask
		l.chunks[l.chunkHead] = c
	} else {
		l.chunks[(l.chunkHead+l.nchunks)&mask] = c
	}
	l.nchunks++
}

func (l *listColl) dropChunk(front bool) {
	mask := len(l.chunks) - 1
	if front {
		l.chunks[l.chunkHead] = nil
		l.chunkHead = (l.chunkHead + 1) & mask
	} else {
		l.chunks[(l.chunkHead+l.nchunks-1)&mask] = nil
	}
	l.nchunks--
}

func (l *listColl) pushBack(v []byte) {
	l.makeRoom(false)
	*l.ref(l.n) = l.arena.store(v)
	l.n++
	l.account(listElemSize(v))
	l.compactIfSparse()
}

func (l *listColl) pushFront(v []byte) {
	l.makeRoom(true)
	if l.chunks == nil {
		l.head = (l.head - 1 + len(l.refs)) % len(l.refs)
	} else {
		l.off--
	}
	*l.ref(0) = l.arena.store(v)
	l.n++
	l.account(listElemSize(v))
	l.compactIfSparse()
}

func (l *listColl) popFront() []byte {
	p := l.ref(0)
	r := *p
	*p = listRef{}
	if l.chunks == nil {
		l.head = (l.head + 1) % len(l.refs)
	} else if l.off++; l.off == listChunk {
		l.dropChunk(true)
		l.off = 0
	}
	l.n--
	return l.dropped(r)
}

func (l *listColl) popBack() []byte {
	p := l.ref(l.n - 1)
	r := *p
	*p = listRef{}
	l.n--
	if l.chunks != nil && l.off+l.n == (l.nchunks-1)*listChunk {
		l.dropChunk(false) // its last element went
		if l.nchunks == 0 {
			l.off = 0
		}
	}
	return l.dropped(r)
}

// dropped releases a removed element's bytes and returns them (still
// valid: released bytes are never reused).
func (l *listColl) dropped(r listRef) []byte {
	v := l.arena.bytes(r)
	l.arena.release(r)
	l.account(keySize{}.minus(listElemSize(v)))
	if l.n == 0 {
		l.arena = listArena{}
	} else {
		l.compactIfSparse()
	}
	return v
}

// set replaces element i with a copy of v.
func (l *listColl) set(i int, v []byte) {
	r := l.ref(i)
	l.arena.release(*r)
	*r = l.arena.store(v)
	l.compactIfSparse()
}

// compactIfSparse rebuilds the list into fresh blocks once released bytes
// that live blocks still hold outweigh the live ones (LSET, pops from a
// block's middle): amortized O(1), as each rebuild follows at least as many
// bytes released as it copies.
func (l *listColl) compactIfSparse() {
	if !l.arena.sparse() {
		return
	}
	old := l.arena
	l.arena = listArena{expect: int(old.live)}
	for i := range l.n {
		r := l.ref(i)
		*r = l.arena.store(old.bytes(*r))
	}
}

// account adds a change of the elements' bytes (the count is l.n).
func (l *listColl) account(k keySize) {
	l.bytes += k.acct
	l.item += k.item
}

// rebuild replaces the content (LREM, LTRIM, compaction). items may be
// the list's own elements: the old blocks stay intact for them.
func (l *listColl) rebuild(items [][]byte) {
	*l = listColl{refs: make([]listRef, min(max(len(items), 8), listChunk))}
	for _, it := range items {
		l.arena.expect += len(it)
	}
	for _, it := range items {
		l.pushBack(it)
	}
}

func listOf(x *execCtx) *listColl {
	if x.coll == nil {
		return nil
	}
	return x.coll.(*listColl)
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func push(front bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 1, -1) {
			return arityError(x)
		}
		if !x.fits(listPushGrowth(x.cmd.Args)) {
			return x.tooLarge()
		}
		l := listOf(x)
		for _, v := range x.cmd.Args {
			if front {
				l.pushFront(v)
			} else {
				l.pushBack(v)
			}
		}
		x.changed()
		return kv.IntReply(int64(l.n))
	}
}

// A factory of handlers is not inlined into the init that registers them:
// there the closure was compiled without its small calls inlined
// (kv.IntReply was a call and a copied 96-byte reply per LPUSH, issue #17).
//
//go:noinline
func pop(front bool) func(x *execCtx) kv.Reply {
	return func(x *execCtx) kv.Reply {
		if !arity(x, 0, 1) {
			return arityError(x)
		}
		count, withCount := int64(1), len(x.cmd.Args) == 1
		if withCount {
			var ok bool
			if count, ok = argInt(x.cmd.Args[0]); !ok || count < 0 {
				return kv.BadRequest("value is out of range, must be positive")
			}
		}
		l := listOf(x)
		if l == nil || l.n == 0 {
			if withCount {
				return kv.Reply{Type: kv.ReplyNil}
			}
			return kv.NilReply()
		}
		var out [][]byte
		for i := int64(0); i < count && l.n > 0; i++ {
			if front {
				out = append(out, l.popFront())
			} else {
				out = append(out, l.popBack())
			}
		}
		if len(out) > 0 {
			x.changed()
		}
		if !withCount {
			return kv.BulkReply(out[0])
		}
		return x.bulksOf(out)
	}
}

func init() {
	register(kv.CmdLPush, handler{kind: KindList, write: true, create: true, run: push(true)})
	register(kv.CmdRPush, handler{kind: KindList, write: true, create: true, run: push(false)})
	register(kv.CmdLPop, handler{kind: KindList, write: true, run: pop(true)})
	register(kv.CmdRPop, handler{kind: KindList, write: true, run: pop(false)})
	register(kv.CmdLLen, handler{kind: KindList, run: func(x *execCtx) kv.Reply {
		if l := listOf(x); l != nil {
			return kv.IntReply(int64(l.n))
		}
		return kv.IntReply(0)
	}})
	register(kv.CmdLRange, handler{kind: KindList, check: intArgs(0, 1), run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		start, ok1 := argInt(x.cmd.Args[0])
		stop, ok2 := argInt(x.cmd.Args[1])
		if !ok1 || !ok2 {
			return errNotInteger
		}
		l := listOf(x)
		if l == nil {
			return kv.ArrayReply([]kv.Reply{})
		}
		lo, hi := normalizeRange(start, stop, l.n)
		out := x.replies(hi - lo)
		for i := lo; i < hi; {
			run := l.run(i, hi)
			for _, r := range run {
				out = append(out, kv.BulkReply(l.arena.bytes(r)))
			}
			i += len(run)
		}
		return kv.ArrayReply(out)
	}})
	register(kv.CmdLIndex, handler{kind: KindList, run: func(x *execCtx) kv.Reply {
		if !arity(x, 1, 1) {
			return arityError(x)
		}
		l := listOf(x) // Redis looks the key up before it reads the index
		if l == nil {
			return kv.NilReply()
		}
		i, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		if i < 0 {
			i += int64(l.n)
		}
		if i < 0 || i >= int64(l.n) {
			return kv.NilReply()
		}
		return kv.BulkReply(l.at(int(i)))
	}})
	register(kv.CmdLSet, handler{kind: KindList, write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		l := listOf(x) // Redis looks the key up before it reads the index
		if l == nil {
			return kv.StatusReply(kv.StatusNotFound)
		}
		i, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		if i < 0 {
			i += int64(l.n)
		}
		if i < 0 || i >= int64(l.n) {
			return kv.BadRequest("index out of range")
		}
		grow := listElemSize(x.cmd.Args[1]).minus(listElemSize(l.at(int(i))))
		if !x.fits(grow) {
			return x.tooLarge()
		}
		l.account(grow)
		l.set(int(i), x.cmd.Args[1])
		x.changed()
		return kv.OKReply()
	}})
	register(kv.CmdLRem, handler{kind: KindList, check: intArgs(0), write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		count, ok := argInt(x.cmd.Args[0])
		if !ok {
			return errNotInteger
		}
		l := listOf(x)
		if l == nil {
			return kv.IntReply(0)
		}
		items := l.items(0, l.n)
		target := x.cmd.Args[1]
		removed := int64(0)
		keep := make([][]byte, 0, len(items))
		if count >= 0 {
			for _, it := range items {
				if bytes.Equal(it, target) && (count == 0 || removed < count) {
					removed++
					continue
				}
				keep = append(keep, it)
			}
		} else {
			most := -(count + 1) // removed < -count, without negating MinInt64
			for i := len(items) - 1; i >= 0; i-- {
				if bytes.Equal(items[i], target) && removed <= most {
					removed++
					continue
				}
				keep = append(keep, items[i])
			}
			for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
				keep[i], keep[j] = keep[j], keep[i]
			}
		}
		if removed > 0 {
			l.rebuild(keep)
			x.changed()
		}
		return kv.IntReply(removed)
	}})
	register(kv.CmdLTrim, handler{kind: KindList, check: intArgs(0, 1), write: true, run: func(x *execCtx) kv.Reply {
		if !arity(x, 2, 2) {
			return arityError(x)
		}
		start, ok1 := argInt(x.cmd.Args[0])
		stop, ok2 := argInt(x.cmd.Args[1])
		if !ok1 || !ok2 {
			return errNotInteger
		}
		l := listOf(x)
		if l == nil {
			return kv.OKReply()
		}
		lo, hi := normalizeRange(start, stop, l.n)
		if lo == 0 && hi == l.n {
			return kv.OKReply()
		}
		l.rebuild(l.items(lo, hi))
		x.changed()
		return kv.OKReply()
	}})
}
