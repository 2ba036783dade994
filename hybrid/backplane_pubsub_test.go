package hybrid_test

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

// psEnv is a shared L2 with pub/sub — an embedded store or a real server
// over TCP — and the clock every cache and L1 of the test runs on.
type psEnv struct {
	t *testing.T
	r *rig
	// l2 opens a new client of the shared L2: another process's view.
	l2  func() *sdk.Client
	bps []*hybrid.PubSubBackplane
}

func embeddedEnv(t *testing.T) *psEnv {
	r := newRig(t, nil)
	return &psEnv{t: t, r: r, l2: func() *sdk.Client { return join(t, r.l2) }}
}

func remoteEnv(t *testing.T, conn string) *psEnv {
	dial := func() *sdk.Client {
		c, err := sdk.Connect(context.Background(), conn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	return &psEnv{t: t, r: &rig{t: t, clock: store.NewManualClock(time.Now()), l2: dial()}, l2: dial}
}

// forEachL2 runs test against an embedded L2 and against a real server.
func forEachL2(t *testing.T, test func(t *testing.T, e *psEnv)) {
	t.Run("embedded", func(t *testing.T) { test(t, embeddedEnv(t)) })
	t.Run("server", func(t *testing.T) { test(t, remoteEnv(t, startServer(t))) })
}

var quiet = slog.New(slog.DiscardHandler)

// backplane opens a pub/sub backplane on its own L2 client.
func (e *psEnv) backplane(opts hybrid.PubSubOptions) *hybrid.PubSubBackplane {
	e.t.Helper()
	if opts.MinBackoff == 0 {
		opts.MinBackoff, opts.MaxBackoff = 2*time.Millisecond, 50*time.Millisecond
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	bp, err := hybrid.NewPubSubBackplane(context.Background(), e.l2(), opts)
	require.NoError(e.t, err)
	e.t.Cleanup(func() { _ = bp.Close() })
	e.bps = append(e.bps, bp)
	return bp
}

// quiesce waits until every backplane has received everything published
// so far, by sending one more message through the first and waiting for it
// everywhere (each subscription is FIFO). Tests call it last: the SDK can
// panic when a frame arrives for a live subscription while its Client
// closes (rconn.readLoop sends on a channel rconn.shutdown just closed).
func (e *psEnv) quiesce() {
	e.t.Helper()
	if len(e.bps) == 0 {
		return
	}
	before := make([]hybrid.PubSubStats, len(e.bps))
	for i, bp := range e.bps {
		before[i] = bp.Stats()
	}
	require.NoError(e.t, e.bps[0].Publish(context.Background(), hybrid.Invalidation{Kind: hybrid.InvalidateKey, Namespace: "quiesce:", Key: "q"}))
	eventually(e.t, "every backplane has caught up", func() bool {
		for i, bp := range e.bps {
			st := bp.Stats()
			if i == 0 && st.Own == before[i].Own || i > 0 && st.Received == before[i].Received {
				return false
			}
		}
		return true
	})
}

// instance is a cache with its own L1 and L2 client; bp may be nil.
func (e *psEnv) instance(bp hybrid.Backplane, opts hybrid.Options) *instance {
	e.t.Helper()
	l1 := connect(e.t, e.r.clock, nil)
	l2 := e.l2()
	opts.Backplane, opts.Clock, opts.Logger = bp, e.r.clock, quiet
	h := hybrid.New(l1, l2, opts)
	e.t.Cleanup(func() { _ = h.Close() })
	return &instance{h: h, l1: l1, l2: l2}
}

// inL1 reports whether inst would serve key from its L1 (no L2 read).
func inL1(t *testing.T, inst *instance, key string) bool {
	t.Helper()
	_, ok, err := hybrid.TryGet[string](context.Background(), inst.h, key, &hybrid.EntryOptions{Flags: hybrid.DisableDistributedCacheRead})
	require.NoError(t, err)
	return ok
}

// recorder subscribes to bp and keeps what it delivers.
type recorder struct {
	mu  sync.Mutex
	got []hybrid.Invalidation
}

func record(t *testing.T, bp hybrid.Backplane) *recorder {
	rec := &recorder{}
	t.Cleanup(bp.Subscribe(func(inv hybrid.Invalidation) {
		rec.mu.Lock()
		rec.got = append(rec.got, inv)
		rec.mu.Unlock()
	}))
	return rec
}

func (r *recorder) all() []hybrid.Invalidation {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]hybrid.Invalidation(nil), r.got...)
}

func (r *recorder) count(kind hybrid.InvalidationKind) int {
	n := 0
	for _, inv := range r.all() {
		if inv.Kind == kind {
			n++
		}
	}
	return n
}

func TestPubSubBackplaneCrossInstance(t *testing.T) {
	forEachL2(t, func(t *testing.T, e *psEnv) {
		bpA, bpB := e.backplane(hybrid.PubSubOptions{}), e.backplane(hybrid.PubSubOptions{})
		assert.Equal(t, hybrid.DefaultPubSubChannel, bpA.Channel())
		a := e.instance(bpA, hybrid.Options{})
		b := e.instance(bpB, hybrid.Options{})
		off := e.instance(nil, hybrid.Options{})
		crossInstance(t, e.r, a, b, off, func(what string, cond func() bool) { eventually(t, what, cond) })

		st := bpA.Stats()
		assert.Equal(t, uint64(3), st.Published)
		assert.True(t, st.Subscribed)
		assert.Zero(t, st.Resubscribes)
		assert.Zero(t, st.Malformed)
		eventually(t, "a's backplane drops its 3 echoes", func() bool { return bpA.Stats().Own == 3 })
		assert.Equal(t, uint64(3), bpB.Stats().Received)
		e.quiesce()
	})
}

// Frames come back on the publisher's own subscription: they are dropped
// there, having been delivered in-process by Publish. Another backplane's
// frames arrive intact.
func TestPubSubBackplaneOwnMessages(t *testing.T) {
	forEachL2(t, func(t *testing.T, e *psEnv) {
		ctx := context.Background()
		bpA, bpB := e.backplane(hybrid.PubSubOptions{}), e.backplane(hybrid.PubSubOptions{})
		recA, recB := record(t, bpA), record(t, bpB)

		mine := hybrid.Invalidation{Kind: hybrid.InvalidateTag, Source: "a", Namespace: "ns:", Tag: "t", At: 42}
		require.NoError(t, bpA.Publish(ctx, mine))
		assert.Equal(t, []hybrid.Invalidation{mine}, recA.all(), "delivered in-process before Publish returns")

		theirs := hybrid.Invalidation{Kind: hybrid.InvalidateKey, Source: "b", Namespace: "ns:", Key: "k"}
		require.NoError(t, bpB.Publish(ctx, theirs))
		// The channel is FIFO per subscriber: once theirs has arrived, an
		// echo of mine would have arrived before it.
		eventually(t, "a receives b's message", func() bool { return len(recA.all()) == 2 })
		assert.Equal(t, []hybrid.Invalidation{mine, theirs}, recA.all())
		assert.Equal(t, uint64(1), bpA.Stats().Own)
		assert.Equal(t, uint64(1), bpA.Stats().Received)
		eventually(t, "b receives a's message", func() bool { return len(recB.all()) == 2 })
		// (In either order: mine may arrive before b publishes theirs.)
		assert.ElementsMatch(t, []hybrid.Invalidation{theirs, mine}, recB.all())

		// Two caches sharing one backplane hear each other, synchronously;
		// each still ignores its own messages.
		shared := e.backplane(hybrid.PubSubOptions{})
		c1, c2 := e.instance(shared, hybrid.Options{}), e.instance(shared, hybrid.Options{})
		c := &counter{prefix: "v"}
		get(t, c1.h, "k", c, nil)
		get(t, c2.h, "k", c, nil)
		require.True(t, inL1(t, c2, "k"))
		require.NoError(t, c1.h.Remove(ctx, "k"))
		assert.False(t, inL1(t, c2, "k"), "no waiting in-process")
		assert.Zero(t, c1.h.Stats().Received)
		assert.Equal(t, uint64(1), c2.h.Stats().Received)
		e.quiesce()
	})
}

// A receiver that falls behind is cut off by the store; the backplane
// subscribes again and drops the whole L1, since it missed messages.
func TestPubSubBackplaneOverflowResubscribes(t *testing.T) {
	forEachL2(t, func(t *testing.T, e *psEnv) {
		ctx := context.Background()
		bpA, bpB := e.backplane(hybrid.PubSubOptions{}), e.backplane(hybrid.PubSubOptions{})
		a, b := e.instance(bpA, hybrid.Options{}), e.instance(bpB, hybrid.Options{})
		c := &counter{prefix: "v"}
		get(t, a.h, "k", c, nil)
		get(t, b.h, "k", c, nil)
		require.True(t, inL1(t, b, "k"))

		// Stall b's receiver on the first message it gets.
		gate, stalled := make(chan struct{}), make(chan struct{})
		var once sync.Once
		t.Cleanup(bpB.Subscribe(func(hybrid.Invalidation) {
			once.Do(func() { close(stalled); <-gate })
		}))
		recB := record(t, bpB)
		flood := func(i int) {
			require.NoError(t, bpA.Publish(ctx, hybrid.Invalidation{Kind: hybrid.InvalidateKey, Source: "flood", Namespace: "flood:", Key: strconv.Itoa(i)}))
		}
		flood(0)
		select {
		case <-stalled:
		case <-time.After(10 * time.Second):
			t.Fatal("b never received the first message")
		}
		// The store buffers about 1,024 messages per subscriber, the SDK
		// about as many more: 3,000 overflow either.
		for i := 1; i <= 3000; i++ {
			flood(i)
		}
		assert.True(t, bpB.Stats().Subscribed, "the backplane has not looked yet")
		close(gate)

		eventually(t, "b's backplane subscribes again", func() bool {
			st := bpB.Stats()
			return st.Resubscribes == 1 && st.Subscribed
		})
		eventually(t, "b's subscribers are told to drop everything", func() bool { return recB.count(hybrid.InvalidateAll) == 1 })
		assert.False(t, inL1(t, b, "k"), "b's L1 copy is dropped")
		assert.Zero(t, bpB.Stats().Malformed)

		// The new subscription carries invalidations again.
		e.r.clock.Advance(time.Millisecond)
		assert.Equal(t, "v1", get(t, b.h, "k", c, nil))
		require.True(t, inL1(t, b, "k"))
		require.NoError(t, a.h.Set(ctx, "k", "after", nil))
		eventually(t, "b hears the Set on the new subscription", func() bool { return !inL1(t, b, "k") })
		assert.Equal(t, "after", get(t, b.h, "k", c, nil))
		e.quiesce()
	})
}

// restartable is a native server on a fixed address that can be stopped
// and started again over the same store.
type restartable struct {
	t    *testing.T
	st   *store.Store
	addr string
	srv  *native.Server
	done chan error
}

func newRestartable(t *testing.T) *restartable {
	st, err := store.New(store.DefaultConfig())
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &restartable{t: t, st: st, addr: l.Addr().String()}
	s.serve(l)
	t.Cleanup(func() {
		s.stop()
		_ = st.Close()
	})
	return s
}

func (s *restartable) conn() string { return "zaris://" + s.addr + "/l2" }

func (s *restartable) serve(l net.Listener) {
	srv, err := native.New(native.Config{Store: s.st, StoreName: "l2", NodeID: "n1", Version: "test"})
	require.NoError(s.t, err)
	s.srv, s.done = srv, make(chan error, 1)
	go func() { s.done <- srv.Serve(l) }()
}

func (s *restartable) start() {
	l, err := net.Listen("tcp", s.addr)
	require.NoError(s.t, err)
	s.serve(l)
}

func (s *restartable) stop() {
	if s.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.srv.Shutdown(ctx)
	<-s.done
	s.srv = nil
}

// A server restart ends every subscription; each backplane subscribes
// again once the server is back and drops its L1.
func TestPubSubBackplaneServerRestart(t *testing.T) {
	srv := newRestartable(t)
	e := remoteEnv(t, srv.conn())
	ctx := context.Background()
	bpA, bpB := e.backplane(hybrid.PubSubOptions{}), e.backplane(hybrid.PubSubOptions{})
	a, b := e.instance(bpA, hybrid.Options{}), e.instance(bpB, hybrid.Options{})
	recB := record(t, bpB)
	c := &counter{prefix: "v"}
	get(t, a.h, "k", c, nil)
	get(t, b.h, "k", c, nil)
	require.True(t, inL1(t, b, "k"))

	srv.stop()
	eventually(t, "b's backplane sees its subscription end", func() bool { return !bpB.Stats().Subscribed })
	assert.True(t, inL1(t, b, "k"), "while the server is down, L1 keeps serving")
	assert.Zero(t, recB.count(hybrid.InvalidateAll))

	srv.start()
	for _, bp := range []*hybrid.PubSubBackplane{bpA, bpB} {
		eventually(t, "subscribed again", func() bool {
			st := bp.Stats()
			return st.Subscribed && st.Resubscribes == 1
		})
	}
	eventually(t, "b's subscribers are told to drop everything", func() bool { return recB.count(hybrid.InvalidateAll) == 1 })
	assert.False(t, inL1(t, b, "k"), "b's L1 copy is dropped")

	e.r.clock.Advance(time.Millisecond)
	assert.Equal(t, "v1", get(t, b.h, "k", c, nil), "L2 survived the restart")
	require.True(t, inL1(t, b, "k"))
	// a's cache client may still be backing off its redial: retry the Set.
	eventually(t, "a's Set goes through", func() bool { return a.h.Set(ctx, "k", "after", nil) == nil })
	eventually(t, "b hears the Set on the new subscription", func() bool { return !inL1(t, b, "k") })
	assert.Equal(t, "after", get(t, b.h, "k", c, nil))
	e.quiesce()
}

// An undecodable frame on the channel might have been an invalidation: the
// subscribers are told to drop everything.
func TestPubSubBackplaneMalformedMessage(t *testing.T) {
	e := embeddedEnv(t)
	ctx := context.Background()
	bp := e.backplane(hybrid.PubSubOptions{Namespace: "shop"})
	assert.Equal(t, hybrid.DefaultPubSubChannel+":shop", bp.Channel())
	rec := record(t, bp)
	raw := e.l2()
	for _, junk := range [][]byte{nil, []byte("hello"), {0xB2, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0}} {
		_, err := raw.PubSub().Publish(ctx, bp.Channel(), junk)
		require.NoError(t, err)
	}
	eventually(t, "three clears", func() bool { return rec.count(hybrid.InvalidateAll) == 3 })
	assert.Equal(t, uint64(3), bp.Stats().Malformed)
	assert.Zero(t, bp.Stats().Received)
}

func TestPubSubBackplaneClose(t *testing.T) {
	e := embeddedEnv(t)
	ctx := context.Background()
	bp := e.backplane(hybrid.PubSubOptions{})
	require.NoError(t, bp.Close())
	require.NoError(t, bp.Close())
	assert.False(t, bp.Stats().Subscribed)
	assert.ErrorIs(t, bp.Publish(ctx, hybrid.Invalidation{Kind: hybrid.InvalidateKey, Key: "k"}), hybrid.ErrBackplaneClosed)

	// Its client closed under it (the only one on its store, so the store
	// closes too and ends the subscription), a backplane stops trying.
	client := connect(t, nil, nil)
	bp2, err := hybrid.NewPubSubBackplane(ctx, client, hybrid.PubSubOptions{Logger: quiet, MinBackoff: time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, client.Close())
	eventually(t, "the backplane gives up", func() bool { return !bp2.Stats().Subscribed })
	require.NoError(t, bp2.Close())

	_, err = hybrid.NewPubSubBackplane(ctx, client, hybrid.PubSubOptions{})
	assert.ErrorIs(t, err, sdk.ErrClosed)
	_, err = hybrid.NewPubSubBackplane(ctx, nil, hybrid.PubSubOptions{})
	assert.Error(t, err)
}
