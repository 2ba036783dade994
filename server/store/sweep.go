package store

import (
	"math/rand/v2"
	"time"
)

// Expiry sampling in the manner of Redis's active expire cycle: sample a few
// keys with a TTL, drop the expired ones, and go again while the sample says
// a large share of them is expired.
const (
	sweepSample        = 20
	sweepRepeatPercent = 25
	sweepBudget        = time.Millisecond // per segment per tick
	// sweepMaxScan bounds the index slots one sample reads looking for
	// keys with a TTL: 64 KiB of the hash array (sweepScanFor).
	sweepMaxScan = 1 << 14
)

// sweepScanFor is how many of a segment's index slots one expiry sample
// reads, the keys with a TTL being marked in the index's hash array (D89):
// enough to meet about twice sweepSample of them at their density, within
// [sweepSample, sweepMaxScan] and the table. Fewer, and a segment where
// few keys have a TTL kept its expired ones for minutes (a fixed 1 024
// slots found 0.1 of 10 such keys among 100 k a round); more, and every
// round of a segment whose keys all have one read the whole table.
func sweepScanFor(slots, expiring int) int {
	if expiring <= 0 || slots <= 0 {
		return 0
	}
	n := 2 * sweepSample * slots / expiring
	return min(max(n, sweepSample), sweepMaxScan, slots)
}

func (s *Store) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.SweepOnce()
		}
	}
}

// SweepOnce runs one pass of the expiry sweeper and the tombstone pruner over
// every segment. The background loop calls it every SweepInterval; tests call
// it directly with a manual clock.
func (s *Store) SweepOnce() (expired, pruned int) {
	for _, g := range s.segments {
		expired += g.sweepExpired()
		pruned += g.pruneTombstones()
		g.drainIdleTables(sweepDrainSlots)
	}
	// Prepared transactions whose coordinator vanished release their keys
	// and staged values here too, not only on the next transaction call.
	// Only when some wait: txAcquire reads the clock, and a read wakes a
	// parked one — the sweep, every 100 ms, kept an idle node's clock
	// ticking 1 000 times a second (D97).
	if s.tx.waiting() {
		t, _ := s.txAcquire("")
		t.mu.Unlock()
	}
	return expired, pruned
}

// backgroundNow is the time for the store's periodic work: a read that
// does not wake a parked coarse clock, so that an idle node's sweeps leave
// it parked.
func (s *Store) backgroundNow() int64 {
	if s.coarse != nil && s.clock == Clock(s.coarse) {
		return s.coarse.peek()
	}
	return s.clock.NowNano()
}

// sweepExpired turns expired records of an owned segment into tombstones
// (OpExpired), so that replicas converge on the expiry through the op-log.
// Replica segments wait for their owner's OpExpired.
func (g *Segment) sweepExpired() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.owned || g.fenced || g.items.expiring == 0 {
		return 0
	}
	deadline := time.Now().Add(sweepBudget)
	total := 0
	var sample [sweepSample]*Record
	for {
		now := g.store.backgroundNow()
		// The sample is taken before any is expired: expiring one changes
		// the table the walk is reading.
		sampled := 0
		for r := range g.items.expiringFrom(rand.Uint64(), sweepScanFor(len(g.items.recs), g.items.expiring)) {
			sample[sampled] = r
			if sampled++; sampled == sweepSample {
				break
			}
		}
		found := 0
		for _, r := range sample[:sampled] {
			if r.expiredAt(now) {
				found++
				g.tombstoneLocked(r, OpExpired, now)
			}
		}
		clear(sample[:sampled])
		total += found
		if sampled == 0 || found*100 < sampled*sweepRepeatPercent || time.Now().After(deadline) {
			return total
		}
	}
}

// tombstonePrunable is the pruning rule (R-KV-4): a tombstone may go once
// every replica has applied it — its revision is at or below the low-water
// mark. Without replicas the mark is the segment's own revision.
func tombstonePrunable(tombRevision, lowWater uint64, hasLowWater bool, segRevision uint64) bool {
	if !hasLowWater {
		lowWater = segRevision
	}
	return tombRevision <= lowWater
}

// pruneTombstones drops tombstones that no replica still needs.
func (g *Segment) pruneTombstones() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.tombstones) == 0 {
		return 0
	}
	kept := g.tombstones[:0]
	pruned := 0
	for _, key := range g.tombstones {
		r := g.items.get(key)
		if r == nil || !r.Deleted() {
			continue // recreated or already pruned
		}
		if !tombstonePrunable(r.Revision, g.lowWater, g.hasLowWater, g.revision) || g.absentWatches.holds(key) {
			kept = append(kept, key)
			continue
		}
		g.items.delete(key)
		g.bytes -= r.accountedBytes()
		g.store.account(g.owned, -r.accountedBytes(), 0)
		pruned++
	}
	clear(g.tombstones[len(kept):])
	g.tombstones = kept
	return pruned
}
