package hybrid_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/maypok86/otter/v2"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/server/store"
)

// product is the value every benchmark caches.
type product struct {
	ID    int
	Name  string
	Price float64
}

const benchKey = "product:42"

var benchValue = product{ID: 42, Name: "desk lamp", Price: 19.9}

func loadProduct(context.Context) (product, error) { return benchValue, nil }

func loadProductByID(_ context.Context, id int) (product, error) {
	return product{ID: id, Name: "desk lamp", Price: 19.9}, nil
}

func benchCache(b *testing.B, opts hybrid.Options) *hybrid.Cache {
	b.Helper()
	realClock := func(c *store.Config) { c.SweepInterval = store.DefaultSweepInterval }
	l1 := connect(b, nil, realClock)
	l2 := connect(b, nil, realClock)
	h := hybrid.New(l1, l2, opts)
	b.Cleanup(func() { _ = h.Close() })
	if _, err := hybrid.GetOrCreate(context.Background(), h, benchKey, loadProduct, nil); err != nil {
		b.Fatal(err)
	}
	return h
}

func sink(b *testing.B, v product, err error) {
	if err != nil || v.ID != 42 {
		b.Fatalf("bad hit: %+v %v", v, err)
	}
}

// BenchmarkL1Hit: GetOrCreate answered from the materialized L1 value
// (validated against the L1 record).
func BenchmarkL1Hit(b *testing.B) {
	h := benchCache(b, hybrid.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
		sink(b, v, err)
	}
}

func BenchmarkL1HitWithState(b *testing.B) {
	h := benchCache(b, hybrid.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := hybrid.GetOrCreateWithState(ctx, h, benchKey, 42, loadProductByID, nil)
		sink(b, v, err)
	}
}

func BenchmarkL1HitParallel(b *testing.B) {
	h := benchCache(b, hybrid.Options{})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			v, err := hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
			sink(b, v, err)
		}
	})
}

// BenchmarkL1HitNoMaterialization: every hit reads L1's bytes and
// deserializes them.
func BenchmarkL1HitNoMaterialization(b *testing.B) {
	h := benchCache(b, hybrid.Options{Flags: hybrid.DisableMaterialization})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
		sink(b, v, err)
	}
}

// BenchmarkL2Hit: L1 disabled; every call is a single flight, a batched
// read of the entry and the "*" marker from an embedded L2, and a decode.
func BenchmarkL2Hit(b *testing.B) {
	h := benchCache(b, hybrid.Options{Flags: hybrid.DisableLocalCache})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		v, err := hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
		sink(b, v, err)
	}
}

// BenchmarkL2HitCancellableCtx: as BenchmarkL2Hit with a request-style
// context, so the caller waits on the flight through a channel.
func BenchmarkL2HitCancellableCtx(b *testing.B) {
	h := benchCache(b, hybrid.Options{Flags: hybrid.DisableLocalCache})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		v, err := hybrid.GetOrCreate(ctx, h, benchKey, loadProduct, nil)
		sink(b, v, err)
	}
}

// Baselines: the same value in otter/v2 (with and without expiry) and in a
// sync.Map.

func otterCache(withExpiry bool) *otter.Cache[string, product] {
	o := &otter.Options[string, product]{MaximumSize: 10_000}
	if withExpiry {
		o.ExpiryCalculator = otter.ExpiryWriting[string, product](5 * time.Minute)
	}
	c := otter.Must(o)
	c.Set(benchKey, benchValue)
	return c
}

func benchOtter(b *testing.B, withExpiry bool) {
	c := otterCache(withExpiry)
	b.ReportAllocs()
	for b.Loop() {
		v, ok := c.GetIfPresent(benchKey)
		if !ok || v.ID != 42 {
			b.Fatal("otter miss")
		}
	}
}

func BenchmarkOtterGet(b *testing.B)           { benchOtter(b, false) }
func BenchmarkOtterGetWithExpiry(b *testing.B) { benchOtter(b, true) }

func BenchmarkOtterGetParallel(b *testing.B) {
	c := otterCache(true)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if v, ok := c.GetIfPresent(benchKey); !ok || v.ID != 42 {
				b.Fatal("otter miss")
			}
		}
	})
}

func BenchmarkSyncMapLoad(b *testing.B) {
	var m sync.Map
	m.Store(benchKey, benchValue)
	b.ReportAllocs()
	for b.Loop() {
		x, ok := m.Load(benchKey)
		if v := x.(product); !ok || v.ID != 42 {
			b.Fatal("sync.Map miss")
		}
	}
}
