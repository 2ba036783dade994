package middleware

import (
	"context"
	"fmt"
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

func newClient(t testing.TB, opts ...sdk.Option) *sdk.Client {
	t.Helper()
	c, err := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/middleware-test-%d", storeSeq.Add(1)), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func newCache(t testing.TB, opts ...sdk.Option) *cache.DistributedCache {
	return cache.New(newClient(t, opts...), cache.Options{KeyPrefix: "test:"})
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
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(time.Millisecond) // poll interval, not synchronisation
	}
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
