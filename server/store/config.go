package store

import (
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// EvictionPolicy decides what a full store does (R-MEM-2/3).
type EvictionPolicy uint8

const (
	// EvictLRU drops the least recently used owned records (sampled) when the
	// owned bytes pass the trigger. Writes keep succeeding. The default.
	EvictLRU EvictionPolicy = iota
	// NoEviction refuses a write that would push owned bytes over the cap
	// with StatusCapacityExceeded, protecting the data already stored.
	NoEviction
	// EvictVolatileLRU is EvictLRU among the records with a TTL only
	// (Redis's volatile-lru); with none left, nothing is evicted.
	EvictVolatileLRU
	// EvictAllKeysRandom drops sampled owned records at random, ignoring
	// recency (allkeys-random).
	EvictAllKeysRandom
	// EvictVolatileRandom drops records with a TTL at random
	// (volatile-random).
	EvictVolatileRandom
	// EvictVolatileTTL drops the sampled records with a TTL nearest their
	// expiry first (volatile-ttl).
	EvictVolatileTTL
	// EvictAllKeysLFU drops the sampled owned records least frequently
	// used (allkeys-lfu): each record keeps Redis's logarithmic access
	// counter, decayed with time (lfu.go).
	EvictAllKeysLFU
	// EvictVolatileLFU is EvictAllKeysLFU among the records with a TTL
	// only (volatile-lfu).
	EvictVolatileLFU
)

// valid reports whether p is one of the policies above.
func (p EvictionPolicy) valid() bool { return p <= EvictVolatileLFU }

// volatileOnly reports whether the policy evicts only records with a TTL.
func (p EvictionPolicy) volatileOnly() bool {
	return p == EvictVolatileLRU || p == EvictVolatileRandom || p == EvictVolatileTTL || p == EvictVolatileLFU
}

// LFU reports whether the policy ranks by access frequency, so that the
// records' access field holds a frequency counter, not a recency stamp.
func (p EvictionPolicy) LFU() bool { return p == EvictAllKeysLFU || p == EvictVolatileLFU }

func (p EvictionPolicy) String() string {
	switch p {
	case EvictLRU:
		return "lru"
	case NoEviction:
		return "noeviction"
	case EvictVolatileLRU:
		return "volatile-lru"
	case EvictAllKeysRandom:
		return "allkeys-random"
	case EvictVolatileRandom:
		return "volatile-random"
	case EvictVolatileTTL:
		return "volatile-ttl"
	case EvictAllKeysLFU:
		return "allkeys-lfu"
	case EvictVolatileLFU:
		return "volatile-lfu"
	}
	return fmt.Sprintf("EvictionPolicy(%d)", uint8(p))
}

// ParseEvictionPolicy parses "lru" (or Redis's "allkeys-lru"),
// "noeviction", "volatile-lru", "allkeys-random", "volatile-random",
// "volatile-ttl", "lfu" (or "allkeys-lfu") or "volatile-lfu".
func ParseEvictionPolicy(s string) (EvictionPolicy, error) {
	switch s {
	case "lru", "allkeys-lru", "":
		return EvictLRU, nil
	case "noeviction", "none":
		return NoEviction, nil
	case "volatile-lru":
		return EvictVolatileLRU, nil
	case "allkeys-random":
		return EvictAllKeysRandom, nil
	case "volatile-random":
		return EvictVolatileRandom, nil
	case "volatile-ttl":
		return EvictVolatileTTL, nil
	case "lfu", "allkeys-lfu":
		return EvictAllKeysLFU, nil
	case "volatile-lfu":
		return EvictVolatileLFU, nil
	}
	return 0, fmt.Errorf("store: unknown eviction policy %q (want lru, noeviction, volatile-lru, allkeys-random, volatile-random, volatile-ttl, lfu or volatile-lfu)", s)
}

// Defaults (R-MEM, R-PLACE-3).
const (
	DefaultSegments         = 256
	DefaultMaxMemoryBytes   = 1 << 30 // 1 GiB of owned data
	DefaultMaxItemBytes     = 4 << 20 // 4 MiB per value
	DefaultMaxKeyBytes      = 16 << 10
	DefaultEvictionInterval = time.Second
	DefaultEvictionTrigger  = 0.80
	DefaultEvictionTarget   = 0.70
	DefaultEvictionSamples  = 8
	DefaultSweepInterval    = 100 * time.Millisecond
	DefaultProcessCheck     = 250 * time.Millisecond
	DefaultOpLogMaxOps      = 256
	DefaultOpLogMaxBytes    = 256 << 10

	DefaultMaxCollectionElements = 1 << 20
	DefaultMaxCollectionBytes    = 64 << 20
)

// Config configures one Store. Build it with DefaultConfig and change fields;
// New calls Validate.
type Config struct {
	// Segments is the number of segments, fixed for the store's life.
	// Default 256. Must be 1..16384.
	Segments int

	// MaxMemoryBytes caps the accounted bytes of owned data (R-MEM-1).
	// Default 1 GiB. There is no "unlimited": zero or negative is invalid.
	MaxMemoryBytes int64

	// MaxItemBytes caps one key's item size (R-MEM-3): a string's value,
	// and a collection's data as serialised — its members, fields, values
	// and entries plus their encoding's framing (itemsize.go); a write past
	// it is ItemTooLarge (itemcap.go). Default 4 MiB. Must be positive and
	// at most MaxMemoryBytes.
	MaxItemBytes int

	// MaxKeyBytes caps one key; a longer key is BadRequest. Default 16 KiB.
	MaxKeyBytes int

	// Eviction selects what happens at the cap. Default EvictLRU.
	Eviction EvictionPolicy

	// EvictionInterval is the cadence of the eviction loop. Default 1 s.
	EvictionInterval time.Duration
	// EvictionTrigger is the fraction of MaxMemoryBytes above which an
	// eviction run starts. Default 0.80.
	EvictionTrigger float64
	// EvictionTarget is the fraction a run evicts down to. Default 0.70.
	// Must be below EvictionTrigger (the hysteresis band).
	EvictionTarget float64
	// EvictionSamples is how many records one eviction step samples.
	// Default 8.
	EvictionSamples int
	// EvictionWake: a write that takes owned bytes past the trigger wakes
	// the eviction loop at once instead of leaving it to its next tick — a
	// wakeup, never eviction on the write path (R-MEM-2). Without it a write
	// storm outruns a 1 s loop (measured: 24 % over the cap). Default true.
	EvictionWake bool

	// SweepInterval is the cadence of the expiry sweeper and the tombstone
	// pruner. Default 100 ms.
	SweepInterval time.Duration

	// OpLogMaxOps bounds the op-log of one segment in entries. Default 256
	// (D72: 65 536 entries over a store, four times what Redis's 1 MiB
	// backlog holds of small writes).
	OpLogMaxOps int
	// OpLogMaxBytes bounds the value bytes retained by one segment's op-log.
	// Default 256 KiB. A pinned trim floor overrides both bounds.
	OpLogMaxBytes int

	// FeedRetentionBytes and FeedRetentionAge bound, per segment, the
	// change feed's retention beyond the op-log (feed.go): the operations
	// the op-log trims are kept until either bound is passed. Both 0 (the
	// default) = no retention beyond the op-log.
	FeedRetentionBytes int
	FeedRetentionAge   time.Duration

	// MaxCollectionElements caps the elements of one hash, list, set, sorted
	// set or stream; a write that would pass it is ItemTooLarge. Default 1 Mi.
	MaxCollectionElements int
	// MaxCollectionBytes caps the accounted bytes of one collection (in
	// memory: its elements plus their bookkeeping), a bound separate from
	// MaxItemBytes: what snapshot, migration and replication frames are
	// sized for. Default 64 MiB.
	MaxCollectionBytes int64

	// MaxProcessBytes bounds the memory of the whole process (its RSS, read
	// by ProcessBytes) through eviction: while it is above, the eviction loop
	// works against a ceiling below MaxMemoryBytes (memory.go, nextCeiling).
	// Only the LRU policy evicts for it. 0 = off (the default).
	MaxProcessBytes int64
	// ProcessBytes reads the process's memory; required with
	// MaxProcessBytes.
	ProcessBytes func() int64
	// ProcessCheckInterval is how often ProcessBytes is read. Default 250 ms.
	ProcessCheckInterval time.Duration

	// Clock supplies time. Default: a coarse clock (1 ms) owned by the store.
	Clock Clock

	// Seed seeds the eviction sampler. 0 = from the clock.
	Seed uint64

	// Logger receives the store's rare log lines. Default slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Segments:         DefaultSegments,
		MaxMemoryBytes:   DefaultMaxMemoryBytes,
		MaxItemBytes:     DefaultMaxItemBytes,
		MaxKeyBytes:      DefaultMaxKeyBytes,
		Eviction:         EvictLRU,
		EvictionInterval: DefaultEvictionInterval,
		EvictionTrigger:  DefaultEvictionTrigger,
		EvictionTarget:   DefaultEvictionTarget,
		EvictionSamples:  DefaultEvictionSamples,
		EvictionWake:     true,
		SweepInterval:    DefaultSweepInterval,

		ProcessCheckInterval: DefaultProcessCheck,
		OpLogMaxOps:          DefaultOpLogMaxOps,
		OpLogMaxBytes:        DefaultOpLogMaxBytes,

		MaxCollectionElements: DefaultMaxCollectionElements,
		MaxCollectionBytes:    DefaultMaxCollectionBytes,
	}
}

