package middleware

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
	"github.com/zaris-io/zaris/session"
)

// counting is a handler that counts its runs and lets the test shape its
// response.
type counting struct {
	runs   atomic.Int64
	status int
	header http.Header
	body   func(n int64, r *http.Request) string
}

func (h *counting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := h.runs.Add(1)
	for k, v := range h.header {
		w.Header()[k] = v
	}
	if h.status != 0 {
		w.WriteHeader(h.status)
	}
	body := fmt.Sprintf("run %d", n)
	if h.body != nil {
		body = h.body(n, r)
	}
	io.WriteString(w, body)
}

func TestHitMissAndAge(t *testing.T) {
	clock := newFakeClock()
	h := &counting{}
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{Now: clock.Now})
	srv := rc.Middleware()(h)

	first := do(srv, "GET", "/page?b=2&a=1")
	if first.Header().Get("X-Cache") != "MISS" || first.Body.String() != "run 1" || first.Header().Get("Age") != "" {
		t.Fatalf("first: %v %q", first.Header(), first.Body)
	}
	if first.Header().Get("Etag") == "" || first.Header().Get("Content-Length") != "5" {
		t.Fatalf("a stored 200 gets an ETag and a length: %v", first.Header())
	}
	clock.Advance(7 * time.Second)
	second := do(srv, "GET", "/page?a=1&b=2") // same query, other order
	if second.Header().Get("X-Cache") != "HIT" || second.Body.String() != "run 1" || second.Header().Get("Age") != "7" {
		t.Fatalf("second: %v %q", second.Header(), second.Body)
	}
	if second.Header().Get("Etag") != first.Header().Get("Etag") {
		t.Fatal("ETag differs between miss and hit")
	}
	if other := do(srv, "GET", "/page?a=2"); other.Header().Get("X-Cache") != "MISS" {
		t.Fatal("another query is another entry")
	}
	head := do(srv, "HEAD", "/page?a=1&b=2")
	if head.Header().Get("X-Cache") != "HIT" || head.Body.Len() != 0 || head.Header().Get("Content-Length") != "5" {
		t.Fatalf("HEAD on a GET entry: %v %q", head.Header(), head.Body)
	}
	if h.runs.Load() != 2 {
		t.Fatalf("handler ran %d times", h.runs.Load())
	}
	// Past the default 1-minute lifetime the entry is not served.
	clock.Advance(time.Minute)
	if r := do(srv, "GET", "/page?a=1&b=2"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("stale entry served")
	}
	st := rc.Stats()
	if st.Hits != 2 || st.Misses != 3 || st.Stored != 3 {
		t.Fatalf("stats %+v", st)
	}
}

func TestResponseFreshness(t *testing.T) {
	clock := newFakeClock()
	h := &counting{header: http.Header{"Cache-Control": {"max-age=5"}}}
	srv := NewResponseCacher(newCache(t), ResponseCacheOptions{Now: clock.Now}).Middleware()(h)
	do(srv, "GET", "/")
	clock.Advance(4 * time.Second)
	if r := do(srv, "GET", "/"); r.Header().Get("X-Cache") != "HIT" {
		t.Fatal("fresh by max-age: not served")
	}
	if r := do(srv, "GET", "/", "Cache-Control", "max-age=2"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("request max-age=2 accepted a 4 s old response")
	}
	clock.Advance(6 * time.Second)
	if r := do(srv, "GET", "/", "Cache-Control", "min-fresh=10"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("min-fresh not honoured")
	}
}

