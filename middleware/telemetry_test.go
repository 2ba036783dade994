package middleware

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/internal/oteltest"
	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// The response cache over a real Zaris server, behind a real HTTP server:
// a miss, a hit, a stale entry (past its lifetime), a stampede (one
// miss, the rest coalesced) and a bypass each count under their result,
// with the body bytes written and stored; every request has a span, the
// parent of the handler's spans; no span names the URL.
func TestTelemetryResponseCache(t *testing.T) {
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.Serve(t, st, "rc")
	tel := oteltest.New(t)
	client, err := sdk.Connect(context.Background(), "zaris://"+addr+"/rc", sdk.WithTracerProvider(tel.TP))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	clock := newFakeClock()
	rc := NewResponseCacher(cache.New(client, cache.Options{}), ResponseCacheOptions{
		Now: clock.Now, TracerProvider: tel.TP, MeterProvider: tel.MP,
	})
	release := make(chan struct{})
	appTracer := tel.TP.Tracer("app")
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, span := appTracer.Start(r.Context(), "handler")
		defer span.End()
		if r.URL.Path == "/cold" {
			<-release
		}
		io.WriteString(w, "body of "+r.URL.Path) // "body of /catalog/secret-sku-1": 28 bytes
	})
	srv := httptest.NewServer(rc.Middleware()(handler))
	t.Cleanup(srv.Close)
	get := func(method, path, want string) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if got := resp.Header.Get("X-Cache"); want != "" && got != want {
			t.Fatalf("%s %s: X-Cache %q, want %q", method, path, got, want)
		}
	}
	const page = "/catalog/secret-sku-1"
	bodyLen := int64(len("body of " + page))
	get("GET", page, "MISS")
	get("GET", page, "HIT")
	clock.Advance(2 * time.Minute)
	get("GET", page, "MISS") // stale: the entry is past its 1-minute lifetime
	get("POST", page, "BYPASS")

	const stampede = 5
	var wg sync.WaitGroup
	for range stampede {
		wg.Go(func() { get("GET", "/cold", "") })
	}
	eventually(t, 5*time.Second, "the stampede waits on one fill", func() bool { return rc.Stats().Waiting == stampede })
	close(release)
	wg.Wait()

	coldLen := int64(len("body of /cold"))
	for _, w := range []struct {
		result string
		n      int64
		bytes  int64
	}{
		{"miss", 2, bodyLen + coldLen}, {"hit", 1, bodyLen}, {"stale", 1, bodyLen},
		{"coalesced", stampede - 1, (stampede - 1) * coldLen}, {"bypass", 1, 0},
	} {
		if n := tel.Sum(MetricRequests, AttrResult.String(w.result)); n != w.n {
			t.Errorf("%s{%s} = %d, want %d", MetricRequests, w.result, n, w.n)
		}
		if b := tel.Sum(MetricResponseBytes, AttrResult.String(w.result)); b != w.bytes {
			t.Errorf("%s{%s} = %d, want %d", MetricResponseBytes, w.result, b, w.bytes)
		}
	}
	if b := tel.Sum(MetricStoredBytes); b != 2*bodyLen+coldLen {
		t.Errorf("%s = %d, want %d", MetricStoredBytes, b, 2*bodyLen+coldLen)
	}

	cacheSpans := tel.Ended("zaris.http.cache")
	if len(cacheSpans) != 4+stampede {
		t.Fatalf("%d cache spans, want %d", len(cacheSpans), 4+stampede)
	}
	results := map[string]int{}
	ids := map[string]bool{}
	for _, s := range cacheSpans {
		results[oteltest.Attr(s, AttrResult)]++
		ids[s.SpanContext().SpanID().String()] = true
	}
	if fmt.Sprint(results) != fmt.Sprintf("map[bypass:1 coalesced:%d hit:1 miss:2 stale:1]", stampede-1) {
		t.Errorf("span results %v", results)
	}
	handlers := tel.Ended("handler")
	if len(handlers) != 4 { // miss, stale, bypass, the stampede's one fill
		t.Fatalf("%d handler spans", len(handlers))
	}
	for _, h := range handlers {
		if !ids[h.Parent().SpanID().String()] {
			t.Errorf("a handler span's parent is not a cache span")
		}
	}
	var storeCalls int
	for _, s := range tel.Ended("") {
		if strings.HasPrefix(s.Name(), "zaris.") && s.Name() != "zaris.http.cache" && ids[s.Parent().SpanID().String()] {
			storeCalls++
		}
	}
	if storeCalls == 0 {
		t.Error("the cache's store calls are not children of the request spans")
	}
	tel.NoSpanMentions("secret-sku")
}

// BenchmarkResponseCacheHitTelemetry: a hit with telemetry off and on. Off,
// it allocates what BenchmarkResponseCacheHit does (BENCHMARKS.md).
func BenchmarkResponseCacheHitTelemetry(b *testing.B) {
	for _, mode := range []string{"off", "traces+metrics"} {
		b.Run(mode, func(b *testing.B) {
			tel := oteltest.New(b)
			opts := ResponseCacheOptions{}
			if mode != "off" {
				opts.TracerProvider, opts.MeterProvider = tel.TP, tel.MP
			}
			rc := NewResponseCacher(newCache(b), opts)
			srv := rc.Middleware()(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "page") }))
			do(srv, "GET", "/p")
			b.ReportAllocs()
			for b.Loop() {
				if r := do(srv, "GET", "/p"); r.Header().Get("X-Cache") != "HIT" {
					b.Fatal("not a hit")
				}
				if mode != "off" {
					tel.Spans.Reset()
				}
			}
		})
	}
}
