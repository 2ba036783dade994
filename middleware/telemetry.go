package middleware

// OpenTelemetry for the response cache (issue #18 item 6), on only when
// ResponseCacheOptions names a provider: a nil *rcTelemetry leaves every
// path as it was.

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the response cache's tracer and meter.
const InstrumentationName = "github.com/zaris-io/zaris/middleware"

// The response cache's instruments.
const (
	// MetricRequests counts requests by zaris.result: hit (a stored
	// answer), coalesced (the answer of a concurrent fill of the same
	// URL), miss (the handler ran), stale (the handler ran because the
	// stored answer was no longer fresh or its tag was evicted), bypass
	// (not eligible: method, Range, no-store, a disabled route).
	MetricRequests = "zaris.http.cache.requests"
	// MetricResponseBytes counts the body bytes the cache wrote to
	// clients, by zaris.result (a streamed or bypassed body is the
	// handler's own and is not counted).
	MetricResponseBytes = "zaris.http.cache.response.bytes"
	// MetricStoredBytes counts the body bytes of responses written to the
	// cache.
	MetricStoredBytes = "zaris.http.cache.stored.bytes"
)

// Attribute keys; none carries a URL, a header or a body.
const (
	AttrResult = attribute.Key("zaris.result")
	AttrBytes  = attribute.Key("zaris.bytes")
)

const (
	resultHit = iota
	resultCoalesced
	resultMiss
	resultStale
	resultBypass
	resultCount
)

var resultNames = [resultCount]string{"hit", "coalesced", "miss", "stale", "bypass"}

// served is what serveRun did with one request; a nil *served records
// nothing (telemetry off).
type served struct {
	result int
	bytes  int // body bytes the cache wrote; -1 = the handler's own stream
}

func (o *served) set(result, bytes int) {
	if o != nil {
		o.result, o.bytes = result, bytes
	}
}

type rcTelemetry struct {
	tracer    trace.Tracer
	requests  metric.Int64Counter
	respBytes metric.Int64Counter
	stored    metric.Int64Counter
	resultOpt [resultCount]metric.AddOption
}

func newRCTelemetry(o ResponseCacheOptions) (*rcTelemetry, error) {
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
	t := &rcTelemetry{tracer: tp.Tracer(InstrumentationName)}
	m := mp.Meter(InstrumentationName)
	var err error
	if t.requests, err = m.Int64Counter(MetricRequests, metric.WithUnit("{request}"),
		metric.WithDescription("Requests through the response cache by result.")); err != nil {
		return nil, err
	}
	if t.respBytes, err = m.Int64Counter(MetricResponseBytes, metric.WithUnit("By"),
		metric.WithDescription("Body bytes the response cache wrote to clients, by result.")); err != nil {
		return nil, err
	}
	if t.stored, err = m.Int64Counter(MetricStoredBytes, metric.WithUnit("By"),
		metric.WithDescription("Body bytes of responses written to the cache.")); err != nil {
		return nil, err
	}
	for i, n := range resultNames {
		t.resultOpt[i] = metric.WithAttributeSet(attribute.NewSet(AttrResult.String(n)))
	}
	return t, nil
}

func (t *rcTelemetry) start(ctx context.Context) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, "zaris.http.cache")
}

func (t *rcTelemetry) end(span trace.Span, out *served) {
	attrs := []attribute.KeyValue{AttrResult.String(resultNames[out.result])}
	if out.bytes >= 0 {
		attrs = append(attrs, AttrBytes.Int(out.bytes))
	}
	span.SetAttributes(attrs...)
	span.End()
	ctx := context.Background()
	t.requests.Add(ctx, 1, t.resultOpt[out.result])
	if out.bytes > 0 {
		t.respBytes.Add(ctx, int64(out.bytes), t.resultOpt[out.result])
	}
}

func (t *rcTelemetry) storedBytes(n int) {
	t.stored.Add(context.Background(), int64(n))
}
