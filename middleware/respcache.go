package middleware

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/singleflight"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/session"
)

// Response cache defaults.
const (
	DefaultResponseKeyPrefix = "rc:"
	DefaultResponseTTL       = time.Minute
	DefaultMaxBodyBytes      = 1 << 20
	DefaultStatusHeader      = "X-Cache"
)

// Policy is how one route is cached.
type Policy struct {
	// Disabled: requests of this route are never cached (BYPASS).
	Disabled bool
	// TTL is the freshness lifetime of a response that states none
	// (no s-maxage, max-age or Expires). 0 = ResponseCacheOptions.DefaultTTL.
	TTL time.Duration
	// Tags label every response stored for this route; EvictByTag(tag)
	// invalidates them all at once.
	Tags []string
	// TagsFunc adds request-dependent tags (e.g. "product:42"). Called
	// before the handler runs.
	TagsFunc func(*http.Request) []string
	// VaryByHeader adds request headers to the response's Vary: each
	// distinct combination of their values is a separate entry.
	VaryByHeader []string
	// VaryByQuery restricts the query parameters that key an entry (the
	// others are ignored). nil = every parameter, order-insensitive.
	VaryByQuery []string
}

// RoutePolicy applies Policy to the requests it matches: Route equal to
// echo's route pattern (c.Path()), or else the longest PathPrefix of the
// URL path.
type RoutePolicy struct {
	Route      string
	PathPrefix string
	Policy     Policy
}

// ResponseCacheOptions configure a ResponseCacher. The zero value is valid.
type ResponseCacheOptions struct {
	// KeyPrefix prefixes every key the response cache writes into the
	// cache (on top of the cache's own prefix). Default "rc:".
	KeyPrefix string
	// DefaultPolicy applies to requests no route matches.
	DefaultPolicy Policy
	// Routes are per-route policies.
	Routes []RoutePolicy
	// DefaultTTL: see Policy.TTL. Default 1 min.
	DefaultTTL time.Duration
	// MaxBodyBytes: a response body larger than this is streamed to the
	// client and not cached. Default 1 MiB.
	MaxBodyBytes int
	// StatusHeader is the response header telling HIT / MISS / BYPASS.
	// Default "X-Cache"; "-" = none.
	StatusHeader string
	// Now is the clock for ages and freshness. Default time.Now.
	Now func() time.Time
	// Logger receives cache failures (which never fail a request).
	// Default slog.Default().
	Logger *slog.Logger

	// TracerProvider, when set, gives every request through the cache a
	// span ("zaris.http.cache": zaris.result, zaris.bytes; never the URL),
	// the parent of the handler's spans and of the cache's store calls.
	// nil = no spans.
	TracerProvider trace.TracerProvider
	// MeterProvider, when set, records MetricRequests (by zaris.result:
	// hit, coalesced, miss, stale, bypass), MetricResponseBytes and
	// MetricStoredBytes. nil = no measurements.
	MeterProvider metric.MeterProvider
}

// ResponseCacheStats are a ResponseCacher's counters.
type ResponseCacheStats struct {
	Hits        uint64 // answered from the cache
	Misses      uint64 // answered by running the handler
	Coalesced   uint64 // answered by a concurrent fill of the same URL (single flight)
	Bypassed    uint64 // not eligible: method, Range, no-store request, disabled route
	HandlerRuns uint64 // handler executions on cacheable requests
	Stored      uint64 // responses written to the cache
	NotStored   uint64 // responses that were not storable (status, no-store, private, Set-Cookie, session…)
	StoreErrors uint64 // writes the cache refused (e.g. sdk.ErrItemTooLarge): served uncached
	NotModified uint64 // 304 answers to If-None-Match / If-Modified-Since
	TagStale    uint64 // entries found but invalidated by EvictByTag
	Waiting     int64  // requests now running or waiting for a fill
}

// ResponseCacher caches HTTP responses in a cache.Cache (SPEC R-SDK-4).
// See the package doc for the rules. Safe for concurrent use.
type ResponseCacher struct {
	c      cache.Cache
	opts   ResponseCacheOptions
	routes []RoutePolicy // exact Route first, then longest PathPrefix
	group  singleflight.Group
	log    *slog.Logger

	hits, misses, coalesced, bypassed, runs   atomic.Uint64
	stored, notStored, storeErrors, notModded atomic.Uint64
	tagStale                                  atomic.Uint64
	waiting                                   atomic.Int64
	tel                                       *rcTelemetry // nil unless the options name a provider
}

