package hybrid

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"
)

// FactoryContext lets a factory decide how its own result is cached: its
// lifetimes, extra tags, or not at all (a "not found" answer that must not
// be remembered). A factory reaches it with FactoryContextFrom(ctx); it is
// read once the factory returns.
type FactoryContext struct {
	key   string
	stale bool

	mu         sync.Mutex // guards the fields below
	opts       EntryOptions
	tags       []string
	doNotCache bool
}

type factoryContextKey struct{}

// FactoryContextFrom returns the FactoryContext of the factory call ctx
// belongs to, or nil outside a factory.
func FactoryContextFrom(ctx context.Context) *FactoryContext {
	fc, _ := ctx.Value(factoryContextKey{}).(*FactoryContext)
	return fc
}

func newFactoryContext(key string, p policy, tags []string, stale bool) *FactoryContext {
	return &FactoryContext{
		key: key, stale: stale,
		opts: EntryOptions{Expiration: p.exp, LocalCacheExpiration: p.local, Flags: p.flags},
		tags: tags,
	}
}

// Key is the key being produced.
func (fc *FactoryContext) Key() string { return fc.key }

// HasStaleValue reports whether a fail-safe value exists that will be
// served if this factory fails.
func (fc *FactoryContext) HasStaleValue() bool { return fc.stale }

// Options returns the options the result will be cached with so far.
func (fc *FactoryContext) Options() EntryOptions {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.opts
}

// SetExpiration sets the result's L2 lifetime (clamped like
// EntryOptions.Expiration; the L1 lifetime is clamped under it).
func (fc *FactoryContext) SetExpiration(d time.Duration) {
	fc.mu.Lock()
	fc.opts.Expiration = d
	fc.mu.Unlock()
}

// SetLocalCacheExpiration sets the result's L1 lifetime (≤ Expiration).
func (fc *FactoryContext) SetLocalCacheExpiration(d time.Duration) {
	fc.mu.Lock()
	fc.opts.LocalCacheExpiration = d
	fc.mu.Unlock()
}

// AddTags adds tags to the result.
func (fc *FactoryContext) AddTags(tags ...string) {
	fc.mu.Lock()
	fc.tags = normalizeTags(append(append([]string(nil), fc.tags...), tags...))
	fc.mu.Unlock()
}

// DoNotCache returns the result to the callers without storing it in
// either tier.
func (fc *FactoryContext) DoNotCache() {
	fc.mu.Lock()
	fc.doNotCache = true
	fc.mu.Unlock()
}

func (fc *FactoryContext) outcome() (EntryOptions, []string, bool) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.opts, fc.tags, fc.doNotCache
}

// callFactory runs factory, turning a panic into a *PanicError.
func callFactory[T any](ctx context.Context, key string, factory func(context.Context) (T, error)) (v T, err error) {
	defer func() {
		if p := recover(); p != nil {
			var zero T
			v, err = zero, &PanicError{Key: key, Value: p, Stack: debug.Stack()}
		}
	}()
	return factory(ctx)
}

type factoryResult[T any] struct {
	v   T
	err error
}

type factoryOutcome uint8

const (
	factoryDone        factoryOutcome = iota // v, err are the factory's answer
	factorySoftTimeout                       // still running: onLate gets its answer
	factoryHardTimeout                       // given up; context cancelled
)

// factoryRun is one invocation of a factory under the soft and hard
// timeouts.
type factoryRun[T any] struct {
	v       T
	err     error
	outcome factoryOutcome
}

// runFactory invokes factory with ctx. Without timeouts it runs inline;
// otherwise in a tracked goroutine. The soft timeout applies only when
// softOK (a stale value exists to answer with); after it, the factory keeps
// running in the background, bounded by the hard timeout, and onLate
// receives its successful answer.
func runFactory[T any](h *Cache, ctx context.Context, key string, factory func(context.Context) (T, error), softOK bool, onLate func(T)) factoryRun[T] {
	if h.tel == nil {
		return runFactoryTimed(h, ctx, key, factory, softOK, onLate)
	}
	start := time.Now()
	run := runFactoryTimed(h, ctx, key, factory, softOK, onLate)
	h.tel.factoryRan(start, run.outcome, run.err)
	return run
}

// runFactoryTimed is runFactory under the timeouts, unmeasured.
func runFactoryTimed[T any](h *Cache, ctx context.Context, key string, factory func(context.Context) (T, error), softOK bool, onLate func(T)) factoryRun[T] {
	soft, hard := h.opts.FactorySoftTimeout, h.opts.FactoryHardTimeout
	if !softOK {
		soft = 0
	}
	if soft <= 0 && hard <= 0 {
		v, err := callFactory(ctx, key, factory)
		return factoryRun[T]{v: v, err: err}
	}
	fctx, cancel := context.WithCancel(ctx)
	done := make(chan factoryResult[T], 1)
	if !h.bg.spawn(func() {
		v, err := callFactory(fctx, key, factory)
		done <- factoryResult[T]{v, err}
	}) {
		cancel()
		return factoryRun[T]{err: ErrClosed}
	}
	var softC, hardC <-chan time.Time
	var hardTimer *time.Timer
	if hard > 0 {
		hardTimer = time.NewTimer(hard)
		hardC = hardTimer.C
	}
	if soft > 0 {
		t := time.NewTimer(soft)
		defer t.Stop()
		softC = t.C
	}
	select {
	case r := <-done:
		cancel()
		if hardTimer != nil {
			hardTimer.Stop()
		}
		return factoryRun[T]{v: r.v, err: r.err}
	case <-hardC:
		cancel()
		return factoryRun[T]{err: fmt.Errorf("%w after %v (key %q)", ErrFactoryTimeout, hard, key), outcome: factoryHardTimeout}
	case <-softC:
	}
	waiter := func() {
		defer cancel()
		if hardTimer != nil {
			defer hardTimer.Stop()
		}
		select {
		case r := <-done:
			if r.err == nil {
				onLate(r.v)
			} else {
				h.log.Warn("hybrid: background factory failed", "key", key, "err", r.err)
			}
		case <-hardC:
			h.log.Warn("hybrid: background factory timed out", "key", key, "after", hard)
		}
	}
	if !h.bg.spawn(waiter) {
		cancel()
	}
	return factoryRun[T]{outcome: factorySoftTimeout}
}
