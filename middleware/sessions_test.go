package middleware

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"testing"

	"github.com/labstack/echo/v4"
	"github.com/zaris-io/zaris/session"
)

// counterHandler increments a per-session counter.
func counterHandler(w http.ResponseWriter, r *http.Request) {
	s, err := SessionFrom(r)
	if err != nil {
		http.Error(w, err.Error(), 500)
		return
	}
	n, _ := s.Values["n"].(int)
	s.Values["n"] = n + 1
	fmt.Fprintf(w, "%d", n+1)
}

func client(t *testing.T) *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return string(b)
}

func TestSessionsCounter(t *testing.T) {
	store := newSessionStore(t, session.Options{})
	srv := httptest.NewServer(Sessions(store)(http.HandlerFunc(counterHandler)))
	defer srv.Close()
	alice, bob := client(t), client(t)
	for i := 1; i <= 3; i++ {
		if got := get(t, alice, srv.URL); got != fmt.Sprint(i) {
			t.Fatalf("alice request %d: %s", i, got)
		}
	}
	if got := get(t, bob, srv.URL); got != "1" {
		t.Fatalf("bob shares alice's session: %s", got)
	}
}

func TestSessionsLazyAndRefresh(t *testing.T) {
	store := newSessionStore(t, session.Options{})
	mux := http.NewServeMux()
	mux.HandleFunc("/count", counterHandler)
	mux.HandleFunc("/read", func(w http.ResponseWriter, r *http.Request) {
		s, _ := SessionFrom(r)
		fmt.Fprint(w, s.Values["n"])
	})
	mux.HandleFunc("/static", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "static") })
	h := Sessions(store)(mux)

	first := do(h, "GET", "/count")
	cookie := first.Result().Cookies()[0]
	send := func(path string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", path, nil)
		r.AddCookie(cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	base := store.Stats()
	if r := send("/static"); len(r.Result().Cookies()) != 0 || store.Stats() != base {
		t.Fatalf("a request not using the session touched the store: %+v -> %+v", base, store.Stats())
	}
	if r := send("/read"); r.Body.String() != "1" || len(r.Result().Cookies()) != 0 {
		t.Fatalf("read: %q %v", r.Body, r.Result().Cookies())
	}
	st := store.Stats()
	if st.Refreshes != base.Refreshes+1 || st.Writes != base.Writes {
		t.Fatalf("a read-only request must refresh, not write: %+v -> %+v", base, st)
	}
	if r := send("/count"); r.Body.String() != "2" || len(r.Result().Cookies()) != 1 {
		t.Fatalf("count: %q", r.Body)
	}
	if st2 := store.Stats(); st2.Writes != st.Writes+1 {
		t.Fatalf("a modified session must be written once: %+v", st2)
	}
}

// The cookie is set before the first byte of the body, even when the
// handler writes first and changes the session after.
func TestSessionsCookieBeforeBody(t *testing.T) {
	store := newSessionStore(t, session.Options{})
	h := Sessions(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := SessionFrom(r)
		s.Values["a"] = 1
		w.WriteHeader(201)
		s.Values["late"] = 2 // after the header: saved, no new cookie needed
		io.WriteString(w, "ok")
	}))
	r := do(h, "GET", "/")
	if r.Code != 201 || len(r.Result().Cookies()) != 1 {
		t.Fatalf("%d %v", r.Code, r.Result().Cookies())
	}
	next := httptest.NewRequest("GET", "/", nil)
	next.AddCookie(r.Result().Cookies()[0])
	s, _ := store.Get(next, store.Name())
	if s.Values["a"] != 1 || s.Values["late"] != 2 {
		t.Fatalf("late change lost: %v", s.Values)
	}
}

func TestSessionsTamperedCookie(t *testing.T) {
	store := newSessionStore(t, session.Options{})
	h := Sessions(store)(http.HandlerFunc(counterHandler))
	first := do(h, "GET", "/")
	c := first.Result().Cookies()[0]
	b := []byte(c.Value)
	if b[5] == 'A' {
		b[5] = 'B'
	} else {
		b[5] = 'A'
	}
	c.Value = string(b)
	r := httptest.NewRequest("GET", "/", nil)
	r.AddCookie(c)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != 200 || w.Body.String() != "1" {
		t.Fatalf("tampered cookie: %d %q (want a new session, not an error)", w.Code, w.Body)
	}
	if nc := w.Result().Cookies(); len(nc) != 1 || nc[0].Value == c.Value {
		t.Fatal("a new session needs a new cookie")
	}
}