// NewResponseCacher returns a response cache over c.
func NewResponseCacher(c cache.Cache, opts ResponseCacheOptions) *ResponseCacher {
	if opts.KeyPrefix == "" {
		opts.KeyPrefix = DefaultResponseKeyPrefix
	}
	if opts.DefaultTTL <= 0 {
		opts.DefaultTTL = DefaultResponseTTL
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.StatusHeader == "" {
		opts.StatusHeader = DefaultStatusHeader
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	rc := &ResponseCacher{c: c, opts: opts, log: opts.Logger}
	if tel, err := newRCTelemetry(opts); err != nil {
		rc.log.Error("zaris response cache: telemetry off: its instruments could not be made", "err", err)
	} else {
		rc.tel = tel
	}
	rc.routes = append([]RoutePolicy(nil), opts.Routes...)
	sort.SliceStable(rc.routes, func(i, j int) bool {
		a, b := rc.routes[i], rc.routes[j]
		if (a.Route != "") != (b.Route != "") {
			return a.Route != ""
		}
		return len(a.PathPrefix) > len(b.PathPrefix)
	})
	return rc
}

// ResponseCache returns net/http middleware caching GET/HEAD responses in c.
func ResponseCache(c cache.Cache, opts ResponseCacheOptions) func(http.Handler) http.Handler {
	return NewResponseCacher(c, opts).Middleware()
}

// Stats returns the counters.
func (rc *ResponseCacher) Stats() ResponseCacheStats {
	return ResponseCacheStats{
		Hits: rc.hits.Load(), Misses: rc.misses.Load(), Coalesced: rc.coalesced.Load(), Bypassed: rc.bypassed.Load(),
		HandlerRuns: rc.runs.Load(), Stored: rc.stored.Load(), NotStored: rc.notStored.Load(),
		StoreErrors: rc.storeErrors.Load(), NotModified: rc.notModded.Load(), TagStale: rc.tagStale.Load(),
		Waiting: rc.waiting.Load(),
	}
}

// Middleware returns the net/http middleware; the policy comes from the
// routes (by PathPrefix) or DefaultPolicy.
func (rc *ResponseCacher) Middleware() func(http.Handler) http.Handler {
	return rc.middleware(nil)
}

// With returns net/http middleware applying policy p to every request it
// wraps — per-route caching: mux.Handle("/catalog", rc.With(p)(h)).
func (rc *ResponseCacher) With(p Policy) func(http.Handler) http.Handler {
	return rc.middleware(&p)
}

func (rc *ResponseCacher) middleware(fixed *Policy) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := fixed
			if p == nil {
				p = rc.policyFor(r, "")
			}
			rc.serve(exchange{w: w, raw: w, r: r, run: next.ServeHTTP}, p)
		})
	}
}

func (rc *ResponseCacher) policyFor(r *http.Request, route string) *Policy {
	for i := range rc.routes {
		rp := &rc.routes[i]
		if rp.Route != "" && rp.Route == route {
			return &rp.Policy
		}
		if rp.Route == "" && rp.PathPrefix != "" && strings.HasPrefix(r.URL.Path, rp.PathPrefix) {
			return &rp.Policy
		}
	}
	return &rc.opts.DefaultPolicy
}

// exchange is one request as the framework presents it.
type exchange struct {
	w   http.ResponseWriter // where answers are written
	raw http.ResponseWriter // where the leader's recorded answer is written (echo: beneath its committed Response)
	r   *http.Request
	run func(w http.ResponseWriter, r *http.Request) // the rest of the chain
}

// fillResult is what a fill produced, shared by the single flight.
type fillResult struct {
	hit       *storedResponse // the re-check inside the flight found an entry
	status    int
	header    http.Header // never modified once returned
	body      []byte
	streamed  bool        // too large or flushed: already written to the leader, not shareable
	shareable bool        // storable in a shared cache: other requests may receive it
	reqHeader http.Header // the leader's request headers, for Vary matching
}

func (rc *ResponseCacher) label(h http.Header, v string) {
	if rc.opts.StatusHeader != "-" {
		h.Set(rc.opts.StatusHeader, v)
	}
}

