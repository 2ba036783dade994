package store

import (
	"fmt"
	"math"
)

// Runtime memory limits: the cap and the eviction policy start from Config
// and may change while the store runs (CONFIG SET maxmemory /
// maxmemory-policy). Every reader goes through maxMemory and
// evictionPolicy, which load atomics, so a change takes effect on the next
// write and the next eviction run without a lock on the hot path.

// maxMemory is the current cap on owned bytes.
func (s *Store) maxMemory() int64 { return s.maxMem.Load() }

// evictionPolicy is the current eviction policy.
func (s *Store) evictionPolicy() EvictionPolicy { return EvictionPolicy(s.policy.Load()) }

// SetMaxMemory changes the cap on owned bytes. It must be positive (there is
// no unlimited, R-MEM-1). Lowering it below the owned bytes wakes the
// eviction loop at once (an evicting policy) or makes growing writes fail
// with CapacityExceeded (NoEviction).
func (s *Store) SetMaxMemory(n int64) error {
	if n <= 0 {
		return fmt.Errorf("%w: max memory bytes must be positive (there is no unlimited), got %d", ErrInvalidConfig, n)
	}
	s.maxMem.Store(n)
	s.resetWake()
	return nil
}

// SetEviction changes the eviction policy. Switching to NoEviction returns
// once no eviction pass runs: a pass that began under the old policy stops
// at its next step, so nothing is evicted after the call (CONFIG SET
// maxmemory-policy noeviction; a late pass made a write succeed after the
// store had answered OOM).
func (s *Store) SetEviction(p EvictionPolicy) error {
	if !p.valid() {
		return fmt.Errorf("%w: unknown eviction policy %d", ErrInvalidConfig, p)
	}
	s.policy.Store(uint32(p))
	if p == NoEviction {
		s.evictMu.Lock() // wait for the pass in progress; later ones return at once
		s.evictMu.Unlock()
	}
	s.resetWake()
	return nil
}

// resetWake recomputes the owned bytes past which a write wakes the
// evictor, and wakes it if the store is already past them.
func (s *Store) resetWake() {
	at := int64(math.MaxInt64)
	if s.cfg.EvictionWake && s.evictionPolicy() != NoEviction {
		at = int64(float64(s.maxMemory()) * s.cfg.EvictionTrigger)
	}
	s.wakeAt.Store(at)
	if s.owned.Load() > at {
		s.wakeEvictor()
	}
}
