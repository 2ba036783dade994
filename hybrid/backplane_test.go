package hybrid_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
)

// crossInstance checks that Set, Remove and RemoveByTag on instance a evict
// b's L1 copies, within the time sync gives the backplane, while an
// instance off the backplane keeps serving its copy.
func crossInstance(t *testing.T, r *rig, a, b, off *instance, sync func(what string, cond func() bool)) {
	ctx := context.Background()
	c := &counter{prefix: "v"}
	for _, k := range []string{"set", "rm", "tagged"} {
		tags := []string{}
		if k == "tagged" {
			tags = append(tags, "catalog")
		}
		first := get(t, a.h, k, c, nil, tags...)
		assert.Equal(t, first, get(t, b.h, k, c, nil, tags...), "b copies %s from L2", k)
		assert.Equal(t, first, get(t, off.h, k, c, nil, tags...))
	}
	calls := c.calls.Load()
	r.clock.Advance(time.Millisecond)

	require.NoError(t, a.h.Set(ctx, "set", "new", nil))
	sync("b sees the Set", func() bool { return get(t, b.h, "set", c, nil) == "new" })

	require.NoError(t, a.h.Remove(ctx, "rm"))
	sync("b's copy of the removed key is gone", func() bool {
		_, ok, err := hybrid.TryGet[string](ctx, b.h, "rm", nil)
		return err == nil && !ok
	})

	require.NoError(t, a.h.RemoveByTag(ctx, "catalog"))
	sync("b's tagged copy is invalidated", func() bool {
		_, ok, err := hybrid.TryGet[string](ctx, b.h, "tagged", nil)
		return err == nil && !ok
	})
	assert.Equal(t, calls, c.calls.Load())

	// Off the backplane, L1 copies live on until they expire.
	assert.Equal(t, "v1", get(t, off.h, "set", c, nil))
	assert.Equal(t, "v2", get(t, off.h, "rm", c, nil))
	assert.Equal(t, "v3", get(t, off.h, "tagged", c, nil, "catalog"))

	assert.Equal(t, uint64(3), a.h.Stats().Published)
	assert.Equal(t, uint64(0), a.h.Stats().Received, "an instance ignores its own messages")
	// b counts a message after it applied it: the count may trail the
	// effect the conditions above saw.
	sync("b counted the 3 messages", func() bool { return b.h.Stats().Received >= 3 })
}

func TestCrossInstanceInvalidationLocalBackplane(t *testing.T) {
	r := newRig(t, nil)
	bp := hybrid.NewLocalBackplane()
	a := r.instance(hybrid.Options{Backplane: bp}, nil)
	b := r.instance(hybrid.Options{Backplane: bp}, nil)
	off := r.instance(hybrid.Options{}, nil)
	// LocalBackplane is synchronous: no waiting at all.
	crossInstance(t, r, a, b, off, func(what string, cond func() bool) { assert.True(t, cond(), what) })

	// A cache with another KeyPrefix on the same backplane is not affected.
	other := r.instance(hybrid.Options{Backplane: bp, KeyPrefix: "other:"}, nil)
	c := &counter{prefix: "o"}
	get(t, other.h, "set", c, nil)
	require.NoError(t, a.h.Remove(context.Background(), "set"))
	get(t, other.h, "set", c, nil)
	assert.Equal(t, int64(1), c.calls.Load())
}

func TestCrossInstanceInvalidationJournalBackplane(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	jopts := hybrid.JournalOptions{PollInterval: 5 * time.Millisecond, Retention: time.Minute}
	// Each instance has its own journal reader over its own L2 client.
	bpA, err := hybrid.NewJournalBackplane(ctx, join(t, r.l2), jopts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bpA.Close() })
	bpB, err := hybrid.NewJournalBackplane(ctx, join(t, r.l2), jopts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = bpB.Close() })

	a := r.instance(hybrid.Options{Backplane: bpA}, nil)
	b := r.instance(hybrid.Options{Backplane: bpB}, nil)
	off := r.instance(hybrid.Options{}, nil)
	crossInstance(t, r, a, b, off, func(what string, cond func() bool) { eventually(t, what, cond) })
	require.NoError(t, bpA.Close())
	require.NoError(t, bpA.Close())
}

