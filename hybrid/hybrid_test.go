package hybrid_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// The seed article's own test: twenty concurrent callers on one cold key,
// the factory runs exactly once and every caller gets its value.
func TestStampedeRunsFactoryOnce(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	const callers = 20
	var calls, entered atomic.Int64
	factory := func(ctx context.Context) (string, error) {
		calls.Add(1)
		// Hold the fill until every caller is in GetOrCreate.
		eventually(t, "all callers started", func() bool { return entered.Load() == callers })
		return "loaded", nil
	}
	var wg sync.WaitGroup
	results := make([]string, callers)
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			entered.Add(1)
			results[i], errs[i] = hybrid.GetOrCreate(context.Background(), a.h, "product:42", factory, nil)
		}()
	}
	wg.Wait()
	assert.Equal(t, int64(1), calls.Load(), "factory runs once")
	for i := range callers {
		require.NoError(t, errs[i])
		assert.Equal(t, "loaded", results[i])
	}
	assert.Equal(t, uint64(1), a.h.Stats().FactoryCalls)
}

func TestReadPathL1ThenL2ThenFactory(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	b := r.instance(hybrid.Options{}, nil)
	c := &counter{prefix: "v"}

	assert.Equal(t, "v1", get(t, a.h, "k", c, nil))
	assert.True(t, rawL1(t, a, "k").OK(), "written to L1")
	assert.True(t, rawL2(t, a, "k").OK(), "written to L2")

	// L1 serves A without touching L2: delete the L2 record behind its back.
	_, err := r.l2.Delete(context.Background(), "hc:v:k")
	require.NoError(t, err)
	assert.Equal(t, "v1", get(t, a.h, "k", c, nil))
	assert.Equal(t, uint64(1), a.h.Stats().L1Hits)

	// B has nothing in L1 and L2 is empty now: its factory runs.
	assert.Equal(t, "v2", get(t, b.h, "k", c, nil))
	// A third instance finds B's value in L2 and copies it into its L1.
	d := r.instance(hybrid.Options{}, nil)
	assert.Equal(t, "v2", get(t, d.h, "k", c, nil))
	assert.Equal(t, uint64(1), d.h.Stats().L2Hits)
	assert.True(t, rawL1(t, d, "k").OK())
	assert.Equal(t, "v2", get(t, d.h, "k", c, nil))
	assert.Equal(t, uint64(1), d.h.Stats().L1Hits)
	assert.Equal(t, int64(2), c.calls.Load())
}

func TestLocalExpirationNeverOutlivesL2(t *testing.T) {
	r := newRig(t, nil)
	// Options-level clamp: L1 asked for 1 h, L2 lives 1 s.
	a := r.instance(hybrid.Options{Expiration: time.Second, LocalCacheExpiration: time.Hour}, nil)
	c := &counter{prefix: "v"}
	get(t, a.h, "k", c, nil)
	ttl, err := l1TTL(t, a, "k")
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl.TTL, time.Second, "L1 TTL clamped to Expiration")

	// Per-entry clamp.
	get(t, a.h, "k2", c, &hybrid.EntryOptions{Expiration: 2 * time.Second, LocalCacheExpiration: time.Hour})
	ttl, err = l1TTL(t, a, "k2")
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl.TTL, 2*time.Second)

	// Filling L1 from L2 late in the entry's life: L1 gets only what is left.
	get(t, a.h, "k3", c, &hybrid.EntryOptions{Expiration: 10 * time.Second})
	r.clock.Advance(8 * time.Second)
	b := r.instance(hybrid.Options{}, nil)
	get(t, b.h, "k3", c, nil)
	ttl, err = l1TTL(t, b, "k3")
	require.NoError(t, err)
	assert.LessOrEqual(t, ttl.TTL, 2*time.Second, "L1 copy ends with the L2 entry")

	// Past the L2 expiry neither tier answers: the factory runs again.
	before := c.calls.Load()
	r.clock.Advance(1500 * time.Millisecond)
	get(t, a.h, "k", c, nil)
	assert.Equal(t, before+1, c.calls.Load())
}

func TestRemoveClearsBothTiers(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	c := &counter{prefix: "v"}
	get(t, a.h, "k", c, nil)
	require.NoError(t, a.h.Remove(context.Background(), "k"))
	assert.Equal(t, sdk.StatusNotFound, rawL1(t, a, "k").Status)
	assert.Equal(t, sdk.StatusNotFound, rawL2(t, a, "k").Status)
	assert.Equal(t, "v2", get(t, a.h, "k", c, nil))
	require.NoError(t, a.h.Remove(context.Background(), "never-there"))
}

