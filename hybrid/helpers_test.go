package hybrid_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

var storeSeq atomic.Int64

// connect opens a fresh embedded store (a unique inproc name) driven by
// clock; tweak adjusts its config.
func connect(t testing.TB, clock store.Clock, tweak func(*store.Config)) *sdk.Client {
	t.Helper()
	cfg := store.DefaultConfig()
	cfg.Clock = clock
	cfg.SweepInterval = 10 * time.Millisecond
	if tweak != nil {
		tweak(&cfg)
	}
	name := fmt.Sprintf("hybrid-test-%d", storeSeq.Add(1))
	c, err := sdk.Connect(context.Background(), "zaris://inproc/"+name, sdk.WithEmbeddedConfig(cfg))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// join opens a second client on the store c is connected to (another
// process's view of the same cluster, in these tests).
func join(t testing.TB, c *sdk.Client) *sdk.Client {
	t.Helper()
	c2, err := sdk.Connect(context.Background(), "zaris://inproc/"+c.ConnString().Store)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c2.Close() })
	return c2
}

// rig is one shared L2 ("the cluster") and a manual clock that drives it,
// every L1 and every cache.
type rig struct {
	t     *testing.T
	clock *store.ManualClock
	l2    *sdk.Client
}

func newRig(t *testing.T, l2Tweak func(*store.Config)) *rig {
	clock := store.NewManualClock(time.Now())
	return &rig{t: t, clock: clock, l2: connect(t, clock, l2Tweak)}
}

// instance is one application instance: its own L1, the shared L2.
type instance struct {
	h  *hybrid.Cache
	l1 *sdk.Client
	l2 *sdk.Client
}

func (r *rig) instance(opts hybrid.Options, l1Tweak func(*store.Config)) *instance {
	l1 := connect(r.t, r.clock, l1Tweak)
	l2 := join(r.t, r.l2)
	if opts.Clock == nil {
		opts.Clock = r.clock
	}
	h := hybrid.New(l1, l2, opts)
	r.t.Cleanup(func() { _ = h.Close() })
	return &instance{h: h, l1: l1, l2: l2}
}

// rawL1 and rawL2 read the records inst keeps for key in each tier.
func rawL1(t testing.TB, inst *instance, key string) sdk.Result {
	t.Helper()
	l1k, _ := inst.h.StoreKeys(key)
	r, err := inst.l1.Get(context.Background(), l1k)
	require.NoError(t, err)
	return r
}

func rawL2(t testing.TB, inst *instance, key string) sdk.Result {
	t.Helper()
	_, l2k := inst.h.StoreKeys(key)
	r, err := inst.l2.Get(context.Background(), l2k)
	require.NoError(t, err)
	return r
}

// counter is a factory that counts its calls and answers prefix-N.
type counter struct {
	calls  atomic.Int64
	prefix string
}

func (c *counter) factory(context.Context) (string, error) {
	n := c.calls.Add(1)
	return fmt.Sprintf("%s%d", c.prefix, n), nil
}

func get(t testing.TB, h *hybrid.Cache, key string, c *counter, opts *hybrid.EntryOptions, tags ...string) string {
	t.Helper()
	v, err := hybrid.GetOrCreate(context.Background(), h, key, c.factory, opts, tags...)
	require.NoError(t, err)
	return v
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, 10*time.Second, time.Millisecond, what, cond)
}

func l1KeyOf(inst *instance, key string) string {
	l1k, _ := inst.h.StoreKeys(key)
	return l1k
}

func l1TTL(t testing.TB, inst *instance, key string) (sdk.Result, error) {
	t.Helper()
	return inst.l1.TimeToLive(context.Background(), l1KeyOf(inst, key))
}