// ErrInvalidConfig is wrapped by every error Validate returns.
var ErrInvalidConfig = errors.New("store: invalid config")

// Validate checks every field and the fields against each other.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case c.Segments < 1 || c.Segments > 16384:
		return bad("segments %d out of 1..16384", c.Segments)
	case c.MaxMemoryBytes <= 0:
		return bad("max memory bytes must be positive (there is no unlimited), got %d", c.MaxMemoryBytes)
	case c.MaxItemBytes <= 0:
		return bad("max item bytes must be positive, got %d", c.MaxItemBytes)
	case int64(c.MaxItemBytes) > c.MaxMemoryBytes:
		return bad("max item bytes %d exceeds max memory bytes %d", c.MaxItemBytes, c.MaxMemoryBytes)
	case int64(c.MaxItemBytes) > MaxRecordBytes:
		return bad("max item bytes %d exceeds %d (a record's lengths are 32-bit)", c.MaxItemBytes, int64(MaxRecordBytes))
	case c.MaxKeyBytes <= 0:
		return bad("max key bytes must be positive, got %d", c.MaxKeyBytes)
	case !c.Eviction.valid():
		return bad("unknown eviction policy %d", c.Eviction)
	case c.EvictionInterval <= 0:
		return bad("eviction interval must be positive")
	case !(c.EvictionTrigger > 0 && c.EvictionTrigger <= 1):
		return bad("eviction trigger %.2f out of (0,1]", c.EvictionTrigger)
	case !(c.EvictionTarget > 0 && c.EvictionTarget < c.EvictionTrigger):
		return bad("eviction target %.2f must be in (0, trigger %.2f)", c.EvictionTarget, c.EvictionTrigger)
	case c.EvictionSamples < 1:
		return bad("eviction samples must be at least 1")
	case c.SweepInterval <= 0:
		return bad("sweep interval must be positive")
	case c.OpLogMaxOps < 1:
		return bad("op-log max ops must be at least 1")
	case c.OpLogMaxBytes < 1:
		return bad("op-log max bytes must be at least 1")
	case c.FeedRetentionBytes < 0 || c.FeedRetentionAge < 0:
		return bad("feed retention must not be negative")
	case c.MaxCollectionElements < 1:
		return bad("max collection elements must be at least 1")
	case c.MaxCollectionBytes < 1:
		return bad("max collection bytes must be positive")
	case c.MaxProcessBytes < 0:
		return bad("max process bytes must not be negative")
	case c.MaxProcessBytes > 0 && c.ProcessBytes == nil:
		return bad("max process bytes needs a ProcessBytes reader")
	case c.MaxProcessBytes > 0 && c.ProcessCheckInterval <= 0:
		return bad("process check interval must be positive")
	}
	return nil
}
