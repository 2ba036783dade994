// Command echo-app is a runnable echo web application on Zaris: sessions
// with a visit and login counter (package session via middleware.EchoSessions),
// a slow "database" call cached in the two-tier hybrid cache (an in-process L1
// in front of the shared store), and HTTP response caching with tag eviction
// (middleware.ResponseCacher over package cache).
//
// It runs on an embedded store (zaris://inproc/echo-app) by default; set
// ZARIS_URL (e.g. zaris://127.0.0.1:7861/default) to use a server. ADDR sets
// the listen address (default 127.0.0.1:8080); SESSION_KEY (at least 32
// bytes) signs the session cookie — without it a random key is drawn and
// sessions do not survive a restart.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/hybrid"
	"github.com/zaris-io/zaris/middleware"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/session"
)

// config is the app's configuration (from the environment in main).
type config struct {
	ZarisURL   string        // the shared store (sessions, L2, responses)
	L1URL      string        // the in-process L1 of the hybrid cache
	SessionKey []byte        // cookie signing key, ≥ 32 bytes
	DBLatency  time.Duration // how slow the fake database is
	Secure     bool          // Secure cookies (serve over HTTPS)
	Logger     *slog.Logger
}

// Product is what the slow database returns.
type Product struct {
	ID    int     `json:"id" msgpack:"id"`
	Name  string  `json:"name" msgpack:"name"`
	Price float64 `json:"price" msgpack:"price"`
}

// slowDB stands for a real database: every call costs latency.
type slowDB struct {
	latency time.Duration
	calls   atomic.Int64
}

func (db *slowDB) product(ctx context.Context, id int) (Product, error) {
	db.calls.Add(1)
	select {
	case <-time.After(db.latency):
	case <-ctx.Done():
		return Product{}, ctx.Err()
	}
	return Product{ID: id, Name: fmt.Sprintf("Product %d", id), Price: float64(id) * 9.99}, nil
}

func (db *slowDB) catalog(ctx context.Context) ([]Product, error) {
	db.calls.Add(1)
	select {
	case <-time.After(db.latency):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := make([]Product, 5)
	for i := range out {
		out[i] = Product{ID: i + 1, Name: fmt.Sprintf("Product %d", i+1), Price: float64(i+1) * 9.99}
	}
	return out, nil
}

// app is the wired application; Close releases what newApp opened.
type app struct {
	echo      *echo.Echo
	db        *slowDB
	sessions  *session.Store
	products  *hybrid.Cache
	responses *middleware.ResponseCacher
	closers   []func() error
}

func (a *app) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	return errors.Join(errs...)
}

func newApp(ctx context.Context, cfg config) (*app, error) {
	a := &app{db: &slowDB{latency: cfg.DBLatency}}
	shared, err := sdk.Connect(ctx, cfg.ZarisURL, sdk.WithLogger(cfg.Logger))
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, shared.Close)
	l1, err := sdk.Connect(ctx, cfg.L1URL, sdk.WithLogger(cfg.Logger))
	if err != nil {
		a.Close()
		return nil, err
	}
	a.closers = append(a.closers, l1.Close)

	a.sessions, err = session.New(shared, session.Options{
		Name: "echo_app", KeyPrefix: "echo-app:session:", IdleTimeout: 30 * time.Minute,
		Secure: cfg.Secure, Logger: cfg.Logger,
	}, cfg.SessionKey)
	if err != nil {
		a.Close()
		return nil, err
	}
	a.products = hybrid.New(l1, shared, hybrid.Options{KeyPrefix: "echo-app:hc:", Expiration: 5 * time.Minute, LocalCacheExpiration: time.Minute, Logger: cfg.Logger})
	a.closers = append(a.closers, a.products.Close)
	a.responses = middleware.NewResponseCacher(
		cache.New(shared, cache.Options{KeyPrefix: "echo-app:", Logger: cfg.Logger}),
		middleware.ResponseCacheOptions{Logger: cfg.Logger},
	)

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Use(middleware.EchoSessions(a.sessions))
	e.GET("/", a.home)
	e.POST("/login", a.login)
	e.GET("/me", a.me)
	e.POST("/logout", a.logout)
	e.GET("/products/:id", a.product)
	e.GET("/catalog", a.catalog, a.responses.EchoWith(middleware.Policy{TTL: 30 * time.Second, Tags: []string{"catalog"}}))
	e.POST("/catalog/refresh", a.refreshCatalog)
	a.echo = e
	return a, nil
}

