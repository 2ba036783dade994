// Package oteltest gives tests an OpenTelemetry tracer and meter provider
// backed by the SDK's in-memory exporters (tracetest.SpanRecorder and a
// ManualReader), and reads what they recorded: spans by name, counter sums
// and histogram counts by attribute. Tests of the sdk, hybrid, session and
// middleware packages use it against real servers and stores.
package oteltest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Telemetry is one test's providers and what they recorded.
type Telemetry struct {
	t      testing.TB
	Spans  *tracetest.SpanRecorder
	Reader *sdkmetric.ManualReader
	TP     *sdktrace.TracerProvider
	MP     *sdkmetric.MeterProvider
}

// New returns providers that record everything, shut down at the test's end.
func New(t testing.TB) *Telemetry {
	t.Helper()
	sr := tracetest.NewSpanRecorder()
	rd := sdkmetric.NewManualReader()
	tel := &Telemetry{t: t, Spans: sr, Reader: rd,
		TP: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr), sdktrace.WithSampler(sdktrace.AlwaysSample())),
		MP: sdkmetric.NewMeterProvider(sdkmetric.WithReader(rd))}
	t.Cleanup(func() {
		_ = tel.TP.Shutdown(context.Background())
		_ = tel.MP.Shutdown(context.Background())
	})
	return tel
}

// Ended lists the ended spans named name ("" = every span).
func (tel *Telemetry) Ended(name string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range tel.Spans.Ended() {
		if name == "" || s.Name() == name {
			out = append(out, s)
		}
	}
	return out
}

// Attr is a span's attribute value as a string ("" when absent).
func Attr(s sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value.Emit()
		}
	}
	return ""
}

// NoSpanMentions fails the test if any ended span's name, attributes,
// status or events contain secret (a key, a value, a session id).
func (tel *Telemetry) NoSpanMentions(secret string) {
	tel.t.Helper()
	if secret == "" {
		tel.t.Fatal("NoSpanMentions of an empty string: every span mentions it")
	}
	for _, s := range tel.Spans.Ended() {
		text := s.Name() + " " + s.Status().Description
		for _, kv := range s.Attributes() {
			text += " " + string(kv.Key) + "=" + kv.Value.Emit()
		}
		for _, e := range s.Events() {
			text += " " + e.Name
			for _, kv := range e.Attributes {
				text += " " + kv.Value.Emit()
			}
		}
		if strings.Contains(text, secret) {
			tel.t.Fatalf("span %q mentions %q: %s", s.Name(), secret, text)
		}
	}
}

// Collect reads every metric recorded so far.
func (tel *Telemetry) Collect() []metricdata.Metrics {
	tel.t.Helper()
	var rm metricdata.ResourceMetrics
	if err := tel.Reader.Collect(context.Background(), &rm); err != nil {
		tel.t.Fatal(err)
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}

// matches reports whether set holds every attribute of want.
func matches(set attribute.Set, want []attribute.KeyValue) bool {
	for _, w := range want {
		v, ok := set.Value(w.Key)
		if !ok || v != w.Value {
			return false
		}
	}
	return true
}

// Sum adds the points of the int64 counter name whose attributes include
// want (0 when the counter or the points do not exist).
func (tel *Telemetry) Sum(name string, want ...attribute.KeyValue) int64 {
	tel.t.Helper()
	var n int64
	for _, m := range tel.Collect() {
		if m.Name != name {
			continue
		}
		sum, ok := m.Data.(metricdata.Sum[int64])
		if !ok {
			tel.t.Fatalf("%s is a %T, not an int64 sum", name, m.Data)
		}
		for _, p := range sum.DataPoints {
			if matches(p.Attributes, want) {
				n += p.Value
			}
		}
	}
	return n
}

// HistCount is the number of observations, and their sum, of the float64
// histogram name whose attributes include want.
func (tel *Telemetry) HistCount(name string, want ...attribute.KeyValue) (count uint64, sum float64) {
	tel.t.Helper()
	for _, m := range tel.Collect() {
		if m.Name != name {
			continue
		}
		h, ok := m.Data.(metricdata.Histogram[float64])
		if !ok {
			tel.t.Fatalf("%s is a %T, not a float64 histogram", name, m.Data)
		}
		for _, p := range h.DataPoints {
			if matches(p.Attributes, want) {
				count += p.Count
				sum += p.Sum
			}
		}
	}
	return count, sum
}

// AttrKeys lists, sorted, every attribute key the points of metric name use.
func (tel *Telemetry) AttrKeys(name string) []string {
	seen := map[string]bool{}
	add := func(s attribute.Set) {
		for _, kv := range s.ToSlice() {
			seen[string(kv.Key)] = true
		}
	}
	for _, m := range tel.Collect() {
		if m.Name != name {
			continue
		}
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				add(p.Attributes)
			}
		}
	}
	keys := make([]string, 0, len(seen))
	for k := range seen {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Dump describes every metric for a failure message.
func (tel *Telemetry) Dump() string {
	var b strings.Builder
	for _, m := range tel.Collect() {
		fmt.Fprintf(&b, "%s %+v\n", m.Name, m.Data)
	}
	return b.String()
}
