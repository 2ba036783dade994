package store

import "math/rand/v2"

// randomKeyTries bounds RandomKey's draws before it falls back to a pass
// over the segments (a keyspace much smaller than its tables).
const randomKeyTries = 64

// RandomKey returns a live key of an owned segment, every such key with the
// same chance (RANDOMKEY), or false when there is none. A draw is a random
// segment and a random slot below a bound every table's size stays under
// (the store raises it when it meets a larger table): a slot holding a live
// record is the answer, with chance 1/(segments × bound) for each key
// whatever its segment's size; an empty slot draws again. It replaced the
// first key at or after a random string, which cost a search of every
// segment's sorted keys per call (0.04× Redis's rate on 100 k keys) and
// returned the smallest key whenever the random string sorted before all
// keys (42 % of calls on keys that start with "k").
func (s *Store) RandomKey() (string, bool) {
	now := s.clock.NowNano()
	bound := int(s.randomSlots.Load())
	for range randomKeyTries {
		g := s.segments[rand.IntN(len(s.segments))]
		key, slots, ok := g.randomSlotKey(bound, now)
		if slots > bound {
			s.raiseRandomSlots(slots)
			bound = int(s.randomSlots.Load())
			continue
		}
		if ok {
			return key, true
		}
	}
	return s.randomKeyByPass(now)
}

func (s *Store) raiseRandomSlots(slots int) {
	for {
		cur := s.randomSlots.Load()
		if int64(slots) <= cur || s.randomSlots.CompareAndSwap(cur, int64(slots)) {
			return
		}
	}
}

// randomSlotKey draws slot i in [0, bound) of an owned segment's table and
// returns its record's key when the slot holds a live one; slots is the
// table's size (a draw is void when it passes the bound).
func (g *Segment) randomSlotKey(bound int, now int64) (key string, slots int, ok bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	slots = len(g.items.recs)
	if !g.owned || slots == 0 || slots > bound {
		return "", slots, false
	}
	i := rand.IntN(bound)
	if i >= slots {
		return "", slots, false
	}
	if r := g.items.recs[i]; r != nil && r.liveAt(now) {
		return r.Key(), slots, true
	}
	return "", slots, false
}

// randomKeyByPass picks a segment with a chance proportional to its live
// records, then a live record of it: for a keyspace too sparse for draws.
func (s *Store) randomKeyByPass(now int64) (string, bool) {
	lives := make([]int, len(s.segments))
	total := 0
	for i, g := range s.segments {
		if owned, live, _ := g.ScanState(); owned {
			lives[i] = live
			total += live
		}
	}
	for total > 0 {
		pick := rand.IntN(total)
		i := 0
		for pick >= lives[i] {
			pick -= lives[i]
			i++
		}
		if key, ok := s.segments[i].randomLiveKey(now); ok {
			return key, true
		}
		total -= lives[i] // only expired records there: try the others
		lives[i] = 0
	}
	return "", false
}

// randomLiveKey returns a random live key of the segment: random slots
// until one holds a live record (a table is at least 1/8 full), then, if
// expired records fill it, the first live one from a random slot.
func (g *Segment) randomLiveKey(now int64) (string, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	recs := g.items.recs
	if len(recs) == 0 {
		return "", false
	}
	for range randomKeyTries {
		if r := recs[rand.IntN(len(recs))]; r != nil && r.liveAt(now) {
			return r.Key(), true
		}
	}
	for r := range g.items.from(rand.Uint64()) {
		if r.liveAt(now) {
			return r.Key(), true
		}
	}
	return "", false
}
