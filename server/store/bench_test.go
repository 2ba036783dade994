package store

import (
	"fmt"
	"runtime"
	"strconv"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
)

const benchKeys = 1 << 16

func benchStore(b *testing.B) (*Store, []string) {
	cfg := DefaultConfig()
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key:%012d", i) // 16 bytes
		s.Put(keys[i], make([]byte, 32), nil)
	}
	return s, keys
}

func BenchmarkGet(b *testing.B) {
	s, keys := benchStore(b)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Get(keys[i&(benchKeys-1)])
	}
}

func BenchmarkGetParallel(b *testing.B) {
	s, keys := benchStore(b)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Get(keys[i&(benchKeys-1)])
			i += 7
		}
	})
}

func BenchmarkPut(b *testing.B) {
	s, keys := benchStore(b)
	value := make([]byte, 32)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.Put(keys[i&(benchKeys-1)], value, nil)
	}
}

func BenchmarkPutParallel(b *testing.B) {
	s, keys := benchStore(b)
	value := make([]byte, 32)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			s.Put(keys[i&(benchKeys-1)], value, nil)
			i += 7
		}
	})
}

// BenchmarkMemoryPerKey stores 1 M keys of 16 bytes with 32-byte values and
// reports the heap growth per key (compare with redis-server's INFO memory in
// docs/BENCHMARKS.md).
func BenchmarkMemoryPerKey(b *testing.B) {
	const n = 1_000_000
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		cfg := DefaultConfig()
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		buf := []byte("key:000000000000")
		for i := range n {
			k := strconv.AppendInt(buf[:4], int64(i), 10)
			for len(k) < 16 {
				k = append(k, '_')
			}
			s.Put(string(k), make([]byte, 32), (*kv.PutOptions)(nil))
		}
		s.SweepOnce()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/key")
		b.ReportMetric(float64(s.Stats().OwnedBytes)/n, "accounted-bytes/key")
		runtime.KeepAlive(s)
		s.Close()
	}
}
