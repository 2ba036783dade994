package store

import (
	"slices"
	"unsafe"
)

// Large strings edited in place: SETRANGE and SETBIT on a bitmap of a
// megabyte copied the whole value for every call (a record's bytes are
// immutable once published: replies, exports and the op-log share them),
// 2–6 k edits a second against Redis's hundreds of thousands. A string an
// edit leaves at pagedMin bytes or more is kept in fixed pages instead,
// under a two-level table (leaves of leafPages pages, and a root of
// leaves): an edit copies the root, the leaves and the pages it touches —
// about 1.7 KiB for a byte of a megabyte — and shares everything else with
// the value it replaces. Pages and leaves are as immutable as flat values,
// so a paged value is too: whoever holds an older record reads the older
// bytes. Value() copies the pages into one contiguous buffer (a GET, a
// snapshot, the replication codec); the bit and range commands read the
// pages.

const (
	pageShift = 10
	pageSize  = 1 << pageShift
	leafShift = 6
	leafPages = 1 << leafShift
	// pagedMin is the size from which an edited string is paged: below it
	// a copy of the whole value costs about what an edit's copies do.
	pagedMin = 64 << 10
)

type (
	strPage  [pageSize]byte
	pageLeaf [leafPages]*strPage
)

// zeroPage stands for every page no write has touched (SETRANGE or SETBIT
// past the end zero-fills), zeroLeaf for a leaf of them: shared by all
// paged values, never written.
var (
	zeroPage strPage
	zeroLeaf = func() *pageLeaf {
		l := new(pageLeaf)
		for i := range l {
			l[i] = &zeroPage
		}
		return l
	}()
)

// pagedValue is an immutable paged string of n bytes. Bytes past n are
// zero (an edit that extends the string relies on it).
type pagedValue struct {
	leaves []*pageLeaf
	n      int
}

func leavesFor(n int) int {
	pages := (n + pageSize - 1) >> pageShift
	return (pages + leafPages - 1) >> leafShift
}

// page is page i.
func (p *pagedValue) page(i int) *strPage { return p.leaves[i>>leafShift][i&(leafPages-1)] }

// pagedFrom copies v into pages.
func pagedFrom(v []byte) *pagedValue {
	p := &pagedValue{leaves: make([]*pageLeaf, leavesFor(len(v))), n: len(v)}
	for li := range p.leaves {
		l := new(pageLeaf)
		for j := range l {
			at := (li<<leafShift + j) << pageShift
			if at >= len(v) {
				l[j] = &zeroPage
				continue
			}
			pg := new(strPage)
			copy(pg[:], v[at:])
			l[j] = pg
		}
		p.leaves[li] = l
	}
	return p
}

// edited returns the value with patch written at off, zero-filled from
// the old end up to off. off+len(patch) fits in an int (the callers bound
// it by the item cap).
func (p *pagedValue) edited(off int, patch []byte) *pagedValue {
	n := max(p.n, off+len(patch))
	q := &pagedValue{leaves: make([]*pageLeaf, leavesFor(n)), n: n}
	for i := copy(q.leaves, p.leaves); i < len(q.leaves); i++ {
		q.leaves[i] = zeroLeaf
	}
	copied := -1 // the leaf this edit copied last (a patch is contiguous)
	for len(patch) > 0 {
		i, at := off>>pageShift, off&(pageSize-1)
		li := i >> leafShift
		if li != copied {
			l := *q.leaves[li]
			q.leaves[li], copied = &l, li
		}
		l := q.leaves[li]
		// A clone, not new then a copy: the runtime skips zeroing
		// memory an append fills.
		pg := (*strPage)(slices.Clone(l[i&(leafPages-1)][:]))
		k := copy(pg[at:], patch)
		l[i&(leafPages-1)] = pg
		off += k
		patch = patch[k:]
	}
	return q
}

// byteAt is byte i (< n).
func (p *pagedValue) byteAt(i int) byte { return p.page(i >> pageShift)[i&(pageSize-1)] }

// copyRange copies bytes [lo, lo+len(dst)) into dst (within n).
func (p *pagedValue) copyRange(dst []byte, lo int) {
	for len(dst) > 0 {
		k := copy(dst, p.page(lo >> pageShift)[lo&(pageSize-1):])
		dst, lo = dst[k:], lo+k
	}
}

// flat is a contiguous copy of the value.
func (p *pagedValue) flat() []byte {
	v := make([]byte, p.n)
	p.copyRange(v, 0)
	return v
}

// pagedRecordOf is a string record of key (not copied) holding pv.
func pagedRecordOf(key string, pv *pagedValue, exp int64) *Record {
	r := &Record{Kind: KindString}
	r.p = unsafe.Pointer(&recordExt{key: unsafe.StringData(key), pv: pv, exp: exp, klen: keyLen32(len(key))})
	r.vlen, r.form = valueLen(pv.n), formValue|formExt
	if exp != 0 {
		r.form |= formExpiry
	}
	return r
}

// paged is the record's paged value; nil for any other record.
func (r *Record) paged() *pagedValue {
	if r == nil {
		return nil
	}
	if e := r.ext(); e != nil {
		return e.pv
	}
	return nil
}

// ValueLen is len(r.Value()) without building a paged value's copy.
func (r *Record) ValueLen() int {
	if r.form&formValue == 0 {
		return 0
	}
	return int(r.vlen)
}

// stringEdit is an edit of the string held: patch at off, zero-filled
// from its end (SETRANGE, SETBIT, BITFIELD, APPEND to a paged string). A
// result of pagedMin bytes or more is paged (a flat value is paged first);
// a smaller one is a flat copy. Past the item cap it writes nothing, as
// setStringValue; the callers refuse such an edit first.
func (x *execCtx) stringEdit(off int, patch []byte) {
	n := max(x.rec.lenOrZero(), off+len(patch))
	if n > x.seg.store.cfg.MaxItemBytes {
		return
	}
	pv := x.rec.paged()
	switch {
	case pv != nil:
		pv = pv.edited(off, patch)
	case n >= pagedMin:
		pv = pagedFrom(valueOf(x)).edited(off, patch)
	default:
		v := make([]byte, n)
		copy(v, valueOf(x))
		copy(v[off:], patch)
		x.setStringValue(v)
		return
	}
	x.newPaged, x.setValue = pv, true
}

// lenOrZero is the value's length, 0 for no record.
func (r *Record) lenOrZero() int {
	if r == nil {
		return 0
	}
	return r.ValueLen()
}

// stringByte is byte i of the held string value, ok false past its end.
func (x *execCtx) stringByte(i uint64) (byte, bool) {
	if x.rec == nil || i >= uint64(x.rec.ValueLen()) {
		return 0, false
	}
	if pv := x.rec.paged(); pv != nil {
		return pv.byteAt(int(i)), true
	}
	return x.rec.Value()[i], true
}

// stringWindow is the held string's bytes [lo, hi) (within its length)
// and the offset they start at: the whole flat value, base 0, when it is
// not paged (no copy), else a copy of that range alone.
func (x *execCtx) stringWindow(lo, hi int) (v []byte, base int) {
	if pv := x.rec.paged(); pv != nil {
		v = make([]byte, hi-lo)
		pv.copyRange(v, lo)
		return v, lo
	}
	return valueOf(x), 0
}
