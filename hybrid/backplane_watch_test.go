package hybrid_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// watchBackplane opens a watch backplane on its own L2 client.
func (e *psEnv) watchBackplane(opts hybrid.WatchBackplaneOptions) *hybrid.WatchBackplane {
	e.t.Helper()
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 2*time.Millisecond, 50*time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	bp, err := hybrid.NewWatchBackplane(context.Background(), e.l2(), opts)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = bp.Close() })
	return bp
}

// envelopeOf returns the bytes a cache stores in L2 for value — what a
// writer outside the cache (an SDK or RESP client) writes to replace an
// entry with a value the caches can read.
func envelopeOf(t testing.TB, inst *instance, value string) []byte {
	t.Helper()
	scratch := fmt.Sprintf("scratch:%d", storeSeq.Add(1))
	_, l2k := inst.h.StoreKeys(scratch)
	var env []byte
	// Repeated until it works: on a loaded cluster a call may time out.
	var last error
	defer func() {
		if t.Failed() && last != nil {
			t.Logf("the envelope of %s: last error %v", value, last)
		}
	}()
	testscale.Eventually(t, 30*time.Second, time.Millisecond, "the envelope of "+value, func() bool {
		if last = inst.h.Set(context.Background(), scratch, value, nil); last != nil {
			return false
		}
		r, err := inst.l2.Get(context.Background(), l2k)
		env, last = r.Value, err
		return err == nil && r.OK()
	})
	return env
}

// inL1Is reports whether inst serves key from L1 with value want.
func inL1Is(t *testing.T, inst *instance, key, want string) bool {
	t.Helper()
	v, ok, err := hybrid.TryGet[string](context.Background(), inst.h, key, &hybrid.EntryOptions{Flags: hybrid.DisableDistributedCacheRead})
	require.NoError(t, err)
	return ok && v == want
}

// readsThrough reports whether inst answers key with want (L1 or L2).
func readsThrough(t *testing.T, inst *instance, key, want string) bool {
	t.Helper()
	v, ok, err := hybrid.TryGet[string](context.Background(), inst.h, key, nil)
	return err == nil && ok && v == want
}

// settled waits until every recorder has received the change that made
// key's current L2 entry (its revision), so that no earlier change of the
// key is still on its way — to the caches subscribed before the recorders
// too.
func settled(t *testing.T, inst *instance, key string, recs ...*recorder) {
	t.Helper()
	_, l2k := inst.h.StoreKeys(key)
	r, err := inst.l2.TimeToLive(context.Background(), l2k)
	require.NoError(t, err)
	require.True(t, r.OK(), "%s: %v", key, r.Status)
	eventually(t, "every backplane delivered the last change of "+key, func() bool {
		for _, rec := range recs {
			if !rec.saw(l2k, r.Revision) {
				return false
			}
		}
		return true
	})
}

func (r *recorder) saw(storeKey string, revision uint64) bool {
	for _, inv := range r.all() {
		if inv.Kind == hybrid.InvalidateStoreKey && inv.Key == storeKey && inv.Revision == revision {
			return true
		}
	}
	return false
}

