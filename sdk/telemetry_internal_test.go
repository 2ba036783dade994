package sdk

import (
	"context"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/oteltest"
)

// Telemetry off adds no allocation to a call: Client.Get, Put and Do
// allocate exactly what their backend call allocates.
func TestTelemetryOffAddsNoAllocation(t *testing.T) {
	c, err := Connect(context.Background(), "zaris://inproc/"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	val := []byte("value")
	if _, err := c.Put(ctx, "k", val, nil); err != nil {
		t.Fatal(err)
	}
	incr := kv.NewCmd(kv.CmdIncrBy, "n", "1")
	for _, tc := range []struct {
		name          string
		client, plain func()
	}{
		{"Get", func() { _, _ = c.Get(ctx, "k") }, func() { _, _ = refusal(c.be.get(ctx, "k")) }},
		{"Put", func() { _, _ = c.Put(ctx, "k", val, nil) }, func() { _, _ = refusal(c.be.put(ctx, "k", val, nil)) }},
		{"Do", func() { _, _ = c.Do(ctx, incr) }, func() { _, _ = c.be.exec(ctx, incr) }},
	} {
		got, base := testing.AllocsPerRun(200, tc.client), testing.AllocsPerRun(200, tc.plain)
		if got != base {
			t.Errorf("%s: %.1f allocs through the client, %.1f from the backend alone", tc.name, got, base)
		}
	}
}

// Embedded Get with telemetry off, with a tracer, and with a tracer and a
// meter (record the figures in docs/BENCHMARKS.md):
//
//	go test -run '^$' -bench BenchmarkTelemetry -benchmem ./sdk/
func BenchmarkTelemetry(b *testing.B) {
	for _, mode := range []string{"off", "traces", "traces+metrics", "metrics"} {
		b.Run("Get/"+mode, func(b *testing.B) {
			tel := oteltest.New(b)
			var opts []Option
			if mode == "traces" || mode == "traces+metrics" {
				opts = append(opts, WithTracerProvider(tel.TP))
			}
			if mode == "metrics" || mode == "traces+metrics" {
				opts = append(opts, WithMeterProvider(tel.MP))
			}
			c, err := Connect(context.Background(), "zaris://inproc/bench-telemetry-"+strings.ReplaceAll(mode, "+", "-"), opts...)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			ctx := context.Background()
			if _, err := c.Put(ctx, "k", []byte("value"), nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Get(ctx, "k"); err != nil {
					b.Fatal(err)
				}
				if mode != "off" && mode != "metrics" {
					tel.Spans.Reset()
				}
			}
		})
	}
}