func (rc *ResponseCacher) serve(x exchange, p *Policy) {
	if rc.tel == nil {
		rc.serveRun(x, p, nil)
		return
	}
	ctx, span := rc.tel.start(x.r.Context())
	x.r = x.r.WithContext(ctx)
	var out served
	rc.serveRun(x, p, &out)
	rc.tel.end(span, &out)
}

func (rc *ResponseCacher) serveRun(x exchange, p *Policy, out *served) {
	r := x.r
	rule := ruleForRequest(r.Method, r.Header)
	if p.Disabled || (!rule.lookup && !rule.store) {
		rc.bypassed.Add(1)
		rc.label(x.w.Header(), "BYPASS")
		x.run(x.w, r)
		out.set(resultBypass, -1)
		return
	}
	ctx := r.Context()
	primary := rc.primaryKey(r, p)
	missed := resultMiss
	if rule.lookup {
		e, stale := rc.lookup(ctx, primary, r.Header)
		if e != nil {
			rc.hits.Add(1)
			out.set(resultHit, rc.writeStored(x.w, r, e, "HIT"))
			return
		}
		if stale {
			missed = resultStale
		}
	}
	if !rule.store { // a HEAD miss: answer it, store nothing
		rc.misses.Add(1)
		rc.label(x.w.Header(), "MISS")
		x.run(x.w, r)
		out.set(missed, -1)
		return
	}
	if !rule.lookup {
		// no-cache / max-age=0: a fresh answer of its own, which is stored.
		res := rc.fill(ctx, x, p, primary, false)
		rc.misses.Add(1)
		n := -1
		if !res.streamed {
			n = rc.writeFilled(x.raw, r, res, "MISS")
		}
		out.set(missed, n)
		return
	}
	res, leader := rc.fillOnce(ctx, x, p, primary)
	if !leader && !usableBy(res, r.Header) {
		// The flight's answer is not ours to receive (Set-Cookie, private,
		// streamed, or another variant): this request fills for itself.
		res, leader = rc.fill(ctx, x, p, primary, true), true
	}
	switch {
	case res.hit != nil:
		rc.hits.Add(1)
		out.set(resultHit, rc.writeStored(x.w, r, res.hit, "HIT"))
	case leader:
		rc.misses.Add(1)
		n := -1
		if !res.streamed {
			n = rc.writeFilled(x.raw, r, res, "MISS")
		}
		out.set(missed, n)
	default:
		rc.coalesced.Add(1)
		out.set(resultCoalesced, rc.writeFilled(x.w, r, res, "HIT"))
	}
}

// usableBy reports whether a request with header h, waiting on another
// request's flight, may receive its result.
func usableBy(res *fillResult, h http.Header) bool {
	if res.hit != nil {
		return sameValues(res.hit.Vary, h, res.reqHeader)
	}
	return res.shareable && !res.streamed && sameValues(varyNames(res.header), h, res.reqHeader)
}

// fillOnce joins or leads the single flight of primary. leader reports
// whether this request's handler ran (or its re-check hit). A panicking
// handler re-panics in every waiting request (singleflight's behaviour);
// the Waiting gauge stays right.
func (rc *ResponseCacher) fillOnce(ctx context.Context, x exchange, p *Policy, primary string) (res *fillResult, leader bool) {
	rc.waiting.Add(1)
	defer rc.waiting.Add(-1)
	v, _, _ := rc.group.Do(primary, func() (any, error) {
		leader = true
		return rc.fill(ctx, x, p, primary, true), nil
	})
	return v.(*fillResult), leader
}

