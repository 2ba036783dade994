package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"
	"time"
)

func TestNetHTTPExample(t *testing.T) {
	a, err := newApp(context.Background(), config{
		ZarisURL:   "zaris://inproc/nethttp-example-test",
		SessionKey: []byte("test-session-key-test-session-key"),
		DBLatency:  10 * time.Millisecond,
		Logger:     slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	srv := httptest.NewServer(a.handler)
	defer srv.Close()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	get := func(path string) (*http.Response, string) {
		t.Helper()
		resp, err := c.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	for i := 1; i <= 3; i++ {
		if _, body := get("/"); body != fmt.Sprintf("visits: %d\n", i) {
			t.Fatalf("visit %d: %q", i, body)
		}
	}
	if resp, _ := get("/weather/paris"); resp.Header.Get("X-From") != "database" {
		t.Fatal("first forecast must come from the database")
	}
	if resp, body := get("/weather/paris"); resp.Header.Get("X-From") != "cache" || body != `{"city":"paris","forecast":"sunny"}` {
		t.Fatalf("second forecast: %v %q", resp.Header, body)
	}
	_, first := get("/about")
	resp, second := get("/about")
	if resp.Header.Get("X-Cache") != "HIT" || first != second {
		t.Fatalf("about not cached: %v", resp.Header)
	}
	if n := a.db.calls.Load(); n != 2 {
		t.Fatalf("backend called %d times", n)
	}
	if err := a.rc.EvictByTag(context.Background(), "pages"); err != nil {
		t.Fatal(err)
	}
	if resp, _ := get("/about"); resp.Header.Get("X-Cache") != "MISS" {
		t.Fatal("EvictByTag(pages)")
	}
}
