package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// Cache is the distributed-cache interface (R-SDK-1). A miss is (nil, nil),
// never an error; a hit on an empty value is a non-nil empty slice.
type Cache interface {
	// Get returns the value under key, or nil on a miss. A hit on a sliding
	// entry slides its expiration.
	Get(ctx context.Context, key string) ([]byte, error)
	// Set writes value under key with the given expiration.
	Set(ctx context.Context, key string, value []byte, opts EntryOptions) error
	// Refresh slides the expiration of a sliding entry without reading its
	// value out; a missing or non-sliding entry is left alone (no error).
	Refresh(ctx context.Context, key string) error
	// Remove deletes key; removing a missing key is not an error.
	Remove(ctx context.Context, key string) error
}

// Options configure a DistributedCache. The zero value is valid.
type Options struct {
	// KeyPrefix is prepended to every key, isolating this cache from other
	// users of the same store. Default "" (none).
	KeyPrefix string
	// DefaultOptions apply to a Set whose EntryOptions are zero. Default
	// zero: such entries never expire (until evicted or overwritten).
	DefaultOptions EntryOptions
	// Now is the clock for absolute deadlines. Default time.Now.
	Now func() time.Time
	// Logger receives failures the API cannot report (a slide that failed
	// during a successful Get). Default slog.Default().
	Logger *slog.Logger
}

// DistributedCache implements Cache over an sdk.Client. It is safe for
// concurrent use and holds no state besides its configuration: every
// instance of an application sharing a store and a prefix sees the same
// entries.
type DistributedCache struct {
	client   *sdk.Client
	prefix   string
	defaults EntryOptions
	now      func() time.Time
	log      *slog.Logger
}

var _ Cache = (*DistributedCache)(nil)

// New returns a cache over client. The client stays owned by the caller
// (closing the cache is not needed; close the client when done).
func New(client *sdk.Client, opts Options) *DistributedCache {
	c := &DistributedCache{client: client, prefix: opts.KeyPrefix, defaults: opts.DefaultOptions, now: opts.Now, log: opts.Logger}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	return c
}

// KeyPrefix returns the prefix this cache puts before every key.
func (c *DistributedCache) KeyPrefix() string { return c.prefix }

// Get returns the value under key, or nil on a miss.
func (c *DistributedCache) Get(ctx context.Context, key string) ([]byte, error) {
	v, _, err := c.TryGet(ctx, key)
	return v, err
}

// TryGet is Get with an explicit hit flag.
func (c *DistributedCache) TryGet(ctx context.Context, key string) (value []byte, ok bool, err error) {
	r, err := c.client.Get(ctx, c.prefix+key)
	if err != nil {
		return nil, false, fmt.Errorf("cache: get %q: %w", key, err)
	}
	v, ok, err := c.hit(ctx, key, r)
	return v, ok, err
}

// hit turns the result of a read into (value, ok) and slides a sliding
// entry. A failed slide is logged, not returned: the read itself succeeded.
func (c *DistributedCache) hit(ctx context.Context, key string, r sdk.Result) ([]byte, bool, error) {
	switch r.Status {
	case sdk.StatusSuccess:
	case sdk.StatusNotFound:
		return nil, false, nil
	default:
		return nil, false, fmt.Errorf("cache: get %q: %w", key, r.Err())
	}
	h, payload, err := decodeEntry(r.Value)
	if err != nil {
		return nil, false, fmt.Errorf("cache: get %q: %w", key, err)
	}
	now := c.now().UnixNano()
	ttl, expired := lifetime(h.sliding, h.deadline, now)
	if expired {
		// The store expires on its own (coarser) clock; never serve past the
		// deadline this cache computed.
		return nil, false, nil
	}
	if h.sliding > 0 {
		if err := c.slide(ctx, key, r, ttl); err != nil {
			c.log.Warn("zaris cache: sliding refresh failed", "key", key, "err", err)
		}
	}
	if payload == nil {
		payload = []byte{}
	}
	return payload, true, nil
}

