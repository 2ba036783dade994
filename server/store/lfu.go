package store

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// LFU (allkeys-lfu, volatile-lfu) as Redis keeps it: under an LFU policy a
// record's access field is not a recency stamp but, in its low 24 bits,
// the minute its counter last changed (16 bits, wrapping) and an 8-bit
// logarithmic access counter. A read or write draws whether the counter
// grows (ever less likely as it grows: about a million accesses take it to
// 255 with the default log factor 10) after taking off one for each decay
// period (lfu-decay-time minutes, default 1) since the last change. The
// evictor evicts the lowest counters first. Switching between recency and
// frequency policies reinterprets the field, as in Redis: the ranking is
// rough until the keys have been used again.

// lfuInitCounter is a new key's counter (Redis's LFU_INIT_VAL): a key just
// written is not the first evicted before it had a chance to be read.
const lfuInitCounter = 5

// Defaults of the two LFU settings (Redis's lfu-log-factor, lfu-decay-time).
const (
	DefaultLFULogFactor    = 10
	DefaultLFUDecayMinutes = 1
)

// lfuPack is an access field under LFU: the minute of the last change and
// the counter.
func lfuPack(minute uint16, counter uint8) uint32 { return uint32(minute)<<8 | uint32(counter) }

// lfuDecayed is the counter of access at minute now: one less for each
// whole decay period since its last change, never below 0. A decay of 0
// minutes never decays. Minutes wrap at 2^16 (45 days), as Redis's do: a
// key untouched for longer decays by the remainder only.
func lfuDecayed(access uint32, now uint16, decayMinutes int) uint8 {
	counter := uint8(access)
	if decayMinutes <= 0 {
		return counter
	}
	periods := int(now-uint16(access>>8)) / decayMinutes
	if periods >= int(counter) {
		return 0
	}
	return counter - uint8(periods)
}

// lfuIncremented is counter after one access, given a uniform draw in
// [0,1): it grows with probability 1/((counter-5)·logFactor+1), so that a
// counter of 8 bits spans from a few accesses to millions; it stops at 255.
func lfuIncremented(counter uint8, logFactor int, draw float64) uint8 {
	if counter == 255 {
		return 255
	}
	base := max(float64(counter)-lfuInitCounter, 0)
	if draw < 1/(base*float64(max(logFactor, 0))+1) {
		counter++
	}
	return counter
}

// lfuTouched is the access field after an access at minute now.
func lfuTouched(access uint32, now uint16, decayMinutes, logFactor int, draw float64) uint32 {
	return lfuPack(now, lfuIncremented(lfuDecayed(access, now, decayMinutes), logFactor, draw))
}

// lfuMinute is the store's minute clock for the LFU fields.
func (s *Store) lfuMinute(now int64) uint16 { return uint16((now - s.start) / int64(time.Minute)) }

// freshAccess is the access field of a new key written at now: a recency
// stamp, or under LFU the initial counter.
func (s *Store) freshAccess(now int64) uint32 {
	if s.evictionPolicy().LFU() {
		return lfuPack(s.lfuMinute(now), lfuInitCounter)
	}
	return s.stamp(now)
}

// touch records an access to r at now, by the policy in force.
func (s *Store) touch(r *Record, now int64) {
	if !s.evictionPolicy().LFU() {
		r.touch(s.stamp(now))
		return
	}
	old := atomic.LoadUint32(&r.access)
	if a := s.lfuTouchedField(old, now); a != old {
		atomic.StoreUint32(&r.access, a)
	}
}

func (s *Store) lfuTouchedField(access uint32, now int64) uint32 {
	return lfuTouched(access, s.lfuMinute(now), int(s.lfuDecay.Load()), int(s.lfuLog.Load()), rand.Float64())
}

// inheritAccess gives rec, which replaces old, its access field under LFU:
// an overwrite is one more access to the key, not a new key (Redis keeps
// the counter across SET). Called under the segment's write lock.
func (s *Store) inheritAccess(rec, old *Record) {
	if old == nil || old.Deleted() || old == rec || !s.evictionPolicy().LFU() {
		return
	}
	atomic.StoreUint32(&rec.access, s.lfuTouchedField(atomic.LoadUint32(&old.access), s.clock.NowNano()))
}

// lfuCounter is r's counter at now without counting an access (OBJECT FREQ,
// the evictor's ranking).
func (s *Store) lfuCounter(r *Record, now int64) uint8 {
	return lfuDecayed(atomic.LoadUint32(&r.access), s.lfuMinute(now), int(s.lfuDecay.Load()))
}

// LFU returns the LFU settings in force: the log factor and the decay
// period in minutes.
func (s *Store) LFU() (logFactor, decayMinutes int) {
	return int(s.lfuLog.Load()), int(s.lfuDecay.Load())
}

// SetLFU changes the LFU settings: the log factor (how fast the counter
// saturates) and the decay period in minutes (0: no decay). Negative values
// are invalid.
func (s *Store) SetLFU(logFactor, decayMinutes int) error {
	if logFactor < 0 || decayMinutes < 0 || logFactor > 1<<31-1 || decayMinutes > 1<<31-1 {
		return fmt.Errorf("%w: LFU log factor and decay minutes must be in 0..2^31-1, got %d and %d", ErrInvalidConfig, logFactor, decayMinutes)
	}
	s.lfuLog.Store(int32(logFactor))
	s.lfuDecay.Store(int32(decayMinutes))
	return nil
}
