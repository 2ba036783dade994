package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

type fixture struct {
	t     *testing.T
	url   string
	store *store.Store
	clock *store.ManualClock
	ready atomic.Bool
	token string
	rec   *metrics.Recorder
}

type fixtureOption func(*store.Config, *Options)

// newFixture serves a Server over real HTTP on a 127.0.0.1 ephemeral port,
// with a store on a manual clock.
func newFixture(t *testing.T, opts ...fixtureOption) *fixture {
	t.Helper()
	f := &fixture{t: t, clock: store.NewManualClock(time.Unix(1_700_000_000, 0))}
	f.ready.Store(true)
	sc := store.DefaultConfig()
	sc.Clock = f.clock
	var o Options
	for _, opt := range opts {
		opt(&sc, &o)
	}
	st, err := store.New(sc)
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	f.store = st
	f.token = o.Token
	o.Store = st
	o.Metrics = metrics.New(metrics.Options{Stats: st.Stats, NoRuntimeMetrics: true})
	f.rec = o.Metrics
	o.Ready = f.ready.Load
	o.Info = func() any { return map[string]string{"node_id": "n1"} }
	srv, err := New(o)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, srv.Shutdown(ctx))
		require.NoError(t, <-served)
	})
	f.url = "http://" + ln.Addr().String()
	return f
}

func withToken(tok string) fixtureOption {
	return func(_ *store.Config, o *Options) { o.Token = tok }
}

func withStore(mod func(*store.Config)) fixtureOption {
	return func(sc *store.Config, _ *Options) { mod(sc) }
}

type response struct {
	code   int
	header http.Header
	body   []byte
	close  bool // the server said Connection: close
}

func (r response) errStatus(t *testing.T) string {
	t.Helper()
	require.Equal(t, MIMEProblem, r.header.Get("Content-Type"), "body %q", r.body)
	var e Problem
	require.NoError(t, json.Unmarshal(r.body, &e), "body %q", r.body)
	require.Equal(t, r.code, e.Status, "problem status vs HTTP code")
	require.Equal(t, http.StatusText(r.code), e.Title)
	require.Equal(t, "about:blank", e.Type)
	require.NotEmpty(t, e.Detail)
	return e.Code
}