// slide rewrites the entry read as r with time to live ttl, if that extends
// it. The rewrite is conditional on the version read (CAS): if the key was
// overwritten or refreshed meanwhile, that newer write governs and the slide
// is dropped.
func (c *DistributedCache) slide(ctx context.Context, key string, r sdk.Result, ttl time.Duration) error {
	if ttl <= r.TTL {
		return nil // already lives at least that long (absolute cap reached)
	}
	w, err := c.client.Put(ctx, c.prefix+key, r.Value, &sdk.PutOptions{IfMatchVersion: r.Version, TTL: ttl})
	if errors.Is(err, sdk.ErrConflict) {
		return nil // a newer write governs
	}
	if err != nil {
		return err
	}
	if w.OK() || w.Status == sdk.StatusConflict {
		return nil
	}
	return w.Err()
}

// Set writes value under key. Zero opts take Options.DefaultOptions. Invalid
// options return an *OptionsError (errors.Is ErrInvalidOptions); a value over
// the store's item cap returns an error wrapping sdk.ErrItemTooLarge.
func (c *DistributedCache) Set(ctx context.Context, key string, value []byte, opts EntryOptions) error {
	if opts.IsZero() {
		opts = c.defaults
	}
	p, err := resolve(opts, c.now())
	if err != nil {
		return err
	}
	entry := encodeEntry(header{sliding: p.sliding, deadline: p.deadline}, value)
	var po *sdk.PutOptions
	if p.ttl > 0 {
		po = &sdk.PutOptions{TTL: p.ttl}
	}
	r, err := c.client.Put(ctx, c.prefix+key, entry, po)
	if err != nil {
		return fmt.Errorf("cache: set %q: %w", key, err)
	}
	if !r.OK() {
		return fmt.Errorf("cache: set %q: %w", key, r.Err())
	}
	return nil
}

// Refresh slides the expiration of a sliding entry (read + conditional
// rewrite with a fresh time to live, capped by the absolute deadline). A
// missing or non-sliding entry is left alone.
func (c *DistributedCache) Refresh(ctx context.Context, key string) error {
	r, err := c.client.Get(ctx, c.prefix+key)
	if err != nil {
		return fmt.Errorf("cache: refresh %q: %w", key, err)
	}
	switch r.Status {
	case sdk.StatusSuccess:
	case sdk.StatusNotFound:
		return nil
	default:
		return fmt.Errorf("cache: refresh %q: %w", key, r.Err())
	}
	h, _, err := decodeEntry(r.Value)
	if err != nil {
		return fmt.Errorf("cache: refresh %q: %w", key, err)
	}
	ttl, expired := lifetime(h.sliding, h.deadline, c.now().UnixNano())
	if expired || h.sliding == 0 {
		return nil
	}
	if err := c.slide(ctx, key, r, ttl); err != nil {
		return fmt.Errorf("cache: refresh %q: %w", key, err)
	}
	return nil
}

// Remove deletes key. A missing key is not an error.
func (c *DistributedCache) Remove(ctx context.Context, key string) error {
	r, err := c.client.Delete(ctx, c.prefix+key)
	if err != nil {
		return fmt.Errorf("cache: remove %q: %w", key, err)
	}
	if r.OK() || r.Status == sdk.StatusNotFound {
		return nil
	}
	return fmt.Errorf("cache: remove %q: %w", key, r.Err())
}

// GetMany reads keys in one bulk call; values[i] answers keys[i] and is nil
// on a miss. Sliding entries among them slide as with Get. A per-key failure
// (other than a miss) fails the call.
func (c *DistributedCache) GetMany(ctx context.Context, keys []string) ([][]byte, error) {
	full := make([]string, len(keys))
	for i, k := range keys {
		full[i] = c.prefix + k
	}
	res, err := c.client.GetMany(ctx, full)
	if err != nil {
		return nil, fmt.Errorf("cache: get many: %w", err)
	}
	out := make([][]byte, len(keys))
	var errs []error
	for i, r := range res {
		v, _, err := c.hit(ctx, keys[i], r.Result)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out[i] = v
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}
