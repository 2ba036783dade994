package hybrid_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
)

var errDown = errors.New("database down")

// flaky is a factory whose answer the test switches.
type flaky struct {
	calls atomic.Int64
	fail  atomic.Bool
	value atomic.Value // string
}

func (f *flaky) factory(context.Context) (string, error) {
	f.calls.Add(1)
	if f.fail.Load() {
		return "", errDown
	}
	return f.value.Load().(string), nil
}

func TestFailSafeServesStaleValueThenThrottles(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{
		Expiration:               time.Second,
		FailSafeMaxDuration:      time.Minute,
		FailSafeThrottleDuration: 5 * time.Second,
	}, nil)
	ctx := context.Background()
	f := &flaky{}
	f.value.Store("v1")
	get := func() (string, error) { return hybrid.GetOrCreate(ctx, a.h, "k", f.factory, nil) }

	v, err := get()
	require.NoError(t, err)
	assert.Equal(t, "v1", v)
	// The physical TTL is longer than the logical one in both tiers.
	ttl, err := r.l2.TimeToLive(ctx, "hc:v:k")
	require.NoError(t, err)
	assert.Greater(t, ttl.TTL, 30*time.Second)

	r.clock.Advance(2 * time.Second) // expired
	f.fail.Store(true)
	v, err = get()
	require.NoError(t, err, "fail-safe hides the factory error")
	assert.Equal(t, "v1", v)
	assert.Equal(t, int64(2), f.calls.Load())
	assert.Equal(t, uint64(1), a.h.Stats().FailSafeServed)

	// Within the throttle window the stale value is served from L1 and the
	// failing factory is left alone.
	r.clock.Advance(time.Second)
	v, err = get()
	require.NoError(t, err)
	assert.Equal(t, "v1", v)
	assert.Equal(t, int64(2), f.calls.Load())

	// After it, the factory is tried again; once it recovers, fresh data.
	r.clock.Advance(5 * time.Second)
	f.fail.Store(false)
	f.value.Store("v2")
	v, err = get()
	require.NoError(t, err)
	assert.Equal(t, "v2", v)
	assert.Equal(t, int64(3), f.calls.Load())

	// Another instance with a cold L1 uses the stale L2 copy the same way.
	r.clock.Advance(2 * time.Second)
	f.fail.Store(true)
	b := r.instance(hybrid.Options{Expiration: time.Second, FailSafeMaxDuration: time.Minute}, nil)
	v, err = hybrid.GetOrCreate(ctx, b.h, "k", f.factory, nil)
	require.NoError(t, err)
	assert.Equal(t, "v2", v)

	// Past the fail-safe horizon there is nothing to serve.
	r.clock.Advance(2 * time.Minute)
	_, err = get()
	require.ErrorIs(t, err, errDown)
}

func TestFailSafeOffOrInvalidatedReturnsTheError(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	f := &flaky{}
	f.value.Store("v1")

	off := r.instance(hybrid.Options{Expiration: time.Second}, nil)
	_, err := hybrid.GetOrCreate(ctx, off.h, "k", f.factory, nil)
	require.NoError(t, err)

	on := r.instance(hybrid.Options{Expiration: time.Second, FailSafeMaxDuration: time.Minute}, nil)
	_, err = hybrid.GetOrCreate(ctx, on.h, "tagged", f.factory, nil, "t")
	require.NoError(t, err)
	_, err = hybrid.GetOrCreate(ctx, on.h, "noflag", f.factory, &hybrid.EntryOptions{Flags: hybrid.DisableFailSafe})
	require.NoError(t, err)

	r.clock.Advance(2 * time.Second)
	require.NoError(t, on.h.RemoveByTag(ctx, "t"))
	f.fail.Store(true)
	_, err = hybrid.GetOrCreate(ctx, off.h, "k", f.factory, nil)
	require.ErrorIs(t, err, errDown, "fail-safe off")
	_, err = hybrid.GetOrCreate(ctx, on.h, "tagged", f.factory, nil, "t")
	require.ErrorIs(t, err, errDown, "an invalidated entry is never served as stale")
	_, err = hybrid.GetOrCreate(ctx, on.h, "noflag", f.factory, &hybrid.EntryOptions{Flags: hybrid.DisableFailSafe})
	require.ErrorIs(t, err, errDown, "DisableFailSafe")
}