// fill runs the handler once for a cacheable request and stores the answer
// when RFC 9111 allows. With recheck, the cache is read again first (inside
// the single flight: a fill that finished just before this one began has
// stored its answer).
func (rc *ResponseCacher) fill(ctx context.Context, x exchange, p *Policy, primary string, recheck bool) *fillResult {
	r := x.r
	// Others may be waiting on this fill: the leader's client hanging up
	// must cancel neither the handler nor the cache writes.
	ctx = context.WithoutCancel(ctx)
	if recheck {
		if e, _ := rc.lookup(ctx, primary, r.Header); e != nil {
			return &fillResult{hit: e, reqHeader: r.Header.Clone()}
		}
	}
	// Tag generations are read before the handler runs, so an eviction
	// racing with this fill makes its answer stale, never falsely fresh.
	gens, genErr := rc.ensureGens(ctx, p.tags(r))
	if genErr != nil {
		rc.log.Warn("zaris response cache: tag generations unavailable; not storing", "err", genErr)
	}

	var usedSession atomic.Bool
	fctx := session.ObserveLoads(ctx, func() { usedSession.Store(true) })
	fr := r.Clone(fctx)
	fr.Header.Del("If-None-Match") // the full answer is what gets stored;
	fr.Header.Del("If-Modified-Since")
	rec := &recorder{dst: x.raw, header: http.Header{}, limit: rc.opts.MaxBodyBytes, rc: rc}
	rc.runs.Add(1)
	x.run(rec, fr)
	if !rec.wroteHeader {
		rec.WriteHeader(http.StatusOK)
	}
	res := &fillResult{status: rec.status, header: rec.header, body: rec.body, streamed: rec.streamed, reqHeader: r.Header.Clone()}
	if rec.streamed {
		rc.notStored.Add(1)
		return res
	}
	now := rc.opts.Now()
	addVary(res.header, p.VaryByHeader)
	ttl := p.TTL
	if ttl <= 0 {
		ttl = rc.opts.DefaultTTL
	}
	d := decideStore(res.status, r.Header, res.header, now, ttl)
	if d.ok && usedSession.Load() {
		d = storeDecision{reason: "session"} // personalised: neither stored nor shared
	}
	if !d.ok {
		rc.notStored.Add(1)
		return res
	}
	res.shareable = true
	if res.header.Get("Date") == "" {
		res.header.Set("Date", now.UTC().Format(http.TimeFormat))
	}
	if res.status == http.StatusOK && res.header.Get("Etag") == "" {
		sum := sha256.Sum256(res.body)
		res.header.Set("Etag", `"`+base64.RawURLEncoding.EncodeToString(sum[:18])+`"`)
	}
	if res.status != http.StatusNoContent && res.header.Get("Content-Length") == "" {
		res.header.Set("Content-Length", strconv.Itoa(len(res.body)))
	}
	if genErr != nil {
		return res
	}
	e := &storedResponse{
		Kind: kindResponse, Vary: varyNames(res.header), Status: res.status, Header: storedHeader(res.header),
		Body: res.body, Stored: now.UnixNano(), Lifetime: int64(d.lifetime), InitialAge: int64(d.initialAge), Tags: gens,
	}
	if err := rc.store(ctx, primary, r.Header, e, d.lifetime-d.initialAge); err != nil {
		rc.storeErrors.Add(1)
		if errors.Is(err, sdk.ErrItemTooLarge) {
			rc.log.Debug("zaris response cache: response too large for the store; served uncached", "path", r.URL.Path, "bytes", len(res.body))
		} else {
			rc.log.Warn("zaris response cache: store failed", "path", r.URL.Path, "err", err)
		}
		return res
	}
	rc.stored.Add(1)
	if rc.tel != nil {
		rc.tel.storedBytes(len(e.Body))
	}
	return res
}

func (p *Policy) tags(r *http.Request) []string {
	tags := append([]string(nil), p.Tags...)
	if p.TagsFunc != nil {
		tags = append(tags, p.TagsFunc(r)...)
	}
	slices.Sort(tags)
	return slices.Compact(tags)
}

// addVary merges names into h's Vary header.
func addVary(h http.Header, names []string) {
	if len(names) == 0 {
		return
	}
	have := varyNames(h)
	for _, n := range names {
		n = http.CanonicalHeaderKey(n)
		if !slices.Contains(have, n) {
			have = append(have, n)
		}
	}
	slices.Sort(have)
	h.Set("Vary", strings.Join(have, ", "))
}

// sameValues reports whether two requests carry equal values for every
// header in names (both select the same variant of a response that Varies
// on names).
func sameValues(names []string, a, b http.Header) bool {
	for _, n := range names {
		if n == "*" || strings.Join(a.Values(n), ",") != strings.Join(b.Values(n), ",") {
			return false
		}
	}
	return true
}

// writeFilled answers r with a fill's response.
func (rc *ResponseCacher) writeFilled(w http.ResponseWriter, r *http.Request, res *fillResult, label string) int {
	return rc.write(w, r, res.status, res.header, res.body, -1, label)
}

// writeStored answers r with a stored response, with its Age.
func (rc *ResponseCacher) writeStored(w http.ResponseWriter, r *http.Request, e *storedResponse, label string) int {
	age := time.Duration(rc.opts.Now().UnixNano() - e.Stored + e.InitialAge)
	return rc.write(w, r, e.Status, http.Header(e.Header), e.Body, max(age, 0), label)
}

