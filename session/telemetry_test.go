package session

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/internal/oteltest"
	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

// A session's life on a real server — save, load (with its sliding
// refresh), regenerate, a bad cookie, no cookie, destroy — makes one span
// and one measurement per operation with its outcome; the client's calls
// are the spans' children; no span carries the session id or a value.
func TestTelemetrySessionOperations(t *testing.T) {
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	addr := testenv.Serve(t, st, "sessions")
	tel := oteltest.New(t)
	c, err := sdk.Connect(context.Background(), "zaris://"+addr+"/sessions", sdk.WithTracerProvider(tel.TP))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := NewStore(c, Options{TracerProvider: tel.TP, MeterProvider: tel.MP}, hashKey, blockKey)

	rec, saved := saveNew(t, s, map[string]any{"cart": "secret-cart-value"})
	r := request(rec)
	sess, err := s.Get(r, DefaultName)
	if err != nil || sess.ID != saved.ID {
		t.Fatalf("load: %v %v", sess, err)
	}
	if err := s.Regenerate(r, httptest.NewRecorder(), sess); err != nil {
		t.Fatal(err)
	}
	regenerated := sess.ID
	if _, err := s.Get(withCookie(DefaultName, "garbage"), DefaultName); err != nil {
		t.Fatal(err)
	}
	gone := request(rec) // the id regenerated away: unknown now
	if old, _ := s.Get(gone, DefaultName); !old.IsNew {
		t.Fatal("the old id still loads")
	}
	if fresh, _ := s.Get(request(nil), DefaultName); !fresh.IsNew {
		t.Fatal("no cookie, yet not a new session")
	}
	if err := s.Destroy(r, httptest.NewRecorder(), sess); err != nil {
		t.Fatal(err)
	}

	// The sequence of session spans, in the order they ended.
	var got []string
	for _, sp := range tel.Ended("") {
		if strings.HasPrefix(sp.Name(), "zaris.session.") {
			got = append(got, fmt.Sprintf("%s:%s", oteltest.Attr(sp, AttrOp), oteltest.Attr(sp, AttrOutcome)))
		}
	}
	want := []string{
		"load:none", "save:ok", // saveNew: a fresh request, then its first write
		"refresh:ok", "load:found", // the load slides the TTL (no middleware)
		"save:ok", "regenerate:ok", // the new id's write inside the regeneration
		"load:rejected", "load:unknown", "load:none",
		"delete:ok", "save:ok", // Destroy is a save with MaxAge −1, which deletes
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("session spans\n got %v\nwant %v", got, want)
	}
	for _, w := range []struct {
		op, outcome string
		n           int64
	}{{"load", "none", 2}, {"load", "found", 1}, {"load", "rejected", 1}, {"load", "unknown", 1},
		{"save", "ok", 3}, {"refresh", "ok", 1}, {"regenerate", "ok", 1}, {"delete", "ok", 1}} {
		if n := tel.Sum(MetricOperations, AttrOp.String(w.op), AttrOutcome.String(w.outcome)); n != w.n {
			t.Errorf("%s{%s,%s} = %d, want %d", MetricOperations, w.op, w.outcome, n, w.n)
		}
	}
	if n, sum := tel.HistCount(MetricOperationDuration, AttrOp.String("save")); n != 3 || sum <= 0 {
		t.Errorf("save latency: %d observations, sum %v", n, sum)
	}

	// Each store round trip is the child of its operation's span.
	spans := tel.Ended("")
	byID := map[string]string{}
	for _, sp := range spans {
		byID[sp.SpanContext().SpanID().String()] = sp.Name()
	}
	for _, sp := range spans {
		if strings.HasPrefix(sp.Name(), "zaris.session.") {
			continue
		}
		if parent := byID[sp.Parent().SpanID().String()]; !strings.HasPrefix(parent, "zaris.session.") {
			t.Errorf("client span %s has parent %q", sp.Name(), parent)
		}
	}
	tel.NoSpanMentions(saved.ID)
	tel.NoSpanMentions(regenerated)
	tel.NoSpanMentions("secret-cart-value")
}

// Without a provider the store makes no span even when its client does.
func TestTelemetrySessionOffWithoutProvider(t *testing.T) {
	tel := oteltest.New(t)
	c, err := sdk.Connect(context.Background(), "zaris://inproc/session-tel-off", sdk.WithTracerProvider(tel.TP))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := NewStore(c, Options{}, hashKey)
	saveNew(t, s, map[string]any{"a": 1})
	for _, sp := range tel.Ended("") {
		if strings.HasPrefix(sp.Name(), "zaris.session.") {
			t.Fatalf("span %s without a provider", sp.Name())
		}
	}
	if len(tel.Ended("zaris.put")) != 1 {
		t.Fatal("the client's own span is missing")
	}
}