func TestSoftTimeoutServesStaleAndRefreshesInBackground(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{
		Expiration:          time.Second,
		FailSafeMaxDuration: time.Minute,
		FactorySoftTimeout:  20 * time.Millisecond,
		FactoryHardTimeout:  time.Minute,
	}, nil)
	ctx := context.Background()
	_, err := hybrid.GetOrCreate(ctx, a.h, "k", func(context.Context) (string, error) { return "v1", nil }, nil)
	require.NoError(t, err)
	r.clock.Advance(2 * time.Second)

	release := make(chan struct{})
	slow := func(context.Context) (string, error) {
		<-release
		return "v2", nil
	}
	v, err := hybrid.GetOrCreate(ctx, a.h, "k", slow, nil)
	require.NoError(t, err)
	assert.Equal(t, "v1", v, "stale value after the soft timeout")
	assert.Equal(t, uint64(1), a.h.Stats().SoftTimeouts)

	close(release) // the factory finishes in the background…
	eventually(t, "background completion stored v2", func() bool { return a.h.Stats().BackgroundSaves == 1 })
	v, ok, err := hybrid.TryGet[string](ctx, a.h, "k", nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "v2", v, "…and refreshes the cache")

	// Without a stale value the soft timeout does not apply: callers wait.
	v, err = hybrid.GetOrCreate(ctx, a.h, "cold", func(context.Context) (string, error) {
		<-time.After(40 * time.Millisecond) // a factory slower than the soft timeout
		return "waited", nil
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, "waited", v)
}

func TestHardTimeoutGivesUp(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{FactoryHardTimeout: 30 * time.Millisecond}, nil)
	ctx := context.Background()
	cancelled := make(chan struct{})
	_, err := hybrid.GetOrCreate(ctx, a.h, "k", func(fctx context.Context) (string, error) {
		<-fctx.Done() // a well-behaved factory stops when its context ends
		close(cancelled)
		return "", fctx.Err()
	}, nil)
	require.ErrorIs(t, err, hybrid.ErrFactoryTimeout)
	<-cancelled
	assert.Equal(t, uint64(1), a.h.Stats().HardTimeouts)
	// The flight is free again.
	v, err := hybrid.GetOrCreate(ctx, a.h, "k", func(context.Context) (string, error) { return "ok", nil }, nil)
	require.NoError(t, err)
	assert.Equal(t, "ok", v)

	// With a stale value, a hard timeout falls back to fail-safe.
	b := r.instance(hybrid.Options{Expiration: time.Second, FailSafeMaxDuration: time.Minute, FactoryHardTimeout: 30 * time.Millisecond}, nil)
	_, err = hybrid.GetOrCreate(ctx, b.h, "s", func(context.Context) (string, error) { return "old", nil }, nil)
	require.NoError(t, err)
	r.clock.Advance(2 * time.Second)
	v, err = hybrid.GetOrCreate(ctx, b.h, "s", func(fctx context.Context) (string, error) {
		<-fctx.Done()
		return "", fctx.Err()
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, "old", v)
}