func TestRemoveByTagInvalidatesBothTiers(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	b := r.instance(hybrid.Options{}, nil) // no backplane: only lazy checks
	c := &counter{prefix: "v"}
	ctx := context.Background()

	get(t, a.h, "p1", c, nil, "catalog")             // v1
	get(t, a.h, "p2", c, nil, "catalog", "promo")    // v2
	get(t, a.h, "u1", c, nil, "users")               // v3
	assert.Equal(t, "v1", get(t, b.h, "p1", c, nil)) // B: L1 copy of p1
	r.clock.Advance(time.Millisecond)

	require.NoError(t, a.h.RemoveByTag(ctx, "catalog"))

	// L1 tier on A: both catalog entries are misses, the other is not.
	assert.Equal(t, "v4", get(t, a.h, "p1", c, nil, "catalog"))
	assert.Equal(t, "v5", get(t, a.h, "p2", c, nil, "catalog", "promo"))
	assert.Equal(t, "v3", get(t, a.h, "u1", c, nil, "users"))

	// L2 tier: a fresh instance reads the refreshed p1 from L2 — and, with
	// the old L2 record for a new key, finds it invalid.
	get(t, a.h, "p3", c, &hybrid.EntryOptions{Flags: hybrid.DisableLocalCacheWrite}, "catalog") // v6, L2 only, after the marker
	d := r.instance(hybrid.Options{}, nil)
	assert.Equal(t, "v4", get(t, d.h, "p1", c, nil))
	assert.Equal(t, "v6", get(t, d.h, "p3", c, nil))

	// B has no backplane: its L1 copy of p1 (created before the marker) is
	// still served until a read through L2 reveals the marker…
	assert.Equal(t, "v1", get(t, b.h, "p1", c, nil))
	// …which reading any catalog entry from L2 does; the marker is then
	// mirrored in B's L1 and B's copy of p1 is a miss.
	assert.Equal(t, "v5", get(t, b.h, "p2", c, nil))
	assert.Equal(t, "v4", get(t, b.h, "p1", c, nil), "B reloads p1 from L2")
	assert.Equal(t, int64(6), c.calls.Load())
}

func TestRemoveByTagAllClearsEverything(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	c := &counter{prefix: "v"}
	get(t, a.h, "x", c, nil)
	get(t, a.h, "y", c, nil, "t")
	r.clock.Advance(time.Millisecond)
	require.NoError(t, a.h.RemoveByTag(context.Background(), hybrid.AllTag))
	assert.Equal(t, "v3", get(t, a.h, "x", c, nil))
	assert.Equal(t, "v4", get(t, a.h, "y", c, nil, "t"))
	// Another instance with a cold L1 sees the L2 "*" marker too: entries
	// written after it are valid, before it are not.
	b := r.instance(hybrid.Options{}, nil)
	assert.Equal(t, "v3", get(t, b.h, "x", c, nil))
	assert.Equal(t, int64(4), c.calls.Load())
}

func TestTagsWithOddCharacters(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	c := &counter{prefix: "v"}
	odd := []string{"{braces}", "with space", "ctl\x00\x01", strings.Repeat("long", 10000), "ünïcødé", "*not-star"}
	for i, tag := range odd {
		get(t, a.h, "k"+string(rune('a'+i)), c, nil, tag)
	}
	r.clock.Advance(time.Millisecond)
	for i, tag := range odd {
		require.NoError(t, a.h.RemoveByTag(context.Background(), tag))
		before := c.calls.Load()
		get(t, a.h, "k"+string(rune('a'+i)), c, nil, tag)
		assert.Equal(t, before+1, c.calls.Load(), "tag %q invalidates", tag)
	}
}

