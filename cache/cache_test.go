package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/zaris-io/zaris/internal/testenv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

var storeSeq atomic.Int64

// remoteMode makes newClient serve every client from its own native-protocol
// server over TCP instead of an embedded store: TestRemoteBackend re-runs
// the suite that way, through nothing but the public SDK.
var remoteMode bool

// newClientCfg opens a client on a fresh, private store (cfg nil = the
// default store configuration), embedded or — in remote mode — behind a
// real server on a loopback port.
func newClientCfg(t testing.TB, cfg *store.Config) *sdk.Client {
	t.Helper()
	return testenv.Client(t, remoteMode, "cache", cfg)
}

func newClient(t testing.TB) *sdk.Client { return newClientCfg(t, nil) }

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, within, what, cond)
}

func ttlOf(t *testing.T, c *sdk.Client, key string) time.Duration {
	t.Helper()
	r, err := c.TimeToLive(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() {
		return -1
	}
	return r.TTL
}

func mustGet(t *testing.T, c Cache, key string) []byte {
	t.Helper()
	v, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestResolve(t *testing.T) {
	now := time.Unix(1_000, 0)
	ns := func(d time.Duration) int64 { return now.Add(d).UnixNano() }
	cases := []struct {
		name    string
		opts    EntryOptions
		want    plan
		wantErr string // OptionsError.Field
	}{
		{"no expiration: no ttl", EntryOptions{}, plan{}, ""},
		{"relative becomes ttl and deadline", EntryOptions{AbsoluteExpirationRelativeToNow: time.Minute}, plan{deadline: ns(time.Minute), ttl: time.Minute}, ""},
		{"absolute becomes deadline", EntryOptions{AbsoluteExpiration: now.Add(time.Hour)}, plan{deadline: ns(time.Hour), ttl: time.Hour}, ""},
		{"relative wins over absolute", EntryOptions{AbsoluteExpiration: now.Add(time.Hour), AbsoluteExpirationRelativeToNow: time.Minute}, plan{deadline: ns(time.Minute), ttl: time.Minute}, ""},
		{"sliding alone: ttl = sliding, no deadline", EntryOptions{SlidingExpiration: time.Minute}, plan{sliding: time.Minute, ttl: time.Minute}, ""},
		{"sliding shorter than absolute: ttl = sliding", EntryOptions{SlidingExpiration: time.Minute, AbsoluteExpirationRelativeToNow: time.Hour}, plan{sliding: time.Minute, deadline: ns(time.Hour), ttl: time.Minute}, ""},
		{"sliding longer than absolute is capped (never outlives the deadline)", EntryOptions{SlidingExpiration: time.Hour, AbsoluteExpirationRelativeToNow: time.Minute}, plan{sliding: time.Hour, deadline: ns(time.Minute), ttl: time.Minute}, ""},
		{"negative relative rejected", EntryOptions{AbsoluteExpirationRelativeToNow: -time.Second}, plan{}, "AbsoluteExpirationRelativeToNow"},
		{"negative sliding rejected", EntryOptions{SlidingExpiration: -time.Second}, plan{}, "SlidingExpiration"},
		{"absolute in the past rejected", EntryOptions{AbsoluteExpiration: now.Add(-time.Second)}, plan{}, "AbsoluteExpiration"},
		{"absolute equal to now rejected", EntryOptions{AbsoluteExpiration: now}, plan{}, "AbsoluteExpiration"},
		{"past absolute ignored when relative wins", EntryOptions{AbsoluteExpiration: now.Add(-time.Hour), AbsoluteExpirationRelativeToNow: time.Second}, plan{deadline: ns(time.Second), ttl: time.Second}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolve(tc.opts, now)
			if tc.wantErr != "" {
				var oe *OptionsError
				if !errors.As(err, &oe) || oe.Field != tc.wantErr || !errors.Is(err, ErrInvalidOptions) {
					t.Fatalf("err = %v, want OptionsError on %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("resolve = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

func TestLifetime(t *testing.T) {
	const now = int64(10 * time.Second)
	cases := []struct {
		name     string
		sliding  time.Duration
		deadline int64
		ttl      time.Duration
		expired  bool
	}{
		{"no expiration", 0, 0, 0, false},
		{"sliding only", time.Second, 0, time.Second, false},
		{"deadline only", 0, now + int64(3*time.Second), 3 * time.Second, false},
		{"sliding under the cap", time.Second, now + int64(3*time.Second), time.Second, false},
		{"cap under the sliding window: a slide never passes the deadline", 5 * time.Second, now + int64(3*time.Second), 3 * time.Second, false},
		{"deadline reached", time.Second, now, 0, true},
		{"deadline passed", 0, now - 1, 0, true},
	}
	for _, tc := range cases {
		ttl, exp := lifetime(tc.sliding, tc.deadline, now)
		if ttl != tc.ttl || exp != tc.expired {
			t.Errorf("%s: lifetime = %v,%v; want %v,%v", tc.name, ttl, exp, tc.ttl, tc.expired)
		}
	}
}

func TestEnvelope(t *testing.T) {
	h := header{sliding: 3 * time.Second, deadline: 1234567890123}
	for _, v := range [][]byte{nil, {}, []byte("hello")} {
		b := encodeEntry(h, v)
		gh, gv, err := decodeEntry(b)
		if err != nil || gh != h || !bytes.Equal(gv, v) {
			t.Fatalf("round trip of %q: %+v %q %v", v, gh, gv, err)
		}
	}
	for _, bad := range [][]byte{nil, []byte("plain value"), make([]byte, headerSize)} {
		if _, _, err := decodeEntry(bad); !errors.Is(err, ErrInvalidEntry) {
			t.Fatalf("decode %q: %v", bad, err)
		}
	}
}

func TestGetSetRemove(t *testing.T) {
	ctx := context.Background()
	c := New(newClient(t), Options{})
	if v := mustGet(t, c, "k"); v != nil {
		t.Fatalf("miss must be nil, got %q", v)
	}
	if _, ok, err := c.TryGet(ctx, "k"); ok || err != nil {
		t.Fatalf("TryGet miss = %v, %v", ok, err)
	}
	if err := c.Set(ctx, "k", []byte("v1"), EntryOptions{}); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, c, "k"); string(v) != "v1" {
		t.Fatalf("got %q", v)
	}
	if err := c.Set(ctx, "empty", nil, EntryOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := c.TryGet(ctx, "empty"); !ok || err != nil || v == nil || len(v) != 0 {
		t.Fatalf("empty value hit = %v %v %v (want non-nil empty slice)", v, ok, err)
	}
	if err := c.Remove(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if v := mustGet(t, c, "k"); v != nil {
		t.Fatalf("removed key still there: %q", v)
	}
	if err := c.Remove(ctx, "k"); err != nil {
		t.Fatalf("removing a missing key must not fail: %v", err)
	}
	if err := c.Remove(ctx, "never-existed"); err != nil {
		t.Fatalf("removing a missing key must not fail: %v", err)
	}
	if err := c.Refresh(ctx, "never-existed"); err != nil {
		t.Fatalf("refreshing a missing key must not fail: %v", err)
	}
}

func TestValidationErrors(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	c := New(client, Options{})
	for name, o := range map[string]EntryOptions{
		"AbsoluteExpiration":              {AbsoluteExpiration: time.Now().Add(-time.Minute)},
		"AbsoluteExpirationRelativeToNow": {AbsoluteExpirationRelativeToNow: -time.Second},
		"SlidingExpiration":               {SlidingExpiration: -time.Nanosecond},
	} {
		err := c.Set(ctx, "k", []byte("v"), o)
		var oe *OptionsError
		if !errors.Is(err, ErrInvalidOptions) || !errors.As(err, &oe) || oe.Field != name {
			t.Fatalf("%s: err = %v", name, err)
		}
	}
	if v := mustGet(t, c, "k"); v != nil {
		t.Fatal("an invalid Set wrote the key")
	}
	bad := New(client, Options{DefaultOptions: EntryOptions{SlidingExpiration: -time.Second}})
	if err := bad.Set(ctx, "k", []byte("v"), EntryOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("invalid default options: %v", err)
	}
}

func TestDefaultOptionsApplyToZeroOptions(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	c := New(client, Options{KeyPrefix: "d:", DefaultOptions: EntryOptions{AbsoluteExpirationRelativeToNow: time.Hour}})
	if err := c.Set(ctx, "k", []byte("v"), EntryOptions{}); err != nil {
		t.Fatal(err)
	}
	if ttl := ttlOf(t, client, "d:k"); ttl <= 59*time.Minute || ttl > time.Hour {
		t.Fatalf("default relative expiration not applied: ttl %v", ttl)
	}
	if err := c.Set(ctx, "k2", []byte("v"), EntryOptions{AbsoluteExpirationRelativeToNow: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if ttl := ttlOf(t, client, "d:k2"); ttl > time.Minute {
		t.Fatalf("explicit options must win over defaults: ttl %v", ttl)
	}
}

// The expiration matrix against the real embedded store.
func TestExpirationMatrix(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	c := New(client, Options{KeyPrefix: "m:"})

	t.Run("none: no ttl", func(t *testing.T) {
		c.Set(ctx, "none", []byte("v"), EntryOptions{})
		if ttl := ttlOf(t, client, "m:none"); ttl != 0 {
			t.Fatalf("ttl %v, want none", ttl)
		}
	})
	// The store's coarse clock can lag real time under CPU starvation, which
	// shortens a TTL seen in real time: the checks bound expiry from above
	// and check presence right after Set, never an exact instant.
	expires := func(t *testing.T, key string, o EntryOptions, max time.Duration) {
		if err := c.Set(ctx, key, []byte("v"), o); err != nil {
			t.Fatal(err)
		}
		if ttl := ttlOf(t, client, "m:"+key); ttl <= 0 || ttl > max {
			t.Fatalf("ttl %v, want in (0, %v]", ttl, max)
		}
		if v := mustGet(t, c, key); string(v) != "v" {
			t.Fatalf("not readable right after Set: %q", v)
		}
		eventually(t, 3*time.Second, key+" expires", func() bool { return mustGet(t, c, key) == nil })
	}
	t.Run("relative", func(t *testing.T) {
		expires(t, "rel", EntryOptions{AbsoluteExpirationRelativeToNow: 400 * time.Millisecond}, 400*time.Millisecond)
	})
	t.Run("absolute", func(t *testing.T) {
		expires(t, "abs", EntryOptions{AbsoluteExpiration: time.Now().Add(400 * time.Millisecond)}, 400*time.Millisecond)
	})
	t.Run("relative wins over absolute", func(t *testing.T) {
		expires(t, "both", EntryOptions{AbsoluteExpiration: time.Now().Add(time.Hour), AbsoluteExpirationRelativeToNow: 400 * time.Millisecond}, 400*time.Millisecond)
	})
	t.Run("sliding: Get slides", func(t *testing.T) {
		c.Set(ctx, "slide", []byte("v"), EntryOptions{SlidingExpiration: slideWindow})
		runDown(t, client, "m:slide")
		if v := mustGet(t, c, "slide"); string(v) != "v" {
			t.Fatalf("got %q", v)
		}
		if ttl := ttlOf(t, client, "m:slide"); ttl < slideWindow-100*time.Millisecond {
			t.Fatalf("Get did not slide: ttl %v", ttl)
		}
	})
	t.Run("sliding: Refresh slides", func(t *testing.T) {
		c.Set(ctx, "refresh", []byte("v"), EntryOptions{SlidingExpiration: slideWindow})
		runDown(t, client, "m:refresh")
		if err := c.Refresh(ctx, "refresh"); err != nil {
			t.Fatal(err)
		}
		if ttl := ttlOf(t, client, "m:refresh"); ttl < slideWindow-100*time.Millisecond {
			t.Fatalf("Refresh did not slide: ttl %v", ttl)
		}
	})
	t.Run("sliding: a touched entry outlives its window, an idle one expires", func(t *testing.T) {
		const window = 800 * time.Millisecond
		c.Set(ctx, "alive", []byte("v"), EntryOptions{SlidingExpiration: window})
		start := time.Now()
		tick := time.NewTicker(window / 10) // pacing the touches
		defer tick.Stop()
		for time.Since(start) < 3*window {
			if mustGet(t, c, "alive") == nil {
				t.Fatalf("touched sliding entry expired after %v", time.Since(start))
			}
			<-tick.C
		}
		eventually(t, 3*time.Second, "idle entry expires", func() bool { return ttlOf(t, client, "m:alive") < 0 })
	})
	t.Run("sliding never passes the absolute deadline", func(t *testing.T) {
		start := time.Now()
		c.Set(ctx, "capped", []byte("v"), EntryOptions{SlidingExpiration: 10 * time.Second, AbsoluteExpirationRelativeToNow: 300 * time.Millisecond})
		if ttl := ttlOf(t, client, "m:capped"); ttl > 300*time.Millisecond {
			t.Fatalf("initial ttl %v exceeds the absolute cap", ttl)
		}
		// Keep touching it: every Get and Refresh tries to slide.
		eventually(t, 3*time.Second, "capped entry expires", func() bool {
			c.Refresh(ctx, "capped")
			if ttl := ttlOf(t, client, "m:capped"); ttl > 300*time.Millisecond {
				t.Fatalf("slide extended past the absolute cap: ttl %v", ttl)
			}
			return mustGet(t, c, "capped") == nil
		})
		if el := time.Since(start); el > 3*time.Second { // far below the 10 s sliding window
			t.Fatalf("capped entry lived %v, cap 300ms", el)
		}
	})
	t.Run("Refresh leaves a non-sliding entry alone", func(t *testing.T) {
		c.Set(ctx, "fixed", []byte("v"), EntryOptions{AbsoluteExpirationRelativeToNow: time.Minute})
		before, _ := client.Get(ctx, "m:fixed")
		if err := c.Refresh(ctx, "fixed"); err != nil {
			t.Fatal(err)
		}
		mustGet(t, c, "fixed")
		after, _ := client.Get(ctx, "m:fixed")
		if after.Version != before.Version {
			t.Fatalf("a non-sliding entry was rewritten (version %d -> %d)", before.Version, after.Version)
		}
	})
}

// A slide that read an older version never clobbers a newer Set.
func TestSlideIsConditional(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	c := New(client, Options{})
	c.Set(ctx, "k", []byte("old"), EntryOptions{SlidingExpiration: time.Minute})
	stale, _ := client.Get(ctx, "k")
	c.Set(ctx, "k", []byte("new"), EntryOptions{AbsoluteExpirationRelativeToNow: time.Hour})
	if err := c.slide(ctx, "k", stale, 2*time.Minute); err != nil {
		t.Fatalf("a lost CAS is not an error: %v", err)
	}
	if v := mustGet(t, c, "k"); string(v) != "new" {
		t.Fatalf("slide clobbered a newer write: %q", v)
	}
	if ttl := ttlOf(t, client, "k"); ttl < 59*time.Minute {
		t.Fatalf("slide changed the newer write's ttl: %v", ttl)
	}
}

func TestKeyPrefixIsolation(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	a := New(client, Options{KeyPrefix: "a:"})
	b := New(client, Options{KeyPrefix: "b:"})
	a.Set(ctx, "k", []byte("from a"), EntryOptions{})
	if v := mustGet(t, b, "k"); v != nil {
		t.Fatalf("prefix b sees a's key: %q", v)
	}
	b.Set(ctx, "k", []byte("from b"), EntryOptions{})
	if v := mustGet(t, a, "k"); string(v) != "from a" {
		t.Fatalf("a's value changed: %q", v)
	}
	if r, _ := client.Get(ctx, "a:k"); !r.OK() {
		t.Fatalf("the raw key is not the prefixed key: %v", r.Status)
	}
	b.Remove(ctx, "k")
	if v := mustGet(t, a, "k"); string(v) != "from a" {
		t.Fatalf("b's Remove touched a: %q", v)
	}
}

func TestNotACacheEntry(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	client.Put(ctx, "raw", []byte("written by someone else"), nil)
	c := New(client, Options{})
	if _, err := c.Get(ctx, "raw"); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("err = %v", err)
	}
	if err := c.Refresh(ctx, "raw"); !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("err = %v", err)
	}
}

func TestItemTooLarge(t *testing.T) {
	ctx := context.Background()
	cfg := store.DefaultConfig()
	cfg.MaxItemBytes = 1024
	c := New(newClientCfg(t, &cfg), Options{})
	err := c.Set(ctx, "big", make([]byte, 2048), EntryOptions{})
	if !errors.Is(err, sdk.ErrItemTooLarge) {
		t.Fatalf("err = %v, want sdk.ErrItemTooLarge", err)
	}
	// The 18-byte header counts against the cap.
	if err := c.Set(ctx, "edge", make([]byte, 1024-headerSize), EntryOptions{}); err != nil {
		t.Fatalf("value that fits with its header: %v", err)
	}
	if err := c.Set(ctx, "over", make([]byte, 1024-headerSize+1), EntryOptions{}); !errors.Is(err, sdk.ErrItemTooLarge) {
		t.Fatalf("value one byte over with its header: %v", err)
	}
}

func TestGetMany(t *testing.T) {
	ctx := context.Background()
	client := newClient(t)
	c := New(client, Options{KeyPrefix: "gm:"})
	c.Set(ctx, "a", []byte("A"), EntryOptions{})
	c.Set(ctx, "s", []byte("S"), EntryOptions{SlidingExpiration: slideWindow})
	runDown(t, client, "gm:s")
	vs, err := c.GetMany(ctx, []string{"a", "missing", "s"})
	if err != nil {
		t.Fatal(err)
	}
	if string(vs[0]) != "A" || vs[1] != nil || string(vs[2]) != "S" {
		t.Fatalf("GetMany = %q", vs)
	}
	if ttl := ttlOf(t, client, "gm:s"); ttl < slideWindow-100*time.Millisecond {
		t.Fatalf("GetMany did not slide: %v", ttl)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	c := New(newClient(t), Options{})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				key := fmt.Sprintf("k%d", i%5)
				switch i % 4 {
				case 0:
					c.Set(ctx, key, []byte{byte(g)}, EntryOptions{SlidingExpiration: time.Minute, AbsoluteExpirationRelativeToNow: time.Hour})
				case 1:
					if _, err := c.Get(ctx, key); err != nil {
						t.Error(err)
					}
				case 2:
					if err := c.Refresh(ctx, key); err != nil {
						t.Error(err)
					}
				case 3:
					if err := c.Remove(ctx, key); err != nil {
						t.Error(err)
					}
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestProvider(t *testing.T) {
	ctx := context.Background()
	p := NewProvider()
	if _, err := p.Default(); !errors.Is(err, ErrNoDefault) {
		t.Fatalf("empty provider default: %v", err)
	}
	client := newClient(t)
	first, err := p.AddClient("sessions", client, Options{KeyPrefix: "s:"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.AddClient("catalog", client, Options{KeyPrefix: "c:"}, false); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.Default(); d != Cache(first) {
		t.Fatal("the first cache added must be the default")
	}
	if _, err := p.AddClient("catalog", client, Options{}, false); !errors.Is(err, ErrDuplicateCache) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := p.Cache("nope"); !errors.Is(err, ErrUnknownCache) {
		t.Fatalf("unknown: %v", err)
	}
	other := New(client, Options{KeyPrefix: "o:"})
	if err := p.Add("other", other, true); err != nil {
		t.Fatal(err)
	}
	if d, _ := p.Default(); d != Cache(other) || p.DefaultName() != "other" {
		t.Fatal("setAsDefault must move the default")
	}
	if got := p.Names(); strings.Join(got, ",") != "sessions,catalog,other" {
		t.Fatalf("names %v", got)
	}
	// Named caches are isolated by their prefixes.
	cat, _ := p.Cache("catalog")
	cat.Set(ctx, "k", []byte("catalog"), EntryOptions{})
	if v := mustGet(t, first, "k"); v != nil {
		t.Fatalf("named caches share keys: %q", v)
	}
	if v := mustGet(t, cat, "k"); string(v) != "catalog" {
		t.Fatalf("got %q", v)
	}
}

func BenchmarkGetHit(b *testing.B) {
	ctx := context.Background()
	c := New(newClient(b), Options{KeyPrefix: "bench:"})
	c.Set(ctx, "k", make([]byte, 256), EntryOptions{AbsoluteExpirationRelativeToNow: time.Hour})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v, _ := c.Get(ctx, "k"); v == nil {
			b.Fatal("miss")
		}
	}
}

func BenchmarkGetHitSliding(b *testing.B) {
	ctx := context.Background()
	c := New(newClient(b), Options{KeyPrefix: "bench:"})
	c.Set(ctx, "k", make([]byte, 256), EntryOptions{SlidingExpiration: time.Hour})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if v, _ := c.Get(ctx, "k"); v == nil {
			b.Fatal("miss")
		}
	}
}

func BenchmarkGetHitParallel(b *testing.B) {
	ctx := context.Background()
	c := New(newClient(b), Options{KeyPrefix: "bench:"})
	for i := 0; i < 64; i++ {
		c.Set(ctx, fmt.Sprint("k", i), make([]byte, 256), EntryOptions{})
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if v, _ := c.Get(ctx, fmt.Sprint("k", i%64)); v == nil {
				b.Fatal("miss")
			}
			i++
		}
	})
}

func BenchmarkSet(b *testing.B) {
	ctx := context.Background()
	c := New(newClient(b), Options{KeyPrefix: "bench:"})
	v := make([]byte, 256)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.Set(ctx, "k", v, EntryOptions{AbsoluteExpirationRelativeToNow: time.Hour}); err != nil {
			b.Fatal(err)
		}
	}
}

// Random operations against a plain-map model (STYLE 6).
func TestRandomAgainstModel(t *testing.T) {
	ctx := context.Background()
	c := New(newClient(t), Options{KeyPrefix: "model:"})
	model := map[string][]byte{}
	rng := rand.New(rand.NewPCG(42, 7))
	for i := 0; i < 3000; i++ {
		key := fmt.Sprint("k", rng.IntN(16))
		switch rng.IntN(4) {
		case 0, 1:
			v := []byte(fmt.Sprint(i))
			opts := EntryOptions{}
			if rng.IntN(2) == 0 {
				opts.SlidingExpiration = time.Hour
			}
			if err := c.Set(ctx, key, v, opts); err != nil {
				t.Fatal(err)
			}
			model[key] = v
		case 2:
			if err := c.Remove(ctx, key); err != nil {
				t.Fatal(err)
			}
			delete(model, key)
		case 3:
			if err := c.Refresh(ctx, key); err != nil {
				t.Fatal(err)
			}
		}
		probe := fmt.Sprint("k", rng.IntN(16))
		got, ok, err := c.TryGet(ctx, probe)
		want, wantOK := model[probe]
		if err != nil || ok != wantOK || !bytes.Equal(got, want) {
			t.Fatalf("op %d: Get(%s) = %q,%v,%v; model %q,%v", i, probe, got, ok, err, want, wantOK)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	f.Add(encodeEntry(header{sliding: time.Second, deadline: 99}, []byte("v")))
	f.Add([]byte("plain"))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, v, err := decodeEntry(b)
		if err != nil {
			return
		}
		if h.sliding < 0 || h.deadline < 0 {
			t.Fatalf("negative header accepted: %+v", h)
		}
		if again := encodeEntry(h, v); !bytes.Equal(again, b) {
			t.Fatal("decode/encode is not the identity")
		}
	})
}

// TestRemoteBackend runs the suite again with every client behind a real
// native-protocol server over TCP: the cache uses only the public SDK, so it
// must behave the same on both backends.
func TestRemoteBackend(t *testing.T) {
	remoteMode = true
	defer func() { remoteMode = false }()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"GetSetRemove", TestGetSetRemove},
		{"ValidationErrors", TestValidationErrors},
		{"DefaultOptions", TestDefaultOptionsApplyToZeroOptions},
		{"ExpirationMatrix", TestExpirationMatrix},
		{"SlideIsConditional", TestSlideIsConditional},
		{"KeyPrefixIsolation", TestKeyPrefixIsolation},
		{"NotACacheEntry", TestNotACacheEntry},
		{"ItemTooLarge", TestItemTooLarge},
		{"GetMany", TestGetMany},
		{"ConcurrentUse", TestConcurrentUse},
		{"Provider", TestProvider},
		{"RandomAgainstModel", TestRandomAgainstModel},
	} {
		t.Run(tc.name, tc.test)
	}
}

// slideWindow is the sliding window of the tests that watch a slide: long
// enough that a store clock lagging under CPU starvation (the coarse clock
// can fall tens to hundreds of milliseconds behind) does not expire the key
// while its TTL is watched.
const slideWindow = time.Second

// runDown waits until key's TTL has dropped 300 ms below slideWindow, so
// that a slide is visible; the key vanishing meanwhile fails the test.
func runDown(t *testing.T, c *sdk.Client, key string) {
	t.Helper()
	eventually(t, 5*time.Second, "the ttl of "+key+" runs down", func() bool {
		d := ttlOf(t, c, key)
		if d < 0 {
			t.Fatalf("%s vanished while its ttl ran down", key)
		}
		return d < slideWindow-300*time.Millisecond
	})
}