func TestRequestDirectives(t *testing.T) {
	h := &counting{}
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(h)
	if r := do(srv, "GET", "/", "Cache-Control", "no-store"); r.Header().Get("X-Cache") != "BYPASS" {
		t.Fatal("request no-store must bypass")
	}
	if r := do(srv, "GET", "/"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("a no-store request stored its response")
	}
	if r := do(srv, "GET", "/", "Cache-Control", "no-cache"); r.Header().Get("X-Cache") != "MISS" || r.Body.String() != "run 3" {
		t.Fatal("no-cache must not be served from the cache")
	}
	if r := do(srv, "GET", "/"); r.Body.String() != "run 3" || r.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("the no-cache answer was not stored: %q", r.Body)
	}
	if r := do(srv, "POST", "/"); r.Header().Get("X-Cache") != "BYPASS" {
		t.Fatal("POST must bypass")
	}
	if r := do(srv, "GET", "/", "Range", "bytes=0-1"); r.Header().Get("X-Cache") != "BYPASS" {
		t.Fatal("Range must bypass")
	}
	if r := do(srv, "HEAD", "/cold"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("HEAD miss")
	}
	if r := do(srv, "GET", "/cold"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("a HEAD miss filled the cache")
	}
}

func TestUnstorableResponses(t *testing.T) {
	for name, h := range map[string]*counting{
		"no-store":   {header: http.Header{"Cache-Control": {"no-store"}}},
		"private":    {header: http.Header{"Cache-Control": {"private, max-age=60"}}},
		"set-cookie": {header: http.Header{"Set-Cookie": {"sid=1"}, "Cache-Control": {"public, max-age=60"}}},
		"status 500": {status: 500},
		"status 302": {status: 302, header: http.Header{"Location": {"/x"}}},
	} {
		t.Run(name, func(t *testing.T) {
			rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
			srv := rc.Middleware()(h)
			do(srv, "GET", "/")
			r := do(srv, "GET", "/")
			if r.Header().Get("X-Cache") != "MISS" || h.runs.Load() != 2 || rc.Stats().Stored != 0 {
				t.Fatalf("stored: %v, runs %d, stats %+v", r.Header(), h.runs.Load(), rc.Stats())
			}
		})
	}
	t.Run("404 is cached", func(t *testing.T) {
		h := &counting{status: 404}
		srv := ResponseCache(newCache(t), ResponseCacheOptions{})(h)
		do(srv, "GET", "/missing")
		if r := do(srv, "GET", "/missing"); r.Code != 404 || r.Header().Get("X-Cache") != "HIT" {
			t.Fatalf("%d %v", r.Code, r.Header())
		}
	})
	t.Run("Authorization without public", func(t *testing.T) {
		h := &counting{}
		srv := ResponseCache(newCache(t), ResponseCacheOptions{})(h)
		do(srv, "GET", "/", "Authorization", "Bearer a")
		if r := do(srv, "GET", "/", "Authorization", "Bearer b"); r.Header().Get("X-Cache") != "MISS" {
			t.Fatal("a response to an authorized request was shared")
		}
	})
}

func TestVary(t *testing.T) {
	h := &counting{header: http.Header{"Vary": {"Accept-Language"}}, body: func(n int64, r *http.Request) string {
		return fmt.Sprintf("%s #%d", r.Header.Get("Accept-Language"), n)
	}}
	srv := ResponseCache(newCache(t), ResponseCacheOptions{})(h)
	get := func(lang string) *httptest.ResponseRecorder { return do(srv, "GET", "/", "Accept-Language", lang) }
	if r := get("en"); r.Body.String() != "en #1" || r.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("%q %v", r.Body, r.Header())
	}
	if r := get("fr"); r.Body.String() != "fr #2" || r.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("another variant served: %q", r.Body)
	}
	if r := get("en"); r.Body.String() != "en #1" || r.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("%q %v", r.Body, r.Header())
	}
	if r := get("fr"); r.Body.String() != "fr #2" || r.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("%q %v", r.Body, r.Header())
	}
	// Policy.VaryByHeader adds a Vary the handler did not declare.
	h2 := &counting{body: func(n int64, r *http.Request) string { return r.Header.Get("X-Tenant") }}
	srv2 := NewResponseCacher(newCache(t), ResponseCacheOptions{DefaultPolicy: Policy{VaryByHeader: []string{"x-tenant"}}}).Middleware()(h2)
	do(srv2, "GET", "/", "X-Tenant", "a")
	if r := do(srv2, "GET", "/", "X-Tenant", "b"); r.Body.String() != "b" || !strings.Contains(r.Header().Get("Vary"), "X-Tenant") {
		t.Fatalf("VaryByHeader: %q %v", r.Body, r.Header())
	}
	if r := do(srv2, "GET", "/", "X-Tenant", "a"); r.Body.String() != "a" || r.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("VaryByHeader: %q %v", r.Body, r.Header())
	}
}

