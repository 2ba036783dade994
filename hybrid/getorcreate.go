package hybrid

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
)

// GetOrCreate returns the value of key, producing it with factory on a
// miss (R-SDK-2):
//
//  1. L1, lock-free: the materialized value validated against L1, else
//     L1's bytes;
//  2. else the key's single flight — one per key and instance, so 20
//     concurrent callers of a cold key run factory once — which
//     re-checks L1, then reads L2, then runs factory and writes L2 then L1.
//
// opts may be nil (the Options defaults). tags label the entry for
// RemoveByTag. Concurrent callers of one key share one fill: the first
// caller's factory, options and tags apply, and each caller waits only as
// long as its own ctx allows. The factory's ctx carries the caller's values
// but not its cancellation (a fill serves every waiter); it is cancelled by
// FactoryHardTimeout and by Close. Through FactoryContextFrom(ctx) the
// factory may set its result's lifetimes and tags or decline caching.
//
// Errors: the factory's own error (unless fail-safe serves a stale value),
// a *PanicError (errors.Is ErrFactoryPanic) if it panicked,
// ErrFactoryTimeout, ctx.Err(), ErrClosed. An L2 that fails is logged and
// treated as a miss. Invalid keys bypass the cache: factory runs, nothing
// is stored.
func GetOrCreate[T any](ctx context.Context, h *Cache, key string, factory func(context.Context) (T, error), opts *EntryOptions, tags ...string) (T, error) {
	if h.closed.Load() {
		var zero T
		return zero, ErrClosed
	}
	flags := h.flagsOf(opts)
	if flags&(DisableLocalCacheRead|DisableMaterialization) == 0 {
		if v, me, due, ok := materializedHit[T](ctx, h, key); ok {
			if due && flags&DisableEagerRefresh == 0 {
				refreshFromHit(ctx, h, me, factory, opts, tags)
			}
			return v, nil
		}
	}
	return getOrCreateSlow(ctx, h, key, factory, opts, tags)
}

// GetOrCreateWithState is GetOrCreate with the factory's input passed as
// state rather than captured (the seed's GetOrCreateAsync(key, state,
// factory) overload). With a static factory function an L1 hit allocates
// nothing; a capturing closure passed to GetOrCreate costs one small heap
// allocation per call, hit or not, because the fill may outlive the call.
func GetOrCreateWithState[S, T any](ctx context.Context, h *Cache, key string, state S, factory func(context.Context, S) (T, error), opts *EntryOptions, tags ...string) (T, error) {
	if h.closed.Load() {
		var zero T
		return zero, ErrClosed
	}
	flags := h.flagsOf(opts)
	if flags&(DisableLocalCacheRead|DisableMaterialization) == 0 {
		if v, me, due, ok := materializedHit[T](ctx, h, key); ok {
			if due && flags&DisableEagerRefresh == 0 {
				refreshFromHit(ctx, h, me, bindState(state, factory), opts, tags)
			}
			return v, nil
		}
	}
	return getOrCreateSlow(ctx, h, key, bindState(state, factory), opts, tags)
}

func bindState[S, T any](state S, factory func(context.Context, S) (T, error)) func(context.Context) (T, error) {
	return func(ctx context.Context) (T, error) { return factory(ctx, state) }
}

// TryGet returns the value of key from L1 or L2 without producing it:
// (value, true, nil) on a hit, (zero, false, nil) on a miss or an invalid
// key. Unlike GetOrCreate it reports an L2 failure as an error.
func TryGet[T any](ctx context.Context, h *Cache, key string, opts *EntryOptions) (T, bool, error) {
	var zero T
	if h.closed.Load() {
		return zero, false, ErrClosed
	}
	flags := h.flagsOf(opts)
	if flags&(DisableLocalCacheRead|DisableMaterialization) == 0 {
		if v, _, _, ok := materializedHit[T](ctx, h, key); ok {
			return v, true, nil
		}
	}
	if !h.validKey(key) {
		return zero, false, nil
	}
	f := &fill[T]{h: h, key: key, l1k: h.l1Key(key), l2k: h.l2Key(key), p: h.resolve(opts)}
	if !f.p.has(DisableLocalCacheRead) {
		if v, ok := f.fromL1(ctx); ok {
			return v, true, nil
		}
	}
	res, err := f.flight(ctx, "?"+f.l2k)
	if err != nil || res == nil {
		return zero, false, err
	}
	v, err := valueAs[T](h, res)
	return v, err == nil, err
}

