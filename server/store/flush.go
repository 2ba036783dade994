package store

import (
	"math/rand/v2"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// Flush removes every live key of the owned segments, each as a logged
// delete (so replicas and watchers see it), and returns how many it
// removed. A replica segment is its owner's to change: it follows the
// owner's deletes through replication instead.
func (s *Store) Flush() int {
	n := 0
	for _, g := range s.segments {
		n += g.flush(s.clock.NowNano())
	}
	return n
}

// flush tombstones the segment's live keys when it is owned (its lock
// released by defer: a panic must not leave it held).
func (g *Segment) flush(now int64) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.owned || g.fenced {
		// A fenced segment is its cut-over's: its keys are flushed on the
		// new owner by the next flush, not here behind the proof.
		return 0
	}
	// Watches see these deletes with Origin CmdFlush: a flush, not a
	// client's DEL (client-side caching sends one flush for them).
	g.origin = kv.CmdFlush
	defer func() { g.origin = 0 }()
	n := 0
	for r := range g.items.all() {
		if !r.Deleted() {
			g.tombstoneLocked(r, OpDelete, now)
			n++
		}
	}
	return n
}

// DBSize counts the live keys of the segments this node owns (replica
// copies are not counted). A key past its TTL that the sweeper has not
// removed yet is left out exactly in a segment holding up to
// dbsizeExactTTLKeys keys with a TTL in up to dbsizeExactSlots index slots;
// in a larger one it counts until it is removed, as Redis counts it.
// Leaving every one out meant a walk of every key with a TTL on each call —
// 130 ms for a million of them, on the event loop, each time a monitor
// asked.
func (s *Store) DBSize() int {
	// The owned keys are counted as they change (Store.account); only a
	// segment with a few keys with a TTL needs its lock, to leave out those
	// past it.
	n := int(s.ownedItems.Load())
	var now int64
	for _, g := range s.segments {
		if c := g.ttlKeys.Load(); c == 0 || c > dbsizeExactTTLKeys {
			continue
		}
		if now == 0 {
			now = s.clock.NowNano()
		}
		g.mu.RLock()
		if g.owned && len(g.items.recs) <= dbsizeExactSlots {
			for r := range g.items.expiringFrom(0, len(g.items.recs)) {
				if !r.Deleted() && r.expiredAt(now) {
					n--
				}
			}
		}
		g.mu.RUnlock()
	}
	return max(n, 0)
}

// dbsizeExactTTLKeys and dbsizeExactSlots bound the walk DBSize makes of a
// segment's keys with a TTL, found in its index's hash array (D89): 64 KiB
// of it at most, 256 segments × 64 records.
const dbsizeExactSlots = 1 << 14

// dbsizeExactTTLKeys: see dbsizeExactSlots.
const dbsizeExactTTLKeys = 64

// ttlSample is how many keys with a TTL TTLStats reads per segment for the
// average.
const ttlSample = 16

// TTLStats counts the keys with a TTL in owned segments (as Redis's
// "expires": those past their TTL count until removed) and estimates their
// average remaining TTL from a sample of each segment's, weighted by its
// count (Redis's avg_ttl is an estimate too). O(segments), not O(keys):
// INFO keyspace walked every key.
func (s *Store) TTLStats() (keys int, avgTTL time.Duration) {
	now := s.clock.NowNano()
	var weighted float64
	for _, g := range s.segments {
		g.mu.RLock()
		if g.owned && g.items.expiring > 0 {
			n := g.items.expiring
			var sum int64
			seen, examined := 0, 0
			for r := range g.items.expiringFrom(rand.Uint64(), len(g.items.recs)) {
				// Past-TTL keys are skipped, but a bounded number of them:
				// a segment of unswept ones must not be walked whole.
				if seen == ttlSample || examined == 4*ttlSample {
					break
				}
				examined++
				if left := r.ExpiresAt() - now; left > 0 {
					sum += left
					seen++
				}
			}
			keys += n
			if seen > 0 {
				weighted += float64(n) * float64(sum/int64(seen))
			}
		}
		g.mu.RUnlock()
	}
	if keys == 0 {
		return 0, 0
	}
	return keys, time.Duration(weighted / float64(keys))
}

func init() {
	registerNode(kv.CmdFlush, func(s *Store, _ kv.Cmd) kv.Reply {
		s.Flush()
		return kv.OKReply()
	})
	registerNode(kv.CmdDBSize, func(s *Store, _ kv.Cmd) kv.Reply {
		return kv.IntReply(int64(s.DBSize()))
	})
}