func TestConditionalRequests(t *testing.T) {
	h := &counting{header: http.Header{"Last-Modified": {time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)}}}
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(h)
	first := do(srv, "GET", "/doc")
	etag := first.Header().Get("Etag")
	if r := do(srv, "GET", "/doc", "If-None-Match", etag); r.Code != 304 || r.Body.Len() != 0 || r.Header().Get("Etag") != etag || r.Header().Get("X-Cache") != "HIT" || r.Header().Get("Age") == "" {
		t.Fatalf("If-None-Match on a hit: %d %v", r.Code, r.Header())
	}
	if r := do(srv, "GET", "/doc", "If-None-Match", `"other"`); r.Code != 200 || r.Body.String() != "run 1" {
		t.Fatalf("non-matching tag: %d", r.Code)
	}
	if r := do(srv, "GET", "/doc", "If-Modified-Since", time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC).Format(http.TimeFormat)); r.Code != 304 {
		t.Fatalf("If-Modified-Since: %d", r.Code)
	}
	// On a miss the handler sees no validators (the full answer is stored)
	// and the cache answers 304 itself.
	h2 := &counting{header: http.Header{"Etag": {`"v1"`}}, body: func(n int64, r *http.Request) string {
		if r.Header.Get("If-None-Match") != "" {
			t.Error("the handler saw the client's validator")
		}
		return "body"
	}}
	srv2 := ResponseCache(newCache(t), ResponseCacheOptions{})(h2)
	if r := do(srv2, "GET", "/", "If-None-Match", `"v1"`); r.Code != 304 || r.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("miss with a matching validator: %d %v", r.Code, r.Header())
	}
	if r := do(srv2, "GET", "/"); r.Code != 200 || r.Body.String() != "body" || r.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("the full answer was not stored: %d %q", r.Code, r.Body)
	}
	if rc.Stats().NotModified != 2 {
		t.Fatalf("stats %+v", rc.Stats())
	}
}

func TestStampedeRunsHandlerOnce(t *testing.T) {
	const n = 20
	release := make(chan struct{})
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		runs.Add(1)
		<-release
		io.WriteString(w, "expensive")
	})
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(h)
	var wg sync.WaitGroup
	results := make([]*httptest.ResponseRecorder, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = do(srv, "GET", "/cold")
		}(i)
	}
	eventually(t, 5*time.Second, "all requests reach the fill", func() bool { return rc.Stats().Waiting == n })
	close(release)
	wg.Wait()
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times for %d concurrent requests", runs.Load(), n)
	}
	misses := 0
	for _, r := range results {
		if r.Code != 200 || r.Body.String() != "expensive" {
			t.Fatalf("%d %q", r.Code, r.Body)
		}
		if r.Header().Get("X-Cache") == "MISS" {
			misses++
		}
	}
	if misses != 1 {
		t.Fatalf("%d MISS answers, want exactly the leader", misses)
	}
}

// A leader's response that carries Set-Cookie is personal: the requests
// waiting on it run the handler themselves and never receive its cookie.
func TestStampedeNeverSharesPersonalResponses(t *testing.T) {
	const n = 8
	release := make(chan struct{})
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := runs.Add(1)
		if id == 1 {
			<-release
		}
		http.SetCookie(w, &http.Cookie{Name: "sid", Value: fmt.Sprint(id)})
		io.WriteString(w, "personal")
	})
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(h)
	var wg sync.WaitGroup
	results := make([]*httptest.ResponseRecorder, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = do(srv, "GET", "/me")
		}(i)
	}
	eventually(t, 5*time.Second, "all requests reach the fill", func() bool { return rc.Stats().Waiting == n })
	close(release)
	wg.Wait()
	seen := map[string]bool{}
	for _, r := range results {
		c := r.Result().Cookies()
		if len(c) != 1 || seen[c[0].Value] {
			t.Fatalf("a session cookie was shared: %v", c)
		}
		seen[c[0].Value] = true
	}
	if runs.Load() != n || rc.Stats().Coalesced != 0 {
		t.Fatalf("runs %d, stats %+v", runs.Load(), rc.Stats())
	}
}