// do sends one request; headers alternate name, value. The fixture's token,
// if any, is sent unless an Authorization header is given.
func (f *fixture) do(method, path string, body io.Reader, headers ...string) response {
	f.t.Helper()
	req, err := http.NewRequest(method, f.url+path, body)
	require.NoError(f.t, err)
	if f.token != "" {
		req.Header.Set("Authorization", "Bearer "+f.token)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	client := &http.Client{Timeout: 10 * time.Second}
	resp, err := client.Do(req)
	require.NoError(f.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return response{code: resp.StatusCode, header: resp.Header, body: b, close: resp.Close}
}

func key(k string) string { return keysPrefix + url.PathEscape(k) }

func TestKeyRoundTripWithConditions(t *testing.T) {
	f := newFixture(t)

	r := f.do("PUT", key("user:1"), strings.NewReader("alice"), "Content-Type", "text/plain")
	require.Equal(t, http.StatusCreated, r.code, string(r.body))
	require.Equal(t, `"1"`, r.header.Get("ETag"))
	require.NotEmpty(t, r.header.Get(HeaderRevision))
	require.Empty(t, r.header.Get(HeaderTTL), "no TTL, no header")
	var pb putBody
	require.NoError(t, json.Unmarshal(r.body, &pb))
	require.Equal(t, uint64(1), pb.Version)

	r = f.do("GET", key("user:1"), nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "alice", string(r.body))
	require.Equal(t, `"1"`, r.header.Get("ETag"))
	require.Equal(t, "application/octet-stream", r.header.Get("Content-Type"))

	r = f.do("PUT", key("user:1"), strings.NewReader("alice2"))
	require.Equal(t, http.StatusOK, r.code, "a replace is 200, not 201")
	require.Equal(t, `"2"`, r.header.Get("ETag"))

	// If-Match: stale version → 412, current version → applied.
	r = f.do("PUT", key("user:1"), strings.NewReader("lost"), "If-Match", `"1"`)
	require.Equal(t, http.StatusPreconditionFailed, r.code)
	require.Equal(t, "Conflict", r.errStatus(t))
	r = f.do("PUT", key("user:1"), strings.NewReader("alice3"), "If-Match", `"2"`)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, `"3"`, r.header.Get("ETag"))
	require.Equal(t, "alice3", string(f.do("GET", key("user:1"), nil).body))

	// If-Match on a missing key fails the precondition too.
	r = f.do("PUT", key("ghost"), strings.NewReader("x"), "If-Match", `"1"`)
	require.Equal(t, http.StatusPreconditionFailed, r.code)

	// If-None-Match: * is create-only.
	r = f.do("PUT", key("user:1"), strings.NewReader("dup"), "If-None-Match", "*")
	require.Equal(t, http.StatusPreconditionFailed, r.code)
	r = f.do("PUT", key("user:2"), strings.NewReader("bob"), "If-None-Match", "*")
	require.Equal(t, http.StatusCreated, r.code)

	// GET with If-None-Match naming the current version → 304.
	r = f.do("GET", key("user:1"), nil, "If-None-Match", `"3"`)
	require.Equal(t, http.StatusNotModified, r.code)
	require.Empty(t, r.body)
	r = f.do("GET", key("user:1"), nil, "If-None-Match", `"2"`)
	require.Equal(t, http.StatusOK, r.code)

	// HEAD: headers, no body.
	r = f.do("HEAD", key("user:1"), nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, `"3"`, r.header.Get("ETag"))
	require.Empty(t, r.body)

	// DELETE → 204, then 404 for GET and DELETE.
	r = f.do("DELETE", key("user:1"), nil)
	require.Equal(t, http.StatusNoContent, r.code)
	require.NotEmpty(t, r.header.Get(HeaderRevision))
	r = f.do("GET", key("user:1"), nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "NotFound", r.errStatus(t))
	r = f.do("DELETE", key("user:1"), nil)
	require.Equal(t, http.StatusNotFound, r.code)

	// A key re-created after a delete starts again at version 1 → 201.
	r = f.do("PUT", key("user:1"), strings.NewReader("again"))
	require.Equal(t, http.StatusCreated, r.code)
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		name, method, path string
		headers            []string
	}{
		{"empty key", "GET", keysPrefix, nil},
		{"empty key put", "PUT", keysPrefix, nil},
		{"ttl not a duration", "PUT", key("k") + "?ttl=soon", nil},
		{"negative ttl", "PUT", key("k") + "?ttl=-5s", nil},
		{"negative ttl seconds", "PUT", key("k") + "?ttl=-5", nil},
		{"if-match not a version", "PUT", key("k"), []string{"If-Match", `"abc"`}},
		{"if-match star", "PUT", key("k"), []string{"If-Match", "*"}},
		{"if-match list", "PUT", key("k"), []string{"If-Match", `"1", "2"`}},
		{"if-none-match version on put", "PUT", key("k"), []string{"If-None-Match", `"1"`}},
		{"both conditions", "PUT", key("k"), []string{"If-Match", `"1"`, "If-None-Match", "*"}},
		{"conditional delete", "DELETE", key("k"), []string{"If-Match", `"1"`}},
		{"unknown query parameter", "PUT", key("k") + "?tl=5s", nil},
		{"query parameter on get", "GET", key("k") + "?ttl=5s", nil},
		{"keepttl not a bool", "PUT", key("k") + "?keepttl=maybe", nil},
		{"keepttl with ttl", "PUT", key("k") + "?keepttl=true&ttl=5s", nil},
	} {
		r := f.do(tc.method, tc.path, strings.NewReader("v"), tc.headers...)
		require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", tc.name, r.body)
		require.Equal(t, "BadRequest", r.errStatus(t), tc.name)
	}
}

