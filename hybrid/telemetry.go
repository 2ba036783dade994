package hybrid

// OpenTelemetry for the hybrid cache (issue #18 item 6), on only when
// Options names a provider: a nil *telemetry leaves every path as it was.

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the cache's tracer and meter.
const InstrumentationName = "github.com/zaris-io/zaris/hybrid"

// The cache's instruments.
const (
	// MetricLookups counts answered lookups by zaris.tier: l1 (a hit in
	// the local tier), l2 (a hit in the distributed tier, inside a fill)
	// or miss (neither: the factory ran, or TryGet found nothing). A
	// caller that joined another caller's fill is counted in
	// MetricSingleFlightJoins instead.
	MetricLookups = "zaris.hybrid.lookups"
	// MetricFactoryDuration is how long factories ran (seconds), by
	// zaris.outcome: ok, error, soft_timeout (the stale value was served
	// and the factory went on in the background), hard_timeout.
	MetricFactoryDuration = "zaris.hybrid.factory.duration"
	// MetricSingleFlightJoins counts callers that waited for a fill
	// another caller of the same key started instead of starting one.
	MetricSingleFlightJoins = "zaris.hybrid.singleflight.joins"
	// MetricFailSafeUses counts stale values served by fail-safe.
	MetricFailSafeUses = "zaris.hybrid.failsafe.uses"
	// MetricBackplaneLag is the time from an invalidation's publication on
	// one instance to its application on this one (seconds, by
	// zaris.kind: key, tag, all), from the sender's and this instance's
	// clocks.
	MetricBackplaneLag = "zaris.hybrid.backplane.lag"
)

// Attribute keys of the cache's spans and measurements; none carries a key
// or a tag.
const (
	AttrTier    = attribute.Key("zaris.tier")    // l1, l2, miss
	AttrOutcome = attribute.Key("zaris.outcome") // a factory's: ok, error, soft_timeout, hard_timeout
	AttrKind    = attribute.Key("zaris.kind")    // an invalidation's: key, tag, all
	AttrJoined  = attribute.Key("zaris.joined")  // the caller joined another caller's fill
	AttrStale   = attribute.Key("zaris.stale")   // fail-safe answered with a stale value
)

type tier uint8

const (
	tierL1 tier = iota
	tierL2
	tierMiss
	tierCount
)

var tierNames = [tierCount]string{"l1", "l2", "miss"}

var outcomeNames = [...]string{factoryDone: "ok", factorySoftTimeout: "soft_timeout", factoryHardTimeout: "hard_timeout"}

type telemetry struct {
	tracer   trace.Tracer
	lookups  metric.Int64Counter
	factory  metric.Float64Histogram
	joins    metric.Int64Counter
	failSafe metric.Int64Counter
	lag      metric.Float64Histogram

	tierOpt    [tierCount]metric.AddOption
	outcomeOpt [len(outcomeNames) + 1]metric.RecordOption // the last: error
	kindOpt    [InvalidateAll + 1]metric.RecordOption
}

// newTelemetry is nil unless o names a provider; a missing one of the two
// is a no-op provider.
func newTelemetry(o Options) (*telemetry, error) {
	if o.TracerProvider == nil && o.MeterProvider == nil {
		return nil, nil
	}
	tp, mp := o.TracerProvider, o.MeterProvider
	if tp == nil {
		tp = tracenoop.NewTracerProvider()
	}
	if mp == nil {
		mp = metricnoop.NewMeterProvider()
	}
	t := &telemetry{tracer: tp.Tracer(InstrumentationName)}
	m := mp.Meter(InstrumentationName)
	var err error
	if t.lookups, err = m.Int64Counter(MetricLookups, metric.WithUnit("{lookup}"),
		metric.WithDescription("Hybrid cache lookups by the tier that answered (l1, l2) or miss.")); err != nil {
		return nil, err
	}
	if t.factory, err = m.Float64Histogram(MetricFactoryDuration, metric.WithUnit("s"),
		metric.WithDescription("Time hybrid cache factories ran, by outcome.")); err != nil {
		return nil, err
	}
	if t.joins, err = m.Int64Counter(MetricSingleFlightJoins, metric.WithUnit("{call}"),
		metric.WithDescription("Callers that joined a fill another caller of the key started.")); err != nil {
		return nil, err
	}
	if t.failSafe, err = m.Int64Counter(MetricFailSafeUses, metric.WithUnit("{call}"),
		metric.WithDescription("Stale values served by fail-safe.")); err != nil {
		return nil, err
	}
	if t.lag, err = m.Float64Histogram(MetricBackplaneLag, metric.WithUnit("s"),
		metric.WithDescription("Time from an invalidation's publication to its application here.")); err != nil {
		return nil, err
	}
	for i, n := range tierNames {
		t.tierOpt[i] = metric.WithAttributeSet(attribute.NewSet(AttrTier.String(n)))
	}
	for i, n := range outcomeNames {
		t.outcomeOpt[i] = metric.WithAttributeSet(attribute.NewSet(AttrOutcome.String(n)))
	}
	t.outcomeOpt[len(outcomeNames)] = metric.WithAttributeSet(attribute.NewSet(AttrOutcome.String("error")))
	for k := InvalidateKey; k <= InvalidateAll; k++ {
		t.kindOpt[k] = metric.WithAttributeSet(attribute.NewSet(AttrKind.String(k.String())))
	}
	return t, nil
}

func (t *telemetry) lookup(tr tier) {
	t.lookups.Add(context.Background(), 1, t.tierOpt[tr])
}

func (t *telemetry) factoryRan(start time.Time, outcome factoryOutcome, err error) {
	opt := t.outcomeOpt[outcome]
	if outcome == factoryDone && err != nil {
		opt = t.outcomeOpt[len(outcomeNames)]
	}
	t.factory.Record(context.Background(), time.Since(start).Seconds(), opt)
}

func (t *telemetry) backplaneLag(kind InvalidationKind, lag time.Duration) {
	if kind < InvalidateKey || kind > InvalidateAll {
		return
	}
	t.lag.Record(context.Background(), max(lag, 0).Seconds(), t.kindOpt[kind])
}

// fillSpan is the span of one caller's read-through (GetOrCreate or TryGet
// past its L1 hit): the fill it ran or joined.
func (t *telemetry) fillSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindInternal))
}

// endFill ends a fill span with what the fill found.
func endFill(span trace.Span, res *fillResult, joined bool, err error) {
	attrs := []attribute.KeyValue{AttrJoined.Bool(joined)}
	if res != nil {
		attrs = append(attrs, AttrTier.String(tierNames[res.tier]), AttrStale.Bool(res.stale))
	} else if err == nil {
		attrs = append(attrs, AttrTier.String(tierNames[tierMiss]))
	}
	span.SetAttributes(attrs...)
	if err != nil {
		span.SetStatus(codes.Error, "fill failed") // the error's text may quote the key
	}
	span.End()
}
