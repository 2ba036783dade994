package store

import "time"

// Memory beyond the accounted records, and the process memory bound
// (issue 16: memory you can size a container by).

// MemoryUsage is the store's memory by part. The record bytes are accounted
// exactly as the cap counts them; the op-log and index figures are estimates
// of what those structures retain (values and effects plus a per-entry cost).
type MemoryUsage struct {
	OwnedBytes   int64 // accounted bytes of owned records (what the cap governs)
	ReplicaBytes int64 // accounted bytes of replica records
	// OpLogBytes is what the segments' op-logs retain: the values and
	// effects of their entries plus a per-entry cost. A value still live is
	// shared with its record (counted in both); a superseded one is held by
	// the log alone until it is trimmed (OpLogMaxOps, OpLogMaxBytes).
	OpLogBytes   int64
	OpLogEntries int64
	// IndexBytes is the TTL index and the tombstone list.
	IndexBytes int64
	// EvictionCeiling is the owned bytes the eviction loop works against:
	// MaxMemoryBytes, or less while the process is over MaxProcessBytes.
	EvictionCeiling int64
}

// Per-entry costs of the structures MemoryUsage estimates: a log entry (kind
// and two pointers) plus the record header it usually holds alone; a
// tombstone list slot. (Keys with a TTL cost no index of their own: D89.)
const (
	opLogEntryOverhead = 24 + 96
	tombstoneSlotBytes = 16
)

// Memory returns the store's memory by part. It takes every segment's read
// lock in turn: for INFO and metrics, not for a hot path.
func (s *Store) Memory() MemoryUsage {
	m := MemoryUsage{OwnedBytes: s.owned.Load(), ReplicaBytes: s.replica.Load(), EvictionCeiling: s.evictionCap()}
	for _, g := range s.segments {
		g.mu.RLock()
		m.OpLogBytes += int64(g.log.bytes) + int64(g.log.n)*opLogEntryOverhead
		m.OpLogEntries += int64(g.log.n)
		m.IndexBytes += int64(len(g.tombstones)) * tombstoneSlotBytes
		g.mu.RUnlock()
	}
	return m
}

// evictionCap is the cap the eviction loop works against now: MaxMemoryBytes,
// or the lower ceiling process pressure set.
func (s *Store) evictionCap() int64 {
	if c := s.ceiling.Load(); c > 0 {
		return min(c, s.maxMemory())
	}
	return s.maxMemory()
}

// The process-pressure rule's constants: above the limit the ceiling drops
// in proportion to the overshoot (at least pressureMinStep, at most by half
// per check); below pressureRelax × limit it climbs back by pressureRaise of
// the cap per check; in between it holds (the hysteresis band that stops a
// process sitting at its limit from see-sawing). It never goes below
// cap / pressureFloorDiv: past that the limit is too small for the process
// itself, and evicting everything would not help.
const (
	pressureMinStep  = 0.05
	pressureRelax    = 0.90
	pressureRaise    = 0.02
	pressureFloorDiv = 64
)

// nextCeiling is the process-pressure rule, pure: given the process's memory
// now (rss), its limit, the current eviction ceiling and the configured cap,
// the ceiling for the next interval. Over the limit it lowers the ceiling
// so that eviction makes room; back under the relax threshold it raises it
// again towards the cap.
func nextCeiling(rss, limit, ceiling, maxBytes int64) int64 {
	floor := max(maxBytes/pressureFloorDiv, 1)
	switch {
	case limit <= 0 || rss <= 0:
		return maxBytes
	case rss > limit:
		scale := min(1-pressureMinStep, float64(limit)/float64(rss)*(1-pressureMinStep))
		scale = max(scale, 0.5)
		return max(int64(float64(ceiling)*scale), floor)
	case float64(rss) < pressureRelax*float64(limit) && ceiling < maxBytes:
		return min(ceiling+int64(pressureRaise*float64(maxBytes))+1, maxBytes)
	}
	return ceiling
}

// pressureLoop checks the process's memory every ProcessCheckInterval and
// moves the eviction ceiling by nextCeiling; a lowered ceiling runs an
// eviction pass at once.
func (s *Store) pressureLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.ProcessCheckInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
		}
		cur := s.evictionCap()
		next := nextCeiling(s.cfg.ProcessBytes(), s.cfg.MaxProcessBytes, cur, s.maxMemory())
		if next == cur {
			continue
		}
		if next >= s.maxMemory() {
			next = 0 // no pressure
		}
		s.ceiling.Store(next)
		s.pressureChanges.Add(1)
		if next != 0 && next < cur {
			s.wakeEvictor()
		}
	}
}

// wakeEvictor asks the eviction loop for a run now; a run already asked for
// absorbs it.
func (s *Store) wakeEvictor() {
	select {
	case s.evictNow <- struct{}{}:
	default:
	}
}