// Every kind of change of an L2 entry — another instance's Set, its own
// Set, a plain client's put, delete and expiring put, a tag marker —
// reaches the other instance's L1 through the store's own watch.
func TestWatchBackplaneEveryWriter(t *testing.T) {
	forEachL2(t, func(t *testing.T, e *psEnv) {
		ctx := context.Background()
		bpA, bpB := e.watchBackplane(hybrid.WatchBackplaneOptions{}), e.watchBackplane(hybrid.WatchBackplaneOptions{})
		assert.Equal(t, hybrid.DefaultKeyPrefix, bpA.KeyPrefix())
		a, b := e.instance(bpA, hybrid.Options{}), e.instance(bpB, hybrid.Options{})
		// Recorders subscribe after the caches: a backplane calls its
		// handlers in subscription order, so once a recorder saw a change
		// (settled), its cache has handled it too.
		recA, recB := record(t, bpA), record(t, bpB)
		writer := e.l2() // a plain SDK client: no cache, no backplane
		c := &counter{prefix: "loaded-"}
		// warm gives both instances an L1 copy of key once every change
		// of it has come back.
		warm := func(key string) {
			t.Helper()
			require.NoError(t, a.h.Set(ctx, key, "v0", nil))
			settled(t, a, key, recA, recB)
			require.Equal(t, "v0", get(t, b.h, key, c, nil))
			require.True(t, inL1Is(t, a, key, "v0") && inL1Is(t, b, key, "v0"))
		}

		// Another instance's Set: b drops its copy; a keeps its own — the
		// change its write made, coming back, does not evict it.
		warm("k1")
		require.NoError(t, a.h.Set(ctx, "k1", "set-by-a", nil))
		settled(t, a, "k1", recA, recB)
		assert.False(t, inL1(t, b, "k1"), "b still holds its copy after a's Set")
		assert.True(t, readsThrough(t, b, "k1", "set-by-a"))
		assert.True(t, inL1Is(t, a, "k1", "set-by-a"), "a's own write evicted its copy")
		t.Logf("a's own changes recognised: %d", a.h.Stats().OwnChanges)

		// A plain client replaces the entry: both copies go, both read it.
		warm("k2")
		_, l2k := a.h.StoreKeys("k2")
		r, err := writer.Put(ctx, l2k, envelopeOf(t, a, "put-by-sdk"), nil)
		require.NoError(t, err)
		require.True(t, r.OK())
		settled(t, a, "k2", recA, recB)
		assert.False(t, inL1(t, a, "k2") || inL1(t, b, "k2"), "a copy survived a plain client's put")
		assert.True(t, readsThrough(t, a, "k2", "put-by-sdk"))
		assert.True(t, readsThrough(t, b, "k2", "put-by-sdk"))

		// A plain client deletes it.
		_, err = writer.Delete(ctx, l2k)
		require.NoError(t, err)
		eventually(t, "both copies of k2 evicted after the delete", func() bool { return !inL1(t, a, "k2") && !inL1(t, b, "k2") })
		_, ok, err := hybrid.TryGet[string](ctx, b.h, "k2", nil)
		require.NoError(t, err)
		assert.False(t, ok)

		// Tags: an entry b read through L2 (so b looked its tag up) and an
		// entry b set itself (a tag b never looked up: it knows the
		// marker's key, a hash, and nothing else) both become misses when
		// a invalidates their tags.
		require.NoError(t, a.h.Set(ctx, "tagged", "v", nil, "grp"))
		settled(t, a, "tagged", recA, recB)
		require.Equal(t, "v", get(t, b.h, "tagged", c, nil, "grp"))
		require.NoError(t, b.h.Set(ctx, "set-tagged", "v", nil, "fresh"))
		require.True(t, inL1(t, b, "tagged") && inL1(t, b, "set-tagged"))
		e.r.clock.Advance(time.Millisecond) // the tag invalidations come after the entries' creation
		require.NoError(t, a.h.RemoveByTag(ctx, "fresh"))
		eventually(t, "b's copy tagged with a tag it never looked up invalidated", func() bool { return !inL1(t, b, "set-tagged") })
		assert.True(t, inL1(t, b, "tagged"), "another tag's entry was invalidated")
		require.NoError(t, a.h.RemoveByTag(ctx, "grp"))
		eventually(t, "b's copy tagged with a known tag invalidated", func() bool { return !inL1(t, b, "tagged") })

		// An entry that expires in L2 while b's copy would still be valid:
		// the expiry itself is the change.
		warm("k3")
		_, l2k = a.h.StoreKeys("k3")
		r, err = writer.Put(ctx, l2k, envelopeOf(t, a, "short-lived"), &sdk.PutOptions{TTL: 300 * time.Millisecond})
		require.NoError(t, err)
		require.True(t, r.OK())
		settled(t, a, "k3", recA, recB)
		require.True(t, readsThrough(t, b, "k3", "short-lived"))
		require.True(t, inL1Is(t, b, "k3", "short-lived"))
		// The embedded L2 runs on the test's manual clock (the server on
		// the real one); the caches too, and their copies live minutes.
		e.r.clock.Advance(time.Second)
		eventually(t, "the L2 entry expired and b's copy with it", func() bool {
			r, err := writer.Get(ctx, l2k)
			return err == nil && r.Status == sdk.StatusNotFound && !inL1(t, b, "k3")
		})
		assert.Zero(t, bpA.Stats().Flushes+bpB.Stats().Flushes, "nothing was lost: no flush")
		assert.Zero(t, recB.count(hybrid.InvalidateAll))
	})
}

