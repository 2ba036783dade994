package hybrid_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"

	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/internal/oteltest"
	"github.com/zaris-io/zaris/sdk"
)

// telInstance is a cache on the system clock with its own L1, an L2
// client of the real server at conn (traced by the same provider), a
// pub/sub backplane and telemetry.
func telInstance(t *testing.T, e *psEnv, conn string, tel *oteltest.Telemetry) *instance {
	t.Helper()
	l2, err := sdk.Connect(context.Background(), conn, sdk.WithTracerProvider(tel.TP))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l2.Close() })
	bp := e.backplane(hybrid.PubSubOptions{})
	l1 := connect(t, nil, nil)
	h := hybrid.New(l1, l2, hybrid.Options{Backplane: bp, Logger: quiet, TracerProvider: tel.TP, MeterProvider: tel.MP})
	t.Cleanup(func() { _ = h.Close() })
	return &instance{h: h, l1: l1, l2: l2}
}

// Two instances on a real server: the first fill of a cold key runs the
// factory once for 8 concurrent callers (the others join), a repeat is an
// L1 hit, the other instance's first read an L2 hit, and a Remove on one
// reaches the other over the backplane with its lag measured. Spans name
// the tier and never the key; the L2 client's spans are the fill's
// children.
func TestTelemetryTiersJoinsAndBackplaneLag(t *testing.T) {
	conn := startServer(t)
	e := remoteEnv(t, conn)
	telA, telB := oteltest.New(t), oteltest.New(t)
	a, b := telInstance(t, e, conn, telA), telInstance(t, e, conn, telB)
	ctx := context.Background()
	const key = "secret-product-4711"

	const callers = 8
	gate := make(chan struct{})
	var factoryCalls sync.WaitGroup
	factoryCalls.Add(1)
	slow := func(context.Context) (string, error) {
		factoryCalls.Done() // a second run would panic: the factory runs once
		<-gate
		return "lamp", nil
	}
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() {
			v, err := hybrid.GetOrCreate(ctx, a.h, key, slow, nil)
			if err == nil && v != "lamp" {
				err = fmt.Errorf("value %q", v)
			}
			errs[i] = err
		})
	}
	eventually(t, "every caller is in a fill", func() bool {
		n := 0
		for _, s := range telA.Spans.Started() {
			if s.Name() == "zaris.hybrid.fill" {
				n++
			}
		}
		return n == callers
	})
	close(gate)
	wg.Wait()
	require.NoError(t, errors.Join(errs...))

	fills := telA.Ended("zaris.hybrid.fill")
	require.Len(t, fills, callers)
	var ran, joined, lateL1 int
	for _, s := range fills {
		switch tier, j := oteltest.Attr(s, hybrid.AttrTier), oteltest.Attr(s, hybrid.AttrJoined); {
		case j == "true" && tier == "miss":
			joined++
		case j == "false" && tier == "miss":
			ran++
		case j == "false" && tier == "l1":
			lateL1++ // reached the flight after it ended: found the value in L1
		default:
			t.Errorf("fill span tier=%s joined=%s", tier, j)
		}
	}
	assert.Equal(t, 1, ran, "one fill ran the factory")
	assert.Equal(t, callers-1, joined+lateL1)
	assert.Positive(t, joined)
	assert.Equal(t, int64(joined), telA.Sum(hybrid.MetricSingleFlightJoins))
	assert.Equal(t, int64(1), telA.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("miss")))
	n, sum := telA.HistCount(hybrid.MetricFactoryDuration, hybrid.AttrOutcome.String("ok"))
	assert.Equal(t, uint64(1), n)
	assert.Positive(t, sum)

	// A repeat on A: a materialized L1 hit, no span.
	l1Before := telA.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("l1"))
	spansBefore := len(telA.Ended(""))
	v, err := hybrid.GetOrCreate(ctx, a.h, key, slow, nil)
	require.NoError(t, err)
	assert.Equal(t, "lamp", v)
	assert.Equal(t, l1Before+1, telA.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("l1")))
	assert.Len(t, telA.Ended(""), spansBefore, "an L1 hit makes no span")

	// B's first read: an L2 hit; its L2 client's spans are the fill's children.
	v, err = hybrid.GetOrCreate(ctx, b.h, key, slow, nil)
	require.NoError(t, err)
	assert.Equal(t, "lamp", v)
	assert.Equal(t, int64(1), telB.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("l2")))
	assert.Equal(t, int64(0), telB.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("miss")))
	bFill := telB.Ended("zaris.hybrid.fill")
	require.Len(t, bFill, 1)
	assert.Equal(t, "l2", oteltest.Attr(bFill[0], hybrid.AttrTier))
	var children int
	for _, s := range telB.Ended("") {
		if s.Parent().SpanID() == bFill[0].SpanContext().SpanID() {
			children++
			assert.Contains(t, s.Name(), "zaris.", "child %s", s.Name())
		}
	}
	assert.Positive(t, children, "the L2 reads are children of the fill span")

	// A removes the key; B applies the invalidation and measures its lag.
	received := b.h.Stats().Received
	require.NoError(t, a.h.Remove(ctx, key))
	eventually(t, "B applies A's invalidation", func() bool { return b.h.Stats().Received > received })
	n, sum = telB.HistCount(hybrid.MetricBackplaneLag, hybrid.AttrKind.String("key"))
	assert.Equal(t, uint64(1), n)
	assert.Positive(t, sum, "a message over TCP takes some time")
	assert.Less(t, sum, 5.0)

	telA.NoSpanMentions(key)
	telB.NoSpanMentions(key)
	for _, name := range []string{hybrid.MetricLookups, hybrid.MetricFactoryDuration, hybrid.MetricBackplaneLag} {
		for _, tel := range []*oteltest.Telemetry{telA, telB} {
			for _, k := range tel.AttrKeys(name) {
				assert.Contains(t, []string{"zaris.tier", "zaris.outcome", "zaris.kind"}, k)
			}
		}
	}
	e.quiesce()
}