func TestEvictByTag(t *testing.T) {
	c := newCache(t)
	h := &counting{}
	rc := NewResponseCacher(c, ResponseCacheOptions{Routes: []RoutePolicy{
		{PathPrefix: "/catalog", Policy: Policy{Tags: []string{"catalog"}}},
		{PathPrefix: "/products/", Policy: Policy{Tags: []string{"catalog"}, TagsFunc: func(r *http.Request) []string {
			return []string{"product:" + strings.TrimPrefix(r.URL.Path, "/products/")}
		}}},
		{PathPrefix: "/news", Policy: Policy{Tags: []string{"news"}}},
		{PathPrefix: "/nocache", Policy: Policy{Disabled: true}},
	}})
	srv := rc.Middleware()(h)
	for _, p := range []string{"/catalog", "/products/1", "/products/2", "/news"} {
		do(srv, "GET", p)
		if r := do(srv, "GET", p); r.Header().Get("X-Cache") != "HIT" {
			t.Fatalf("%s not cached", p)
		}
	}
	if r := do(srv, "GET", "/nocache"); r.Header().Get("X-Cache") != "BYPASS" {
		t.Fatal("disabled route cached")
	}
	ctx := context.Background()
	if err := rc.EvictByTag(ctx, "product:1"); err != nil {
		t.Fatal(err)
	}
	if r := do(srv, "GET", "/products/1"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("product:1 not evicted")
	}
	if r := do(srv, "GET", "/products/2"); r.Header().Get("X-Cache") != "HIT" {
		t.Fatal("product:2 evicted by product:1")
	}
	if err := rc.EvictByTag(ctx, "catalog"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/catalog", "/products/1", "/products/2"} {
		if r := do(srv, "GET", p); r.Header().Get("X-Cache") != "MISS" {
			t.Fatalf("%s survived EvictByTag(catalog)", p)
		}
	}
	if r := do(srv, "GET", "/news"); r.Header().Get("X-Cache") != "HIT" {
		t.Fatal("news evicted by catalog")
	}
	// Another cacher over the same cache and prefix (another instance)
	// sees the eviction at once.
	other := NewResponseCacher(c, ResponseCacheOptions{Routes: []RoutePolicy{{PathPrefix: "/news", Policy: Policy{Tags: []string{"news"}}}}})
	if err := other.EvictByTag(ctx, "news"); err != nil {
		t.Fatal(err)
	}
	if r := do(srv, "GET", "/news"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("eviction by another instance not seen")
	}
	// The tag's index lets EvictByTag reclaim the entries themselves.
	idx, _ := c.Get(ctx, rc.indexKey("news"))
	if idx == nil {
		t.Fatal("no tag index")
	}
	key, _, _ := strings.Cut(string(idx), " ")
	rc.EvictByTag(ctx, "news")
	if v, _ := c.Get(ctx, key); v != nil {
		t.Fatal("evicted entry still stored")
	}
}

