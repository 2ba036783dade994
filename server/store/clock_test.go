package store

import (
	"testing"
	"time"
)

// A step of the system clock must not move the store's clock: a forward
// jump would expire every key with a shorter TTL at once (on this node
// only — its replicas disagree), a backward jump would stall expiry. The
// clock counts monotonic time from its start reading, so a system clock
// that now reads years away from it (what a jump looks like from inside)
// leaves it where elapsed time puts it.
func TestCoarseClockIgnoresWallClockSteps(t *testing.T) {
	for _, tc := range []struct {
		name string
		step time.Duration // system clock minus the clock's start reading
	}{
		{"system clock stepped forward a day", 24 * time.Hour},
		{"system clock stepped back an hour", -time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			base := start.Add(-tc.step).UnixNano()
			c := newCoarseClockAt(base, start)
			defer c.close()
			// Poll until the ticker has advanced the clock a little.
			deadline := time.Now().Add(5 * time.Second)
			for c.NowNano() < base+int64(5*time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("the clock never advanced")
				}
				time.Sleep(time.Millisecond)
			}
			elapsed := time.Since(start)
			got := time.Duration(c.NowNano() - base)
			if got < 0 || got > elapsed {
				t.Fatalf("clock moved %v in %v of elapsed time (it followed the system clock's step of %v)", got, elapsed, tc.step)
			}
			if p := time.Duration(c.precise() - base); p < got || p > time.Since(start) {
				t.Fatalf("precise reading %v outside [%v, %v]", p, got, time.Since(start))
			}
		})
	}
}

// An idle clock stops ticking (D62's idle CPU: the 1 ms tick was most of
// it) and must not hand out the time it parked at: a read of a parked
// clock is the exact time — a key read 50 ms past its TTL on a node that
// had been idle would otherwise still be there — and wakes the tick.
func TestCoarseClockParksWhenIdleAndWakesExact(t *testing.T) {
	c := newCoarseClock()
	defer c.close()
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(time.Millisecond)
		}
	}
	waitFor("the idle clock to park", c.parked.Load)
	waitFor("the parked value to fall behind", func() bool { return c.precise() > c.now.Load()+int64(2*time.Millisecond) })
	before := c.precise()
	if got := c.NowNano(); got < before {
		t.Fatalf("a parked clock read %v behind the exact time", time.Duration(before-got))
	}
	if c.parked.Load() {
		t.Fatal("a read left the clock parked")
	}
	woke := c.now.Load()
	waitFor("the tick to run again", func() bool { return c.now.Load() > woke+int64(2*time.Millisecond) })
	waitFor("the clock to park again", c.parked.Load)
}
