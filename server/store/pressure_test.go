package store

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func TestNextCeilingRule(t *testing.T) {
	const mib = 1 << 20
	const maxBytes = 100 * mib
	cases := []struct {
		name                  string
		rss, limit, ceiling   int64
		want                  int64
		preventsFailureOfWhat string
	}{
		{"under the relax threshold at the cap: hold", 80 * mib, 100 * mib, maxBytes, maxBytes, "a ceiling that wanders without pressure"},
		{"just over the limit: at least the minimum step", 101 * mib, 100 * mib, maxBytes, 95 * mib * 100 / 101, "RSS creeping over the limit with no eviction (OOM kill)"},
		{"far over the limit: in proportion", 200 * mib, 100 * mib, 80 * mib, int64(80 * mib * 0.5), "a large overshoot corrected one small step at a time"},
		{"enormously over: at most by half", 1000 * mib, 100 * mib, 80 * mib, 40 * mib, "one bad sample evicting nearly everything"},
		{"over the limit at the floor: stays at the floor", 500 * mib, 100 * mib, maxBytes / pressureFloorDiv, maxBytes / pressureFloorDiv, "evicting every key when the process alone passes the limit"},
		{"in the hysteresis band: hold", 95 * mib, 100 * mib, 50 * mib, 50 * mib, "see-sawing at the limit"},
		{"under the relax threshold: climb back", 50 * mib, 100 * mib, 50 * mib, 50*mib + 2*mib + 1, "a ceiling that never recovers after a spike"},
		{"climbing stops at the cap", 50 * mib, 100 * mib, 99 * mib, maxBytes, "a ceiling above the configured cap"},
		{"no reading: no pressure", 0, 100 * mib, 50 * mib, maxBytes, "a missing RSS reading evicting blindly"},
	}
	for _, c := range cases {
		got := nextCeiling(c.rss, c.limit, c.ceiling, maxBytes)
		// Float rounding: within a kilobyte.
		if d := got - c.want; d < -1024 || d > 1024 {
			t.Errorf("%s: %d, want %d (prevents: %s)", c.name, got, c.want, c.preventsFailureOfWhat)
		}
	}
}

// The pressure loop lowers the ceiling and evicts while the process is over
// its limit, and gives the room back once it is under.
func TestProcessPressureEvictsAndRecovers(t *testing.T) {
	var rss atomic.Int64
	s, _ := newTestStore(t, func(c *Config) {
		c.MaxMemoryBytes = 8 << 20
		c.MaxProcessBytes = 100 << 20
		c.ProcessBytes = rss.Load
		c.ProcessCheckInterval = 5 * time.Millisecond
		c.SweepInterval = 5 * time.Millisecond // prunes the eviction tombstones, which are accounted
	})
	for i := range 20000 {
		s.Put(fmt.Sprint("k", i), make([]byte, 100), nil) // ≈ 4.4 MiB accounted: under the 80 % trigger
	}
	start := s.Stats().OwnedBytes
	if s.EvictOnce(1) != 0 {
		t.Fatal("evicted with no pressure")
	}
	rss.Store(150 << 20) // over the limit
	poll(t, 10*time.Second, "owned bytes to fall under half of what they were", func() bool {
		return s.Stats().OwnedBytes < start/2
	})
	if c := s.Memory().EvictionCeiling; c >= s.Config().MaxMemoryBytes {
		t.Fatalf("ceiling %d under pressure", c)
	}
	rss.Store(10 << 20) // well under
	poll(t, 10*time.Second, "the ceiling to climb back to the cap", func() bool {
		return s.Memory().EvictionCeiling == s.Config().MaxMemoryBytes
	})
}

func poll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A write past the trigger wakes the evictor at once: with a loop that would
// otherwise run once an hour, owned bytes come back under the trigger.
func TestWritePastTheTriggerWakesTheEvictor(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) {
		c.MaxMemoryBytes = 1 << 20
		c.MaxItemBytes = 64 << 10
		c.EvictionWake = true
		c.SweepInterval = 5 * time.Millisecond // prunes the eviction tombstones
	})
	trigger := int64(float64(s.Config().MaxMemoryBytes) * s.Config().EvictionTrigger)
	for i := range 1500 { // 1.5 × the cap of writes
		s.Put(fmt.Sprint("k", i), make([]byte, 1000), nil)
	}
	poll(t, 10*time.Second, "owned bytes back under the trigger", func() bool {
		return s.Stats().OwnedBytes <= trigger && s.Stats().Evicted > 0
	})
}