// write answers r: 304 when its validators match a 200, else the response.
// age < 0 = no Age header (a response fresh from the handler). It returns
// the body bytes written.
func (rc *ResponseCacher) write(w http.ResponseWriter, r *http.Request, status int, header http.Header, body []byte, age time.Duration, label string) int {
	h := w.Header()
	if status == http.StatusOK && notModified(r.Header, header.Get("Etag"), header.Get("Last-Modified")) {
		for _, k := range notModifiedHeaders {
			if v, ok := header[k]; ok {
				h[k] = slices.Clone(v)
			}
		}
		rc.setAge(h, age)
		rc.label(h, label)
		rc.notModded.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return 0
	}
	for k, v := range header {
		h[k] = slices.Clone(v)
	}
	rc.setAge(h, age)
	rc.label(h, label)
	w.WriteHeader(status)
	if r.Method != http.MethodHead && len(body) > 0 {
		n, _ := w.Write(body)
		return n
	}
	return 0
}

func (rc *ResponseCacher) setAge(h http.Header, age time.Duration) {
	if age >= 0 {
		h.Set("Age", strconv.FormatInt(int64(age/time.Second), 10))
	}
}

// storedHeader keeps the end-to-end headers of a response.
func storedHeader(h http.Header) map[string][]string {
	out := make(map[string][]string, len(h))
	for k, v := range h {
		if !hopByHop[k] {
			out[k] = slices.Clone(v)
		}
	}
	return out
}

// Keys. The primary key names the resource: host, path and query (sorted,
// or only VaryByQuery's parameters), hashed so any URL fits the store's key
// cap. GET and HEAD share it.
func (rc *ResponseCacher) primaryKey(r *http.Request, p *Policy) string {
	q := r.URL.Query()
	if p.VaryByQuery != nil {
		kept := url.Values{}
		for _, k := range p.VaryByQuery {
			if v, ok := q[k]; ok {
				kept[k] = v
			}
		}
		q = kept
	}
	h := sha256.New()
	io.WriteString(h, strings.ToLower(r.Host))
	io.WriteString(h, "\n")
	io.WriteString(h, r.URL.EscapedPath())
	io.WriteString(h, "\n")
	io.WriteString(h, q.Encode())
	return rc.opts.KeyPrefix + "r:" + hex.EncodeToString(h.Sum(nil)[:16])
}

// variantKey names one variant of a resource whose responses Vary on names.
func variantKey(primary string, names []string, req http.Header) string {
	h := sha256.New()
	for _, n := range names {
		io.WriteString(h, n)
		io.WriteString(h, ":")
		io.WriteString(h, strings.Join(req.Values(n), ","))
		io.WriteString(h, "\n")
	}
	return primary + ":" + hex.EncodeToString(h.Sum(nil)[:16])
}

func (rc *ResponseCacher) genKey(tag string) string   { return rc.opts.KeyPrefix + "tag:" + tag }
func (rc *ResponseCacher) indexKey(tag string) string { return rc.opts.KeyPrefix + "tagidx:" + tag }

// lookup returns the fresh stored response for a request, or nil.
// stale reports a stored response found but not usable: no longer fresh
// for this request, or invalidated by EvictByTag.
func (rc *ResponseCacher) lookup(ctx context.Context, primary string, req http.Header) (e *storedResponse, stale bool) {
	e = rc.read(ctx, primary)
	if e != nil && e.Kind == kindVary {
		e = rc.read(ctx, variantKey(primary, e.Vary, req))
	}
	if e == nil || e.Kind != kindResponse {
		return nil, false
	}
	age := time.Duration(rc.opts.Now().UnixNano() - e.Stored + e.InitialAge)
	if !freshFor(req, time.Duration(e.Lifetime), age) {
		return nil, true
	}
	if len(e.Tags) > 0 {
		current, err := rc.tagsCurrent(ctx, e.Tags)
		if err != nil {
			rc.log.Warn("zaris response cache: tag check failed; treating as a miss", "err", err)
			return nil, false
		}
		if !current {
			rc.tagStale.Add(1)
			return nil, true
		}
	}
	return e, false
}

