// Command nethttp is the plain net/http counterpart of echo-app: a session
// visit counter (middleware.Sessions), a slow "database" call cached with
// the distributed cache (package cache, cache-aside with sliding expiration)
// and a response-cached page (middleware.ResponseCacher, per-route policy).
//
// Embedded store by default; set ZARIS_URL to use a server. ADDR sets the
// listen address (default 127.0.0.1:8081); SESSION_KEY (≥ 32 bytes) signs
// the session cookie.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/middleware"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/session"
)

type config struct {
	ZarisURL   string
	SessionKey []byte
	DBLatency  time.Duration
	Logger     *slog.Logger
}

// weatherDB stands for a slow backend.
type weatherDB struct {
	latency time.Duration
	calls   atomic.Int64
}

func (db *weatherDB) forecast(ctx context.Context, city string) (string, error) {
	db.calls.Add(1)
	select {
	case <-time.After(db.latency):
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return fmt.Sprintf(`{"city":%q,"forecast":"sunny"}`, city), nil
}

type app struct {
	handler http.Handler
	db      *weatherDB
	cache   *cache.DistributedCache
	rc      *middleware.ResponseCacher
	client  *sdk.Client
}

func newApp(ctx context.Context, cfg config) (*app, error) {
	client, err := sdk.Connect(ctx, cfg.ZarisURL, sdk.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	store, err := session.New(client, session.Options{Name: "nethttp_session", KeyPrefix: "nethttp:session:", Logger: cfg.Logger}, cfg.SessionKey)
	if err != nil {
		client.Close()
		return nil, err
	}
	a := &app{
		db:     &weatherDB{latency: cfg.DBLatency},
		cache:  cache.New(client, cache.Options{KeyPrefix: "nethttp:", Logger: cfg.Logger}),
		client: client,
	}
	a.rc = middleware.NewResponseCacher(a.cache, middleware.ResponseCacheOptions{Logger: cfg.Logger})

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", a.visits)
	mux.HandleFunc("GET /weather/{city}", a.weather)
	mux.Handle("GET /about", a.rc.With(middleware.Policy{TTL: time.Minute, Tags: []string{"pages"}})(http.HandlerFunc(a.about)))
	a.handler = middleware.Sessions(store)(mux)
	return a, nil
}

func (a *app) Close() error { return a.client.Close() }

func (a *app) visits(w http.ResponseWriter, r *http.Request) {
	s, err := middleware.SessionFrom(r)
	if err != nil {
		http.Error(w, "session store unavailable", http.StatusServiceUnavailable)
		return
	}
	n, _ := s.Values["visits"].(int)
	s.Values["visits"] = n + 1
	fmt.Fprintf(w, "visits: %d\n", n+1)
}

// weather is cache-aside over the distributed cache: a forecast stays
// cached while it is asked for at least every 30 s, and at most 5 min.
func (a *app) weather(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	key := "forecast:" + r.PathValue("city")
	cached, err := a.cache.Get(ctx, key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if cached != nil {
		w.Header().Set("X-From", "cache")
		w.Write(cached)
		return
	}
	fresh, err := a.db.forecast(ctx, r.PathValue("city"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	opts := cache.EntryOptions{SlidingExpiration: 30 * time.Second, AbsoluteExpirationRelativeToNow: 5 * time.Minute}
	if err := a.cache.Set(ctx, key, []byte(fresh), opts); err != nil {
		slog.Default().Warn("forecast not cached", "err", err)
	}
	w.Header().Set("X-From", "database")
	w.Write([]byte(fresh))
}

func (a *app) about(w http.ResponseWriter, r *http.Request) {
	a.db.calls.Add(1)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"app": "nethttp", "rendered": time.Now().UTC().Format(time.RFC3339Nano)})
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := config{ZarisURL: os.Getenv("ZARIS_URL"), DBLatency: 300 * time.Millisecond, Logger: log}
	if cfg.ZarisURL == "" {
		cfg.ZarisURL = "zaris://inproc/nethttp"
	}
	if k := os.Getenv("SESSION_KEY"); len(k) >= 32 {
		cfg.SessionKey = []byte(k)
	} else {
		log.Warn("SESSION_KEY unset or shorter than 32 bytes: using a random key; sessions will not survive a restart")
		cfg.SessionKey = make([]byte, 32)
		_, _ = rand.Read(cfg.SessionKey)
	}
	a, err := newApp(ctx, cfg)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	defer a.Close()
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8081"
	}
	srv := &http.Server{Addr: addr, Handler: a.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("nethttp example listening", "url", "http://"+addr, "zaris", cfg.ZarisURL)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