func TestJournalBackplaneManyPublishers(t *testing.T) {
	r := newRig(t, nil)
	ctx := context.Background()
	jopts := hybrid.JournalOptions{PollInterval: 5 * time.Millisecond}
	reader, err := hybrid.NewJournalBackplane(ctx, join(t, r.l2), jopts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = reader.Close() })
	got := make(chan hybrid.Invalidation, 1000)
	unsubscribe := reader.Subscribe(func(inv hybrid.Invalidation) { got <- inv })
	defer unsubscribe()

	const publishers, each = 4, 25
	errs := make(chan error, publishers)
	for p := range publishers {
		go func() {
			bp, err := hybrid.NewJournalBackplane(ctx, join(t, r.l2), jopts)
			if err != nil {
				errs <- err
				return
			}
			defer bp.Close()
			for i := range each {
				if err := bp.Publish(ctx, hybrid.Invalidation{Kind: hybrid.InvalidateKey, Source: strconv.Itoa(p), Key: strconv.Itoa(i)}); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range publishers {
		require.NoError(t, <-errs)
	}
	// Every message arrives exactly once, each publisher's in its order.
	next := map[string]int{}
	for range publishers * each {
		select {
		case inv := <-got:
			require.Equal(t, hybrid.InvalidateKey, inv.Kind)
			require.Equal(t, strconv.Itoa(next[inv.Source]), inv.Key, "publisher %s in order", inv.Source)
			next[inv.Source]++
		case <-time.After(10 * time.Second):
			t.Fatal("journal messages missing")
		}
	}
	require.NoError(t, reader.PollNow(ctx))
	assert.Empty(t, got, "no duplicates")
}

// A randomized check against an oracle: two instances on one backplane,
// random Set / Remove / RemoveByTag / GetOrCreate; every read must answer
// what a plain map model says — the current value, or a fresh factory
// value when the model holds none.
func TestRandomOperationsAgainstModel(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	r := newRig(t, nil)
	bp := hybrid.NewLocalBackplane()
	insts := []*instance{
		r.instance(hybrid.Options{Backplane: bp}, nil),
		r.instance(hybrid.Options{Backplane: bp}, nil),
	}
	ctx := context.Background()
	type entry struct {
		value string
		tags  []string
	}
	model := map[string]entry{}
	keys := []string{"a", "b", "c", "d", "e"}
	allTags := []string{"red", "blue", "green"}
	produced := 0
	for step := range 2000 {
		h := insts[rng.IntN(len(insts))].h
		key := keys[rng.IntN(len(keys))]
		var tags []string
		for _, tg := range allTags {
			if rng.IntN(3) == 0 {
				tags = append(tags, tg)
			}
		}
		r.clock.Advance(time.Microsecond)
		switch op := rng.IntN(10); {
		case op < 5:
			v, err := hybrid.GetOrCreate(ctx, h, key, func(context.Context) (string, error) {
				produced++
				return "f" + strconv.Itoa(produced), nil
			}, nil, tags...)
			require.NoError(t, err)
			if want, ok := model[key]; ok {
				require.Equal(t, want.value, v, "step %d: read of %s (seed %d)", step, key, seed)
			} else {
				require.Equal(t, "f"+strconv.Itoa(produced), v, "step %d: %s must be produced (seed %d)", step, key, seed)
				model[key] = entry{v, tags}
			}
		case op < 7:
			v := "s" + strconv.Itoa(step)
			require.NoError(t, h.Set(ctx, key, v, nil, tags...))
			model[key] = entry{v, tags}
		case op < 8:
			require.NoError(t, h.Remove(ctx, key))
			delete(model, key)
		default:
			tg := allTags[rng.IntN(len(allTags))]
			if rng.IntN(10) == 0 {
				tg = hybrid.AllTag
			}
			require.NoError(t, h.RemoveByTag(ctx, tg))
			for k, e := range model {
				if tg == hybrid.AllTag || contains(e.tags, tg) {
					delete(model, k)
				}
			}
		}
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Handlers run in subscription order, every message, also after an
// unsubscribe in the middle: a cache that subscribed before an observer
// has handled a message once the observer sees it (the watch tests'
// settled relies on it).
func TestBackplaneHandlersRunInSubscriptionOrder(t *testing.T) {
	bp := hybrid.NewLocalBackplane()
	var got []int
	var unsub []func()
	for i := range 8 {
		unsub = append(unsub, bp.Subscribe(func(hybrid.Invalidation) { got = append(got, i) }))
	}
	for range 20 {
		got = got[:0]
		require.NoError(t, bp.Publish(context.Background(), hybrid.Invalidation{Kind: hybrid.InvalidateKey, Key: "k"}))
		require.Equal(t, []int{0, 1, 2, 3, 4, 5, 6, 7}, got)
	}
	unsub[3]()
	unsub[3]() // twice is harmless
	got = got[:0]
	require.NoError(t, bp.Publish(context.Background(), hybrid.Invalidation{Kind: hybrid.InvalidateKey, Key: "k"}))
	require.Equal(t, []int{0, 1, 2, 4, 5, 6, 7}, got)
}