func (rc *ResponseCacher) read(ctx context.Context, key string) *storedResponse {
	data, err := rc.c.Get(ctx, key)
	if err != nil {
		rc.log.Warn("zaris response cache: read failed; treating as a miss", "err", err)
		return nil
	}
	if data == nil {
		return nil
	}
	var e storedResponse
	if err := mpsafe.Unmarshal(data, &e); err != nil {
		rc.log.Warn("zaris response cache: undecodable entry; treating as a miss", "key", key, "err", err)
		return nil
	}
	return &e
}

// store writes e (and, when it varies, the vary descriptor at the primary
// key) for ttl, then indexes it under its tags.
func (rc *ResponseCacher) store(ctx context.Context, primary string, req http.Header, e *storedResponse, ttl time.Duration) error {
	data, err := msgpack.Marshal(e)
	if err != nil {
		return err
	}
	eo := cache.EntryOptions{AbsoluteExpirationRelativeToNow: ttl}
	key := primary
	keys := []string{primary}
	if len(e.Vary) > 0 {
		key = variantKey(primary, e.Vary, req)
		keys = append(keys, key)
		// The response first: a descriptor never points at nothing new.
		if err := rc.c.Set(ctx, key, data, eo); err != nil {
			return err
		}
		desc, _ := msgpack.Marshal(&storedResponse{Kind: kindVary, Vary: e.Vary})
		if err := rc.c.Set(ctx, primary, desc, eo); err != nil {
			return err
		}
	} else if err := rc.c.Set(ctx, primary, data, eo); err != nil {
		return err
	}
	expires := rc.opts.Now().Add(ttl).UnixNano()
	for tag := range e.Tags {
		rc.indexTag(ctx, tag, keys, expires)
	}
	return nil
}

// Tags. Correctness rests on generations: every tag has a random token
// under <prefix>tag:<tag>; an entry records the tokens of its tags as read
// before its handler ran; a lookup compares them with the current tokens;
// EvictByTag replaces the token. That is one write, needs no list to keep
// consistent, and compares no clocks across instances. An absent token
// (never created, or evicted from the store) never matches, so losing one
// can only cause misses, never stale hits.
//
// Reclaiming memory at once is best effort: <prefix>tagidx:<tag> lists the
// keys stored under the tag (read-modify-write, so concurrent fills may drop
// a line — such an entry simply waits for its TTL); EvictByTag removes the
// listed keys and the list.

func newGeneration() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

type getManyCache interface {
	GetMany(ctx context.Context, keys []string) ([][]byte, error)
}

