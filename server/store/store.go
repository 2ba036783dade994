package store

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/placement"
)

// Store is one named store: its segments and the background loops (expiry
// sweeper, tombstone pruner, evictor) that keep it within bounds.
type Store struct {
	cfg      Config
	clock    Clock
	coarse   *coarseClock // non-nil when the store owns its clock
	segments []*Segment
	log      *slog.Logger
	start    int64 // clock reading at creation, the origin of access stamps

	owned        atomic.Int64 // accounted bytes of owned segments
	randomSlots  atomic.Int64 // RandomKey's bound on a record table's slots
	replica      atomic.Int64 // accounted bytes of replica segments
	feedBytes    atomic.Int64 // bytes retained by the feed logs (feed.go)
	ownedItems   atomic.Int64
	replicaItems atomic.Int64
	// ceiling, when positive, is a cap below MaxMemoryBytes the eviction
	// loop works against (SetEvictionCeiling: process memory pressure);
	// evictNow wakes the loop when it is lowered.
	ceiling  atomic.Int64
	evictNow chan struct{}
	// wakeAt is the owned bytes past which a write wakes the evictor
	// (EvictionWake): the trigger; MaxInt64 when off.
	wakeAt          atomic.Int64
	pressureChanges atomic.Uint64
	// maxMem and policy are the cap and eviction policy in force (limits.go):
	// Config's values at start, changed by SetMaxMemory / SetEviction.
	maxMem atomic.Int64
	policy atomic.Uint32
	// lfuLog and lfuDecay are the LFU settings in force (lfu.go, SetLFU).
	lfuLog, lfuDecay atomic.Int32
	// evictMu is held by an eviction pass; SetEviction(NoEviction) takes it
	// to wait for the pass in progress.
	evictMu sync.Mutex

	watches     watchRegistry
	commitHook  atomic.Pointer[func(seg uint16)]
	pubsub      *Broker
	shardPubSub *Broker    // Redis 7 shard channels
	tx          *txTable   // prepared transactions (tx.go)
	scan        *scanState // scan sessions and sorted-key snapshots (scan.go)

	stop      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	fault atomic.Pointer[func(key string)] // test support: InjectFault
}

// New creates a store and starts its background loops. Close stops them.
func New(cfg Config) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, clock: cfg.Clock, log: cfg.Logger, stop: make(chan struct{}), evictNow: make(chan struct{}, 1)}
	if s.clock == nil {
		s.coarse = newCoarseClock()
		s.clock = s.coarse
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.start = s.clock.NowNano()
	s.maxMem.Store(cfg.MaxMemoryBytes)
	s.policy.Store(uint32(cfg.Eviction))
	s.lfuLog.Store(DefaultLFULogFactor)
	s.lfuDecay.Store(DefaultLFUDecayMinutes)
	s.resetWake()
	s.pubsub = newBroker()
	s.shardPubSub = newBroker()
	s.shardPubSub.sharded = true
	s.tx = newTxTable()
	s.scan = newScanState(cfg.Segments)
	s.segments = make([]*Segment, cfg.Segments)
	for i := range s.segments {
		s.segments[i] = newSegment(s, uint16(i))
	}
	seed := cfg.Seed
	if seed == 0 {
		seed = uint64(s.start)
	}
	s.wg.Add(2)
	go s.sweepLoop()
	go s.evictLoop(seed)
	if cfg.MaxProcessBytes > 0 {
		s.wg.Add(1)
		go s.pressureLoop()
	}
	return s, nil
}

// Close stops the background loops. It is safe to call more than once. The
// data stays readable; nothing expires or gets evicted any more.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.wg.Wait()
		s.closeWatches()
		s.pubsub.closeAll()
		s.shardPubSub.closeAll()
		if s.coarse != nil {
			s.coarse.close()
		}
	})
	return nil
}

// MaxItemBytes is --max-item-bytes: a per-write check's read, where Config
// would copy the whole configuration (D120).
func (s *Store) MaxItemBytes() int { return s.cfg.MaxItemBytes }

// Config returns the store's configuration, with the cap and eviction
// policy in force now (they may have changed since New).
func (s *Store) Config() Config {
	c := s.cfg
	c.MaxMemoryBytes = s.maxMemory()
	c.Eviction = s.evictionPolicy()
	return c
}

// Segments is the number of segments.
func (s *Store) Segments() int { return len(s.segments) }

// Now is the store's clock (Unix ns): the instant a digest is taken at
// (Segment.DigestAt) must be read from the clock that decides expiry.
func (s *Store) Now() int64 { return s.clock.NowNano() }

// Segment returns segment i (0 ≤ i < Segments()).
func (s *Store) Segment(i uint16) *Segment { return s.segments[i] }