var errNilFactory = errors.New("hybrid: GetOrCreate needs a factory")

func getOrCreateSlow[T any](ctx context.Context, h *Cache, key string, factory func(context.Context) (T, error), opts *EntryOptions, tags []string) (T, error) {
	var zero T
	if factory == nil {
		return zero, errNilFactory
	}
	p := h.resolve(opts)
	if !h.validKey(key) {
		h.stats.bypassed.Add(1)
		fc := newFactoryContext(key, p, normalizeTags(tags), false)
		run := runFactory(h, context.WithValue(ctx, factoryContextKey{}, fc), key, factory, false, nil)
		return run.v, run.err
	}
	f := &fill[T]{h: h, key: key, l1k: h.l1Key(key), l2k: h.l2Key(key), factory: factory, p: p, tags: normalizeTags(tags)}
	if !p.has(DisableLocalCacheRead) {
		if v, ok := f.fromL1(ctx); ok {
			return v, nil
		}
	}
	res, err := f.flight(ctx, f.l2k)
	if err != nil {
		return zero, err
	}
	return valueAs[T](h, res)
}

// refreshFromHit starts an eager refresh from a materialized hit, unless
// one already ran for this generation of the entry.
func refreshFromHit[T any](ctx context.Context, h *Cache, me *matEntry, factory func(context.Context) (T, error), opts *EntryOptions, tags []string) {
	if v, ok := h.refreshing.Load(me.key); ok && v.(*refreshState).created >= me.created {
		return
	}
	f := &fill[T]{h: h, key: me.key, l1k: me.l1Key, l2k: h.l2Key(me.key), factory: factory, p: h.resolve(opts), tags: normalizeTags(tags)}
	f.scheduleRefresh(ctx, me.created, me.expires)
}

// fillResult is what a flight hands its callers: the value as produced
// (type T of the caller that started it) and, when known, its bytes, so a
// caller asking for another type can decode its own.
type fillResult struct {
	value   any
	payload []byte
	tier    tier // where the fill found it (tierMiss: produced)
	stale   bool // a fail-safe value
}

func valueAs[T any](h *Cache, res *fillResult) (T, error) {
	if v, ok := res.value.(T); ok {
		return v, nil
	}
	payload := res.payload
	if payload == nil {
		b, err := h.ser.Marshal(res.value)
		if err != nil {
			var zero T
			return zero, fmt.Errorf("hybrid: convert value: %w", err)
		}
		payload = b
	}
	return decodeValue[T](h, payload)
}

func decodeValue[T any](h *Cache, payload []byte) (T, error) {
	var v T
	err := h.ser.Unmarshal(payload, &v)
	return v, err
}

// fill is one read-through of one key: the L1 recheck, L2, the factory.
// factory is nil for TryGet.
type fill[T any] struct {
	h        *Cache
	key      string
	l1k, l2k string // the key in each tier
	factory  func(context.Context) (T, error)
	p        policy
	tags     []string
	ran      bool // this caller's flight function ran (it did not join another's)
}

// flight runs the fill in the key's single flight; the caller waits for it
// as long as ctx allows. A nil result with a nil error is a miss (TryGet).
func (f *fill[T]) flight(ctx context.Context, flightKey string) (*fillResult, error) {
	if t := f.h.tel; t != nil {
		ctx, span := t.fillSpan(ctx, "zaris.hybrid.fill")
		res, answered, err := f.flightOnce(ctx, flightKey)
		// f.ran is written by the flight's function, which ran (if it
		// did) before the flight answered.
		joined := answered && !f.ran
		if joined {
			t.joins.Add(context.Background(), 1)
		}
		endFill(span, res, joined, err)
		return res, err
	}
	res, _, err := f.flightOnce(ctx, flightKey)
	return res, err
}

