package middleware_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/middleware"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/session"
)

// The README's net/http middleware snippet (internal/readmetest checks it):
// sessions saved without a Save call, and a response cache with tags.
func ExampleSessions() {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/nethttp-app") // or the cluster
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	store, err := session.New(c, session.Options{}, []byte("32-or-more-bytes-of-secret-key!!"))
	if err != nil {
		log.Fatal(err)
	}
	responses := middleware.NewResponseCacher(cache.New(c, cache.Options{}), middleware.ResponseCacheOptions{})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /visits", func(w http.ResponseWriter, r *http.Request) {
		s, _ := middleware.SessionFrom(r) // loaded on first use, saved when the handler writes
		n, _ := s.Values["visits"].(int)
		s.Values["visits"] = n + 1
		fmt.Fprintf(w, "visits: %d", n+1)
	})
	var renders atomic.Int64
	catalog := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "catalog, render %d", renders.Add(1))
	})
	mux.Handle("GET /catalog", responses.With(middleware.Policy{TTL: time.Minute, Tags: []string{"catalog"}})(catalog))
	srv := httptest.NewServer(middleware.Sessions(store)(mux))
	defer srv.Close()

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	get := func(path string) {
		resp, err := browser.Get(srv.URL + path)
		if err != nil {
			log.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%-8s %-5s %s\n", path, resp.Header.Get("X-Cache"), body)
	}
	get("/visits")
	get("/visits")
	get("/catalog")
	get("/catalog")
	responses.EvictByTag(ctx, "catalog") // on every instance sharing the store
	get("/catalog")
	// Output:
	// /visits        visits: 1
	// /visits        visits: 2
	// /catalog MISS  catalog, render 1
	// /catalog HIT   catalog, render 1
	// /catalog MISS  catalog, render 2
}

// The echo version, shown in docs/GETTING-STARTED.md (internal/readmetest
// checks it): the same store and cache, echo's middleware signatures.
func ExampleEchoSessions() {
	ctx := context.Background()
	c, err := sdk.Connect(ctx, "zaris://inproc/echo-app") // or the cluster
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	store, err := session.New(c, session.Options{}, []byte("32-or-more-bytes-of-secret-key!!"))
	if err != nil {
		log.Fatal(err)
	}
	responses := middleware.NewResponseCacher(cache.New(c, cache.Options{}), middleware.ResponseCacheOptions{})

	e := echo.New()
	e.Use(middleware.EchoSessions(store))
	e.GET("/", func(ctx echo.Context) error {
		s, err := middleware.EchoSessionFrom(ctx)
		if err != nil {
			return err
		}
		n, _ := s.Values["visits"].(int)
		s.Values["visits"] = n + 1
		return ctx.String(http.StatusOK, fmt.Sprintf("visits: %d", n+1))
	})
	var renders atomic.Int64
	e.GET("/catalog", func(ctx echo.Context) error {
		return ctx.String(http.StatusOK, fmt.Sprintf("catalog, render %d", renders.Add(1)))
	}, responses.EchoWith(middleware.Policy{TTL: 30 * time.Second, Tags: []string{"catalog"}}))

	for _, path := range []string{"/", "/catalog", "/catalog"} {
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Println(path, rec.Code, rec.Header().Get("X-Cache"), strings.TrimSpace(rec.Body.String()))
	}
	// Output:
	// / 200  visits: 1
	// /catalog 200 MISS catalog, render 1
	// /catalog 200 HIT catalog, render 1
}
