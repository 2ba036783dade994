package middleware

import (
	"github.com/zaris-io/zaris/internal/testenv"
	"github.com/zaris-io/zaris/server/store"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/cache"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/session"
)

var (
	storeSeq atomic.Int64
	hashKey  = []byte("0123456789abcdef0123456789abcdef")
)

// remoteMode makes newClient serve every client from its own native-protocol
// server over TCP instead of an embedded store: TestRemoteBackend re-runs
// the suite that way, through nothing but the public SDK.
var remoteMode bool

// newClientCfg opens a client on a fresh, private store (cfg nil = the
// default store configuration), embedded or — in remote mode — behind a
// real server on a loopback port.
func newClientCfg(t testing.TB, cfg *store.Config) *sdk.Client {
	t.Helper()
	return testenv.Client(t, remoteMode, "middleware", cfg)
}

func newClient(t testing.TB) *sdk.Client { return newClientCfg(t, nil) }

func newCache(t testing.TB) *cache.DistributedCache {
	return cache.New(newClient(t), cache.Options{KeyPrefix: "test:"})
}

func newCacheCfg(t testing.TB, cfg *store.Config) *cache.DistributedCache {
	return cache.New(newClientCfg(t, cfg), cache.Options{KeyPrefix: "test:"})
}

func newSessionStore(t testing.TB, opts session.Options) *session.Store {
	return session.NewStore(newClient(t), opts, hashKey)
}

// do serves one request; kv are request header name/value pairs.
func do(h http.Handler, method, target string, kv ...string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(kv); i += 2 {
		r.Header.Add(kv[i], kv[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, within, what, cond)
}

// fakeClock is a settable clock for ages and freshness.
type fakeClock struct{ ns atomic.Int64 }

func newFakeClock() *fakeClock {
	c := &fakeClock{}
	c.ns.Store(time.Now().UnixNano())
	return c
}
func (c *fakeClock) Now() time.Time          { return time.Unix(0, c.ns.Load()) }
func (c *fakeClock) Advance(d time.Duration) { c.ns.Add(int64(d)) }
