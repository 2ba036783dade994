package sdk

// OpenTelemetry for the client (issue #18 item 6): a span per call and two
// instruments, only when the application passed a provider. A client
// without one keeps a nil *telemetry and every call takes the branch that
// existed before, so telemetry off costs one nil check and no allocation.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/zaris-io/zaris/internal/kv"
)

// InstrumentationName is the name of the tracer and the meter the client
// takes from the providers given to WithTracerProvider and
// WithMeterProvider.
const InstrumentationName = "github.com/zaris-io/zaris/sdk"

// The attribute keys of the client's spans and measurements. None carries
// a key, a value or a channel name: attributes stay bounded and never leak
// data into a tracing backend.
const (
	AttrOp       = attribute.Key("zaris.op")       // get, put, delete, expire, persist, ttl, batch, publish, or a command name (HSET…)
	AttrStatus   = attribute.Key("zaris.status")   // the Status name, or Canceled/Closed/Error for a call that got no answer
	AttrNode     = attribute.Key("zaris.node")     // the node id that answered ("embedded" in process; "several" for a batch spread over owners)
	AttrAttempts = attribute.Key("zaris.attempts") // attempts made (1 + redirects and transient retries)
	AttrItems    = attribute.Key("zaris.items")    // a batch's item count
)

// The client's instruments.
const (
	MetricCallDuration = "zaris.client.call.duration" // histogram, seconds, by op and status
	MetricCalls        = "zaris.client.calls"         // counter, by op and status
)

// WithTracerProvider makes the client start a span for every call (kind
// client, named "zaris.<op>", attributes zaris.op, zaris.status, zaris.node,
// zaris.attempts). Without it (or with nil) the client makes no span.
// Pass otel.GetTracerProvider() to use the global provider.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *clientOptions) { o.tracerProvider = tp }
}

// WithMeterProvider makes the client record zaris.client.call.duration and
// zaris.client.calls (attributes zaris.op, zaris.status). Without it (or with
// nil) the client records nothing.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(o *clientOptions) { o.meterProvider = mp }
}

type telemetry struct {
	tracer   trace.Tracer            // nil: no spans
	duration metric.Float64Histogram // nil: no metrics
	calls    metric.Int64Counter
	node     string   // the node of every call of an embedded client
	sets     sync.Map // measureKey → metric.MeasurementOption, built once per op and status
}

type measureKey struct{ op, status string }

// newTelemetry is nil unless o names a provider.
func newTelemetry(o clientOptions, embedded bool) (*telemetry, error) {
	if o.tracerProvider == nil && o.meterProvider == nil {
		return nil, nil
	}
	t := &telemetry{}
	if embedded {
		t.node = "embedded"
	}
	if o.tracerProvider != nil {
		t.tracer = o.tracerProvider.Tracer(InstrumentationName)
	}
	if o.meterProvider != nil {
		m := o.meterProvider.Meter(InstrumentationName)
		var err error
		if t.duration, err = m.Float64Histogram(MetricCallDuration, metric.WithUnit("s"),
			metric.WithDescription("Duration of a Zaris client call, all attempts included."),
			metric.WithExplicitBucketBoundaries(latencyBuckets...)); err != nil {
			return nil, err
		}
		if t.calls, err = m.Int64Counter(MetricCalls, metric.WithUnit("{call}"),
			metric.WithDescription("Zaris client calls by operation and status.")); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// latencyBuckets suit a cache: 50 µs to 5 s.
var latencyBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5}

// callInfo is one observed call. The backends fill node and attempts
// through the context (callFrom), only when their observed flag is set.
type callInfo struct {
	start    time.Time
	span     trace.Span // nil without a tracer
	attempts atomic.Int32
	node     atomic.Pointer[string]
}

type callInfoKey struct{}

func callFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

var severalNodes = "several"

// noteNode records the node an attempt went to (its id from the
// handshake, else its address); an attempt sent to different nodes (a
// batch over several owners) reports "several".
func noteNode(ctx context.Context, c *rconn) {
	ci := callFrom(ctx)
	if ci == nil {
		return
	}
	id := &c.nodeID
	if *id == "" {
		id = &c.endpoint
	}
	for {
		old := ci.node.Load()
		next := id
		if old != nil && *old != *id {
			next = &severalNodes
		}
		if old == next || ci.node.CompareAndSwap(old, next) {
			return
		}
	}
}

// noteRetry counts an attempt beyond the first; the node attribute names
// the node(s) of the last attempt.
func noteRetry(ctx context.Context) {
	if ci := callFrom(ctx); ci != nil {
		ci.attempts.Add(1)
		ci.node.Store(nil)
	}
}

func (t *telemetry) begin(ctx context.Context, op string) (context.Context, *callInfo) {
	ci := &callInfo{start: time.Now()}
	ci.attempts.Store(1)
	if t.node != "" {
		ci.node.Store(&t.node)
	}
	if t.tracer != nil {
		ctx, ci.span = t.tracer.Start(ctx, "zaris."+op, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(AttrOp.String(op)))
	}
	return context.WithValue(ctx, callInfoKey{}, ci), ci
}

func (t *telemetry) end(ci *callInfo, op string, st Status, err error, extra ...attribute.KeyValue) {
	status := statusLabel(st, err)
	if ci.span != nil {
		attrs := append(extra, AttrStatus.String(status), AttrAttempts.Int(int(ci.attempts.Load())))
		if n := ci.node.Load(); n != nil {
			attrs = append(attrs, AttrNode.String(*n))
		}
		ci.span.SetAttributes(attrs...)
		if err != nil {
			// The status name only: an error's text may quote the key.
			ci.span.SetStatus(codes.Error, status)
		}
		ci.span.End()
	}
	if t.duration != nil {
		opt := t.measureOption(op, status)
		t.duration.Record(context.Background(), time.Since(ci.start).Seconds(), opt)
		t.calls.Add(context.Background(), 1, opt)
	}
}

func (t *telemetry) measureOption(op, status string) metric.MeasurementOption {
	k := measureKey{op, status}
	if v, ok := t.sets.Load(k); ok {
		return v.(metric.MeasurementOption)
	}
	opt := metric.WithAttributeSet(attribute.NewSet(AttrOp.String(op), AttrStatus.String(status)))
	v, _ := t.sets.LoadOrStore(k, opt)
	return v.(metric.MeasurementOption)
}

// statusLabel names a call's outcome: its Status, or for a call that got
// no answer what stopped it (a bounded set, fit for a metric attribute).
func statusLabel(st Status, err error) string {
	if err == nil || st != StatusSuccess {
		return st.String()
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kv.ErrTimeout):
		return StatusTimeout.String()
	case errors.Is(err, context.Canceled):
		return "Canceled"
	case errors.Is(err, ErrClosed):
		return "Closed"
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrUnreachable):
		return StatusUnavailable.String()
	}
	return "Error"
}

// observeResult runs one key call under a span and its measurements.
func (c *Client) observeResult(ctx context.Context, op string, call func(context.Context) (Result, error)) (Result, error) {
	ctx, ci := c.tel.begin(ctx, op)
	r, err := refusal(call(ctx))
	c.tel.end(ci, op, r.Status, err)
	return r, err
}