// An entry L2 evicts under memory pressure is evicted from every L1.
func TestWatchBackplaneEviction(t *testing.T) {
	r := newRig(t, func(c *store.Config) {
		c.MaxMemoryBytes, c.MaxItemBytes = 1<<20, 64<<10
		c.EvictionInterval = 10 * time.Millisecond
	})
	e := &psEnv{t: t, r: r, l2: func() *sdk.Client { return join(t, r.l2) }}
	ctx := context.Background()
	bp := e.watchBackplane(hybrid.WatchBackplaneOptions{})
	b := e.instance(bp, hybrid.Options{})
	c := &counter{prefix: "cold-"}
	eventually(t, "b holds a copy", func() bool {
		get(t, b.h, "cold", c, nil) // the first fill's own change may come back before its L1 write
		return inL1(t, b, "cold")
	})
	_, l2k := b.h.StoreKeys("cold")
	filler := e.l2()
	value := bytes.Repeat([]byte("x"), 16<<10)
	eventually(t, "L2 evicted the cold entry and b's copy with it", func() bool {
		for i := range 16 { // ~256 KiB per round, never under the watched prefix
			_, err := filler.Put(ctx, fmt.Sprintf("filler:%d", storeSeq.Add(1)+int64(i)), value, nil)
			require.NoError(t, err)
		}
		got, err := filler.Get(ctx, l2k)
		require.NoError(t, err)
		return got.Status == sdk.StatusNotFound && !inL1(t, b, "cold")
	})
	assert.Zero(t, bp.Stats().Flushes)
}

// A restarted server ends the watch; the backplane watches again once the
// server is back and drops every L1 copy (changes made meanwhile are
// unknown).
func TestWatchBackplaneServerRestart(t *testing.T) {
	srv := newRestartable(t)
	e := remoteEnv(t, srv.conn())
	bp := e.watchBackplane(hybrid.WatchBackplaneOptions{})
	b := e.instance(bp, hybrid.Options{})
	rec := record(t, bp)
	eventually(t, "b holds a copy", func() bool {
		get(t, b.h, "k", &counter{prefix: "v"}, nil) // the first fill's own change may come back before its L1 write
		return inL1(t, b, "k")
	})

	srv.stop()
	srv.start()
	eventually(t, "the backplane watches again and flushes", func() bool {
		st := bp.Stats()
		return st.Watching && st.Rewatches >= 1 && st.Flushes >= 1
	})
	assert.GreaterOrEqual(t, rec.count(hybrid.InvalidateAll), 1)
	assert.False(t, inL1(t, b, "k"), "a copy survived a lost watch")

	// And the new watch works.
	get(t, b.h, "k2", &counter{prefix: "v"}, nil)
	other := e.instance(nil, hybrid.Options{})
	require.NoError(t, other.h.Set(context.Background(), "k2", "new", nil))
	eventually(t, "b's copy evicted through the new watch", func() bool { return !inL1(t, b, "k2") })
}

func TestWatchBackplaneClose(t *testing.T) {
	e := embeddedEnv(t)
	bp := e.watchBackplane(hybrid.WatchBackplaneOptions{})
	ctx := context.Background()
	require.NoError(t, bp.Publish(ctx, hybrid.Invalidation{Kind: hybrid.InvalidateKey, Key: "k"}))
	require.NoError(t, bp.Close())
	require.NoError(t, bp.Close())
	assert.ErrorIs(t, bp.Publish(ctx, hybrid.Invalidation{Kind: hybrid.InvalidateKey, Key: "k"}), hybrid.ErrBackplaneClosed)
	assert.False(t, bp.Stats().Watching)
	_, err := hybrid.NewWatchBackplane(ctx, nil, hybrid.WatchBackplaneOptions{})
	assert.Error(t, err)
	closed := e.l2()
	require.NoError(t, closed.Close())
	_, err = hybrid.NewWatchBackplane(ctx, closed, hybrid.WatchBackplaneOptions{})
	assert.True(t, errors.Is(err, sdk.ErrClosed), "%v", err)
}

// A cache whose keys the backplane does not watch is told so at New.
func TestWatchBackplaneWarnsOnForeignPrefix(t *testing.T) {
	e := embeddedEnv(t)
	bp := e.watchBackplane(hybrid.WatchBackplaneOptions{KeyPrefix: "app:"})
	var logs syncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	l1 := connect(t, nil, nil)
	h := hybrid.New(l1, e.l2(), hybrid.Options{Backplane: bp, Logger: logger})
	t.Cleanup(func() { _ = h.Close() })
	assert.Contains(t, logs.String(), "does not watch this cache's keys")

	logs.Reset()
	h2 := hybrid.New(connect(t, nil, nil), e.l2(), hybrid.Options{Backplane: bp, Logger: logger, KeyPrefix: "app:users:"})
	t.Cleanup(func() { _ = h2.Close() })
	assert.Empty(t, logs.String())
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.Reset()
}