func TestLargeResponses(t *testing.T) {
	t.Run("over MaxBodyBytes: streamed, not cached", func(t *testing.T) {
		big := strings.Repeat("x", 5000)
		h := &counting{body: func(int64, *http.Request) string { return big }}
		rc := NewResponseCacher(newCache(t), ResponseCacheOptions{MaxBodyBytes: 4096})
		srv := rc.Middleware()(h)
		r := do(srv, "GET", "/big")
		if r.Body.String() != big || r.Header().Get("X-Cache") != "MISS" {
			t.Fatalf("large body mangled: %d bytes", r.Body.Len())
		}
		if r := do(srv, "GET", "/big"); r.Header().Get("X-Cache") != "MISS" || r.Body.String() != big {
			t.Fatal("large body cached")
		}
	})
	t.Run("refused by the store: served uncached", func(t *testing.T) {
		cfg := store.DefaultConfig()
		cfg.MaxItemBytes = 2048
		body := strings.Repeat("y", 3000)
		h := &counting{body: func(int64, *http.Request) string { return body }}
		rc := NewResponseCacher(newCacheCfg(t, &cfg), ResponseCacheOptions{})
		srv := rc.Middleware()(h)
		if r := do(srv, "GET", "/"); r.Body.String() != body || r.Code != 200 {
			t.Fatal("response lost when the store refused it")
		}
		if r := do(srv, "GET", "/"); r.Header().Get("X-Cache") != "MISS" || r.Body.String() != body {
			t.Fatal("second request")
		}
		if st := rc.Stats(); st.StoreErrors != 2 || st.Stored != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
	t.Run("a flushing handler streams, uncached", func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "part1 ")
			http.NewResponseController(w).Flush()
			io.WriteString(w, "part2")
		})
		rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
		srv := rc.Middleware()(h)
		if r := do(srv, "GET", "/"); r.Body.String() != "part1 part2" || !r.Flushed {
			t.Fatalf("%q flushed=%v", r.Body, r.Flushed)
		}
		if r := do(srv, "GET", "/"); r.Header().Get("X-Cache") != "MISS" {
			t.Fatal("streamed response cached")
		}
	})
}

// A handler that reads a session produces a personal answer: never stored,
// whichever of the two middlewares is outside.
func TestSessionDependentResponsesNotCached(t *testing.T) {
	for _, order := range []string{"sessions outside", "cache outside"} {
		t.Run(order, func(t *testing.T) {
			store := newSessionStore(t, session.Options{})
			rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
			var runs atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				runs.Add(1)
				s, _ := SessionFrom(r)
				fmt.Fprintf(w, "hello %v", s.Values["user"])
			})
			var srv http.Handler
			if order == "sessions outside" {
				srv = Sessions(store)(rc.Middleware()(h))
			} else {
				srv = rc.Middleware()(Sessions(store)(h))
			}
			do(srv, "GET", "/me")
			do(srv, "GET", "/me")
			if runs.Load() != 2 || rc.Stats().Stored != 0 {
				t.Fatalf("session-dependent page cached: runs %d stats %+v", runs.Load(), rc.Stats())
			}
		})
	}
}

func TestCacheFailureServesMisses(t *testing.T) {
	broken, _ := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/middleware-broken-%d", storeSeq.Add(1)))
	broken.Close() // every cache call now fails with sdk.ErrClosed
	rc := NewResponseCacher(cache.New(broken, cache.Options{}), ResponseCacheOptions{Routes: []RoutePolicy{{PathPrefix: "/", Policy: Policy{Tags: []string{"t"}}}}})
	h := &counting{}
	srv := rc.Middleware()(h)
	for i := 0; i < 2; i++ {
		if r := do(srv, "GET", "/"); r.Code != 200 || r.Header().Get("X-Cache") != "MISS" {
			t.Fatalf("a cache failure failed the request: %d %v", r.Code, r.Header())
		}
	}
}