func TestTryGetAndSet(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	b := r.instance(hybrid.Options{}, nil)
	ctx := context.Background()
	type product struct {
		ID    int
		Name  string
		Price float64
	}
	_, ok, err := hybrid.TryGet[product](ctx, a.h, "p", nil)
	require.NoError(t, err)
	assert.False(t, ok)

	require.NoError(t, a.h.Set(ctx, "p", product{1, "lamp", 9.5}, nil, "catalog"))
	v, ok, err := hybrid.TryGet[product](ctx, a.h, "p", nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, product{1, "lamp", 9.5}, v)
	// B finds it in L2.
	v, ok, err = hybrid.TryGet[product](ctx, b.h, "p", nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "lamp", v.Name)
	assert.True(t, rawL1(t, b, "p").OK(), "TryGet fills L1 from L2")

	// GetOrCreate sees the Set value without running its factory.
	got, err := hybrid.GetOrCreate(ctx, a.h, "p", func(context.Context) (product, error) {
		t.Error("factory must not run")
		return product{}, nil
	}, nil)
	require.NoError(t, err)
	assert.Equal(t, 1, got.ID)

	// Another type reads the same bytes through the serializer.
	type nameOnly struct{ Name string }
	n, ok, err := hybrid.TryGet[nameOnly](ctx, a.h, "p", nil)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "lamp", n.Name)

	// Set's tags work with RemoveByTag.
	r.clock.Advance(time.Millisecond)
	require.NoError(t, a.h.RemoveByTag(ctx, "catalog"))
	_, ok, err = hybrid.TryGet[product](ctx, a.h, "p", nil)
	require.NoError(t, err)
	assert.False(t, ok)
}

func TestFactoryPanicIsAnError(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = hybrid.GetOrCreate(context.Background(), a.h, "boom", func(context.Context) (int, error) {
				panic("database on fire")
			}, nil)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		require.ErrorIs(t, err, hybrid.ErrFactoryPanic)
		var pe *hybrid.PanicError
		require.ErrorAs(t, err, &pe)
		assert.Equal(t, "database on fire", pe.Value)
		assert.NotEmpty(t, pe.Stack)
	}
	// The key's flight is not wedged.
	v, err := hybrid.GetOrCreate(context.Background(), a.h, "boom", func(context.Context) (int, error) { return 7, nil }, nil)
	require.NoError(t, err)
	assert.Equal(t, 7, v)

	// Also with timeouts configured (the factory then runs on its own goroutine).
	b := r.instance(hybrid.Options{FactoryHardTimeout: time.Minute}, nil)
	_, err = hybrid.GetOrCreate(context.Background(), b.h, "boom2", func(context.Context) (int, error) { panic(errors.New("x")) }, nil)
	require.ErrorIs(t, err, hybrid.ErrFactoryPanic)
}

func TestInvalidKeysBypassTheCache(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	ctx := context.Background()
	for _, key := range []string{"", strings.Repeat("k", 1025), "line\nbreak", "tab\tkey", "del\x7f"} {
		c := &counter{prefix: "v"}
		assert.Equal(t, "v1", get(t, a.h, key, c, nil))
		assert.Equal(t, "v2", get(t, a.h, key, c, nil), "factory runs every time for %q", key)
		_, ok, err := hybrid.TryGet[string](ctx, a.h, key, nil)
		require.NoError(t, err)
		assert.False(t, ok)
		require.ErrorIs(t, a.h.Set(ctx, key, "x", nil), hybrid.ErrInvalidKey)
		require.NoError(t, a.h.Remove(ctx, key))
	}
	assert.Equal(t, uint64(10), a.h.Stats().Bypassed)
	// 1024 bytes is still a valid key.
	c := &counter{prefix: "v"}
	long := strings.Repeat("k", 1024)
	get(t, a.h, long, c, nil)
	get(t, a.h, long, c, nil)
	assert.Equal(t, int64(1), c.calls.Load())
}

