package hybrid

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zaris-io/zaris/sdk"
)

// EntryFlags switch off parts of the read and write paths for one call (or,
// in Options.Flags, for every call). Flags only ever remove behaviour: a
// call's flags are added to the Options' flags.
type EntryFlags uint32

const (
	// DisableLocalCacheRead skips L1 on read: the call goes to L2 (or the
	// factory) inside the key's single flight.
	DisableLocalCacheRead EntryFlags = 1 << iota
	// DisableLocalCacheWrite never writes the value to L1.
	DisableLocalCacheWrite
	// DisableDistributedCacheRead skips L2 on read.
	DisableDistributedCacheRead
	// DisableDistributedCacheWrite never writes the value to L2.
	DisableDistributedCacheWrite
	// DisableFailSafe neither keeps this entry beyond its expiry nor serves
	// a stale value when its factory fails.
	DisableFailSafe
	// DisableEagerRefresh never refreshes this entry ahead of its expiry.
	DisableEagerRefresh
	// DisableMaterialization keeps only the serialized bytes in L1: every L1
	// hit deserializes a fresh copy (for values callers mutate).
	DisableMaterialization

	// DisableLocalCache = DisableLocalCacheRead | DisableLocalCacheWrite.
	DisableLocalCache = DisableLocalCacheRead | DisableLocalCacheWrite
	// DisableDistributedCache = DisableDistributedCacheRead | DisableDistributedCacheWrite.
	DisableDistributedCache = DisableDistributedCacheRead | DisableDistributedCacheWrite
)

// EntryOptions qualify one call. A nil *EntryOptions, or a zero field, means
// the Options default.
type EntryOptions struct {
	// Expiration is the entry's logical lifetime in L2 (the shared tier).
	// ≤ 0 = Options.Expiration. Capped at Options.TagMarkerTTL minus
	// Options.FailSafeMaxDuration so a tag marker outlives every entry it
	// can invalidate.
	Expiration time.Duration
	// LocalCacheExpiration is the entry's logical lifetime in L1. ≤ 0 =
	// Options.LocalCacheExpiration. Always clamped to ≤ Expiration: an L1
	// copy never outlives the L2 copy.
	LocalCacheExpiration time.Duration
	// Flags are added to Options.Flags.
	Flags EntryFlags
}

// Clock supplies wall time in Unix nanoseconds. *store.ManualClock satisfies
// it, so a test can drive the cache and both embedded stores with one clock.
type Clock interface {
	NowNano() int64
}

type systemClock struct{}

func (systemClock) NowNano() int64 { return time.Now().UnixNano() }

// Defaults.
const (
	DefaultExpiration               = 5 * time.Minute
	DefaultLocalCacheExpiration     = 5 * time.Minute
	DefaultKeyPrefix                = "hc:"
	DefaultMaxKeyLength             = 1024
	DefaultFailSafeThrottleDuration = 30 * time.Second
	DefaultTagMarkerTTL             = 24 * time.Hour
	DefaultSweepInterval            = 5 * time.Second
)

