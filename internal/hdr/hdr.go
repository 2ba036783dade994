// Package hdr is a small log-linear latency histogram in the spirit of
// HdrHistogram: it records non-negative integer values (nanoseconds, bytes,
// anything) into a fixed set of buckets whose width grows with the value, so
// that every recorded value is known to within a bounded relative error while
// memory stays bounded no matter how many values are recorded.
//
// It is a leaf package: it imports only the standard library and nothing of
// Zaris. A Histogram is not safe for concurrent use; the usual pattern is one
// per goroutine (per connection of a load generator), merged at the end.
//
// # Buckets
//
// Values below 2·SubBuckets (256) each have their own bucket and are exact.
// Above that, every power-of-two range [2^k, 2^(k+1)) is split into
// SubBuckets (128) equal buckets, so a bucket is at most 1/128 of its lower
// bound wide. The whole uint64 range needs 7424 buckets (58 KiB of counters
// at most; the counters grow only up to the highest bucket used).
// ValueAtQuantile answers with the middle of the bucket the quantile falls
// in, clamped to the exact minimum and maximum recorded, so its relative
// error is at most 1/256 (≈0.4%).
package hdr

import (
	"math"
	"math/bits"
)

const (
	// subBits is log2 of SubBuckets.
	subBits = 7

	// SubBuckets is the number of buckets each power-of-two range is split
	// into; it sets the precision (1/SubBuckets relative bucket width).
	SubBuckets = 1 << subBits

	// NumBuckets is the number of buckets needed for the whole uint64 range.
	NumBuckets = (64-subBits)*SubBuckets + SubBuckets
)

// MaxRelativeError bounds |ValueAtQuantile(q) − exact| / exact, where exact
// is the recorded value of rank ⌈q·count⌉.
const MaxRelativeError = 1.0 / (2 * SubBuckets)

// Histogram counts recorded values in log-linear buckets. The zero value is
// an empty histogram ready for use.
type Histogram struct {
	counts []uint64 // counts[i] = values recorded in bucket i; grown on demand
	total  uint64
	min    uint64 // exact; valid when total > 0
	max    uint64 // exact; valid when total > 0
	// sumHi:sumLo is the exact 128-bit sum of all recorded values, so Mean
	// cannot overflow even for values near 2^64.
	sumHi, sumLo uint64
}

// New returns an empty histogram. It is the same as new(Histogram).
func New() *Histogram { return new(Histogram) }

// bucketOf returns the bucket index of v.
func bucketOf(v uint64) int {
	// shift is how many low bits a bucket of v's power-of-two range ignores:
	// 0 for v < 2·SubBuckets, where buckets are exact.
	shift := bits.Len64(v) - 1 - subBits
	if shift < 0 {
		shift = 0
	}
	return shift*SubBuckets + int(v>>uint(shift))
}

// bucketRange returns the smallest and largest value that fall in bucket i.
func bucketRange(i int) (lo, hi uint64) {
	if i < 2*SubBuckets {
		return uint64(i), uint64(i)
	}
	shift := uint(i/SubBuckets - 1)
	mantissa := uint64(i%SubBuckets + SubBuckets)
	lo = mantissa << shift
	return lo, lo + (1<<shift - 1)
}

// Record adds one occurrence of v.
func (h *Histogram) Record(v uint64) { h.RecordN(v, 1) }

// RecordN adds n occurrences of v. n = 0 is a no-op.
func (h *Histogram) RecordN(v, n uint64) {
	if n == 0 {
		return
	}
	i := bucketOf(v)
	if i >= len(h.counts) {
		h.grow(i + 1)
	}
	h.counts[i] += n
	if h.total == 0 || v < h.min {
		h.min = v
	}
	if h.total == 0 || v > h.max {
		h.max = v
	}
	h.total += n
	hi, lo := bits.Mul64(v, n)
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, lo, 0)
	h.sumHi += hi + carry
}

// grow extends counts to at least n buckets, rounding up to limit how often
// it reallocates while never exceeding NumBuckets.
func (h *Histogram) grow(n int) {
	c := max(n, 2*len(h.counts), 2*SubBuckets)
	c = min(c, NumBuckets)
	counts := make([]uint64, c)
	copy(counts, h.counts)
	h.counts = counts
}

// Merge adds every value recorded in o to h. o is not changed; h and o may
// be the same histogram (its counts double).
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.total == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		h.grow(len(o.counts))
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.total == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.total == 0 || o.max > h.max {
		h.max = o.max
	}
	h.total += o.total
	var carry uint64
	h.sumLo, carry = bits.Add64(h.sumLo, o.sumLo, 0)
	h.sumHi += o.sumHi + carry
}

// Reset empties h, keeping its counters' memory.
func (h *Histogram) Reset() {
	clear(h.counts)
	h.total, h.min, h.max, h.sumHi, h.sumLo = 0, 0, 0, 0, 0
}

// Count returns the number of recorded values.
func (h *Histogram) Count() uint64 { return h.total }

// Min returns the smallest recorded value, exactly; 0 when empty.
func (h *Histogram) Min() uint64 { return h.min }

// Max returns the largest recorded value, exactly; 0 when empty.
func (h *Histogram) Max() uint64 { return h.max }

// Mean returns the exact arithmetic mean of the recorded values (up to
// float64 rounding); 0 when empty.
func (h *Histogram) Mean() float64 {
	if h.total == 0 {
		return 0
	}
	sum := float64(h.sumHi)*math.Exp2(64) + float64(h.sumLo)
	return sum / float64(h.total)
}

// ValueAtQuantile returns the value below or at which a fraction q of the
// recorded values lie: an estimate of the recorded value of rank ⌈q·Count⌉
// (at least 1) within MaxRelativeError. q is clamped to [0, 1]; q = 0 gives
// Min and q = 1 gives Max exactly. It returns 0 when h is empty.
func (h *Histogram) ValueAtQuantile(q float64) uint64 {
	if h.total == 0 {
		return 0
	}
	switch {
	case !(q > 0): // also NaN
		return h.min
	case q >= 1:
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.total)))
	rank = min(max(rank, 1), h.total)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			lo, hi := bucketRange(i)
			mid := lo + (hi-lo)/2
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max // unreachable: the counts sum to total
}

// Percentile is ValueAtQuantile(p/100).
func (h *Histogram) Percentile(p float64) uint64 { return h.ValueAtQuantile(p / 100) }