// Every error names what went wrong and, where a limit was passed, the
// limit: 413 for a value over --max-item-bytes, 414 for a key over the key
// cap, 405 with the allowed methods, a refused query parameter by name, a
// bad percent-escape (refused by net/http itself) as a problem too.
func TestProblemDetails(t *testing.T) {
	f := newFixture(t, withStore(func(c *store.Config) { c.MaxItemBytes = 1024 }))
	problem := func(r response) Problem {
		t.Helper()
		r.errStatus(t)
		var p Problem
		require.NoError(t, json.Unmarshal(r.body, &p))
		return p
	}

	r := f.do("PUT", key("big"), bytes.NewReader(make([]byte, 2048)))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	p := problem(r)
	require.Equal(t, "ItemTooLarge", p.Code)
	require.Equal(t, "value of 2048 bytes exceeds --max-item-bytes 1024", p.Detail)
	require.NotNil(t, p.Limit)
	require.EqualValues(t, 1024, *p.Limit)

	// Just over the cap (within the body slack): the store's own answer.
	r = f.do("PUT", key("big"), bytes.NewReader(make([]byte, 1025)))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	require.Equal(t, "value of 1025 bytes exceeds --max-item-bytes 1024", problem(r).Detail)

	long := strings.Repeat("k", 70_000)
	r = f.do("PUT", key(long), strings.NewReader("v"))
	require.Equal(t, http.StatusRequestURITooLong, r.code)
	p = problem(r)
	require.Equal(t, "BadRequest", p.Code)
	require.Equal(t, "key of 70000 bytes exceeds the maximum key size of 16384 bytes", p.Detail)
	require.EqualValues(t, 16384, *p.Limit)

	r = f.do("PATCH", key("k"), strings.NewReader("v"))
	require.Equal(t, http.StatusMethodNotAllowed, r.code)
	p = problem(r)
	require.Equal(t, "BadRequest", p.Code)
	require.Contains(t, p.Detail, "PATCH is not allowed on /v1/keys/k")

	r = f.do("PUT", key("k")+"?tl=5s&zz=1", strings.NewReader("v"))
	require.Equal(t, http.StatusBadRequest, r.code)
	require.Equal(t, "unknown query parameter tl, zz (this endpoint takes ttl, keepttl)", problem(r).Detail)
	require.False(t, f.store.Get("k").OK(), "a refused PUT stores nothing")

	r = f.do("PUT", key("k")+"?ttl=5s", strings.NewReader("v"))
	require.Equal(t, http.StatusCreated, r.code)
	r = f.do("PUT", key("k"), strings.NewReader("v2"), "If-Match", `"7"`)
	require.Equal(t, http.StatusPreconditionFailed, r.code)
	require.Equal(t, "key is at version 1, IfMatchVersion 7", problem(r).Detail)

	// A bad percent-escape never reaches a handler: net/http refuses it.
	conn, err := net.Dial("tcp", strings.TrimPrefix(f.url, "http://"))
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte("GET /v1/keys/%zz HTTP/1.1\r\nHost: x\r\n\r\n"))
	require.NoError(t, err)
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	raw := response{code: resp.StatusCode, header: resp.Header, body: body}
	require.Equal(t, http.StatusBadRequest, raw.code)
	require.Equal(t, "BadRequest", raw.errStatus(t))
	require.Contains(t, problem(raw).Detail, "percent-escape")
}

// Keep-TTL: a replace keeps the key's expiry only when asked (Redis SET …
// KEEPTTL); a plain replace clears it.
func TestKeepTTL(t *testing.T) {
	f := newFixture(t)
	require.Equal(t, http.StatusCreated, f.do("PUT", key("s")+"?ttl=30s", strings.NewReader("a")).code)
	f.clock.Advance(10 * time.Second)
	r := f.do("PUT", key("s")+"?keepttl=true", strings.NewReader("b"))
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	require.Equal(t, "20000", r.header.Get(HeaderTTL))
	r = f.do("PUT", key("s"), strings.NewReader("c"), "If-Match", `"2"`)
	require.Equal(t, http.StatusOK, r.code)
	require.Empty(t, r.header.Get(HeaderTTL), "a CAS replace without keepttl clears the TTL")
	require.Zero(t, f.store.TimeToLive("s").TTL)
}

// Keys travel escaped in the path and are unescaped exactly once: "/" and
// "%" are ordinary key bytes.
func TestKeysAreUnescapedOnce(t *testing.T) {
	f := newFixture(t)
	for _, k := range []string{"a/b/c", "100%", "a%2Fb", "sp ace", "{tag}:x", "ключ"} {
		r := f.do("PUT", key(k), strings.NewReader("v:"+k))
		require.Equal(t, http.StatusCreated, r.code, "key %q: %s", k, r.body)
		require.Equal(t, "v:"+k, string(f.do("GET", key(k), nil).body), "key %q", k)
		require.True(t, f.store.Get(k).OK(), "key %q stored under its unescaped name", k)
	}
	// An unescaped slash reaches the same key as the escaped one.
	require.Equal(t, "v:a/b/c", string(f.do("GET", keysPrefix+"a/b/c", nil).body))
}