// Options configure a Cache. The zero value is valid: every zero field takes
// its documented default.
type Options struct {
	// Expiration is the default L2 lifetime of an entry. Default 5 min.
	Expiration time.Duration
	// LocalCacheExpiration is the default L1 lifetime. Default 5 min; always
	// clamped to ≤ the entry's Expiration.
	LocalCacheExpiration time.Duration
	// Flags apply to every call; a call's EntryOptions.Flags add to them.
	Flags EntryFlags

	// KeyPrefix namespaces every key the cache writes: entries under
	// KeyPrefix+"v:"+key in L2 (and behind a short hash tag in L1, see
	// Cache.StoreKeys), tag markers under KeyPrefix+"t:". Caches with
	// different prefixes share stores and a backplane without interfering.
	// Default "hc:".
	KeyPrefix string
	// MaxKeyLength is the longest key, in bytes, that is cached; longer
	// keys (and empty keys, and keys holding ASCII control characters)
	// bypass the cache: GetOrCreate still runs the factory. Default 1024.
	MaxKeyLength int
	// Serializer encodes values. Default sdk.MsgpackSerializer.
	Serializer sdk.Serializer

	// FailSafeMaxDuration keeps an entry's value in both tiers this long
	// past its logical expiry (a longer physical TTL than the logical one),
	// so that when the factory fails — or times out — the stale value is
	// served instead of the error. 0 = fail-safe off (the default).
	FailSafeMaxDuration time.Duration
	// FailSafeThrottleDuration is how long a stale value, once served by
	// fail-safe, is served from L1 before the factory is tried again.
	// Default 30 s (used only when fail-safe is on).
	FailSafeThrottleDuration time.Duration

	// FactorySoftTimeout: when a stale fail-safe value exists and the
	// factory has not answered after this long, the stale value is returned
	// and the factory finishes in the background, refreshing both tiers.
	// 0 = none. Applies only when fail-safe is on.
	FactorySoftTimeout time.Duration
	// FactoryHardTimeout gives up on a factory after this long: its
	// context is cancelled and the call fails with ErrFactoryTimeout (or
	// serves a stale value if fail-safe has one). 0 = none: a fill then
	// runs to completion even if every caller has gone.
	FactoryHardTimeout time.Duration

	// EagerRefreshThreshold, in (0,1), refreshes an entry in the background
	// on a hit once this fraction of its lifetime has passed (0.9 = during
	// the last 10 %), so hot keys never expire under their callers. 0 = off
	// (the default).
	EagerRefreshThreshold float64

	// TagMarkerTTL is how long a RemoveByTag marker lives. It must cover
	// the longest physical life of an entry (Expiration +
	// FailSafeMaxDuration); per-entry Expirations are capped to keep that
	// true. Default 24 h.
	TagMarkerTTL time.Duration

	// Backplane carries invalidations between instances so that Set,
	// Remove and RemoveByTag on one instance evict the L1 copies on the
	// others. nil = no backplane: other instances' L1 copies then converge
	// only when they expire (≤ LocalCacheExpiration) or when a read through
	// L2 reveals a newer tag marker.
	Backplane Backplane
	// InstanceID identifies this instance on the backplane (its own
	// messages are ignored). Default: random.
	InstanceID string

	// SweepInterval is the cadence of the janitor that drops materialized
	// values whose L1 entry is gone and prunes the tag table. Default 5 s.
	SweepInterval time.Duration

	// Clock supplies time. Default: the system clock.
	Clock Clock
	// Logger receives the rare log lines (L2 errors, fail-safe activations,
	// uncachable values). Default slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, gives each read-through past an L1 hit a
	// span ("zaris.hybrid.fill": tier, joined, stale). nil = no spans.
	// Give the L1 and L2 clients sdk.WithTracerProvider too to see their
	// calls as its children.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records lookups per tier, factory time,
	// single-flight joins, fail-safe uses and backplane lag (the Metric*
	// constants). nil = no measurements.
	MeterProvider metric.MeterProvider
}

// ErrInvalidOptions is wrapped by every error Options.Validate returns.
var ErrInvalidOptions = errors.New("hybrid: invalid options")

