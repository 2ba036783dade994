package store

import (
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the store's source of time (STYLE 3: injected, so TTL and
// eviction tests never sleep).
type Clock interface {
	// NowNano returns Unix time in nanoseconds.
	NowNano() int64
}

// coarseClock reads the system clock once per resolution tick so that the hot
// path pays an atomic load, not a clock read (DESIGN.md "Hot path").
//
// Its time is the wall clock read once at start plus the monotonic time
// elapsed since: a step of the system clock afterwards (an NTP correction, an
// operator's date -s) does not move it, so a forward jump does not expire
// every key with a shorter TTL at once and a backward jump does not stall
// expiry. The cost: a node whose wall clock was wrong when it started stays
// off by that much until it restarts (docs/DECISIONS.md D19).
//
// An idle node does not tick: once nobody has woken the clock for
// coarseParkAfter it parks, and a read of a parked clock reads the system
// clock itself and wakes it. A 1 ms tick was most of an idle node's CPU
// (D62: 2.6 % of a core, 0.9 % without it), while a busy node keeps
// reading a value the tick moves.
type coarseClock struct {
	now    atomic.Int64
	parked atomic.Bool   // the tick sleeps until a read wakes it
	wake   chan struct{} // capacity 1: a read's wake-up is never lost, never waited for
	base   int64         // wall clock at start, Unix nanoseconds
	start  time.Time     // carries the monotonic reading the clock counts from
	stop   chan struct{}
	done   chan struct{}
}

const (
	coarseResolution = time.Millisecond
	// coarseParkAfter: the ticks a clock runs after its last wake-up
	// before it parks (100 ms). Under load a parked clock is woken by the
	// next read at once: one system-clock read every 100 ms.
	coarseParkAfter = 100
)

func newCoarseClock() *coarseClock {
	start := time.Now()
	return newCoarseClockAt(start.UnixNano(), start)
}

// newCoarseClockAt starts a clock reading base at the monotonic instant start.
func newCoarseClockAt(base int64, start time.Time) *coarseClock {
	c := &coarseClock{base: base, start: start, wake: make(chan struct{}, 1), stop: make(chan struct{}),
		done: make(chan struct{})}
	c.now.Store(c.precise())
	go c.run()
	return c
}

// precise is the clock's exact time now: base plus the monotonic elapsed.
func (c *coarseClock) precise() int64 { return c.base + int64(time.Since(c.start)) }

func (c *coarseClock) run() {
	defer close(c.done)
	t := time.NewTicker(coarseResolution)
	defer t.Stop()
	for ticks := 0; ; ticks++ {
		select {
		case <-c.stop:
			return
		case <-t.C:
			c.advance(c.precise())
		}
		if ticks < coarseParkAfter {
			continue
		}
		// Park: from here a read reads the system clock and wakes us.
		t.Stop()
		c.parked.Store(true)
		select {
		case <-c.stop:
			return
		case <-c.wake:
		}
		c.advance(c.precise())
		t.Reset(coarseResolution)
		ticks = 0
	}
}

func (c *coarseClock) NowNano() int64 {
	if c.parked.Load() {
		return c.unpark()
	}
	return c.now.Load()
}

// peek is the time for a background reader (the expiry sweep): the
// ticking value, or the exact time while parked — without waking the tick,
// which only the hot path's reads need.
func (c *coarseClock) peek() int64 {
	if c.parked.Load() {
		return c.precise()
	}
	return c.now.Load()
}

// unpark is a read of a parked clock: the exact time, stored before the
// clock is marked running so that a read that finds it running reads a
// value at least this fresh; the first such read wakes the tick.
func (c *coarseClock) unpark() int64 {
	now := c.precise()
	c.advance(now)
	if c.parked.CompareAndSwap(true, false) {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return now
}

// advance moves the clock forward to now, never back: a tick that fired
// before a precise write reading must not undo it (a read would then see a
// TTL above the one just set).
func (c *coarseClock) advance(now int64) {
	for {
		cur := c.now.Load()
		if now <= cur || c.now.CompareAndSwap(cur, now) {
			return
		}
	}
}

func (c *coarseClock) close() {
	close(c.stop)
	<-c.done
}

// ManualClock is a Clock that moves only when told to. Tests use it to expire
// keys without sleeping.
type ManualClock struct {
	mu  sync.Mutex // guards now
	now int64
}

// NewManualClock returns a clock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start.UnixNano()}
}

// NowNano implements Clock.
func (m *ManualClock) NowNano() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.now
}

// Advance moves the clock forward by d.
func (m *ManualClock) Advance(d time.Duration) {
	m.mu.Lock()
	m.now += int64(d)
	m.mu.Unlock()
}

// writeNow is the time a write stamps into a record (creation, expiry,
// stream ids). It reads the system clock when the store owns a coarse one:
// under CPU starvation the coarse tick lags, and a TTL computed from a
// lagging clock would expire early. Reads, and writes that compute no time
// (nowFor), keep the cheap coarse reading: a lag there only keeps a key a
// moment longer, or stamps its access a moment early.
func (s *Store) writeNow() int64 {
	if s.coarse == nil {
		return s.clock.NowNano()
	}
	now := s.coarse.precise()
	s.coarse.advance(now)
	return now
}

// nowFor is writeNow for a caller that computes a time from it (an expiry
// from a relative TTL, a stream ID), else the coarse reading.
func (s *Store) nowFor(precise bool) int64 {
	if precise {
		return s.writeNow()
	}
	return s.clock.NowNano()
}
