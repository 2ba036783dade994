package hdr

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// oracle returns the exact value of rank ⌈q·n⌉ (at least 1) in sorted s,
// the definition ValueAtQuantile estimates.
func oracle(sorted []uint64, q float64) uint64 {
	n := len(sorted)
	switch {
	case q <= 0:
		return sorted[0]
	case q >= 1:
		return sorted[n-1]
	}
	rank := int(math.Ceil(q * float64(n)))
	rank = min(max(rank, 1), n)
	return sorted[rank-1]
}

var quantiles = []float64{0, 0.001, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9999, 1}

func checkAgainstOracle(t *testing.T, h *Histogram, values []uint64) {
	t.Helper()
	sorted := slices.Clone(values)
	slices.Sort(sorted)
	if got := h.Count(); got != uint64(len(values)) {
		t.Fatalf("Count = %d, want %d", got, len(values))
	}
	if h.Min() != sorted[0] || h.Max() != sorted[len(sorted)-1] {
		t.Fatalf("Min/Max = %d/%d, want %d/%d", h.Min(), h.Max(), sorted[0], sorted[len(sorted)-1])
	}
	for _, q := range quantiles {
		want := oracle(sorted, q)
		got := h.ValueAtQuantile(q)
		if relErr(got, want) > MaxRelativeError {
			t.Errorf("q=%v: got %d, exact %d (relative error %.5f > %.5f)", q, got, want, relErr(got, want), MaxRelativeError)
		}
	}
	var sum float64
	for _, v := range values {
		sum += float64(v)
	}
	if mean := sum / float64(len(values)); math.Abs(h.Mean()-mean) > 1e-9*mean {
		t.Errorf("Mean = %v, want %v", h.Mean(), mean)
	}
}

func relErr(got, want uint64) float64 {
	if got == want {
		return 0
	}
	d := float64(got) - float64(want)
	return math.Abs(d) / float64(want)
}

// TestQuantilesAgainstOracle compares every quantile with the exact answer
// of a sorted slice, on distributions shaped like latencies (log-uniform,
// heavy tail), narrow ones (all in a few buckets) and small exact values.
func TestQuantilesAgainstOracle(t *testing.T) {
	dists := map[string]func(r *rand.Rand) uint64{
		"uniform-small":   func(r *rand.Rand) uint64 { return r.Uint64N(300) },
		"uniform-wide":    func(r *rand.Rand) uint64 { return r.Uint64N(1e12) },
		"log-uniform":     func(r *rand.Rand) uint64 { return uint64(math.Exp2(r.Float64() * 50)) },
		"latency-like-ns": func(r *rand.Rand) uint64 { return uint64(20_000 + r.ExpFloat64()*80_000) },
		"narrow":          func(r *rand.Rand) uint64 { return 1_000_000 + r.Uint64N(5000) },
		"full-range":      func(r *rand.Rand) uint64 { return r.Uint64() >> r.UintN(64) },
	}
	for name, gen := range dists {
		for seed := uint64(1); seed <= 5; seed++ {
			r := rand.New(rand.NewPCG(seed, 42))
			n := 1 + r.IntN(20_000)
			values := make([]uint64, n)
			h := New()
			for i := range values {
				values[i] = gen(r)
				h.Record(values[i])
			}
			t.Run(name, func(t *testing.T) { checkAgainstOracle(t, h, values) })
		}
	}
}

// TestMerge: merging per-connection histograms must answer exactly as one
// histogram that saw every value (same buckets, same min/max/sum).
func TestMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var all []uint64
	parts := make([]*Histogram, 8)
	whole := New()
	for i := range parts {
		parts[i] = New()
		// Different ranges per part, so counters of different lengths merge.
		scale := uint64(1) << (4 * i)
		for range 1000 + r.IntN(1000) {
			v := r.Uint64N(1000 * scale)
			parts[i].Record(v)
			whole.Record(v)
			all = append(all, v)
		}
	}
	merged := New()
	for _, p := range parts {
		merged.Merge(p)
	}
	checkAgainstOracle(t, merged, all)
	for _, q := range quantiles {
		if a, b := merged.ValueAtQuantile(q), whole.ValueAtQuantile(q); a != b {
			t.Errorf("q=%v: merged %d, single %d", q, a, b)
		}
	}
	if merged.Mean() != whole.Mean() {
		t.Errorf("Mean merged %v, single %v", merged.Mean(), whole.Mean())
	}

	// Merging into a smaller histogram, an empty one, nil, and itself.
	small := New()
	small.Record(3)
	small.Merge(parts[len(parts)-1])
	if small.Count() != parts[len(parts)-1].Count()+1 || small.Min() != min(3, parts[len(parts)-1].Min()) {
		t.Errorf("merge into small: count %d min %d", small.Count(), small.Min())
	}
	before := merged.Count()
	merged.Merge(nil)
	merged.Merge(New())
	if merged.Count() != before {
		t.Errorf("merging empty changed count %d → %d", before, merged.Count())
	}
	p50 := merged.ValueAtQuantile(0.5)
	merged.Merge(merged)
	if merged.Count() != 2*before || merged.ValueAtQuantile(0.5) != p50 {
		t.Errorf("self-merge: count %d (want %d), p50 %d (want %d)", merged.Count(), 2*before, merged.ValueAtQuantile(0.5), p50)
	}
}