func TestTTL(t *testing.T) {
	f := newFixture(t)

	r := f.do("PUT", key("session"), strings.NewReader("s"), "X-Ignored", "1")
	require.Equal(t, http.StatusCreated, r.code)
	r = f.do("PUT", key("session")+"?ttl=30s", strings.NewReader("s"))
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "30000", r.header.Get(HeaderTTL))

	r = f.do("PUT", key("short")+"?ttl=5", strings.NewReader("x"))
	require.Equal(t, http.StatusCreated, r.code)
	require.Equal(t, "5000", r.header.Get(HeaderTTL), "integer ttl is seconds")

	f.clock.Advance(10 * time.Second)
	r = f.do("GET", key("session"), nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Equal(t, "20000", r.header.Get(HeaderTTL))
	require.Equal(t, http.StatusNotFound, f.do("GET", key("short"), nil).code, "expired on read")

	f.clock.Advance(20 * time.Second)
	require.Equal(t, http.StatusNotFound, f.do("GET", key("session"), nil).code)

	// ttl=0 means no expiry.
	r = f.do("PUT", key("forever")+"?ttl=0", strings.NewReader("x"))
	require.Equal(t, http.StatusCreated, r.code)
	require.Empty(t, r.header.Get(HeaderTTL))
}

func TestItemTooLarge(t *testing.T) {
	const maxItem = 1024
	f := newFixture(t, withStore(func(sc *store.Config) { sc.MaxItemBytes = maxItem }))

	r := f.do("PUT", key("fits"), bytes.NewReader(make([]byte, maxItem)))
	require.Equal(t, http.StatusCreated, r.code)

	// Declared too large: refused before the body is read.
	r = f.do("PUT", key("big"), bytes.NewReader(make([]byte, 10*maxItem)))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	require.Equal(t, "ItemTooLarge", r.errStatus(t))

	// Just over the cap: the store answers.
	r = f.do("PUT", key("big"), bytes.NewReader(make([]byte, maxItem+1)))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)

	// Chunked upload without a length: cut off by the body limit.
	r = f.do("PUT", key("big"), io.MultiReader(bytes.NewReader(make([]byte, 64*maxItem))))
	require.Equal(t, http.StatusRequestEntityTooLarge, r.code)
	require.Equal(t, http.StatusNotFound, f.do("GET", key("big"), nil).code)
}

func TestCapacityExceeded(t *testing.T) {
	f := newFixture(t, withStore(func(sc *store.Config) {
		sc.Eviction = store.NoEviction
		sc.MaxMemoryBytes = 8 << 10
		sc.MaxItemBytes = 1 << 10
	}))
	for i := 0; ; i++ {
		require.Less(t, i, 100, "the node never filled up")
		r := f.do("PUT", key("k"+strings.Repeat("x", i)), bytes.NewReader(make([]byte, 1000)))
		if r.code == http.StatusInsufficientStorage {
			require.Equal(t, "CapacityExceeded", r.errStatus(t))
			break
		}
		require.Equal(t, http.StatusCreated, r.code)
	}
}

func TestAuthentication(t *testing.T) {
	f := newFixture(t, withToken("s3cret-token"))
	noAuth := []string{"Authorization", ""}

	// Probes stay open.
	require.Equal(t, http.StatusOK, f.do("GET", "/healthz", nil, noAuth...).code)
	require.Equal(t, http.StatusOK, f.do("GET", "/readyz", nil, noAuth...).code)

	for _, path := range []string{"/metrics", "/v1/info", key("k")} {
		for _, hdr := range [][]string{noAuth, {"Authorization", "Bearer wrong"}, {"Authorization", "Basic s3cret-token"}} {
			r := f.do("GET", path, nil, hdr...)
			require.Equal(t, http.StatusUnauthorized, r.code, "%s with %q", path, hdr)
			require.Equal(t, "Unauthorized", r.errStatus(t))
			require.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer")
		}
	}
	require.Equal(t, http.StatusUnauthorized, f.do("PUT", key("k"), strings.NewReader("v"), noAuth...).code)
	require.Equal(t, http.StatusNotFound, f.do("GET", key("k"), nil).code, "nothing was written")

	require.Equal(t, http.StatusCreated, f.do("PUT", key("k"), strings.NewReader("v")).code)
	require.Equal(t, http.StatusOK, f.do("GET", key("k"), nil, "Authorization", "bearer s3cret-token").code,
		"the scheme is case-insensitive")
	require.Equal(t, http.StatusOK, f.do("GET", "/v1/info", nil).code)
	r := f.do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, r.code)
	require.Contains(t, string(r.body), `zaris_auth_failures_total{protocol="http"} 10`)
}