func TestSessionFromWithoutMiddleware(t *testing.T) {
	if _, err := SessionFrom(httptest.NewRequest("GET", "/", nil)); err != ErrNoSessions {
		t.Fatalf("err = %v", err)
	}
}

// Gorilla-style store.Get inside the middleware returns the same session.
func TestSessionsGorillaStyle(t *testing.T) {
	store := newSessionStore(t, session.Options{})
	h := Sessions(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, _ := SessionFrom(r)
		b, _ := store.Get(r, store.Name())
		if a != b {
			t.Error("SessionFrom and store.Get disagree")
		}
		b.Values["x"] = "y"
	}))
	if r := do(h, "GET", "/"); len(r.Result().Cookies()) != 1 {
		t.Fatal("change through store.Get not committed")
	}
}

func newEchoApp(t *testing.T, store *session.Store) *echo.Echo {
	e := echo.New()
	e.Use(EchoSessions(store))
	e.GET("/count", func(c echo.Context) error {
		s, err := EchoSessionFrom(c)
		if err != nil {
			return err
		}
		n, _ := s.Values["n"].(int)
		s.Values["n"] = n + 1
		return c.String(http.StatusOK, fmt.Sprint(n+1))
	})
	e.POST("/logout", func(c echo.Context) error {
		s, _ := EchoSessionFrom(c)
		s.Options.MaxAge = -1
		return c.NoContent(http.StatusNoContent)
	})
	e.GET("/fail", func(c echo.Context) error {
		s, _ := EchoSessionFrom(c)
		s.Values["failed"] = true
		return echo.NewHTTPError(http.StatusTeapot, "no")
	})
	return e
}

func TestEchoSessions(t *testing.T) {
	store := newSessionStore(t, session.Options{})
	srv := httptest.NewServer(newEchoApp(t, store))
	defer srv.Close()
	c := client(t)
	for i := 1; i <= 3; i++ {
		if got := get(t, c, srv.URL+"/count"); got != fmt.Sprint(i) {
			t.Fatalf("request %d: %s", i, got)
		}
	}
	resp, err := c.Post(srv.URL+"/logout", "", nil)
	if err != nil || resp.StatusCode != 204 {
		t.Fatalf("logout: %v %v", err, resp)
	}
	resp.Body.Close()
	if got := get(t, c, srv.URL+"/count"); got != "1" {
		t.Fatalf("after logout: %s", got)
	}
	if store.Stats().Deletes != 1 {
		t.Fatalf("stats %+v", store.Stats())
	}
	// An error page still commits the session (with its cookie).
	resp, _ = c.Get(srv.URL + "/fail")
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot || len(resp.Cookies()) != 1 {
		t.Fatalf("error page: %d %v", resp.StatusCode, resp.Cookies())
	}
}

// BenchmarkSessionRoundTrip is one request through the net/http middleware
// that loads a session, changes it and saves it (load + save per request).
func BenchmarkSessionRoundTrip(b *testing.B) {
	store := newSessionStore(b, session.Options{})
	h := Sessions(store)(http.HandlerFunc(counterHandler))
	first := do(h, "GET", "/")
	cookie := first.Result().Cookies()[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}

// BenchmarkSessionReadRefresh: load + sliding refresh (a request that only
// reads its session).
func BenchmarkSessionReadRefresh(b *testing.B) {
	store := newSessionStore(b, session.Options{})
	h := Sessions(store)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, _ := SessionFrom(r)
		fmt.Fprint(w, s.Values["n"])
	}))
	first := do(Sessions(store)(http.HandlerFunc(counterHandler)), "GET", "/")
	cookie := first.Result().Cookies()[0]
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("GET", "/", nil)
		r.AddCookie(cookie)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
	}
}

// BenchmarkResponseCacheHit is a cached GET answered by the middleware.
func BenchmarkResponseCacheHit(b *testing.B) {
	h := &counting{}
	srv := ResponseCache(newCache(b), ResponseCacheOptions{})(h)
	do(srv, "GET", "/page")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("GET", "/page", nil)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Header().Get("X-Cache") != "HIT" {
			b.Fatal("miss")
		}
	}
}
