package resp

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/store"
)

// Key listing for SCAN, KEYS, RANDOMKEY, CLUSTER GETKEYSINSLOT and INFO
// keyspace. Tombstones and expired records never surface.
//
// KEYS, RANDOMKEY and INFO walk the store's sorted-key snapshots
// (store.ScanEach: no values copied, no session). SCAN needs more: Redis
// clients carry its cursor as an integer and may resume it on any
// connection, so the cursor here is stateless:
//
//	cursor = segment << 50 | position
//
// Within a segment keys are visited in the order of a fixed 50-bit hash of
// the key (FNV-1a), and position is the smallest hash not returned yet. A
// page never splits keys of equal hash, so the next call resumes exactly
// after the last key returned. Hence Redis's guarantee, and a bit more: a
// key that exists from the start to the end of a full iteration is returned
// exactly once (no duplicates, unlike Redis across a rehash); a key created
// or deleted during the iteration may or may not be returned. COUNT is the
// number of keys examined per call (MATCH and TYPE filter after that), as
// in Redis; the iteration is over when the cursor returned is 0.

const (
	cursorPosBits = 50
	cursorPosMask = 1<<cursorPosBits - 1
	// segCacheSize: hash-ordered key lists of the segments SCAN visited
	// last, kept while their segment does not change. An iteration walks the
	// segments in order, so a few cover concurrent scans.
	segCacheSize = 8
)

// keyEntry is one live key of a segment.
type keyEntry struct {
	key     string
	kind    store.ValueKind
	expires int64 // Unix ns, 0 = no TTL
	hash    uint64
}

// scanHash is the position of a key within its segment's SCAN order.
func scanHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h & cursorPosMask
}

// segKeys is a segment's live keys sorted by scanHash, as of a revision.
// Immutable once built.
type segKeys struct {
	seg     uint16
	version store.KeysVersion
	entries []keyEntry
}

// segCache holds the segKeys SCAN built last.
type segCache struct {
	mu   sync.Mutex // guards list
	list []*segKeys // most recent last
}

// segmentKeys returns segment seg's keys in SCAN order, from the cache when
// the segment has not changed since they were listed.
func (s *Server) segmentKeys(seg uint16) []keyEntry {
	g := s.store.Segment(seg)
	owned, live, version := g.ScanState()
	if !owned || live == 0 {
		return nil // a replica copy, or another node's (its owner lists it), or empty
	}
	s.scanCache.mu.Lock()
	for i, c := range s.scanCache.list {
		if c.seg == seg {
			if c.version == version {
				s.scanCache.list = append(append(s.scanCache.list[:i:i], s.scanCache.list[i+1:]...), c)
				s.scanCache.mu.Unlock()
				return c.entries
			}
			s.scanCache.list = append(s.scanCache.list[:i:i], s.scanCache.list[i+1:]...)
			break
		}
	}
	s.scanCache.mu.Unlock()
	version, keys := g.LiveKeys()
	entries := make([]keyEntry, len(keys))
	for i, k := range keys {
		entries[i] = keyEntry{key: k.Key, kind: k.Kind, expires: k.ExpiresAt, hash: scanHash(k.Key)}
	}
	slices.SortFunc(entries, func(a, b keyEntry) int {
		switch {
		case a.hash < b.hash:
			return -1
		case a.hash > b.hash:
			return 1
		}
		return 0
	})
	c := &segKeys{seg: seg, version: version, entries: entries}
	s.scanCache.mu.Lock()
	if len(s.scanCache.list) >= segCacheSize {
		s.scanCache.list = append(s.scanCache.list[:0:0], s.scanCache.list[1:]...)
	}
	s.scanCache.list = append(s.scanCache.list, c)
	s.scanCache.mu.Unlock()
	return entries
}

// scan runs one SCAN step: it examines up to count keys from cursor on and
// returns the next cursor (0 at the end) and the examined keys keep accepts.
func (s *Server) scan(cursor uint64, count int, keep func(*keyEntry) bool) (next uint64, keys []string) {
	seg := cursor >> cursorPosBits
	pos := cursor & cursorPosMask
	now := time.Now().UnixNano()
	examined := 0
	for seg < uint64(s.segs) && examined < count {
		entries := s.segmentKeys(uint16(seg))
		from := sort.Search(len(entries), func(i int) bool { return entries[i].hash >= pos })
		cand := entries[from:]
		cut := min(count-examined, len(cand))
		for cut < len(cand) && cut > 0 && cand[cut].hash == cand[cut-1].hash {
			cut++
		}
		for i := range cand[:cut] {
			e := &cand[i]
			if (e.expires == 0 || e.expires > now) && keep(e) {
				keys = append(keys, e.key)
			}
		}
		examined += cut
		if cut == len(cand) {
			seg, pos = seg+1, 0
		} else {
			pos = cand[cut-1].hash + 1 // ≤ cand[cut].hash ≤ cursorPosMask
		}
	}
	if seg >= uint64(s.segs) {
		return 0, keys
	}
	return seg<<cursorPosBits | pos, keys
}

// eachKey calls fn for every live key in ascending order from start (and
// with prefix), until fn returns false.
func (s *Server) eachKey(r store.KeyRange, fn func(store.ScanItem) bool) {
	_ = s.store.ScanEach(store.ScanRequest{Range: r}, fn)
}

// randomKey returns a random live key this node owns (store.RandomKey).
func (s *Server) randomKey() (string, bool) { return s.store.RandomKey() }

// expiringKeys counts the live keys with a TTL and their average remaining
// TTL in milliseconds (INFO keyspace; store.TTLStats).
func (s *Server) expiringKeys() (n int, avgTTLms int64) {
	n, avg := s.store.TTLStats()
	return n, avg.Milliseconds()
}

// keysInSlot lists up to limit keys (limit < 0: all) of a slot, from the
// segment that holds it.
func (s *Server) keysInSlot(slot uint16, limit int) []string {
	now := time.Now().UnixNano()
	var out []string
	for _, e := range s.segmentKeys(placement.SegmentOfSlot(slot, s.segs)) {
		if limit >= 0 && len(out) >= limit {
			break
		}
		if placement.Slot(e.key) == slot && (e.expires == 0 || e.expires > now) {
			out = append(out, e.key)
		}
	}
	slices.Sort(out)
	return out
}

// literalPrefix is the part of a glob pattern before its first
// metacharacter: every key the pattern matches starts with it.
func literalPrefix(pattern []byte) string {
	for i, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return string(pattern[:i])
		}
	}
	return string(pattern)
}

// isLiteralPattern reports whether pattern matches only itself (no glob
// metacharacter), so KEYS can answer with one lookup.
func isLiteralPattern(pattern []byte) bool {
	for _, c := range pattern {
		switch c {
		case '*', '?', '[', '\\':
			return false
		}
	}
	return true
}