// A failing factory with a stale value: fail-safe answers, counted; the
// factory's time is recorded with outcome error.
func TestTelemetryFailSafeUse(t *testing.T) {
	r := newRig(t, nil)
	tel := oteltest.New(t)
	a := r.instance(hybrid.Options{Expiration: time.Second, FailSafeMaxDuration: time.Minute,
		MeterProvider: tel.MP, Logger: quiet}, nil)
	ctx := context.Background()
	f := &flaky{}
	f.value.Store("v1")
	_, err := hybrid.GetOrCreate(ctx, a.h, "k", f.factory, nil)
	require.NoError(t, err)
	r.clock.Advance(2 * time.Second)
	f.fail.Store(true)
	v, err := hybrid.GetOrCreate(ctx, a.h, "k", f.factory, nil)
	require.NoError(t, err)
	assert.Equal(t, "v1", v)
	assert.Equal(t, int64(1), tel.Sum(hybrid.MetricFailSafeUses))
	for outcome, want := range map[string]uint64{"ok": 1, "error": 1} {
		n, _ := tel.HistCount(hybrid.MetricFactoryDuration, attribute.String("zaris.outcome", outcome))
		assert.Equal(t, want, n, outcome)
	}
	assert.Equal(t, int64(2), tel.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("miss")))
}

// Telemetry off, an L1 hit allocates nothing (as before telemetry existed);
// with a meter it records the hit.
func TestTelemetryL1HitAllocations(t *testing.T) {
	r := newRig(t, nil)
	tel := oteltest.New(t)
	off := r.instance(hybrid.Options{}, nil)
	on := r.instance(hybrid.Options{MeterProvider: tel.MP, TracerProvider: tel.TP}, nil)
	ctx := context.Background()
	for _, inst := range []*instance{off, on} {
		_, err := hybrid.GetOrCreateWithState(ctx, inst.h, benchKey, 42, loadProductByID, nil)
		require.NoError(t, err)
	}
	hit := func(h *hybrid.Cache) func() {
		return func() {
			if v, err := hybrid.GetOrCreateWithState(ctx, h, benchKey, 42, loadProductByID, nil); err != nil || v.ID != 42 {
				t.Fatalf("hit: %+v %v", v, err)
			}
		}
	}
	assert.Zero(t, testing.AllocsPerRun(500, hit(off.h)), "telemetry off")
	before := tel.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("l1"))
	allocs := testing.AllocsPerRun(100, hit(on.h))
	assert.LessOrEqual(t, allocs, 1.0, "a metered hit")
	assert.Equal(t, before+101, tel.Sum(hybrid.MetricLookups, hybrid.AttrTier.String("l1")))
}

// BenchmarkL1HitTelemetry: the materialized L1 hit with telemetry off, with
// a meter, and with a meter and a tracer (an L1 hit makes no span).
func BenchmarkL1HitTelemetry(b *testing.B) {
	for _, mode := range []string{"off", "metrics", "traces+metrics"} {
		b.Run(mode, func(b *testing.B) {
			tel := oteltest.New(b)
			opts := hybrid.Options{}
			if mode != "off" {
				opts.MeterProvider = tel.MP
			}
			if mode == "traces+metrics" {
				opts.TracerProvider = tel.TP
			}
			h := benchCache(b, opts)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				v, err := hybrid.GetOrCreateWithState(ctx, h, benchKey, 42, loadProductByID, nil)
				sink(b, v, err)
			}
		})
	}
}
