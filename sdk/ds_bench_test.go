package sdk_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// Per-element data-structure commands on the embedded backend: the cost of
// the typed surface + Do + the store engine, without a network.
//
//	go test -run '^$' -bench BenchmarkDS -benchmem ./sdk/

const (
	benchDSKeys    = 64   // collections, spread over segments
	benchDSMembers = 1024 // fields / members per collection
)

type dsBench struct {
	c       *sdk.Client
	keys    []string
	members []string
	value   []byte
}

func newDSBench(b *testing.B) *dsBench {
	b.Helper()
	cfg := store.DefaultConfig()
	cfg.MaxItemBytes = int(cfg.MaxMemoryBytes) // the pushed lists grow by b.N/64 elements, past the default 4 MiB per key
	c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/ds-bench-%d", dsSeq.Add(1)), sdk.WithEmbeddedConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	d := &dsBench{c: c, keys: make([]string, benchDSKeys), members: make([]string, benchDSMembers), value: make([]byte, 32)}
	for i := range d.keys {
		d.keys[i] = fmt.Sprintf("bench:%04d", i)
	}
	for i := range d.members {
		d.members[i] = fmt.Sprintf("member:%06d", i) // 13 bytes
	}
	return d
}

// at picks the key and member of iteration i.
func (d *dsBench) at(i int) (key, member string) {
	return d.keys[i%benchDSKeys], d.members[(i/benchDSKeys)%benchDSMembers]
}

// fill runs op over every key × member once (outside the timer).
func (d *dsBench) fill(b *testing.B, op func(key, member string) error) {
	b.Helper()
	for i := range benchDSKeys * benchDSMembers {
		if err := op(d.at(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// run measures op serially and from GOMAXPROCS goroutines.
func (d *dsBench) run(b *testing.B, op func(key, member string) error) {
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if err := op(d.at(i)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var seq atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			i := int(seq.Add(1)) * 7919 // each goroutine starts elsewhere
			for pb.Next() {
				if err := op(d.at(i)); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}

func BenchmarkDSHashSet(b *testing.B) {
	d := newDSBench(b)
	ctx, h := context.Background(), d.c.Hashes()
	d.run(b, func(k, m string) error { _, err := h.SetField(ctx, k, m, d.value); return err })
}

func BenchmarkDSHashGet(b *testing.B) {
	d := newDSBench(b)
	ctx, h := context.Background(), d.c.Hashes()
	d.fill(b, func(k, m string) error { _, err := h.SetField(ctx, k, m, d.value); return err })
	d.run(b, func(k, m string) error { _, _, err := h.Get(ctx, k, m); return err })
}

// BenchmarkDSHashGetDo is HGET through Client.Do directly: the difference
// with BenchmarkDSHashGet is the typed surface's own cost.
func BenchmarkDSHashGetDo(b *testing.B) {
	d := newDSBench(b)
	ctx, h := context.Background(), d.c.Hashes()
	d.fill(b, func(k, m string) error { _, err := h.SetField(ctx, k, m, d.value); return err })
	d.run(b, func(k, m string) error {
		_, err := d.c.Do(ctx, sdk.Cmd{Op: sdk.CmdHGet, Key: k, Args: [][]byte{[]byte(m)}})
		return err
	})
}

func BenchmarkDSSetAdd(b *testing.B) {
	d := newDSBench(b)
	ctx, s := context.Background(), d.c.Sets()
	d.run(b, func(k, m string) error { _, err := s.Add(ctx, k, m); return err })
}

func BenchmarkDSSetIsMember(b *testing.B) {
	d := newDSBench(b)
	ctx, s := context.Background(), d.c.Sets()
	d.fill(b, func(k, m string) error { _, err := s.Add(ctx, k, m); return err })
	d.run(b, func(k, m string) error { _, err := s.IsMember(ctx, k, m); return err })
}

func BenchmarkDSSortedSetAdd(b *testing.B) {
	d := newDSBench(b)
	ctx, z := context.Background(), d.c.SortedSets()
	var score atomic.Int64 // a changing score: ZADD re-scores (skiplist delete + insert)
	d.run(b, func(k, m string) error {
		_, err := z.Add(ctx, k, sdk.Member{Member: m, Score: float64(score.Add(1) & 1023)})
		return err
	})
}

func BenchmarkDSSortedSetScore(b *testing.B) {
	d := newDSBench(b)
	ctx, z := context.Background(), d.c.SortedSets()
	d.fill(b, func(k, m string) error { _, err := z.Add(ctx, k, sdk.Member{Member: m, Score: 1.5}); return err })
	d.run(b, func(k, m string) error { _, _, err := z.Score(ctx, k, m); return err })
}

// BenchmarkDSListPush pushes onto 64 lists; they grow by b.N/64 elements.
func BenchmarkDSListPush(b *testing.B) {
	d := newDSBench(b)
	ctx, l := context.Background(), d.c.Lists()
	d.run(b, func(k, _ string) error { _, err := l.LPush(ctx, k, d.value); return err })
}

// BenchmarkDSListPop pops from lists filled with b.N elements beforehand.
func BenchmarkDSListPop(b *testing.B) {
	ctx := context.Background()
	prefill := func(b *testing.B, d *dsBench) {
		b.Helper()
		batch := make([][]byte, 256)
		for i := range batch {
			batch[i] = d.value
		}
		perKey := b.N/benchDSKeys + 1
		for _, k := range d.keys {
			for n := 0; n < perKey; n += len(batch) {
				if _, err := d.c.Lists().RPush(ctx, k, batch...); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	b.Run("serial", func(b *testing.B) {
		d := newDSBench(b)
		prefill(b, d)
		l := d.c.Lists()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			if _, ok, err := l.LPop(ctx, d.keys[i%benchDSKeys]); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		d := newDSBench(b)
		prefill(b, d)
		l := d.c.Lists()
		var seq atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			i := int(seq.Add(1))
			for pb.Next() {
				// Goroutines drain keys unevenly, so a pop may find a list
				// empty near the end: still one LPOP.
				if _, _, err := l.LPop(ctx, d.keys[i%benchDSKeys]); err != nil {
					b.Error(err)
					return
				}
				i++
			}
		})
	})
}