func TestEchoResponseCache(t *testing.T) {
	e := echo.New()
	c := newCache(t)
	rc := NewResponseCacher(c, ResponseCacheOptions{Routes: []RoutePolicy{{Route: "/items/:id", Policy: Policy{Tags: []string{"items"}}}}})
	e.Use(rc.Echo())
	var runs atomic.Int64
	e.GET("/items/:id", func(c echo.Context) error {
		runs.Add(1)
		return c.String(http.StatusOK, "item "+c.Param("id"))
	})
	e.GET("/gone", func(c echo.Context) error {
		runs.Add(1)
		return echo.NewHTTPError(http.StatusGone, "gone")
	})
	e.GET("/fail", func(c echo.Context) error {
		runs.Add(1)
		return errors.New("boom")
	})
	if r := do(e, "GET", "/items/1"); r.Body.String() != "item 1" || r.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("%q %v", r.Body, r.Header())
	}
	if r := do(e, "GET", "/items/1"); r.Body.String() != "item 1" || r.Header().Get("X-Cache") != "HIT" || r.Header().Get("Content-Type") == "" {
		t.Fatalf("%q %v", r.Body, r.Header())
	}
	if r := do(e, "GET", "/gone"); r.Code != 410 || r.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("%d %v", r.Code, r.Header())
	}
	if r := do(e, "GET", "/gone"); r.Code != 410 || r.Header().Get("X-Cache") != "HIT" {
		t.Fatalf("echo error page (410) not cached: %d %v", r.Code, r.Header())
	}
	do(e, "GET", "/fail")
	if r := do(e, "GET", "/fail"); r.Code != 500 || r.Header().Get("X-Cache") != "MISS" {
		t.Fatalf("500 cached: %d %v", r.Code, r.Header())
	}
	if err := rc.EvictByTag(context.Background(), "items"); err != nil {
		t.Fatal(err)
	}
	if r := do(e, "GET", "/items/1"); r.Header().Get("X-Cache") != "MISS" {
		t.Fatal("route-pattern policy tag not evicted")
	}
	if runs.Load() != 5 {
		t.Fatalf("runs %d", runs.Load())
	}
	// The package-level constructor and a per-route policy.
	e2 := echo.New()
	e2.GET("/x", func(c echo.Context) error { return c.String(200, "x") }, EchoResponseCache(c, ResponseCacheOptions{KeyPrefix: "e2:"}))
	do(e2, "GET", "/x")
	if r := do(e2, "GET", "/x"); r.Header().Get("X-Cache") != "HIT" {
		t.Fatal("EchoResponseCache")
	}
}

func TestHandlerPanicDuringFill(t *testing.T) {
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the handler's panic was swallowed")
			}
		}()
		do(srv, "GET", "/")
	}()
	if st := rc.Stats(); st.Waiting != 0 || st.Stored != 0 {
		t.Fatalf("stats after a panic: %+v", st)
	}
}

// The leader's client hanging up cancels neither its handler nor the cache
// write the waiting requests depend on.
func TestLeaderCancellationDoesNotAbortFill(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cancel() // the client goes away mid-handler
		if r.Context().Err() != nil {
			t.Error("the fill's handler saw its leader's cancellation")
		}
		io.WriteString(w, "done")
	})
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(h)
	r := httptest.NewRequest("GET", "/", nil).WithContext(ctx)
	srv.ServeHTTP(httptest.NewRecorder(), r)
	if got := do(srv, "GET", "/"); got.Header().Get("X-Cache") != "HIT" || got.Body.String() != "done" {
		t.Fatalf("fill aborted by the leader's cancellation: %v", got.Header())
	}
}

// Requests waiting on a flight for another variant never receive it.
func TestStampedeRespectsVary(t *testing.T) {
	const n = 20
	release := make(chan struct{})
	var runs atomic.Int64
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if runs.Add(1) == 1 {
			<-release
		}
		w.Header().Set("Vary", "Accept-Language")
		io.WriteString(w, r.Header.Get("Accept-Language"))
	})
	rc := NewResponseCacher(newCache(t), ResponseCacheOptions{})
	srv := rc.Middleware()(h)
	langs := []string{"en", "fr"}
	var wg sync.WaitGroup
	results := make([]*httptest.ResponseRecorder, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			results[i] = do(srv, "GET", "/greeting", "Accept-Language", langs[i%2])
		}(i)
	}
	eventually(t, 5*time.Second, "all requests reach the fill", func() bool { return rc.Stats().Waiting == n })
	close(release)
	wg.Wait()
	for i, r := range results {
		if r.Body.String() != langs[i%2] {
			t.Fatalf("request for %s got %q", langs[i%2], r.Body)
		}
	}
	if runs.Load() > n/2+1 {
		t.Fatalf("%d runs: the %s requests did not share their fill", runs.Load(), "matching")
	}
	for _, lang := range langs {
		if r := do(srv, "GET", "/greeting", "Accept-Language", lang); r.Header().Get("X-Cache") != "HIT" || r.Body.String() != lang {
			t.Fatalf("%s variant not stored: %v %q", lang, r.Header(), r.Body)
		}
	}
}