// TestBounds: the extremes of uint64, empty histograms, bounded memory and
// out-of-range quantiles.
func TestBounds(t *testing.T) {
	h := New()
	if h.Count() != 0 || h.ValueAtQuantile(0.5) != 0 || h.Mean() != 0 || h.Max() != 0 {
		t.Fatal("empty histogram must answer zeros")
	}
	h.Record(0)
	h.Record(math.MaxUint64)
	h.RecordN(math.MaxUint64, 3)
	h.RecordN(12345, 0) // no-op
	if h.Count() != 5 || h.Min() != 0 || h.Max() != math.MaxUint64 {
		t.Fatalf("count/min/max = %d/%d/%d", h.Count(), h.Min(), h.Max())
	}
	if got := h.ValueAtQuantile(0.1); got != 0 {
		t.Errorf("p10 = %d, want 0", got)
	}
	if got := h.ValueAtQuantile(0.99); relErr(got, math.MaxUint64) > MaxRelativeError {
		t.Errorf("p99 = %d, want ≈ MaxUint64", got)
	}
	// The 128-bit sum does not overflow: mean = 4·(2^64−1)/5.
	if want := 4 * math.Exp2(64) / 5; math.Abs(h.Mean()-want) > 1e-9*want {
		t.Errorf("Mean = %v, want %v", h.Mean(), want)
	}
	if len(h.counts) > NumBuckets {
		t.Errorf("counters grew to %d > NumBuckets %d", len(h.counts), NumBuckets)
	}
	for _, q := range []float64{-1, math.NaN(), 0} {
		if got := h.ValueAtQuantile(q); got != h.Min() {
			t.Errorf("q=%v: got %d, want Min", q, got)
		}
	}
	if got := h.ValueAtQuantile(2); got != h.Max() {
		t.Errorf("q=2: got %d, want Max", got)
	}
	if h.Percentile(100) != h.Max() {
		t.Error("Percentile(100) != Max")
	}

	h.Reset()
	if h.Count() != 0 || h.Min() != 0 || h.Max() != 0 || h.Mean() != 0 || h.ValueAtQuantile(0.5) != 0 {
		t.Error("Reset left state behind")
	}
	h.Record(7)
	if h.ValueAtQuantile(0.5) != 7 || h.Min() != 7 {
		t.Error("record after Reset")
	}
}

// TestBucketLayout: buckets tile the uint64 range without gaps or overlap,
// and every bucket is narrower than 1/SubBuckets of its lower bound.
func TestBucketLayout(t *testing.T) {
	var next uint64
	for i := range NumBuckets {
		lo, hi := bucketRange(i)
		if lo != next {
			t.Fatalf("bucket %d starts at %d, want %d", i, lo, next)
		}
		if hi < lo {
			t.Fatalf("bucket %d: hi %d < lo %d", i, hi, lo)
		}
		if i >= 2*SubBuckets && float64(hi-lo+1) > float64(lo)/SubBuckets {
			t.Fatalf("bucket %d [%d,%d] too wide", i, lo, hi)
		}
		if bucketOf(lo) != i || bucketOf(hi) != i {
			t.Fatalf("bucket %d: bucketOf(lo)=%d bucketOf(hi)=%d", i, bucketOf(lo), bucketOf(hi))
		}
		next = hi + 1
		if hi == math.MaxUint64 {
			if i != NumBuckets-1 {
				t.Fatalf("range ends at bucket %d, want %d", i, NumBuckets-1)
			}
			return
		}
	}
	t.Fatalf("buckets end at %d before MaxUint64", next)
}

func BenchmarkRecord(b *testing.B) {
	h := New()
	r := rand.New(rand.NewPCG(1, 1))
	vals := make([]uint64, 1024)
	for i := range vals {
		vals[i] = 10_000 + r.Uint64N(1_000_000)
	}
	b.ResetTimer()
	for i := range b.N {
		h.Record(vals[i&1023])
	}
}