// SegmentFor returns the segment of key through the one placement function.
func (s *Store) SegmentFor(key string) *Segment {
	return s.segments[placement.SegmentOf(key, len(s.segments))]
}

// Get, Put, Delete, Expire, Persist and TimeToLive route key to its segment.

func (s *Store) Get(key string) kv.Result { return s.SegmentFor(key).Get(key) }
func (s *Store) Put(key string, value []byte, opts *kv.PutOptions) kv.Result {
	return s.SegmentFor(key).Put(key, value, opts)
}
func (s *Store) Delete(key string) kv.Result { return s.SegmentFor(key).Delete(key) }
func (s *Store) Expire(key string, ttl time.Duration) kv.Result {
	return s.SegmentFor(key).Expire(key, ttl)
}
func (s *Store) Persist(key string) kv.Result    { return s.SegmentFor(key).Persist(key) }
func (s *Store) TimeToLive(key string) kv.Result { return s.SegmentFor(key).TimeToLive(key) }

// checkKey validates a key: non-empty and within MaxKeyBytes.
func (s *Store) checkKey(key string) kv.Status {
	if key == "" || len(key) > s.cfg.MaxKeyBytes {
		return kv.StatusBadRequest
	}
	return kv.StatusSuccess
}

// ValidKey reports whether a write of key would pass the key checks (not
// empty, within --max-key-bytes): a multi-key write checks all its keys
// before it writes any.
func (s *Store) ValidKey(key string) bool { return s.checkKey(key) == kv.StatusSuccess }

// keyProblem says what is wrong with a key ("" when nothing is): the
// Detail of the BadRequest checkKey answers.
func (s *Store) keyProblem(key string) string {
	switch {
	case key == "":
		return "empty key"
	case len(key) > s.cfg.MaxKeyBytes:
		return fmt.Sprintf("key of %d bytes exceeds the maximum key size of %d bytes", len(key), s.cfg.MaxKeyBytes)
	}
	return ""
}

// stamp converts a clock reading into a coarse access stamp (milliseconds
// since the store started; wraps after 49 days, which age comparisons
// tolerate because they subtract).
func (s *Store) stamp(now int64) uint32 { return uint32((now - s.start) / int64(time.Millisecond)) }

// account adds a change to the store-wide totals. A zero is not added: an
// overwrite of a value by one of its size (most SETs of a cache) changes
// neither, and each locked add costs a write about 20 cycles (D120).
func (s *Store) account(owned bool, bytes, items int64) {
	if owned {
		if bytes != 0 {
			if n := s.owned.Add(bytes); bytes > 0 && n > s.wakeAt.Load() {
				s.wakeEvictor()
			}
		}
		if items != 0 {
			s.ownedItems.Add(items)
		}
		return
	}
	if bytes != 0 {
		s.replica.Add(bytes)
	}
	if items != 0 {
		s.replicaItems.Add(items)
	}
}

// opCounters are one segment's committed mutations by kind (Stats sums
// them).
type opCounters struct {
	puts, deletes, expired, evicted, retimes atomic.Uint64
}

func (c *opCounters) count(kind OpKind) {
	switch kind {
	case OpPut:
		c.puts.Add(1)
	case OpDelete:
		c.deletes.Add(1)
	case OpExpired:
		c.expired.Add(1)
	case OpEvicted:
		c.evicted.Add(1)
	case OpExpire, OpPersist:
		c.retimes.Add(1)
	}
}

// Stats is a point-in-time view of the store's counters (STYLE 12).
type Stats struct {
	Segments       int
	Items          int64 // live records in owned segments
	ReplicaItems   int64
	OwnedBytes     int64 // accounted bytes of owned data (what the cap governs)
	ReplicaBytes   int64
	MaxMemoryBytes int64
	Puts           uint64
	Deletes        uint64
	Expired        uint64
	Evicted        uint64
	TTLChanges     uint64
	FeedBytes      int64 // retained by the change feed beyond the op-log
}

// Stats returns the current counters.
func (s *Store) Stats() Stats {
	var ops [5]uint64
	for _, g := range s.segments {
		ops[0] += g.ops.puts.Load()
		ops[1] += g.ops.deletes.Load()
		ops[2] += g.ops.expired.Load()
		ops[3] += g.ops.evicted.Load()
		ops[4] += g.ops.retimes.Load()
	}
	return Stats{
		Segments:       len(s.segments),
		Items:          s.ownedItems.Load(),
		ReplicaItems:   s.replicaItems.Load(),
		OwnedBytes:     s.owned.Load(),
		ReplicaBytes:   s.replica.Load(),
		MaxMemoryBytes: s.maxMemory(),
		Puts:           ops[0],
		Deletes:        ops[1],
		Expired:        ops[2],
		Evicted:        ops[3],
		TTLChanges:     ops[4],
		FeedBytes:      s.feedBytes.Load(),
	}
}