// withDefaults fills every zero field and clamps LocalCacheExpiration.
func (o Options) withDefaults() Options {
	if o.Expiration == 0 {
		o.Expiration = DefaultExpiration
	}
	if o.LocalCacheExpiration == 0 {
		o.LocalCacheExpiration = DefaultLocalCacheExpiration
	}
	if o.LocalCacheExpiration > o.Expiration {
		o.LocalCacheExpiration = o.Expiration
	}
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.MaxKeyLength == 0 {
		o.MaxKeyLength = DefaultMaxKeyLength
	}
	if o.Serializer == nil {
		o.Serializer = sdk.MsgpackSerializer{}
	}
	if o.FailSafeThrottleDuration == 0 {
		o.FailSafeThrottleDuration = DefaultFailSafeThrottleDuration
	}
	if o.TagMarkerTTL == 0 {
		o.TagMarkerTTL = DefaultTagMarkerTTL
	}
	if o.SweepInterval == 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	if o.Clock == nil {
		o.Clock = systemClock{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// Validate reports the first problem of o after defaults are applied: a
// negative duration, a threshold outside [0,1), a soft timeout not below
// the hard one, or a tag-marker TTL too short to cover an entry's life.
func (o Options) Validate() error {
	o = o.withDefaults()
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidOptions, fmt.Sprintf(format, args...))
	}
	switch {
	case o.Expiration < 0 || o.LocalCacheExpiration < 0:
		return bad("expirations must not be negative")
	case o.MaxKeyLength < 0:
		return bad("max key length %d is negative", o.MaxKeyLength)
	case o.FailSafeMaxDuration < 0 || o.FailSafeThrottleDuration < 0:
		return bad("fail-safe durations must not be negative")
	case o.FactorySoftTimeout < 0 || o.FactoryHardTimeout < 0:
		return bad("factory timeouts must not be negative")
	case o.FactorySoftTimeout > 0 && o.FactoryHardTimeout > 0 && o.FactorySoftTimeout >= o.FactoryHardTimeout:
		return bad("soft timeout %v must be below hard timeout %v", o.FactorySoftTimeout, o.FactoryHardTimeout)
	case !(o.EagerRefreshThreshold >= 0 && o.EagerRefreshThreshold < 1):
		return bad("eager refresh threshold %.3f out of [0,1)", o.EagerRefreshThreshold)
	case o.TagMarkerTTL < 0 || o.SweepInterval < 0:
		return bad("tag marker TTL and sweep interval must not be negative")
	case o.Expiration+o.FailSafeMaxDuration > o.TagMarkerTTL:
		return bad("tag marker TTL %v is shorter than expiration %v + fail-safe %v: a marker must outlive the entries it invalidates",
			o.TagMarkerTTL, o.Expiration, o.FailSafeMaxDuration)
	}
	return nil
}

// policy is one call's resolved options.
type policy struct {
	exp      time.Duration // L2 logical lifetime
	local    time.Duration // L1 logical lifetime, ≤ exp
	flags    EntryFlags
	failSafe time.Duration // extra physical life; 0 = fail-safe off for this entry
}

func (p policy) has(f EntryFlags) bool { return p.flags&f != 0 }

// flagsOf is the hot-path part of resolve.
func (h *Cache) flagsOf(eo *EntryOptions) EntryFlags {
	if eo == nil {
		return h.opts.Flags
	}
	return h.opts.Flags | eo.Flags
}

// resolve merges eo over the defaults, then clamps.
func (h *Cache) resolve(eo *EntryOptions) policy {
	p := policy{exp: h.opts.Expiration, local: h.opts.LocalCacheExpiration, flags: h.flagsOf(eo)}
	if eo != nil {
		if eo.Expiration > 0 {
			p.exp = eo.Expiration
		}
		if eo.LocalCacheExpiration > 0 {
			p.local = eo.LocalCacheExpiration
		}
	}
	return h.clamp(p)
}

// clamp sets the fail-safe extension and applies the limits: exp +
// fail-safe ≤ the tag-marker TTL, local ≤ exp.
func (h *Cache) clamp(p policy) policy {
	p.failSafe = 0
	if h.opts.FailSafeMaxDuration > 0 && !p.has(DisableFailSafe) {
		p.failSafe = h.opts.FailSafeMaxDuration
	}
	if limit := h.opts.TagMarkerTTL - p.failSafe; p.exp > limit {
		p.exp = limit
	}
	if p.local > p.exp {
		p.local = p.exp
	}
	return p
}