// flightOnce is flight; answered is false when the caller gave up waiting.
func (f *fill[T]) flightOnce(ctx context.Context, flightKey string) (res *fillResult, answered bool, err error) {
	fn := func() (any, error) { f.ran = true; return f.run(ctx) }
	if ctx.Done() == nil {
		// A caller that cannot give up waits in place: the fill runs on its
		// goroutine, sparing a goroutine start and a hand-off.
		v, err, _ := f.h.flights.Do(flightKey, fn)
		if err != nil {
			return nil, true, err
		}
		res, _ := v.(*fillResult)
		return res, true, nil
	}
	ch := f.h.flights.DoChan(flightKey, fn)
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, true, r.Err
		}
		res, _ := r.Val.(*fillResult)
		return res, true, nil
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// fromL1 is the lock-free read of L1's bytes (a key with no usable
// materialized value).
func (f *fill[T]) fromL1(ctx context.Context) (T, bool) {
	var zero T
	h := f.h
	epoch := h.tagEpoch.Load()
	env, r, ok := h.readL1(ctx, f.l1k)
	if !ok {
		return zero, false
	}
	now := h.clock.NowNano()
	if h.judge(ctx, &env, now, true) != verdictFresh {
		return zero, false
	}
	v, err := decodeValue[T](h, env.payload)
	if err != nil {
		return zero, false
	}
	h.stats.l1Hits.Add(1)
	if h.tel != nil {
		h.tel.lookup(tierL1)
	}
	h.materialize(f.key, f.l1k, v, &env, r, epoch, f.p)
	f.maybeRefresh(ctx, &env, now)
	return v, true
}

// run is the body of the flight (STYLE 9: the cache is checked again inside
// it). It never panics: single flight would re-panic in every waiter.
func (f *fill[T]) run(callerCtx context.Context) (res *fillResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, &PanicError{Key: f.key, Value: p, Stack: debug.Stack()}
		}
	}()
	h := f.h
	ctx := h.detach(callerCtx)
	snap := h.snapshot(f.key)
	now := h.clock.NowNano()
	var stale *envelope

	if !f.p.has(DisableLocalCacheRead) {
		if env, r, ok := h.readL1(ctx, f.l1k); ok {
			switch h.judge(ctx, &env, now, true) {
			case verdictFresh:
				if v, err := decodeValue[T](h, env.payload); err == nil {
					h.stats.l1Hits.Add(1)
					if h.tel != nil {
						h.tel.lookup(tierL1)
					}
					h.materialize(f.key, f.l1k, v, &env, r, snap.epoch, f.p)
					f.maybeRefresh(callerCtx, &env, now)
					return &fillResult{value: v, payload: env.payload, tier: tierL1}, nil
				}
			case verdictStale:
				stale = &env
			}
		}
	}

	if !f.p.has(DisableDistributedCacheRead) {
		env, found, err := h.readL2(ctx, f.l2k)
		switch {
		case err != nil:
			if f.factory == nil {
				return nil, fmt.Errorf("hybrid: read %q from L2: %w", f.key, err)
			}
			h.l2Failure("read", f.key, err)
		case found:
			switch h.judge(ctx, &env, now, false) {
			case verdictFresh:
				if v, err := decodeValue[T](h, env.payload); err == nil {
					h.stats.l2Hits.Add(1)
					if h.tel != nil {
						h.tel.lookup(tierL2)
					}
					l1 := h.l1Copy(&env, f.p, now, snap.at)
					h.writeL1(ctx, f.key, f.l1k, &l1, v, f.p, snap, l2Change{})
					f.maybeRefresh(callerCtx, &env, now)
					return &fillResult{value: v, payload: env.payload, tier: tierL2}, nil
				}
			case verdictStale:
				if stale == nil || env.created > stale.created {
					stale = &env
				}
			}
		}
	}

	if h.tel != nil {
		h.tel.lookup(tierMiss)
	}
	if f.factory == nil {
		return nil, nil // TryGet: a miss
	}
	return f.produce(ctx, snap, stale)
}

// produce runs the factory, with fail-safe and the soft/hard timeouts.
func (f *fill[T]) produce(ctx context.Context, snap snapshot, stale *envelope) (*fillResult, error) {
	h := f.h
	if f.p.failSafe == 0 {
		stale = nil
	}
	fc := newFactoryContext(f.key, f.p, f.tags, stale != nil)
	created := h.stamp()
	h.stats.factoryCalls.Add(1)
	run := runFactory(h, context.WithValue(ctx, factoryContextKey{}, fc), f.key, f.factory, stale != nil, func(v T) {
		f.store(ctx, fc, v, created, snap)
		h.stats.backgroundSaves.Add(1) // counted once stored: a reader that saw the count finds the value
	})
	switch run.outcome {
	case factoryDone:
		if run.err == nil {
			f.store(ctx, fc, run.v, created, snap)
			return &fillResult{value: run.v, tier: tierMiss}, nil
		}
		h.stats.factoryErrors.Add(1)
	case factorySoftTimeout:
		h.stats.softTimeouts.Add(1)
		return f.serveStale(ctx, stale, snap, fmt.Errorf("factory still running after the soft timeout %v", h.opts.FactorySoftTimeout))
	case factoryHardTimeout:
		h.stats.hardTimeouts.Add(1)
		h.stats.factoryErrors.Add(1)
	}
	if stale != nil {
		return f.serveStale(ctx, stale, snap, run.err)
	}
	return nil, run.err
}

