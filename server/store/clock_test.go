package store

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
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

// TestAnIdleStoreSweepsWithAParkedClock: the periodic sweep of an idle
// store reads no clock, so the clock stays parked (D97: the sweep's check
// for lapsed transactions read it every 100 ms and kept an idle node's
// clock ticking 1 000 times a second).
func TestAnIdleStoreSweepsWithAParkedClock(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SweepInterval = time.Hour // the test sweeps itself
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Put("k", []byte("v"), &kv.PutOptions{TTL: time.Hour})
	deadline := time.Now().Add(10 * time.Second)
	for !s.coarse.parked.Load() {
		if time.Now().After(deadline) {
			t.Fatal("the idle store's clock did not park in 10 s")
		}
		time.Sleep(time.Millisecond)
	}
	for range 10 {
		s.SweepOnce()
		if !s.coarse.parked.Load() {
			t.Fatal("a sweep of an idle store woke its clock")
		}
	}
}

// lagClock gives s a coarse clock that reads lag behind the exact time and
// never ticks: what CPU starvation does to the tick.
func lagClock(t *testing.T, s *Store, lag time.Duration) {
	t.Helper()
	s.coarse.close()
	c := &coarseClock{base: s.coarse.base, start: s.coarse.start, wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{})}
	close(c.done) // no tick goroutine: close() finds it done
	c.now.Store(c.precise() - int64(lag))
	s.coarse, s.clock = c, c
}

// A write that computes a time from the clock — an expiry from a relative
// TTL, a stream ID, a lease — reads the exact time (writeNow), while the
// other writes read the cheap coarse clock (handler.stamps, nowFor). The
// failure this prevents: under CPU starvation the coarse tick lags, and a
// TTL computed from it expires the key early by the lag (on this node only:
// its replicas hold the owner's instant).
func TestWritesThatComputeATimeReadTheExactClock(t *testing.T) {
	const lag = 10 * time.Second
	for _, tc := range []struct {
		name  string
		write func(s *Store) kv.Reply
		// at is the time the write computed, read back from the store.
		at  func(t *testing.T, s *Store) int64
		ttl time.Duration
	}{
		{"EXPIRE from seconds", func(s *Store) kv.Reply {
			s.Exec(kv.NewCmd(kv.CmdLPush, "k", "v"))
			return s.Exec(kv.NewCmd(kv.CmdExpire, "k", "100"))
		}, expiryOf("k"), 100 * time.Second},
		{"PEXPIRE from milliseconds", func(s *Store) kv.Reply {
			s.Put("k", []byte("v"), nil)
			return s.Exec(kv.NewCmd(kv.CmdPExpire, "k", "100000"))
		}, expiryOf("k"), 100 * time.Second},
		{"SET with a TTL", func(s *Store) kv.Reply {
			if r := s.Put("k", []byte("v"), &kv.PutOptions{TTL: 100 * time.Second}); !r.OK() {
				return kv.BadRequest(r.Status.String())
			}
			return kv.IntReply(1)
		}, expiryOf("k"), 100 * time.Second},
		{"a lock's lease", func(s *Store) kv.Reply {
			return s.Exec(kv.NewCmd(kv.CmdLockAcquire, "k", "token", "100000"))
		}, expiryOf("k"), 100 * time.Second},
		{"XADD's generated ID", func(s *Store) kv.Reply {
			return s.Exec(kv.NewCmd(kv.CmdXAdd, "k", "*", "f", "v"))
		}, func(t *testing.T, s *Store) int64 {
			r := s.Exec(kv.NewCmd(kv.CmdXRange, "k", "-", "+"))
			if len(r.Array) != 1 || len(r.Array[0].Array) == 0 {
				t.Fatalf("XRANGE: %+v", r)
			}
			id := string(r.Array[0].Array[0].Bulk)
			ms, err := strconv.ParseInt(id[:strings.IndexByte(id, '-')], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return ms * int64(time.Millisecond)
		}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			lagClock(t, s, lag)
			before := s.coarse.precise()
			if r := tc.write(s); r.Status != kv.StatusSuccess {
				t.Fatalf("write: %v %s", r.Status, r.Message)
			}
			// Millisecond truncation (an expiry in ms, a stream ID) may
			// take up to 1 ms off; the lag would take 10 s.
			if got := tc.at(t, s) - int64(tc.ttl); got < before-int64(time.Millisecond) {
				t.Fatalf("the write computed its time %v before the exact clock: it read the lagging coarse clock",
					time.Duration(before-got))
			}
		})
	}
}

// expiryOf reads key's expiry instant from its record.
func expiryOf(key string) func(t *testing.T, s *Store) int64 {
	return func(t *testing.T, s *Store) int64 {
		t.Helper()
		r := s.SegmentFor(key).items.get(key)
		if r == nil || r.ExpiresAt() == 0 {
			t.Fatalf("%s has no expiry", key)
		}
		return r.ExpiresAt()
	}
}