func TestFlags(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	b := r.instance(hybrid.Options{}, nil) // no backplane between them
	ctx := context.Background()
	c := &counter{prefix: "v"}

	t.Run("DisableLocalCacheWrite", func(t *testing.T) {
		get(t, a.h, "nolw", c, &hybrid.EntryOptions{Flags: hybrid.DisableLocalCacheWrite})
		assert.Equal(t, sdk.StatusNotFound, rawL1(t, a, "nolw").Status)
		assert.True(t, rawL2(t, a, "nolw").OK())
	})
	t.Run("DisableDistributedCacheWrite", func(t *testing.T) {
		get(t, a.h, "nol2w", c, &hybrid.EntryOptions{Flags: hybrid.DisableDistributedCacheWrite})
		assert.True(t, rawL1(t, a, "nol2w").OK())
		assert.Equal(t, sdk.StatusNotFound, rawL2(t, a, "nol2w").Status)
	})
	t.Run("DisableLocalCacheRead", func(t *testing.T) {
		first := get(t, a.h, "nolr", c, nil)
		require.NoError(t, b.h.Set(ctx, "nolr", "from-b", nil)) // L2 changes, A's L1 does not know
		assert.Equal(t, first, get(t, a.h, "nolr", c, nil), "L1 still serves the old copy")
		assert.Equal(t, "from-b", get(t, a.h, "nolr", c, &hybrid.EntryOptions{Flags: hybrid.DisableLocalCacheRead}))
	})
	t.Run("DisableDistributedCacheRead", func(t *testing.T) {
		require.NoError(t, b.h.Set(ctx, "nol2r", "in-l2", nil))
		before := c.calls.Load()
		v := get(t, a.h, "nol2r", c, &hybrid.EntryOptions{Flags: hybrid.DisableDistributedCacheRead})
		assert.NotEqual(t, "in-l2", v)
		assert.Equal(t, before+1, c.calls.Load())
	})
	t.Run("OptionsFlagsApplyToEveryCall", func(t *testing.T) {
		l1only := r.instance(hybrid.Options{Flags: hybrid.DisableDistributedCache}, nil)
		get(t, l1only.h, "l1only", c, nil)
		assert.Equal(t, sdk.StatusNotFound, rawL2(t, l1only, "l1only").Status)
		assert.True(t, rawL1(t, l1only, "l1only").OK())
	})
	t.Run("DisableMaterialization", func(t *testing.T) {
		type box struct{ Items []int }
		m := r.instance(hybrid.Options{Flags: hybrid.DisableMaterialization}, nil)
		f := func(context.Context) (box, error) { return box{Items: []int{1, 2}}, nil }
		v1, err := hybrid.GetOrCreate(ctx, m.h, "box", f, nil)
		require.NoError(t, err)
		v1.Items[0] = 99 // a caller mutating its copy…
		v2, err := hybrid.GetOrCreate(ctx, m.h, "box", f, nil)
		require.NoError(t, err)
		assert.Equal(t, []int{1, 2}, v2.Items, "…does not change what the next caller gets")
		assert.Equal(t, uint64(1), m.h.Stats().L1Hits)

		// Per call, on a key that is materialized.
		shared, err := hybrid.GetOrCreate(ctx, a.h, "box", f, nil)
		require.NoError(t, err)
		own, err := hybrid.GetOrCreate(ctx, a.h, "box", f, &hybrid.EntryOptions{Flags: hybrid.DisableMaterialization})
		require.NoError(t, err)
		own.Items[0] = 99
		again, err := hybrid.GetOrCreate(ctx, a.h, "box", f, nil)
		require.NoError(t, err)
		assert.Equal(t, []int{1, 2}, again.Items)
		assert.Same(t, &shared.Items[0], &again.Items[0], "materialized hits share one value")
	})
}

func TestValueTooLargeIsReturnedNotCached(t *testing.T) {
	r := newRig(t, func(cfg *store.Config) { cfg.MaxItemBytes = 1024 })
	a := r.instance(hybrid.Options{}, nil)
	ctx := context.Background()
	big := strings.Repeat("x", 4096)
	var calls atomic.Int64
	f := func(context.Context) (string, error) { calls.Add(1); return big, nil }
	for range 2 {
		v, err := hybrid.GetOrCreate(ctx, a.h, "big", f, nil)
		require.NoError(t, err)
		assert.Equal(t, big, v)
	}
	assert.Equal(t, int64(2), calls.Load(), "not cached in either tier")
	assert.Equal(t, sdk.StatusNotFound, rawL1(t, a, "big").Status)
	assert.Equal(t, uint64(2), a.h.Stats().NotCached)
	require.ErrorIs(t, a.h.Set(ctx, "big", big, nil), sdk.ErrItemTooLarge)
}

