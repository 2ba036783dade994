package store

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// evictionGoal is the eviction rule (R-MEM-2), pure: a run starts only when
// owned bytes exceed trigger×cap, and then evicts down to target×cap. The gap
// between the two is the hysteresis band that stops a node sitting at the
// edge from evicting on every write.
func evictionGoal(used, maxBytes int64, trigger, target float64) (run bool, stopAt int64) {
	if used <= int64(float64(maxBytes)*trigger) {
		return false, 0
	}
	return true, int64(float64(maxBytes) * target)
}

// maxEvictionsPerRun bounds one run so the loop always comes back to check
// for shutdown.
const maxEvictionsPerRun = 1 << 20

func (s *Store) evictLoop(seed uint64) {
	defer s.wg.Done()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	t := time.NewTicker(s.cfg.EvictionInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.evictRun(rng)
		case <-s.evictNow:
			s.evictRun(rng)
		}
	}
}

// EvictOnce runs one eviction pass now, with the given seed for sampling,
// and returns how many records it evicted. The background loop does the same
// every EvictionInterval.
func (s *Store) EvictOnce(seed uint64) int {
	return s.evictRun(rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
}

func (s *Store) evictRun(rng *rand.Rand) int {
	s.evictMu.Lock()
	defer s.evictMu.Unlock()
	if s.evictionPolicy() == NoEviction {
		return 0
	}
	capNow := s.evictionCap()
	run, stopAt := evictionGoal(s.owned.Load(), capNow, s.cfg.EvictionTrigger, s.cfg.EvictionTarget)
	if !run {
		return 0
	}
	// The candidate pool survives across steps of a run, as in Redis: a
	// cold key sampled early stays a candidate until something colder shows
	// up, which makes a small per-step sample behave like a large one.
	var pool evictionPool
	n, misses := 0, 0
	for s.owned.Load() > stopAt && n < maxEvictionsPerRun {
		select {
		case <-s.stop:
			return n
		default:
		}
		stamp := s.stamp(s.clock.NowNano())
		policy := s.evictionPolicy()
		if policy == NoEviction {
			break // switched meanwhile: SetEviction waits for this pass
		}
		for range evictionSegmentsPerStep {
			s.segments[rng.IntN(len(s.segments))].sampleInto(&pool, s.cfg.EvictionSamples, stamp, policy, rng)
		}
		// Over the cap itself (a write storm outrunning the loop), evict
		// several of the pool's oldest per sampling step: less precise LRU,
		// several times the throughput.
		burst := 1
		if s.owned.Load() > capNow {
			burst = evictionBurstOverCap
		}
		c, ok := pool.popOldest()
		if !ok {
			// Only empty or replica segments sampled; after many misses in a
			// row there is nothing owned left to evict.
			if misses++; misses > 4*len(s.segments) {
				break
			}
			continue
		}
		misses = 0
		for ok {
			if c.seg.evict(c) {
				n++
			}
			if burst--; burst == 0 {
				break
			}
			c, ok = pool.popOldest()
		}
	}
	if n > 0 {
		s.log.Debug("store: eviction run", "evicted", n, "owned_bytes", s.owned.Load(), "cap", capNow)
	}
	return n
}

const (
	evictionSegmentsPerStep = 4
	evictionPoolSize        = 16
	evictionBurstOverCap    = 4
)

type evictionCandidate struct {
	seg      *Segment
	key      string
	revision uint64 // the record sampled; evicted only if still current
	age      uint32 // the eviction rank: milliseconds since last access when sampled (LRU), or the policy's rank
	expired  bool
	lru      bool // ranked by recency: a read since sampling saves the record
}

// evictionPool keeps the oldest candidates seen, oldest first.
type evictionPool struct{ c []evictionCandidate }

func (p *evictionPool) offer(c evictionCandidate) {
	for _, e := range p.c {
		if e.seg == c.seg && e.key == c.key {
			return
		}
	}
	i := len(p.c)
	for i > 0 && (c.expired && !p.c[i-1].expired || c.expired == p.c[i-1].expired && c.age > p.c[i-1].age) {
		i--
	}
	if i >= evictionPoolSize {
		return
	}
	p.c = append(p.c, evictionCandidate{})
	copy(p.c[i+1:], p.c[i:])
	p.c[i] = c
	if len(p.c) > evictionPoolSize {
		p.c = p.c[:evictionPoolSize]
	}
}

func (p *evictionPool) popOldest() (evictionCandidate, bool) {
	if len(p.c) == 0 {
		return evictionCandidate{}, false
	}
	c := p.c[0]
	p.c = p.c[1:]
	return c, true
}

// sampleInto offers up to samples live records of an owned segment to the
// pool, ranked by the policy (the pool evicts the highest rank first):
// recency for the LRU policies, the access counter for the LFU ones, a
// random draw for the random ones, nearness to expiry for volatile-ttl; the volatile policies skip records without a
// TTL. The walk starts at a random slot of the segment's table: the sample.
func (g *Segment) sampleInto(p *evictionPool, samples int, stamp uint32, policy EvictionPolicy, rng *rand.Rand) {
	now := g.store.clock.NowNano()
	g.mu.RLock()
	defer g.mu.RUnlock()
	if !g.owned || g.fenced || g.live == 0 {
		return
	}
	seen := 0
	for r := range g.items.from(rng.Uint64()) {
		if r.Deleted() || policy.volatileOnly() && r.ExpiresAt() == 0 {
			continue
		}
		c := evictionCandidate{seg: g, key: r.Key(), revision: r.Revision, expired: r.expiredAt(now)}
		switch policy {
		case EvictAllKeysRandom, EvictVolatileRandom:
			c.age = rng.Uint32()
		case EvictVolatileTTL:
			left := max(r.ExpiresAt()-now, 0) / int64(time.Millisecond)
			c.age = math.MaxUint32 - uint32(min(left, math.MaxUint32))
		case EvictAllKeysLFU, EvictVolatileLFU:
			c.age = 255 - uint32(g.store.lfuCounter(r, now)) // the least used first
		default:
			c.age, c.lru = stamp-atomic.LoadUint32(&r.access), true
		}
		p.offer(c)
		if seen++; seen == samples {
			return
		}
	}
}

// evict removes the candidate's record if it is still the one sampled and
// was not read since (a read makes it hot again).
func (g *Segment) evict(c evictionCandidate) bool {
	now := g.store.clock.NowNano()
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.items.get(c.key)
	if r == nil || r.Deleted() || r.Revision != c.revision || !g.owned || g.fenced {
		return false
	}
	kind := OpEvicted
	if r.expiredAt(now) {
		kind = OpExpired
	} else if age := g.store.stamp(now) - atomic.LoadUint32(&r.access); c.lru && age < c.age {
		return false // read after it was sampled
	}
	g.tombstoneLocked(r, kind, now)
	return true
}
