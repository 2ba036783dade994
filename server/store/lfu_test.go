package store

import (
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

func TestLFURules(t *testing.T) {
	decay := []struct {
		name         string
		access       uint32
		now          uint16
		decayMinutes int
		want         uint8
	}{
		{"used this minute: no decay, or a busy key would lose its rank between reads", lfuPack(10, 40), 10, 1, 40},
		{"one period per decay-time minutes: an idle hot key cools down", lfuPack(10, 40), 13, 1, 37},
		{"a longer period decays slower", lfuPack(10, 40), 19, 10, 40},
		{"never below 0: a counter wrapping to 255 would make the coldest key the hottest", lfuPack(10, 3), 200, 1, 0},
		{"decay 0: counters never decay (lfu-decay-time 0)", lfuPack(10, 40), 5000, 0, 40},
		{"the minute clock wraps at 2^16: the wrapped difference, not a huge one", lfuPack(65530, 40), 4, 1, 30},
	}
	for _, c := range decay {
		if got := lfuDecayed(c.access, c.now, c.decayMinutes); got != c.want {
			t.Errorf("decay: %s: got %d, want %d", c.name, got, c.want)
		}
	}
	incr := []struct {
		name      string
		counter   uint8
		logFactor int
		draw      float64
		want      uint8
	}{
		{"at or below the initial value every access counts: a new key climbs out of the eviction zone", lfuInitCounter, 10, 0.999, lfuInitCounter + 1},
		{"above it, a draw under 1/((c-5)·f+1) counts", 15, 10, 1.0/101 - 1e-9, 16},
		{"and a draw over it does not: the counter is logarithmic, 8 bits for millions of reads", 15, 10, 1.0 / 101, 15},
		{"log factor 0: every access counts", 200, 0, 0.999, 201},
		{"255 saturates: one more read must not wrap to 0 (the coldest)", 255, 0, 0, 255},
	}
	for _, c := range incr {
		if got := lfuIncremented(c.counter, c.logFactor, c.draw); got != c.want {
			t.Errorf("increment: %s: got %d, want %d", c.name, got, c.want)
		}
	}
	if got := lfuTouched(lfuPack(7, 20), 9, 1, 0, 0.5); got != lfuPack(9, 19) {
		t.Errorf("a touch decays, counts the access and restamps the minute: got %#x, want %#x", got, lfuPack(9, 19))
	}
}

// allkeys-lfu: the keys read often survive an eviction run, even when
// colder keys were used more recently (which an LRU would keep instead).
func TestLFUEvictionKeepsFrequentlyReadKeys(t *testing.T) {
	const cap = 1 << 20
	s, clk := newTestStore(t, func(c *Config) {
		c.MaxMemoryBytes = cap
		c.MaxItemBytes = 64 << 10
		c.Eviction = EvictAllKeysLFU
	})
	if err := s.SetLFU(0, 0); err != nil { // every read counts, nothing decays: the test's counts are exact
		t.Fatal(err)
	}
	value := make([]byte, 1000)
	var frequent []string
	for i := range 50 {
		k := fmt.Sprint("frequent", i)
		s.Put(k, value, nil)
		frequent = append(frequent, k)
		for range 20 {
			s.Get(k)
		}
	}
	clk.Advance(time.Minute)
	// Every other key written after, and each read once: more recent than
	// the frequent ones, used less.
	for i := 0; s.Stats().OwnedBytes < cap*105/100; i++ {
		k := fmt.Sprint("recent", i)
		s.Put(k, value, nil)
		s.Get(k)
	}
	evicted := s.EvictOnce(3)
	if st := s.Stats(); evicted == 0 || st.OwnedBytes > cap*70/100 {
		t.Fatalf("evicted %d, owned %d of a %d cap", evicted, st.OwnedBytes, cap)
	}
	survivors := 0
	for _, k := range frequent {
		if s.Get(k).OK() {
			survivors++
		}
	}
	if survivors < 45 {
		t.Fatalf("only %d/50 frequently read keys survived an LFU eviction", survivors)
	}
}

// volatile-lfu evicts only keys with a TTL, the least used first.
func TestVolatileLFUEvictsOnlyKeysWithATTL(t *testing.T) {
	const cap = 1 << 20
	s, _ := newTestStore(t, func(c *Config) {
		c.MaxMemoryBytes = cap
		c.MaxItemBytes = 64 << 10
		c.Eviction = EvictVolatileLFU
	})
	value := make([]byte, 1000)
	var persistent []string
	for i := 0; s.Stats().OwnedBytes < cap/2; i++ {
		k := fmt.Sprint("keep", i)
		s.Put(k, value, nil)
		persistent = append(persistent, k)
	}
	for i := 0; s.Stats().OwnedBytes < cap*105/100; i++ {
		s.Put(fmt.Sprint("ttl", i), value, &kv.PutOptions{TTL: time.Hour})
	}
	if s.EvictOnce(4) == 0 {
		t.Fatal("volatile-lfu evicted nothing over the cap")
	}
	for _, k := range persistent {
		if !s.Get(k).OK() {
			t.Fatalf("volatile-lfu evicted %s, which has no TTL", k)
		}
	}
}