// store caches a factory's value as the factory context finally says.
func (f *fill[T]) store(ctx context.Context, fc *FactoryContext, v T, created int64, snap snapshot) {
	eo, tags, noCache := fc.outcome()
	if noCache {
		f.h.stats.notCached.Add(1)
		return
	}
	f.h.storeValue(ctx, f.key, f.l1k, f.l2k, v, created, f.h.resolve(&eo), tags, snap)
}

// serveStale answers with a fail-safe value and keeps answering with it
// from L1 for the throttle window, so a failing factory is not retried on
// every call.
func (f *fill[T]) serveStale(ctx context.Context, stale *envelope, snap snapshot, cause error) (*fillResult, error) {
	h := f.h
	v, err := decodeValue[T](h, stale.payload)
	if err != nil {
		return nil, fmt.Errorf("hybrid: stale value of %q unreadable (%w) after: %w", f.key, err, cause)
	}
	h.stats.failSafe.Add(1)
	if h.tel != nil {
		h.tel.failSafe.Add(context.Background(), 1)
	}
	h.log.Warn("hybrid: serving a stale value (fail-safe)", "key", f.key, "cause", cause)
	throttled := *stale
	throttled.local = min(h.clock.NowNano()+int64(h.opts.FailSafeThrottleDuration), stale.physical)
	throttled.observed = snap.at
	h.writeL1(ctx, f.key, f.l1k, &throttled, v, f.p, snap, l2Change{})
	return &fillResult{value: v, payload: stale.payload, tier: tierMiss, stale: true}, nil
}

// maybeRefresh starts an eager refresh when env is in the last part of its
// life.
func (f *fill[T]) maybeRefresh(ctx context.Context, env *envelope, now int64) {
	if f.factory == nil || f.p.has(DisableEagerRefresh) {
		return
	}
	due := f.h.refreshAt(env)
	if due == 0 || now < due || now >= env.expires {
		return
	}
	f.scheduleRefresh(ctx, env.created, env.expires)
}

// scheduleRefresh starts one background refresh per generation (created)
// of the key's entry; a failed refresh is not retried for that generation
// (the entry then expires normally).
func (f *fill[T]) scheduleRefresh(ctx context.Context, created, expires int64) {
	h := f.h
	st := &refreshState{created: created, expires: expires}
	if prev, loaded := h.refreshing.LoadOrStore(f.key, st); loaded {
		if prev.(*refreshState).created >= created || !h.refreshing.CompareAndSwap(f.key, prev, st) {
			return
		}
	}
	dctx := h.detach(ctx)
	if !h.bg.spawn(func() { f.refresh(dctx, st) }) {
		h.refreshing.CompareAndDelete(f.key, st)
	}
}

// refresh produces a new value for an entry that is still being served.
// If L2 already holds a newer generation (another instance refreshed), L1
// adopts it instead of running the factory.
func (f *fill[T]) refresh(ctx context.Context, st *refreshState) {
	h := f.h
	h.stats.eagerRefreshes.Add(1)
	snap := h.snapshot(f.key)
	now := h.clock.NowNano()
	if !f.p.has(DisableDistributedCacheRead) {
		env, found, err := h.readL2(ctx, f.l2k)
		if err == nil && found && env.created > st.created && h.judge(ctx, &env, now, false) == verdictFresh {
			if due := h.refreshAt(&env); due == 0 || now < due {
				if v, err := decodeValue[T](h, env.payload); err == nil {
					l1 := h.l1Copy(&env, f.p, now, snap.at)
					h.writeL1(ctx, f.key, f.l1k, &l1, v, f.p, snap, l2Change{})
					h.refreshing.CompareAndDelete(f.key, st)
					return
				}
			}
		}
	}
	fc := newFactoryContext(f.key, f.p, f.tags, false)
	created := h.stamp()
	h.stats.factoryCalls.Add(1)
	run := runFactory(h, context.WithValue(ctx, factoryContextKey{}, fc), f.key, f.factory, false, nil)
	if run.err != nil {
		h.stats.factoryErrors.Add(1)
		h.log.Warn("hybrid: eager refresh failed; the entry expires normally", "key", f.key, "err", run.err)
		return
	}
	f.store(ctx, fc, run.v, created, snap)
	h.refreshing.CompareAndDelete(f.key, st)
}
