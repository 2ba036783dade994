package store

import (
	"encoding/binary"
	"math"

	"github.com/zaris-io/zaris/internal/kv"
)

// HyperLogLog (issue #13 item 5): PFADD and PFCOUNT on a string value in
// Redis's own representation, so that an HLL moves between Zaris and Redis
// with GET and SET. The value is a 16-byte header — "HYLL", the encoding
// (0 dense, 1 sparse), three unused bytes, the cached cardinality (8 bytes
// little-endian, the top bit of the last byte set when stale) — then the
// 16384 registers: dense, 6 bits each; or sparse, run-length opcodes
// (ZERO 00xxxxxx, XZERO 01xxxxxx yyyyyyyy, VAL 1vvvvvxx). A new HLL is
// sparse and turns dense once it passes 3000 bytes or a register passes
// 32 (Redis's hll-sparse-max-bytes default). Elements are hashed with
// MurmurHash64A (seed 0xadc83b19): the low 14 bits pick the register, the
// run of zeros above them (+1) is the register's candidate value. The
// estimate is Ertl's improved estimator ("New cardinality estimation
// algorithms for HyperLogLog sketches", 2017), as Redis 5+ computes it —
// so PFCOUNT answers the very number Redis answers for the same elements.
// The code is written from those descriptions.

const (
	hllP              = 14
	hllQ              = 64 - hllP
	HLLRegisters      = 1 << hllP // registers of an HLL
	hllBits           = 6
	hllRegMax         = 1<<hllBits - 1
	hllHdrSize        = 16
	hllDenseSize      = hllHdrSize + (HLLRegisters*hllBits+7)/8
	hllEncDense       = 0
	hllEncSparse      = 1
	hllSparseMaxBytes = 3000 // Redis's hll-sparse-max-bytes default
	hllValMaxValue    = 32
	hllValMaxLen      = 4
	hllZeroMaxLen     = 64
	hllAlphaInf       = 0.721347520444481703680 // 0.5/ln(2)
)

var (
	errNotHLL     = kv.Reply{Status: kv.StatusWrongType, Message: "WRONGTYPE Key is not a valid HyperLogLog string value."}
	errInvalidHLL = kv.BadRequest("INVALIDOBJ Corrupted HLL object detected")
)

