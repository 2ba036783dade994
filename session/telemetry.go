package session

// OpenTelemetry for the session store (issue #18 item 6), on only when
// Options names a provider: a nil *telemetry leaves every path as it was.

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// InstrumentationName names the store's tracer and meter.
const InstrumentationName = "github.com/zaris-io/zaris/session"

// The store's instruments, both by zaris.op and zaris.outcome.
const (
	MetricOperations        = "zaris.session.operations"
	MetricOperationDuration = "zaris.session.operation.duration" // seconds
)

// Attribute keys. No span or measurement carries a session id or a value.
const (
	// AttrOp: load, save, refresh, delete, regenerate.
	AttrOp = attribute.Key("zaris.op")
	// AttrOutcome: for a load found, none (no cookie), unknown (an id
	// the store does not hold), rejected (a bad cookie), expired, error;
	// for the others ok, expired or error.
	AttrOutcome = attribute.Key("zaris.outcome")
)

// Outcomes.
const (
	outcomeOK       = "ok"
	outcomeFound    = "found"
	outcomeNone     = "none"
	outcomeUnknown  = "unknown"
	outcomeRejected = "rejected"
	outcomeExpired  = "expired"
	outcomeError    = "error"
)

type telemetry struct {
	tracer   trace.Tracer
	ops      metric.Int64Counter
	duration metric.Float64Histogram
	sets     sync.Map // [2]string{op, outcome} → metric.MeasurementOption
}

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
	if t.ops, err = m.Int64Counter(MetricOperations, metric.WithUnit("{operation}"),
		metric.WithDescription("Session store operations by operation and outcome.")); err != nil {
		return nil, err
	}
	if t.duration, err = m.Float64Histogram(MetricOperationDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of session store operations, store round trips included.")); err != nil {
		return nil, err
	}
	return t, nil
}

// op is one observed operation.
type op struct {
	t     *telemetry
	name  string
	start time.Time
	span  trace.Span
}

func (t *telemetry) begin(ctx context.Context, name string) (context.Context, *op) {
	o := &op{t: t, name: name, start: time.Now()}
	ctx, o.span = t.tracer.Start(ctx, "zaris.session."+name, trace.WithAttributes(AttrOp.String(name)))
	return ctx, o
}

func (o *op) end(outcome string) {
	o.span.SetAttributes(AttrOutcome.String(outcome))
	if outcome == outcomeError {
		o.span.SetStatus(codes.Error, outcomeError) // the error's text may name the key
	}
	o.span.End()
	k := [2]string{o.name, outcome}
	v, ok := o.t.sets.Load(k)
	if !ok {
		v, _ = o.t.sets.LoadOrStore(k, metric.WithAttributeSet(attribute.NewSet(AttrOp.String(o.name), AttrOutcome.String(outcome))))
	}
	opt := v.(metric.MeasurementOption)
	o.t.ops.Add(context.Background(), 1, opt)
	o.t.duration.Record(context.Background(), time.Since(o.start).Seconds(), opt)
}

// errOutcome is the outcome of an operation that returned err.
func errOutcome(err error) string {
	switch {
	case err == nil:
		return outcomeOK
	case err == ErrExpired:
		return outcomeExpired
	}
	return outcomeError
}

// observed runs fn, an operation taking the context, under a span and
// measurements when telemetry is on.
func (s *Store) observed(ctx context.Context, name string, fn func(context.Context) error) error {
	if s.tel == nil {
		return fn(ctx)
	}
	ctx, o := s.tel.begin(ctx, name)
	err := fn(ctx)
	o.end(errOutcome(err))
	return err
}