func (rc *ResponseCacher) readGens(ctx context.Context, tags []string) ([][]byte, error) {
	keys := make([]string, len(tags))
	for i, t := range tags {
		keys[i] = rc.genKey(t)
	}
	if gm, ok := rc.c.(getManyCache); ok && len(keys) > 1 {
		return gm.GetMany(ctx, keys)
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		v, err := rc.c.Get(ctx, k)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// ensureGens returns the current token of every tag, creating missing ones.
func (rc *ResponseCacher) ensureGens(ctx context.Context, tags []string) (map[string]string, error) {
	if len(tags) == 0 {
		return nil, nil
	}
	vals, err := rc.readGens(ctx, tags)
	if err != nil {
		return nil, err
	}
	gens := make(map[string]string, len(tags))
	for i, t := range tags {
		g := string(vals[i])
		if vals[i] == nil {
			g = newGeneration()
			if err := rc.c.Set(ctx, rc.genKey(t), []byte(g), cache.EntryOptions{}); err != nil {
				return nil, err
			}
		}
		gens[t] = g
	}
	return gens, nil
}

func (rc *ResponseCacher) tagsCurrent(ctx context.Context, gens map[string]string) (bool, error) {
	tags := make([]string, 0, len(gens))
	for t := range gens {
		tags = append(tags, t)
	}
	vals, err := rc.readGens(ctx, tags)
	if err != nil {
		return false, err
	}
	for i, t := range tags {
		if vals[i] == nil || string(vals[i]) != gens[t] {
			return false, nil
		}
	}
	return true, nil
}

// maxIndexed bounds one tag's key list (beyond it, entries just expire).
const maxIndexed = 1000

func (rc *ResponseCacher) indexTag(ctx context.Context, tag string, keys []string, expires int64) {
	now := rc.opts.Now().UnixNano()
	lines := map[string]int64{}
	var order []string
	if data, err := rc.c.Get(ctx, rc.indexKey(tag)); err == nil && data != nil {
		for _, line := range strings.Split(string(data), "\n") {
			k, exp, ok := strings.Cut(line, " ")
			n, err := strconv.ParseInt(exp, 10, 64)
			if !ok || err != nil || n <= now {
				continue
			}
			if _, dup := lines[k]; !dup {
				order = append(order, k)
			}
			lines[k] = n
		}
	}
	for _, k := range keys {
		if _, dup := lines[k]; !dup {
			order = append(order, k)
		}
		lines[k] = expires
	}
	if len(order) > maxIndexed {
		order = order[len(order)-maxIndexed:]
	}
	var b strings.Builder
	last := int64(0)
	for _, k := range order {
		b.WriteString(k)
		b.WriteString(" ")
		b.WriteString(strconv.FormatInt(lines[k], 10))
		b.WriteString("\n")
		last = max(last, lines[k])
	}
	if last <= now {
		return
	}
	eo := cache.EntryOptions{AbsoluteExpirationRelativeToNow: time.Duration(last - now)}
	if err := rc.c.Set(ctx, rc.indexKey(tag), []byte(b.String()), eo); err != nil {
		rc.log.Debug("zaris response cache: tag index not updated", "tag", tag, "err", err)
	}
}

// EvictByTag invalidates every response stored under tag, at once and for
// every instance sharing the cache and KeyPrefix: the tag's generation is
// replaced (later lookups miss), then the indexed entries are removed.
func (rc *ResponseCacher) EvictByTag(ctx context.Context, tag string) error {
	if err := rc.c.Set(ctx, rc.genKey(tag), []byte(newGeneration()), cache.EntryOptions{}); err != nil {
		return err
	}
	data, err := rc.c.Get(ctx, rc.indexKey(tag))
	if err != nil || data == nil {
		return nil // invalidated already; reclaiming is best effort
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, _, ok := strings.Cut(line, " "); ok {
			if err := rc.c.Remove(ctx, k); err != nil {
				rc.log.Debug("zaris response cache: evicted entry not removed", "key", k, "err", err)
			}
		}
	}
	return rc.c.Remove(ctx, rc.indexKey(tag))
}

// storedResponse is the cache entry (MessagePack). Kind 1 is a response;
// kind 2, at the primary key of a resource whose responses Vary, lists the
// request headers naming its variants.
type storedResponse struct {
	Kind       uint8               `msgpack:"k"`
	Vary       []string            `msgpack:"v,omitempty"`
	Status     int                 `msgpack:"s,omitempty"`
	Header     map[string][]string `msgpack:"h,omitempty"`
	Body       []byte              `msgpack:"b,omitempty"`
	Stored     int64               `msgpack:"t,omitempty"` // Unix ns
	Lifetime   int64               `msgpack:"l,omitempty"` // ns
	InitialAge int64               `msgpack:"a,omitempty"` // ns
	Tags       map[string]string   `msgpack:"g,omitempty"` // tag → generation at fill
}

const (
	kindResponse = 1
	kindVary     = 2
)

// recorder captures a handler's response for the cache. Past limit bytes,
// or on Flush, it turns into a pass-through to dst (streamed: not cached).
type recorder struct {
	dst         http.ResponseWriter
	header      http.Header
	status      int
	wroteHeader bool
	body        []byte
	limit       int
	streamed    bool
	rc          *ResponseCacher
}

func (w *recorder) Header() http.Header {
	if w.streamed {
		return w.dst.Header()
	}
	return w.header
}

func (w *recorder) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		return // informational responses are not recorded
	}
	w.wroteHeader = true
	w.status = code
}

func (w *recorder) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	if w.streamed {
		return w.dst.Write(b)
	}
	if len(w.body)+len(b) > w.limit {
		if err := w.stream(); err != nil {
			return 0, err
		}
		return w.dst.Write(b)
	}
	w.body = append(w.body, b...)
	return len(b), nil
}

// Flush streams what was recorded and everything after: a flushing handler
// is streaming, and its response is not cached.
func (w *recorder) Flush() {
	if err := w.stream(); err == nil {
		_ = http.NewResponseController(w.dst).Flush()
	}
}

func (w *recorder) stream() error {
	if w.streamed {
		return nil
	}
	w.streamed = true
	h := w.dst.Header()
	for k, v := range w.header {
		h[k] = v
	}
	w.rc.label(h, "MISS")
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.dst.WriteHeader(w.status)
	_, err := w.dst.Write(w.body)
	w.body = nil
	return err
}