// murmur64A is MurmurHash64A (Austin Appleby's public-domain hash) over
// little-endian 8-byte words.
func murmur64A(data []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ uint64(len(data))*m
	for len(data) >= 8 {
		k := binary.LittleEndian.Uint64(data)
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
		data = data[8:]
	}
	if len(data) > 0 {
		for i := len(data) - 1; i >= 0; i-- {
			h ^= uint64(data[i]) << (8 * i)
		}
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// hllPattern is the register an element maps to and the value it offers.
func hllPattern(elem []byte) (int, uint8) {
	h := murmur64A(elem, 0xadc83b19)
	index := int(h & (HLLRegisters - 1))
	h >>= hllP
	h |= 1 << hllQ // the run ends by bit Q at the latest
	count := uint8(1)
	for bit := uint64(1); h&bit == 0; bit <<= 1 {
		count++
	}
	return index, count
}

// HLLValid reports whether v is a string Redis accepts as an HLL.
func HLLValid(v []byte) bool {
	if len(v) < hllHdrSize || string(v[:4]) != "HYLL" || v[4] > hllEncSparse {
		return false
	}
	return v[4] != hllEncDense || len(v) == hllDenseSize
}

// HLLDense reports whether a valid HLL is dense.
func HLLDense(v []byte) bool { return v[4] == hllEncDense }

func newHLL() []byte {
	v := make([]byte, hllHdrSize+2)
	copy(v, "HYLL")
	v[4] = hllEncSparse
	v[hllHdrSize], v[hllHdrSize+1] = 0x40|byte((HLLRegisters-1)>>8), byte((HLLRegisters-1)&0xff) // one XZERO run
	return v
}

func hllInvalidate(v []byte) { v[15] |= 0x80 }

func denseGet(regs []byte, i int) uint8 {
	b := i * hllBits / 8
	fb := uint(i*hllBits) & 7
	b0 := uint(regs[b])
	var b1 uint
	if b+1 < len(regs) {
		b1 = uint(regs[b+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & hllRegMax)
}

func denseSet(regs []byte, i int, val uint8) {
	b := i * hllBits / 8
	fb := uint(i*hllBits) & 7
	v := uint(val)
	regs[b] &^= byte(hllRegMax << fb)
	regs[b] |= byte(v << fb)
	if b+1 < len(regs) {
		regs[b+1] &^= byte(hllRegMax >> (8 - fb))
		regs[b+1] |= byte(v >> (8 - fb))
	}
}

// sparse opcode helpers
func spIsZero(b byte) bool  { return b&0xc0 == 0 }
func spIsXZero(b byte) bool { return b&0xc0 == 0x40 }
func spIsVal(b byte) bool   { return b&0x80 != 0 }
func spValValue(b byte) uint8 {
	return (b>>2)&0x1f + 1
}
func spValLen(b byte) int { return int(b&3) + 1 }
func spVal(val uint8, n int) byte {
	return byte(val-1)<<2 | byte(n-1) | 0x80
}

// appendZeros appends a run of n zero registers (ZERO or XZERO).
func appendZeros(seq []byte, n int) []byte {
	if n > hllZeroMaxLen {
		return append(seq, 0x40|byte((n-1)>>8), byte((n-1)&0xff))
	}
	return append(seq, byte(n-1))
}

// sparseRuns walks the opcodes of a sparse HLL: fn gets each run's first
// register, length and value. It reports false when the runs do not cover
// exactly the 16384 registers (a corrupt value).
func sparseRuns(v []byte, fn func(first, n int, val uint8)) bool {
	sp := v[hllHdrSize:]
	idx := 0
	for p := 0; p < len(sp); {
		b := sp[p]
		switch {
		case spIsZero(b):
			n := int(b&0x3f) + 1
			fn(idx, n, 0)
			idx += n
			p++
		case spIsXZero(b):
			if p+1 >= len(sp) {
				return false
			}
			n := (int(b&0x3f)<<8 | int(sp[p+1])) + 1
			fn(idx, n, 0)
			idx += n
			p += 2
		default:
			n := spValLen(b)
			if idx+n > HLLRegisters {
				return false
			}
			fn(idx, n, spValValue(b))
			idx += n
			p++
		}
		if idx > HLLRegisters {
			return false
		}
	}
	return idx == HLLRegisters
}

func sparseToDense(v []byte) ([]byte, bool) {
	d := make([]byte, hllDenseSize)
	copy(d, v[:hllHdrSize]) // magic and cached cardinality
	d[4] = hllEncDense
	regs := d[hllHdrSize:]
	ok := sparseRuns(v, func(first, n int, val uint8) {
		if val == 0 {
			return
		}
		for i := first; i < first+n; i++ {
			denseSet(regs, i, val)
		}
	})
	return d, ok
}

// hllSet raises register index to count if it is lower: the (possibly
// reallocated) value and 1 when it changed, 0 when not, -1 for a corrupt
// value. v must be the caller's own copy.
func hllSet(v []byte, index int, count uint8) ([]byte, int) {
	if v[4] == hllEncDense {
		regs := v[hllHdrSize:]
		if denseGet(regs, index) >= count {
			return v, 0
		}
		denseSet(regs, index, count)
		return v, 1
	}
	return sparseSet(v, index, count)
}

// sparseSet is hllSet on a sparse HLL: it rewrites the opcode covering the
// register (splitting a run in up to three), merges equal neighbouring VAL
// runs, and turns the HLL dense when a value passes 32 or the value would
// pass hllSparseMaxBytes — the same steps as Redis, so the bytes match.
func sparseSet(v []byte, index int, count uint8) ([]byte, int) {
	if count > hllValMaxValue {
		return promoteSet(v, index, count)
	}
	sp := v[hllHdrSize:]
	end := len(sp)
	p, first, prev, span := 0, 0, -1, 0
	found := false
	for p < end {
		b := sp[p]
		oplen := 1
		switch {
		case spIsZero(b):
			span = int(b&0x3f) + 1
		case spIsVal(b):
			span = spValLen(b)
		default:
			if p+1 >= end {
				return v, -1
			}
			span = (int(b&0x3f)<<8 | int(sp[p+1])) + 1
			oplen = 2
		}
		if index <= first+span-1 {
			found = true
			break
		}
		prev = p
		p += oplen
		first += span
	}
	if !found {
		return v, -1
	}
	b := sp[p]
	isZero, isXZero := spIsZero(b), spIsXZero(b)
	oldLen := 1
	if isXZero {
		oldLen = 2
	}
	switch {
	case spIsVal(b) && spValValue(b) >= count:
		return v, 0
	case spIsVal(b) && span == 1, isZero && span == 1:
		sp[p] = spVal(count, 1)
	default:
		last := first + span - 1
		seq := make([]byte, 0, 5)
		if isZero || isXZero {
			if index != first {
				seq = appendZeros(seq, index-first)
			}
			seq = append(seq, spVal(count, 1))
			if index != last {
				seq = appendZeros(seq, last-index)
			}
		} else {
			cur := spValValue(b)
			if index != first {
				seq = append(seq, spVal(cur, index-first))
			}
			seq = append(seq, spVal(count, 1))
			if index != last {
				seq = append(seq, spVal(cur, last-index))
			}
		}
		if delta := len(seq) - oldLen; delta > 0 && len(v)+delta > hllSparseMaxBytes {
			return promoteSet(v, index, count)
		}
		nv := make([]byte, 0, len(v)+len(seq)-oldLen)
		nv = append(nv, v[:hllHdrSize+p]...)
		nv = append(nv, seq...)
		nv = append(nv, v[hllHdrSize+p+oldLen:]...)
		v = nv
	}
	// Merge adjacent VAL runs of equal value, scanning five opcodes from
	// the one before the change.
	sp = v[hllHdrSize:]
	end = len(sp)
	p = max(prev, 0)
	for scan := 5; p < end && scan > 0; scan-- {
		b := sp[p]
		switch {
		case spIsXZero(b):
			p += 2
			continue
		case spIsZero(b):
			p++
			continue
		}
		if p+1 < end && spIsVal(sp[p+1]) {
			v1, v2 := spValValue(b), spValValue(sp[p+1])
			if n := spValLen(b) + spValLen(sp[p+1]); v1 == v2 && n <= hllValMaxLen {
				sp[p+1] = spVal(v1, n)
				copy(sp[p:], sp[p+1:])
				sp = sp[:end-1]
				end--
				continue
			}
		}
		p++
	}
	v = v[:hllHdrSize+end]
	hllInvalidate(v)
	return v, 1
}

func promoteSet(v []byte, index int, count uint8) ([]byte, int) {
	d, ok := sparseToDense(v)
	if !ok {
		return v, -1
	}
	denseSet(d[hllHdrSize:], index, count)
	return d, 1
}

// HLLMerge raises max[i] to every register of the valid HLL v; false for
// a corrupt one. max has HLLRegisters entries.
func HLLMerge(max []uint8, v []byte) bool {
	if v[4] == hllEncDense {
		regs := v[hllHdrSize:]
		for i := range HLLRegisters {
			if r := denseGet(regs, i); r > max[i] {
				max[i] = r
			}
		}
		return true
	}
	return sparseRuns(v, func(first, n int, val uint8) {
		for i := first; i < first+n && val != 0; i++ {
			if val > max[i] {
				max[i] = val
			}
		}
	})
}

// HLLCount estimates the cardinality of a set of registers.
func HLLCount(regs []uint8) uint64 {
	var histo [64]int
	for _, r := range regs {
		histo[r&63]++
	}
	return hllEstimate(&histo)
}

func hllCountValue(v []byte) (uint64, bool) {
	var histo [64]int
	if v[4] == hllEncDense {
		regs := v[hllHdrSize:]
		for i := range HLLRegisters {
			histo[denseGet(regs, i)]++
		}
		return hllEstimate(&histo), true
	}
	ok := sparseRuns(v, func(_, n int, val uint8) { histo[val&63] += n })
	return hllEstimate(&histo), ok
}

func hllEstimate(histo *[64]int) uint64 {
	m := float64(HLLRegisters)
	z := m * hllTau((m-float64(histo[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * hllSigma(float64(histo[0])/m)
	return uint64(math.Round(hllAlphaInf * m * m / z))
}

func hllSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if prev == z {
			return z
		}
	}
}

func hllTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if prev == z {
			return z / 3
		}
	}
}

// HLLStore writes the registers max into the HLL dst (nil: a new one) the
// way PFMERGE does: dense when dense is asked for, register by register
// otherwise (a sparse value turns dense if it must), cache invalidated.
// It returns the new value, or false when dst is corrupt.
func HLLStore(dst []byte, max []uint8, dense bool) ([]byte, bool) {
	v := newHLL()
	if dst != nil {
		v = append([]byte(nil), dst...)
	}
	if dense && v[4] == hllEncSparse {
		var ok bool
		if v, ok = sparseToDense(v); !ok {
			return nil, false
		}
	}
	for i, r := range max {
		if r == 0 {
			continue
		}
		var res int
		if v, res = hllSet(v, i, r); res < 0 {
			return nil, false
		}
	}
	hllInvalidate(v)
	return v, true
}

// setStringChecked is setStringValue with the item cap's refusal.
func (x *execCtx) setStringChecked(v []byte) (kv.Reply, bool) {
	if limit := x.seg.store.cfg.MaxItemBytes; len(v) > limit && !x.apply {
		return kv.Reply{Status: kv.StatusItemTooLarge, Message: itemTooLargeMessage(int64(limit))}, false
	}
	x.setStringValue(v)
	return kv.Reply{}, true
}

func init() {
	register(kv.CmdPFAdd, handler{kind: kindAny, write: true, run: func(x *execCtx) kv.Reply {
		if r, ok := stringKind(x); !ok {
			return r
		}
		var v []byte
		updated := false
		if x.rec == nil {
			v, updated = newHLL(), true
		} else {
			if !HLLValid(x.rec.Value()) {
				return errNotHLL
			}
			v = append([]byte(nil), x.rec.Value()...)
		}
		for _, e := range x.cmd.Args {
			i, n := hllPattern(e)
			var res int
			if v, res = hllSet(v, i, n); res < 0 {
				return errInvalidHLL
			}
			updated = updated || res == 1
		}
		if !updated {
			return kv.IntReply(0)
		}
		hllInvalidate(v)
		if r, ok := x.setStringChecked(v); !ok {
			return r
		}
		return kv.IntReply(1)
	}})
	// PFCOUNT of one key answers the cached cardinality, or computes it
	// and caches it in the value (a write, as in Redis).
	register(kv.CmdPFCount, handler{kind: kindAny, write: true, run: func(x *execCtx) kv.Reply {
		if x.rec == nil {
			return kv.IntReply(0)
		}
		if r, ok := stringKind(x); !ok {
			return r
		}
		v := x.rec.Value()
		if !HLLValid(v) {
			return errNotHLL
		}
		if v[15]&0x80 == 0 {
			return kv.IntReply(int64(binary.LittleEndian.Uint64(v[8:16])))
		}
		n, ok := hllCountValue(v)
		if !ok {
			return errInvalidHLL
		}
		nv := append([]byte(nil), v...)
		binary.LittleEndian.PutUint64(nv[8:16], n)
		x.setStringValue(nv) // same size: no cap to pass
		return kv.IntReply(int64(n))
	}})
}