func TestFactoryChoosesItsEntryOptions(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	ctx := context.Background()

	t.Run("DoNotCache", func(t *testing.T) {
		var calls atomic.Int64
		notFound := func(ctx context.Context) (*string, error) {
			calls.Add(1)
			fc := hybrid.FactoryContextFrom(ctx)
			require.NotNil(t, fc)
			assert.Equal(t, "user:404", fc.Key())
			fc.DoNotCache()
			return nil, nil
		}
		for range 2 {
			v, err := hybrid.GetOrCreate(ctx, a.h, "user:404", notFound, nil)
			require.NoError(t, err)
			assert.Nil(t, v)
		}
		assert.Equal(t, int64(2), calls.Load())
		assert.Equal(t, sdk.StatusNotFound, rawL2(t, a, "user:404").Status)
		assert.Equal(t, sdk.StatusNotFound, rawL1(t, a, "user:404").Status)
	})
	t.Run("Lifetime", func(t *testing.T) {
		c := &counter{prefix: "v"}
		short := func(ctx context.Context) (string, error) {
			hybrid.FactoryContextFrom(ctx).SetExpiration(time.Second)
			return c.factory(ctx)
		}
		_, err := hybrid.GetOrCreate(ctx, a.h, "short", short, nil)
		require.NoError(t, err)
		ttl, err := r.l2.TimeToLive(ctx, "hc:v:short")
		require.NoError(t, err)
		assert.LessOrEqual(t, ttl.TTL, time.Second)
		r.clock.Advance(1500 * time.Millisecond)
		v, err := hybrid.GetOrCreate(ctx, a.h, "short", short, nil)
		require.NoError(t, err)
		assert.Equal(t, "v2", v)
	})
	t.Run("Tags", func(t *testing.T) {
		c := &counter{prefix: "v"}
		tagged := func(ctx context.Context) (string, error) {
			fc := hybrid.FactoryContextFrom(ctx)
			fc.AddTags("tenant:7")
			fc.SetLocalCacheExpiration(time.Minute)
			assert.Equal(t, time.Minute, fc.Options().LocalCacheExpiration)
			return c.factory(ctx)
		}
		get := func() string {
			v, err := hybrid.GetOrCreate(ctx, a.h, "dyn", tagged, nil, "static")
			require.NoError(t, err)
			return v
		}
		assert.Equal(t, "v1", get())
		r.clock.Advance(time.Millisecond)
		require.NoError(t, a.h.RemoveByTag(ctx, "tenant:7"))
		assert.Equal(t, "v2", get())
		r.clock.Advance(time.Millisecond)
		require.NoError(t, a.h.RemoveByTag(ctx, "static"))
		assert.Equal(t, "v3", get(), "the call's own tags are kept")
	})
	assert.Nil(t, hybrid.FactoryContextFrom(ctx), "nil outside a factory")
}

func TestEagerRefresh(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{Expiration: 10 * time.Second, EagerRefreshThreshold: 0.5}, nil)
	ctx := context.Background()
	c := &counter{prefix: "v"}
	assert.Equal(t, "v1", get(t, a.h, "hot", c, nil))

	r.clock.Advance(4 * time.Second) // 40 %: not yet
	assert.Equal(t, "v1", get(t, a.h, "hot", c, nil))
	assert.Equal(t, uint64(0), a.h.Stats().EagerRefreshes)

	r.clock.Advance(2 * time.Second) // 60 %: the hit answers at once and refreshes behind
	assert.Equal(t, "v1", get(t, a.h, "hot", c, nil))
	eventually(t, "the refresh stores v2", func() bool {
		v, ok, err := hybrid.TryGet[string](ctx, a.h, "hot", nil)
		return err == nil && ok && v == "v2"
	})
	assert.Equal(t, uint64(1), a.h.Stats().EagerRefreshes)
	for range 5 {
		assert.Equal(t, "v2", get(t, a.h, "hot", c, nil))
	}
	assert.Equal(t, int64(2), c.calls.Load(), "one refresh per generation")

	// A second instance copies v2 from L2 into its L1 before it is due.
	b := r.instance(hybrid.Options{Expiration: 10 * time.Second, EagerRefreshThreshold: 0.5}, nil)
	assert.Equal(t, "v2", get(t, b.h, "hot", c, nil))

	// The refreshed entry has a full lifetime again: at the old expiry it
	// is still served, and due again — A refreshes it to v3.
	r.clock.Advance(5 * time.Second)
	assert.Equal(t, "v2", get(t, a.h, "hot", c, nil))
	eventually(t, "a's refresh stores v3", func() bool {
		v, ok, err := hybrid.TryGet[string](ctx, a.h, "hot", nil)
		return err == nil && ok && v == "v3"
	})
	// B's copy is due as well; its refresh finds the newer generation in L2
	// and adopts it instead of running the factory.
	assert.Equal(t, "v2", get(t, b.h, "hot", c, nil))
	eventually(t, "b adopts v3", func() bool {
		v, ok, err := hybrid.TryGet[string](ctx, b.h, "hot", nil)
		return err == nil && ok && v == "v3"
	})
	assert.Equal(t, int64(3), c.calls.Load(), "b ran no factory")
	assert.Equal(t, "v3", get(t, b.h, "hot", c, &hybrid.EntryOptions{Flags: hybrid.DisableEagerRefresh}))
}
