package store

import (
	"sort"
	"time"
)

// The change feed's retention (R-OPS-4): when configured, the operations
// the op-log trims are kept a while longer in the segment's feed log, so a
// consumer (a change-feed cursor, a resumed watch, a WAN follower) can
// resume from further back than the op-log reaches. The feed log and the
// op-log together are one contiguous history: every operation with a
// revision above the feed log's floor. Both restart together when the
// segment's history is rewritten (a snapshot install, a merge).
//
// The feed log is bounded per segment by bytes (FeedRetentionBytes) and by
// age (FeedRetentionAge), whichever trims first; its bytes are accounted in
// Stats.FeedBytes.

// feedEntryOverhead is the accounted cost of one retained operation beyond
// its key, value and command arguments (the record header and the slot).
const feedEntryOverhead = 96

type feedEntry struct {
	logEntry
	at   int64 // when the op-log trimmed it (Unix ns)
	size int   // accounted bytes
}

// feedLog is a segment's retention beyond the op-log. Guarded by the
// segment lock.
type feedLog struct {
	entries  []feedEntry // queue: entries[head:] are live, in revision order
	head     int
	bytes    int
	floor    uint64 // every op with revision > floor (and ≤ the op-log's floor) is here
	maxBytes int
	maxAge   int64
}

func (f *feedLog) enabled() bool { return f.maxBytes > 0 || f.maxAge > 0 }

func (f *feedLog) len() int { return len(f.entries) - f.head }

func (f *feedLog) at(i int) *feedEntry { return &f.entries[f.head+i] }

func entryBytes(e *logEntry) int {
	n := feedEntryOverhead + len(e.rec.Key()) + e.rec.ValueLen()
	if e.cmd != nil {
		n += len(e.cmd.Key) + cmdBytes(e.cmd)
	}
	return n
}

// keep retains e, an entry the op-log trims; logFloor is the op-log's
// floor before the trim.
func (g *Segment) keepTrimmedLocked(e logEntry, logFloor uint64) {
	f := &g.feed
	if f.len() == 0 {
		f.floor = logFloor
	}
	fe := feedEntry{logEntry: e, at: g.store.clock.NowNano(), size: entryBytes(&e)}
	f.entries = append(f.entries, fe)
	f.bytes += fe.size
	g.store.feedBytes.Add(int64(fe.size))
	g.trimFeedLocked(fe.at)
}

// trimFeedLocked drops what is past the retention bounds.
func (g *Segment) trimFeedLocked(now int64) {
	f := &g.feed
	for f.len() > 0 {
		old := f.at(0)
		overBytes := f.maxBytes > 0 && f.bytes > f.maxBytes
		overAge := f.maxAge > 0 && now-old.at > f.maxAge
		if !overBytes && !overAge {
			break
		}
		f.floor = old.rev
		f.bytes -= old.size
		g.store.feedBytes.Add(-int64(old.size))
		*old = feedEntry{}
		f.head++
	}
	if f.head > 64 && f.head*2 > len(f.entries) {
		f.entries = append(f.entries[:0:0], f.entries[f.head:]...)
		f.head = 0
	}
}

// resetFeedLocked empties the feed log: the history restarts.
func (g *Segment) resetFeedLocked() {
	f := &g.feed
	g.store.feedBytes.Add(-int64(f.bytes))
	f.entries, f.head, f.bytes = nil, 0, 0
}

// historyFloorLocked is the revision above which the segment's history
// (feed log, then op-log) is complete.
func (g *Segment) historyFloorLocked() uint64 {
	if g.feed.len() > 0 {
		return g.feed.floor
	}
	return g.log.floor
}

// historyEntryLocked finds the operation logged at rev, in the feed log
// or the op-log.
func (g *Segment) historyEntryLocked(rev uint64) (*logEntry, bool) {
	if f := &g.feed; f.len() > 0 && rev <= g.log.floor {
		i := sort.Search(f.len(), func(i int) bool { return f.at(i).rev >= rev })
		if i < f.len() && f.at(i).rev == rev {
			return &f.at(i).logEntry, true
		}
		return nil, false
	}
	i := g.log.firstAfter(rev - 1)
	if i < g.log.n && g.log.at(i).rev == rev {
		return g.log.at(i), true
	}
	return nil, false
}

// eachAfterLocked calls fn for every operation after rev, in revision
// order (rev must be at or above historyFloorLocked), until fn returns
// false.
func (g *Segment) eachAfterLocked(rev uint64, fn func(*logEntry) bool) {
	if f := &g.feed; f.len() > 0 && rev < g.log.floor {
		i := sort.Search(f.len(), func(i int) bool { return f.at(i).rev > rev })
		for ; i < f.len(); i++ {
			if !fn(&f.at(i).logEntry) {
				return
			}
		}
	}
	for i := g.log.firstAfter(rev); i < g.log.n; i++ {
		if !fn(g.log.at(i)) {
			return
		}
	}
}

// FeedBytes is the memory the feed logs of every segment retain.
func (s *Store) FeedBytes() int64 { return s.feedBytes.Load() }

// FeedFloor is the revision above which segment g's whole history (feed
// log and op-log) is held: a cursor below it has expired.
func (g *Segment) FeedFloor() uint64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return g.historyFloorLocked()
}

// feedRetention converts the config's age bound.
func feedRetention(d time.Duration) int64 { return int64(d) }

// SetEpoch records the ownership epoch of the segment's partition (the
// cluster's failover epoch, R-REP-4): change-feed positions and events
// carry it. It never moves backwards.
func (g *Segment) SetEpoch(epoch uint64) {
	for {
		cur := g.epoch.Load()
		if epoch <= cur || g.epoch.CompareAndSwap(cur, epoch) {
			return
		}
	}
}