// home counts the visits of this browser session.
func (a *app) home(c echo.Context) error {
	s, err := middleware.EchoSessionFrom(c)
	if err != nil {
		return err
	}
	visits, _ := s.Values["visits"].(int)
	visits++
	s.Values["visits"] = visits
	user, _ := s.Values["user"].(string)
	if user == "" {
		user = "anonymous"
	}
	return c.String(http.StatusOK, fmt.Sprintf("hello %s, visits: %d\n", user, visits))
}

// login signs a user in: the session id is regenerated (fixation defence)
// and the login counter of the session incremented.
func (a *app) login(c echo.Context) error {
	user := c.FormValue("user")
	if user == "" {
		return echo.NewHTTPError(http.StatusBadRequest, "user is required")
	}
	s, err := middleware.EchoSessionFrom(c)
	if err != nil {
		return err
	}
	logins, _ := s.Values["logins"].(int)
	s.Values["user"] = user
	s.Values["logins"] = logins + 1
	if err := a.sessions.Regenerate(c.Request(), c.Response(), s); err != nil {
		return err
	}
	return c.String(http.StatusOK, fmt.Sprintf("welcome %s, logins: %d\n", user, logins+1))
}

func (a *app) me(c echo.Context) error {
	s, err := middleware.EchoSessionFrom(c)
	if err != nil {
		return err
	}
	user, _ := s.Values["user"].(string)
	if user == "" {
		return echo.NewHTTPError(http.StatusUnauthorized, "not logged in")
	}
	logins, _ := s.Values["logins"].(int)
	visits, _ := s.Values["visits"].(int)
	return c.JSON(http.StatusOK, map[string]any{"user": user, "logins": logins, "visits": visits})
}

func (a *app) logout(c echo.Context) error {
	s, err := middleware.EchoSessionFrom(c)
	if err != nil {
		return err
	}
	s.Options.MaxAge = -1 // deletes the session and expires the cookie
	return c.String(http.StatusOK, "bye\n")
}

// product serves one product through the hybrid cache: the slow database
// is called once per product per 5 minutes, however many instances and
// concurrent requests ask.
func (a *app) product(c echo.Context) error {
	id, err := strconv.Atoi(c.Param("id"))
	if err != nil || id <= 0 {
		return echo.NewHTTPError(http.StatusBadRequest, "bad product id")
	}
	start := time.Now()
	p, err := hybrid.GetOrCreate(c.Request().Context(), a.products, "product:"+c.Param("id"),
		func(ctx context.Context) (Product, error) { return a.db.product(ctx, id) }, nil, "catalog")
	if err != nil {
		return err
	}
	c.Response().Header().Set("X-Lookup-Time", time.Since(start).String())
	return c.JSON(http.StatusOK, p)
}

// catalog is a slow page whose whole response is cached (route policy with
// the "catalog" tag).
func (a *app) catalog(c echo.Context) error {
	list, err := a.db.catalog(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, list)
}

// refreshCatalog invalidates every cached product and catalog page.
func (a *app) refreshCatalog(c echo.Context) error {
	ctx := c.Request().Context()
	if err := a.responses.EvictByTag(ctx, "catalog"); err != nil {
		return err
	}
	if err := a.products.RemoveByTag(ctx, "catalog"); err != nil {
		return err
	}
	return c.String(http.StatusOK, "catalog refreshed\n")
}

func configFromEnv(log *slog.Logger) config {
	cfg := config{
		ZarisURL:  os.Getenv("ZARIS_URL"),
		L1URL:     "zaris://inproc/echo-app-l1",
		DBLatency: 300 * time.Millisecond,
		Secure:    os.Getenv("SECURE_COOKIES") == "1",
		Logger:    log,
	}
	if cfg.ZarisURL == "" {
		cfg.ZarisURL = "zaris://inproc/echo-app"
	}
	if k := os.Getenv("SESSION_KEY"); len(k) >= 32 {
		cfg.SessionKey = []byte(k)
	} else {
		log.Warn("SESSION_KEY unset or shorter than 32 bytes: using a random key; sessions will not survive a restart")
		cfg.SessionKey = make([]byte, 32)
		_, _ = rand.Read(cfg.SessionKey)
	}
	return cfg
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := configFromEnv(log)
	a, err := newApp(ctx, cfg)
	if err != nil {
		log.Error("start", "err", err)
		os.Exit(1)
	}
	defer a.Close()
	addr := os.Getenv("ADDR")
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	srv := &http.Server{Addr: addr, Handler: a.echo, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("echo-app listening", "url", "http://"+addr, "zaris", cfg.ZarisURL)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Error("serve", "err", err)
		os.Exit(1)
	}
}
