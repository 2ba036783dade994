package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/store"
)

var seq atomic.Int64

// startApp runs the app on a real listener (httptest.NewServer, 127.0.0.1:0)
// over private embedded stores.
func startApp(t *testing.T) (*app, *httptest.Server) {
	t.Helper()
	n := seq.Add(1)
	zurl := fmt.Sprintf("zaris://inproc/echo-app-test-%d", n)
	if serverMode {
		zurl = startServer(t, fmt.Sprintf("echo-app-%d", n))
	}
	cfg := config{
		ZarisURL:   zurl,
		L1URL:      fmt.Sprintf("zaris://inproc/echo-app-test-l1-%d", n),
		SessionKey: []byte("test-session-key-test-session-key"),
		DBLatency:  20 * time.Millisecond,
		Logger:     slog.New(slog.DiscardHandler),
	}
	a, err := newApp(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a.echo)
	t.Cleanup(func() {
		srv.Close()
		a.Close()
	})
	return a, srv
}

// serverMode puts the shared store behind a real native-protocol server
// (what ZARIS_URL selects in production); the hybrid L1 stays in-process.
var serverMode bool

func startServer(t *testing.T, name string) string {
	t.Helper()
	st, err := store.New(store.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := native.New(native.Config{Store: st, StoreName: name, NodeID: "n1", Version: "test", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		<-done
		st.Close()
	})
	return "zaris://" + l.Addr().String() + "/" + name
}

// TestOnServer runs the end-to-end tests with ZARIS_URL pointing at a
// server over TCP.
func TestOnServer(t *testing.T) {
	serverMode = true
	defer func() { serverMode = false }()
	t.Run("EndToEnd", TestEndToEnd)
	t.Run("SlowDatabaseCached", TestSlowDatabaseCached)
	t.Run("ResponseCaching", TestResponseCaching)
}

func browser(t *testing.T) *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

func call(t *testing.T, c *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, _ := http.NewRequest(method, u, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func sessionCookie(t *testing.T, c *http.Client, base string) *http.Cookie {
	u, _ := url.Parse(base)
	for _, ck := range c.Jar.Cookies(u) {
		if ck.Name == "echo_app" {
			return ck
		}
	}
	return nil
}

func TestEndToEnd(t *testing.T) {
	a, srv := startApp(t)
	alice := browser(t)

	// The counter increments across requests of one browser.
	for i := 1; i <= 3; i++ {
		resp, body := call(t, alice, "GET", srv.URL+"/", nil)
		if resp.StatusCode != 200 || body != fmt.Sprintf("hello anonymous, visits: %d\n", i) {
			t.Fatalf("visit %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if _, body := call(t, browser(t), "GET", srv.URL+"/", nil); !strings.Contains(body, "visits: 1") {
		t.Fatalf("another browser shares the session: %q", body)
	}

	// A tampered cookie gives a new empty session, never an error page.
	good := sessionCookie(t, alice, srv.URL)
	if good == nil {
		t.Fatal("no session cookie")
	}
	b := []byte(good.Value)
	b[len(b)/2] ^= 0x01
	if b[len(b)/2] == '=' || b[len(b)/2] < '0' {
		b[len(b)/2] = 'A'
	}
	mallory := browser(t)
	u, _ := url.Parse(srv.URL)
	mallory.Jar.SetCookies(u, []*http.Cookie{{Name: "echo_app", Value: string(b)}})
	resp, body := call(t, mallory, "GET", srv.URL+"/", nil)
	if resp.StatusCode != 200 || body != "hello anonymous, visits: 1\n" {
		t.Fatalf("tampered cookie: %d %q", resp.StatusCode, body)
	}
	if c := sessionCookie(t, mallory, srv.URL); c == nil || c.Value == string(b) {
		t.Fatal("tampered cookie not replaced by a new session's")
	}

	// Login regenerates the session id and keeps the data; the counter goes on.
	before := sessionCookie(t, alice, srv.URL).Value
	resp, body = call(t, alice, "POST", srv.URL+"/login", url.Values{"user": {"alice"}})
	if resp.StatusCode != 200 || body != "welcome alice, logins: 1\n" {
		t.Fatalf("login: %d %q", resp.StatusCode, body)
	}
	if sessionCookie(t, alice, srv.URL).Value == before {
		t.Fatal("session id not regenerated at login")
	}
	if _, body := call(t, alice, "GET", srv.URL+"/", nil); body != "hello alice, visits: 4\n" {
		t.Fatalf("after login: %q", body)
	}
	if _, body := call(t, alice, "GET", srv.URL+"/me", nil); !strings.Contains(body, `"user":"alice"`) || !strings.Contains(body, `"logins":1`) {
		t.Fatalf("me: %q", body)
	}
	// The pre-login cookie no longer opens the session.
	old := browser(t)
	old.Jar.SetCookies(u, []*http.Cookie{{Name: "echo_app", Value: before}})
	if resp, _ := call(t, old, "GET", srv.URL+"/me", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("pre-login cookie still valid: %d", resp.StatusCode)
	}

	// Logout deletes the session.
	if resp, _ := call(t, alice, "POST", srv.URL+"/logout", nil); resp.StatusCode != 200 {
		t.Fatalf("logout: %d", resp.StatusCode)
	}
	if sessionCookie(t, alice, srv.URL) != nil {
		t.Fatal("logout left the cookie")
	}
	if resp, _ := call(t, alice, "GET", srv.URL+"/me", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after logout: %d", resp.StatusCode)
	}
	if _, body := call(t, alice, "GET", srv.URL+"/", nil); body != "hello anonymous, visits: 1\n" {
		t.Fatalf("after logout: %q", body)
	}
	if st := a.sessions.Stats(); st.Deletes != 1 || st.Regenerations != 1 {
		t.Fatalf("session stats %+v", st)
	}
}

func TestSlowDatabaseCached(t *testing.T) {
	a, srv := startApp(t)
	c := browser(t)
	// Ten concurrent cold requests: one database call.
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := call(t, c, "GET", srv.URL+"/products/7", nil)
			if resp.StatusCode != 200 || !strings.Contains(body, `"name":"Product 7"`) {
				t.Errorf("%d %q", resp.StatusCode, body)
			}
		}()
	}
	wg.Wait()
	call(t, c, "GET", srv.URL+"/products/7", nil)
	if n := a.db.calls.Load(); n != 1 {
		t.Fatalf("database called %d times", n)
	}
	call(t, c, "GET", srv.URL+"/products/8", nil)
	if n := a.db.calls.Load(); n != 2 {
		t.Fatalf("database called %d times", n)
	}
}

func TestResponseCaching(t *testing.T) {
	a, srv := startApp(t)
	c := browser(t)
	resp, first := call(t, c, "GET", srv.URL+"/catalog", nil)
	if resp.StatusCode != 200 || resp.Header.Get("X-Cache") != "MISS" || !strings.Contains(first, "Product 5") {
		t.Fatalf("%d %v %q", resp.StatusCode, resp.Header, first)
	}
	resp, second := call(t, c, "GET", srv.URL+"/catalog", nil)
	if resp.Header.Get("X-Cache") != "HIT" || second != first || resp.Header.Get("Age") == "" {
		t.Fatalf("second: %v", resp.Header)
	}
	etag := resp.Header.Get("Etag")
	req, _ := http.NewRequest("GET", srv.URL+"/catalog", nil)
	req.Header.Set("If-None-Match", etag)
	if r, err := c.Do(req); err != nil || r.StatusCode != http.StatusNotModified {
		t.Fatalf("If-None-Match: %v %v", r, err)
	} else {
		r.Body.Close()
	}
	if n := a.db.calls.Load(); n != 1 {
		t.Fatalf("database called %d times", n)
	}
	if resp, _ := call(t, c, "POST", srv.URL+"/catalog/refresh", nil); resp.StatusCode != 200 {
		t.Fatal("refresh")
	}
	if resp, _ := call(t, c, "GET", srv.URL+"/catalog", nil); resp.Header.Get("X-Cache") != "MISS" {
		t.Fatal("catalog not evicted")
	}
	if n := a.db.calls.Load(); n != 2 {
		t.Fatalf("database called %d times", n)
	}
}