// A materialized value is only served while its L1 record lives: records
// the L1 evictor drops (memory cap) are read from L2 again.
func TestMaterializedValueNeverOutlivesL1Record(t *testing.T) {
	r := newRig(t, nil)
	tight := func(cfg *store.Config) {
		cfg.MaxMemoryBytes = 64 << 10
		cfg.MaxItemBytes = 4 << 10
		cfg.EvictionInterval = 5 * time.Millisecond
	}
	a := r.instance(hybrid.Options{}, tight)
	ctx := context.Background()
	const n = 200
	val := strings.Repeat("v", 1000)
	key := func(i int) string { return "e" + string(rune('A'+i/26)) + string(rune('a'+i%26)) }
	for i := range n {
		_, err := hybrid.GetOrCreate(ctx, a.h, key(i), func(context.Context) (string, error) { return val, nil }, nil)
		require.NoError(t, err)
	}
	// Deleting a record behind the cache's back is noticed at once.
	_, err := a.l1.Delete(ctx, l1KeyOf(a, key(n-1)))
	require.NoError(t, err)
	hits := a.h.Stats().L1Hits
	_, err = hybrid.GetOrCreate(ctx, a.h, key(n-1), func(context.Context) (string, error) { return "", errors.New("must come from L2") }, nil)
	require.NoError(t, err)
	assert.Equal(t, hits, a.h.Stats().L1Hits)

	absent := func() []int {
		var out []int
		for i := range n {
			if rawL1(t, a, key(i)).Status == sdk.StatusNotFound {
				out = append(out, i)
			}
		}
		return out
	}
	eventually(t, "L1 evicts under its memory cap", func() bool { return len(absent()) > n/4 })
	for _, i := range absent() {
		before := a.h.Stats()
		v, err := hybrid.GetOrCreate(ctx, a.h, key(i), func(context.Context) (string, error) { return "", errors.New("must come from L2") }, nil)
		require.NoError(t, err)
		assert.Equal(t, val, v)
		after := a.h.Stats()
		assert.Equal(t, before.L1Hits, after.L1Hits, "key %s was evicted from L1: not an L1 hit", key(i))
		assert.Equal(t, before.L2Hits+1, after.L2Hits)
	}
}

// A fill that read (or produced) a value before a Remove of its key does
// not write it back afterwards.
func TestFillDoesNotResurrectRemovedKey(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	ctx := context.Background()
	inFactory, release := make(chan struct{}), make(chan struct{})
	done := make(chan string)
	go func() {
		v, _ := hybrid.GetOrCreate(ctx, a.h, "k", func(context.Context) (string, error) {
			close(inFactory)
			<-release
			return "computed-before-remove", nil
		}, nil)
		done <- v
	}()
	<-inFactory
	require.NoError(t, a.h.Remove(ctx, "k"))
	close(release)
	assert.Equal(t, "computed-before-remove", <-done, "the caller still gets its value")
	assert.Equal(t, sdk.StatusNotFound, rawL1(t, a, "k").Status)
	assert.Equal(t, sdk.StatusNotFound, rawL2(t, a, "k").Status)
	assert.GreaterOrEqual(t, a.h.Stats().L1WritesSkipped, uint64(1))
}

func TestCallerCancellationDoesNotCancelTheFill(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	inFactory, release := make(chan struct{}), make(chan struct{})
	errc := make(chan error)
	go func() {
		_, err := hybrid.GetOrCreate(ctx, a.h, "k", func(fctx context.Context) (string, error) {
			close(inFactory)
			<-release
			return "done", fctx.Err()
		}, nil)
		errc <- err
	}()
	<-inFactory
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)
	close(release)
	eventually(t, "the fill completes and caches", func() bool { return rawL2(t, a, "k").OK() })
	c := &counter{}
	assert.Equal(t, "done", get(t, a.h, "k", c, nil))
	assert.Equal(t, int64(0), c.calls.Load())
}

func TestCloseAndOptions(t *testing.T) {
	r := newRig(t, nil)
	a := r.instance(hybrid.Options{}, nil)
	_, err := hybrid.GetOrCreate[int](context.Background(), a.h, "k", nil, nil)
	require.Error(t, err, "a nil factory is an error, not a panic")
	require.NoError(t, a.h.Close())
	require.NoError(t, a.h.Close())
	_, err = hybrid.GetOrCreate(context.Background(), a.h, "k", (&counter{}).factory, nil)
	require.ErrorIs(t, err, hybrid.ErrClosed)
	require.ErrorIs(t, a.h.Set(context.Background(), "k", 1, nil), hybrid.ErrClosed)

	for name, o := range map[string]hybrid.Options{
		"negative expiration": {Expiration: -time.Second},
		"soft ≥ hard":         {FactorySoftTimeout: time.Second, FactoryHardTimeout: time.Second},
		"threshold ≥ 1":       {EagerRefreshThreshold: 1},
		"marker too short":    {Expiration: time.Hour, TagMarkerTTL: time.Minute},
	} {
		require.ErrorIs(t, o.Validate(), hybrid.ErrInvalidOptions, name)
	}
	require.NoError(t, hybrid.Options{}.Validate())
	l1 := connect(t, r.clock, nil)
	assert.Panics(t, func() { hybrid.New(l1, nil, hybrid.Options{}) })
	assert.Panics(t, func() { hybrid.New(l1, join(t, l1), hybrid.Options{}) }, "same store twice")
	assert.Panics(t, func() { hybrid.New(l1, r.l2, hybrid.Options{Expiration: -1}) })
}