func TestReadyz(t *testing.T) {
	f := newFixture(t)
	f.ready.Store(false)
	r := f.do("GET", "/readyz", nil)
	require.Equal(t, http.StatusServiceUnavailable, r.code)
	require.Equal(t, "Unavailable", r.errStatus(t))
	require.Equal(t, http.StatusOK, f.do("GET", "/healthz", nil).code, "alive while not ready")

	f.ready.Store(true)
	r = f.do("GET", "/readyz", nil)
	require.Equal(t, http.StatusOK, r.code)
	require.JSONEq(t, `{"status":"ready"}`, string(r.body))
}

func TestMetricsAfterOps(t *testing.T) {
	f := newFixture(t)
	f.do("PUT", key("a"), strings.NewReader("1"))
	f.do("PUT", key("a"), strings.NewReader("2"), "If-Match", `"7"`)
	f.do("GET", key("a"), nil)
	f.do("GET", key("missing"), nil)
	f.do("DELETE", key("a"), nil)

	r := f.do("GET", "/metrics", nil)
	require.Equal(t, http.StatusOK, r.code)
	body := string(r.body)
	for _, want := range []string{
		`zaris_ops_total{op="put",status="Success"} 1`,
		`zaris_ops_total{op="put",status="Conflict"} 1`,
		`zaris_ops_total{op="get",status="Success"} 1`,
		`zaris_ops_total{op="get",status="NotFound"} 1`,
		`zaris_ops_total{op="delete",status="Success"} 1`,
		`zaris_op_duration_seconds_bucket{op="get",le="`,
		`zaris_connections{protocol="http"}`,
		`zaris_store_items 0`,
		`zaris_memory_used_bytes`,
		`zaris_memory_max_bytes 1.073741824e+09`,
		`zaris_store_puts_total 1`,
		`zaris_store_deletes_total 1`,
	} {
		require.Contains(t, body, want)
	}
}

func TestInfoAndUnknownRoutes(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/info", nil)
	require.Equal(t, http.StatusOK, r.code)
	require.JSONEq(t, `{"node_id":"n1"}`, string(r.body))

	r = f.do("GET", "/nope", nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Equal(t, "NotFound", r.errStatus(t))

	r = f.do("POST", key("k"), strings.NewReader("v"))
	require.Equal(t, http.StatusMethodNotAllowed, r.code)
	require.Equal(t, "BadRequest", r.errStatus(t))
}

func TestWriteBarrier(t *testing.T) {
	var waited atomic.Int32
	var verdict atomic.Uint32 // a kv.Status
	f := newFixture(t, func(_ *store.Config, o *Options) {
		o.WriteBarrier = func(_ context.Context, _ uint16, rev uint64) kv.Status {
			waited.Add(1)
			return kv.Status(verdict.Load())
		}
	})
	verdict.Store(uint32(kv.StatusSuccess))
	r := f.do(http.MethodPut, key("a"), strings.NewReader("v"))
	require.Equal(t, http.StatusCreated, r.code)
	require.EqualValues(t, 1, waited.Load(), "a successful write waits for the barrier")

	// A barrier timeout answers 504: the write was not acknowledged, yet it
	// is applied on this node.
	verdict.Store(uint32(kv.StatusTimeout))
	r = f.do(http.MethodPut, key("b"), strings.NewReader("v"))
	require.Equal(t, http.StatusGatewayTimeout, r.code)
	require.Equal(t, "Timeout", r.errStatus(t))
	require.True(t, f.store.Get("b").OK())
	r = f.do(http.MethodDelete, key("a"), nil)
	require.Equal(t, http.StatusGatewayTimeout, r.code)
	require.EqualValues(t, 3, waited.Load())

	// Failed writes never wait.
	r = f.do(http.MethodDelete, key("absent"), nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.EqualValues(t, 3, waited.Load())
}
