package sdk_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/zaris-io/zaris/internal/oteltest"
	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// Every call of an embedded client makes one client span with op, status,
// node and attempts, and the two instruments count it by op and status;
// no span or attribute carries the key.
func TestTelemetryEmbeddedSpansAndMetrics(t *testing.T) {
	tel := oteltest.New(t)
	cfg := store.DefaultConfig()
	cfg.MaxItemBytes = 1024
	c, err := sdk.Connect(context.Background(), "zaris://inproc/"+t.Name(), sdk.WithEmbeddedConfig(cfg),
		sdk.WithTracerProvider(tel.TP), sdk.WithMeterProvider(tel.MP))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	const key = "secret-key-4711"
	if _, err := c.Put(ctx, key, []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Get(ctx, key); err != nil || !r.OK() {
		t.Fatalf("get: %+v %v", r, err)
	}
	if r, err := c.Get(ctx, key+"-missing"); err != nil || r.Status != sdk.StatusNotFound {
		t.Fatalf("miss: %+v %v", r, err)
	}
	if _, err := c.Put(ctx, key, make([]byte, 2048), nil); !errors.Is(err, sdk.ErrItemTooLarge) {
		t.Fatalf("oversized put: %v", err)
	}
	if _, err := c.Hashes().Set(ctx, key+"-h", map[string][]byte{"f": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetMany(ctx, []string{key, key + "-x", key + "-y"}); err != nil {
		t.Fatal(err)
	}

	spans := tel.Ended("")
	want := []struct{ name, op, status string }{
		{"zaris.put", "put", "Success"}, {"zaris.get", "get", "Success"}, {"zaris.get", "get", "NotFound"},
		{"zaris.put", "put", "ItemTooLarge"}, {"zaris.HSET", "HSET", "Success"}, {"zaris.batch", "batch", "Success"},
	}
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d", len(spans), len(want))
	}
	for i, w := range want {
		s := spans[i]
		got := fmt.Sprintf("%s op=%s status=%s node=%s attempts=%s kind=%v", s.Name(),
			oteltest.Attr(s, sdk.AttrOp), oteltest.Attr(s, sdk.AttrStatus), oteltest.Attr(s, sdk.AttrNode), oteltest.Attr(s, sdk.AttrAttempts), s.SpanKind())
		exp := fmt.Sprintf("%s op=%s status=%s node=embedded attempts=1 kind=%v", w.name, w.op, w.status, trace.SpanKindClient)
		if got != exp {
			t.Errorf("span %d: %s, want %s", i, got, exp)
		}
	}
	if st := spans[3].Status(); st.Code != codes.Error || st.Description != "ItemTooLarge" {
		t.Errorf("refused put's span status %+v", st)
	}
	if st := spans[2].Status(); st.Code == codes.Error {
		t.Errorf("a miss is not an error: %+v", st)
	}
	if n := oteltest.Attr(spans[5], sdk.AttrItems); n != "3" {
		t.Errorf("batch items %q", n)
	}
	tel.NoSpanMentions(key)

	for _, w := range []struct {
		op, status string
		n          int64
	}{{"put", "Success", 1}, {"get", "Success", 1}, {"get", "NotFound", 1}, {"put", "ItemTooLarge", 1}, {"HSET", "Success", 1}, {"batch", "Success", 1}} {
		if got := tel.Sum(sdk.MetricCalls, sdk.AttrOp.String(w.op), sdk.AttrStatus.String(w.status)); got != w.n {
			t.Errorf("%s{op=%s,status=%s} = %d, want %d\n%s", sdk.MetricCalls, w.op, w.status, got, w.n, tel.Dump())
		}
	}
	if n, sum := tel.HistCount(sdk.MetricCallDuration); n != 6 || sum <= 0 {
		t.Errorf("%s: %d observations, sum %v", sdk.MetricCallDuration, n, sum)
	}
	for _, name := range []string{sdk.MetricCalls, sdk.MetricCallDuration} {
		if keys := fmt.Sprint(tel.AttrKeys(name)); keys != "[zaris.op zaris.status]" {
			t.Errorf("%s attributes %s", name, keys)
		}
	}
}

// A client of a real single node names the node that answered.
func TestTelemetryRemoteNamesTheNode(t *testing.T) {
	ts := startServer(t)
	tel := oteltest.New(t)
	c, err := sdk.Connect(context.Background(), "zaris://"+ts.addr+"/default", sdk.WithTracerProvider(tel.TP))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(context.Background(), "k", []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PubSub().Publish(context.Background(), "news", []byte("m")); err != nil {
		t.Fatal(err)
	}
	spans := tel.Ended("")
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	for _, s := range spans {
		if node, st := oteltest.Attr(s, sdk.AttrNode), oteltest.Attr(s, sdk.AttrStatus); node != "n1" || st != "Success" {
			t.Errorf("%s: node %q status %q", s.Name(), node, st)
		}
	}
	ts.stop(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.Get(ctx, "k"); err == nil {
		t.Fatal("get from a stopped server succeeded")
	}
	s := tel.Ended("zaris.get")
	if len(s) != 1 || s[0].Status().Code != codes.Error || oteltest.Attr(s[0], sdk.AttrStatus) == "Success" {
		t.Fatalf("failed get's span: %+v", s)
	}
}

// On a cluster whose map moved without telling the client (push muted,
// polling off), a put is redirected: its span reports 2 attempts and the
// node that finally answered; a batch over every owner reports "several".
func TestTelemetryClusterRedirectCountsAttempts(t *testing.T) {
	tc := startCluster(t, 3, clusterConfig{mutePush: true})
	tel := oteltest.New(t)
	c := tc.connect(t, sdk.WithMapPollInterval(-1), sdk.WithTracerProvider(tel.TP), sdk.WithMeterProvider(tel.MP))
	k := tc.keysOn(0, "redir:", 1)[0]
	tc.move(1, placement.SegmentOf(k, store.DefaultSegments))
	if r, err := c.Put(context.Background(), k, []byte("x"), nil); err != nil || !r.OK() {
		t.Fatalf("put: %+v %v", r, err)
	}
	s := tel.Ended("zaris.put")
	if len(s) != 1 {
		t.Fatalf("%d put spans", len(s))
	}
	if got := fmt.Sprintf("%s/%s/%s", oteltest.Attr(s[0], sdk.AttrNode), oteltest.Attr(s[0], sdk.AttrAttempts), oteltest.Attr(s[0], sdk.AttrStatus)); got != "node-1/2/Success" {
		t.Fatalf("node/attempts/status = %s, want node-1/2/Success", got)
	}
	keys := []string{tc.keysOn(0, "b:", 1)[0], tc.keysOn(1, "b:", 1)[0], tc.keysOn(2, "b:", 1)[0]}
	if _, err := c.GetMany(context.Background(), keys); err != nil {
		t.Fatal(err)
	}
	b := tel.Ended("zaris.batch")
	if len(b) != 1 || oteltest.Attr(b[0], sdk.AttrNode) != "several" || oteltest.Attr(b[0], sdk.AttrAttempts) != "1" {
		t.Fatalf("batch span: %v", b)
	}
	if n := tel.Sum(sdk.MetricCalls, sdk.AttrOp.String("put"), sdk.AttrStatus.String("Success")); n != 1 {
		t.Fatalf("put calls %d", n)
	}
	tel.NoSpanMentions(k)
}

// Telemetry is off unless a provider is passed: a global provider is not
// picked up.
func TestTelemetryOffWithoutAProvider(t *testing.T) {
	tel := oteltest.New(t)
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tel.TP)
	defer otel.SetTracerProvider(prev)
	c, err := sdk.Connect(context.Background(), "zaris://inproc/"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Put(context.Background(), "k", []byte("v"), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(tel.Ended("")); n != 0 {
		t.Fatalf("%d spans without a provider", n)
	}
}
