package session

import (
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"github.com/zaris-io/zaris/internal/testenv"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/securecookie"
	"github.com/gorilla/sessions"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/store"
)

var (
	hashKey  = []byte("0123456789abcdef0123456789abcdef")
	blockKey = []byte("fedcba9876543210")
	otherKey = []byte("another-hash-key-another-hash-ke")
	storeSeq atomic.Int64
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
	return testenv.Client(t, remoteMode, "session", cfg)
}

func newClient(t testing.TB) *sdk.Client { return newClientCfg(t, nil) }

func newStore(t testing.TB, opts Options, keys ...[]byte) (*Store, *sdk.Client) {
	t.Helper()
	c := newClient(t)
	if len(keys) == 0 {
		keys = [][]byte{hashKey, blockKey}
	}
	return NewStore(c, opts, keys...), c
}

func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, within, what, cond)
}

// request builds a GET carrying the cookies a previous response set.
func request(from *httptest.ResponseRecorder) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if from != nil {
		for _, c := range from.Result().Cookies() {
			r.AddCookie(c)
		}
	}
	return r
}

func withCookie(name, value string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.AddCookie(&http.Cookie{Name: name, Value: value})
	return r
}

func sessionCookie(t *testing.T, rec *httptest.ResponseRecorder, name string) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func exists(t *testing.T, c *sdk.Client, key string) bool {
	t.Helper()
	r, err := c.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return r.OK()
}

func ttl(t *testing.T, c *sdk.Client, key string) time.Duration {
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

// saveNew writes a session holding values and returns the response that
// carries its cookie.
func saveNew(t *testing.T, s *Store, values map[string]any) (*httptest.ResponseRecorder, *sessions.Session) {
	t.Helper()
	r := request(nil)
	sess, err := s.Get(r, s.Name())
	if err != nil || !sess.IsNew {
		t.Fatalf("fresh request: %v %v", sess, err)
	}
	for k, v := range values {
		sess.Values[k] = v
	}
	rec := httptest.NewRecorder()
	if err := s.Save(r, rec, sess); err != nil {
		t.Fatal(err)
	}
	return rec, sess
}

func TestLifetime(t *testing.T) {
	const now = int64(100 * time.Second)
	cases := []struct {
		name           string
		idle, absolute time.Duration
		created        int64
		ttl            time.Duration
		ok             bool
	}{
		{"no cap: idle", time.Minute, -1, now, time.Minute, true},
		{"cap far: idle", time.Minute, time.Hour, now, time.Minute, true},
		{"cap near: the cap (a slide never passes it)", time.Minute, time.Hour, now - int64(time.Hour) + int64(time.Second), time.Second, true},
		{"cap reached: expired", time.Minute, time.Hour, now - int64(time.Hour), 0, false},
		{"cap passed: expired", time.Minute, time.Hour, now - 2*int64(time.Hour), 0, false},
	}
	for _, tc := range cases {
		ttl, ok := lifetime(tc.idle, tc.absolute, tc.created, now)
		if ttl != tc.ttl || ok != tc.ok {
			t.Errorf("%s: lifetime = %v,%v; want %v,%v", tc.name, ttl, ok, tc.ttl, tc.ok)
		}
	}
}

func TestIDs(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 1000; i++ {
		id := newID()
		if !validID(id) || seen[id] {
			t.Fatalf("bad or repeated id %q", id)
		}
		seen[id] = true
	}
	if len(newID()) != 43 {
		t.Fatal("a 256-bit id is 43 base64url characters")
	}
	for _, bad := range []string{"", "short", strings.Repeat("a", 42), strings.Repeat("a", 44), strings.Repeat("a", 42) + "/", strings.Repeat("a", 42) + ":"} {
		if validID(bad) {
			t.Fatalf("validID(%q)", bad)
		}
	}
}

func TestRecord(t *testing.T) {
	b := encodeRecord(12345, []byte("payload"))
	c, p, err := decodeRecord(b)
	if err != nil || c != 12345 || string(p) != "payload" {
		t.Fatalf("%d %q %v", c, p, err)
	}
	for _, bad := range [][]byte{nil, []byte("ZS"), encodeRecord(0, nil), []byte("plain value here")} {
		if _, _, err := decodeRecord(bad); !errors.Is(err, ErrInvalidRecord) {
			t.Fatalf("decode %q: %v", bad, err)
		}
	}
}

func TestOptionsValidation(t *testing.T) {
	c := newClient(t)
	for name, o := range map[string]Options{
		"bad cookie name":              {Name: "a b"},
		"negative idle":                {IdleTimeout: -time.Second},
		"negative max age":             {MaxAge: -1},
		"SameSite=None without Secure": {SameSite: http.SameSiteNoneMode},
	} {
		if _, err := New(c, o, hashKey); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
	if _, err := New(c, Options{}); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("no keys: %v", err)
	}
	if _, err := New(c, Options{}, []byte{}); !errors.Is(err, ErrNoKeys) {
		t.Fatalf("empty key: %v", err)
	}
	if _, err := New(c, Options{SameSite: http.SameSiteNoneMode, Secure: true}, hashKey); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("NewStore must panic on a missing key")
			}
		}()
		NewStore(c, Options{})
	}()
	d := DefaultOptions()
	if d.Name != DefaultName || d.IdleTimeout != DefaultIdleTimeout || d.AbsoluteTimeout != DefaultAbsoluteTimeout || d.SameSite != http.SameSiteLaxMode || d.Path != "/" {
		t.Fatalf("defaults %+v", d)
	}
}

func TestSaveAndLoad(t *testing.T) {
	s, client := newStore(t, Options{})
	rec, first := saveNew(t, s, map[string]any{"user": "alice", "n": 1})
	if !validID(first.ID) || first.IsNew {
		t.Fatalf("saved session: id %q new %v", first.ID, first.IsNew)
	}
	if !exists(t, client, DefaultKeyPrefix+first.ID) {
		t.Fatal("session not in the store")
	}
	c := sessionCookie(t, rec, DefaultName)
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Secure || c.MaxAge != 0 {
		t.Fatalf("cookie %+v", c)
	}
	if strings.Contains(c.Value, first.ID) {
		t.Fatal("the cookie must not carry the raw id")
	}
	if ttl := ttl(t, client, DefaultKeyPrefix+first.ID); ttl <= 29*time.Minute || ttl > 30*time.Minute {
		t.Fatalf("ttl %v, want the 30 min idle timeout", ttl)
	}

	r := request(rec)
	sess, err := s.Get(r, DefaultName)
	if err != nil || sess.IsNew || sess.ID != first.ID || sess.Values["user"] != "alice" || sess.Values["n"] != 1 {
		t.Fatalf("loaded %+v %v", sess, err)
	}
	again, _ := s.Get(r, DefaultName)
	if again != sess {
		t.Fatal("Get must return the same session within a request")
	}
	if st := s.Stats(); st.Loads != 1 || st.Writes != 1 {
		t.Fatalf("stats %+v", st)
	}
}

type profile struct {
	Name  string
	Roles []string
}

func TestRegisteredTypeRoundTrip(t *testing.T) {
	gob.Register(profile{})
	s, _ := newStore(t, Options{})
	rec, _ := saveNew(t, s, map[string]any{"p": profile{"bob", []string{"admin"}}})
	sess, err := s.Get(request(rec), DefaultName)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := sess.Values["p"].(profile); !ok || p.Name != "bob" || p.Roles[0] != "admin" {
		t.Fatalf("got %#v", sess.Values["p"])
	}
}

func TestEmptySessionNeverWritten(t *testing.T) {
	s, _ := newStore(t, Options{})
	r := request(nil)
	sess, _ := s.Get(r, DefaultName)
	rec := httptest.NewRecorder()
	if err := s.Save(r, rec, sess); err != nil {
		t.Fatal(err)
	}
	if len(rec.Result().Cookies()) != 0 || sess.ID != "" {
		t.Fatalf("an empty new session set a cookie or got an id: %v %q", rec.Result().Cookies(), sess.ID)
	}
	// Through a managed scope too: loaded, touched and emptied again.
	r2, sc := s.Attach(request(nil))
	sess2, _ := sc.Session()
	sess2.Values["tmp"] = 1
	delete(sess2.Values, "tmp")
	rec2 := httptest.NewRecorder()
	if err := sc.Commit(rec2); err != nil {
		t.Fatal(err)
	}
	_ = r2
	if len(rec2.Result().Cookies()) != 0 {
		t.Fatal("commit of an empty session set a cookie")
	}
	if st := s.Stats(); st.Writes != 0 {
		t.Fatalf("an empty session was written: %+v", st)
	}
}

// A client cannot choose its session id.
func TestUnknownIDNeverAdopted(t *testing.T) {
	s, client := newStore(t, Options{})
	chosen := newID()
	enc, err := s.codecs[0].Encode(DefaultName, []byte(chosen)) // validly signed
	if err != nil {
		t.Fatal(err)
	}
	r := withCookie(DefaultName, enc)
	sess, err := s.Get(r, DefaultName)
	if err != nil || !sess.IsNew || sess.ID != "" {
		t.Fatalf("unknown id adopted: %+v %v", sess, err)
	}
	sess.Values["x"] = 1
	rec := httptest.NewRecorder()
	if err := s.Save(r, rec, sess); err != nil {
		t.Fatal(err)
	}
	if sess.ID == chosen || exists(t, client, DefaultKeyPrefix+chosen) {
		t.Fatal("the client-chosen id was used")
	}
	if !exists(t, client, DefaultKeyPrefix+sess.ID) {
		t.Fatal("the new id was not written")
	}
	if s.Stats().Unknown != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
	// A hand-built session with an id set by code is not trusted either.
	hand := sessions.NewSession(s, DefaultName)
	hand.ID = chosen
	hand.Values["y"] = 2
	if err := s.Save(request(nil), httptest.NewRecorder(), hand); err != nil {
		t.Fatal(err)
	}
	if hand.ID == chosen || exists(t, client, DefaultKeyPrefix+chosen) {
		t.Fatal("an id the store never issued was written")
	}
}

func TestBadCookiesYieldNewSession(t *testing.T) {
	s, _ := newStore(t, Options{})
	rec, saved := saveNew(t, s, map[string]any{"k": "v"})
	good := sessionCookie(t, rec, DefaultName).Value
	other := NewStore(newClient(t), Options{}, otherKey)
	foreign, _ := other.codecs[0].Encode(DefaultName, []byte(saved.ID)) // right id, wrong key
	flip := []byte(good)
	flip[len(flip)/2] ^= 1
	for name, value := range map[string]string{
		"tampered":        string(flip),
		"truncated":       good[:len(good)-3],
		"garbage":         "not-a-cookie",
		"signed by other": foreign,
	} {
		sess, err := s.Get(withCookie(DefaultName, value), DefaultName)
		if err != nil || !sess.IsNew || sess.ID != "" || len(sess.Values) != 0 {
			t.Errorf("%s: got %+v %v, want a new empty session and no error", name, sess, err)
		}
	}
	if s.Stats().Rejected != 4 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

func TestKeyRotation(t *testing.T) {
	client := newClient(t)
	oldStore := NewStore(client, Options{}, otherKey)
	rec, saved := saveNew(t, oldStore, map[string]any{"k": "v"})

	rotated := NewStore(client, Options{}, hashKey, nil, otherKey, nil) // new key first
	r, sc := rotated.Attach(request(rec))
	sess, err := sc.Session()
	if err != nil || sess.ID != saved.ID || sess.Values["k"] != "v" {
		t.Fatalf("old-key cookie not accepted during rotation: %+v %v", sess, err)
	}
	_ = r
	out := httptest.NewRecorder()
	if err := sc.Commit(out); err != nil {
		t.Fatal(err)
	}
	c := sessionCookie(t, out, DefaultName)
	if c == nil {
		t.Fatal("cookie signed with an old key was not re-issued")
	}
	newOnly := NewStore(client, Options{}, hashKey)
	if sess, _ := newOnly.Get(withCookie(DefaultName, c.Value), DefaultName); sess.ID != saved.ID {
		t.Fatal("re-issued cookie is not signed with the new key")
	}
}

func TestMaxAgeNegativeDeletes(t *testing.T) {
	s, client := newStore(t, Options{})
	rec, saved := saveNew(t, s, map[string]any{"k": "v"})
	r := request(rec)
	sess, _ := s.Get(r, DefaultName)
	sess.Options.MaxAge = -1
	out := httptest.NewRecorder()
	if err := s.Save(r, out, sess); err != nil {
		t.Fatal(err)
	}
	if exists(t, client, DefaultKeyPrefix+saved.ID) {
		t.Fatal("session still in the store")
	}
	if c := sessionCookie(t, out, DefaultName); c == nil || c.MaxAge >= 0 {
		t.Fatalf("cookie not expired: %+v", c)
	}
	if len(sess.Values) != 0 || sess.ID != "" {
		t.Fatal("a deleted session keeps its data or id")
	}
	if again, _ := s.Get(request(rec), DefaultName); !again.IsNew {
		t.Fatal("the old cookie still finds a session")
	}
	// Destroy is the same, through a scope commit as well.
	rec2, saved2 := saveNew(t, s, map[string]any{"k": "v"})
	r2 := request(rec2)
	sess2, _ := s.Get(r2, DefaultName)
	if err := s.Destroy(r2, httptest.NewRecorder(), sess2); err != nil {
		t.Fatal(err)
	}
	if exists(t, client, DefaultKeyPrefix+saved2.ID) {
		t.Fatal("Destroy left the session")
	}
	if s.Stats().Deletes != 2 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

func TestSlidingRefresh(t *testing.T) {
	s, client := newStore(t, Options{IdleTimeout: slideWindow})
	rec, saved := saveNew(t, s, map[string]any{"k": "v"})
	key := DefaultKeyPrefix + saved.ID

	t.Run("a plain gorilla load slides", func(t *testing.T) {
		runDown(t, client, key)
		if sess, _ := s.Get(request(rec), DefaultName); sess.ID != saved.ID {
			t.Fatal("session lost")
		}
		if got := ttl(t, client, key); got < slideWindow-100*time.Millisecond {
			t.Fatalf("load did not slide: ttl %v", got)
		}
	})
	t.Run("a managed load slides at Commit, once", func(t *testing.T) {
		runDown(t, client, key)
		before := s.Stats().Refreshes
		_, sc := s.Attach(request(rec))
		if sess, _ := sc.Session(); sess.Values["k"] != "v" {
			t.Fatal("session lost")
		}
		if s.Stats().Refreshes != before {
			t.Fatal("a managed load refreshed before Commit")
		}
		out := httptest.NewRecorder()
		if err := sc.Commit(out); err != nil {
			t.Fatal(err)
		}
		if got := ttl(t, client, key); got < slideWindow-100*time.Millisecond {
			t.Fatalf("commit did not slide: ttl %v", got)
		}
		if len(out.Result().Cookies()) != 0 {
			t.Fatal("a refresh of a browser-session cookie must not re-send it")
		}
		sc.Commit(httptest.NewRecorder())
		if got := s.Stats().Refreshes - before; got != 1 {
			t.Fatalf("%d refreshes, want 1", got)
		}
	})
	t.Run("Store.Refresh slides", func(t *testing.T) {
		runDown(t, client, key)
		if err := s.Refresh(context.Background(), saved); err != nil {
			t.Fatal(err)
		}
		if got := ttl(t, client, key); got < slideWindow-100*time.Millisecond {
			t.Fatalf("Refresh did not slide: ttl %v", got)
		}
	})
	t.Run("an idle session expires and is not adopted back", func(t *testing.T) {
		eventually(t, 5*time.Second, "idle session expires", func() bool { return !exists(t, client, key) })
		sess, err := s.Get(request(rec), DefaultName)
		if err != nil || !sess.IsNew || sess.ID != "" {
			t.Fatalf("expired session: %+v %v", sess, err)
		}
	})
}

func TestAbsoluteCap(t *testing.T) {
	t.Run("real time: refreshes never pass the cap", func(t *testing.T) {
		s, client := newStore(t, Options{IdleTimeout: 10 * time.Second, AbsoluteTimeout: 300 * time.Millisecond})
		rec, saved := saveNew(t, s, map[string]any{"k": "v"})
		key := DefaultKeyPrefix + saved.ID
		if got := ttl(t, client, key); got > 300*time.Millisecond {
			t.Fatalf("initial ttl %v exceeds the cap", got)
		}
		start := time.Now()
		eventually(t, 3*time.Second, "capped session ends", func() bool {
			sess, _ := s.Get(request(rec), DefaultName) // each load refreshes
			if got := ttl(t, client, key); got > 300*time.Millisecond {
				t.Fatalf("refresh extended past the cap: %v", got)
			}
			return sess.IsNew
		})
		if el := time.Since(start); el > 3*time.Second { // far below the 10 s idle timeout
			t.Fatalf("capped session lived %v", el)
		}
	})
	t.Run("injected clock: a session past its cap is dropped at load", func(t *testing.T) {
		var now atomic.Int64
		now.Store(time.Now().UnixNano())
		clock := func() time.Time { return time.Unix(0, now.Load()) }
		s, client := newStore(t, Options{IdleTimeout: time.Hour, AbsoluteTimeout: 2 * time.Hour, Now: clock})
		rec, saved := saveNew(t, s, map[string]any{"k": "v"})
		now.Add(int64(90 * time.Minute))
		if sess, _ := s.Get(request(rec), DefaultName); sess.ID != saved.ID {
			t.Fatal("session dropped before its cap")
		}
		if got := ttl(t, client, DefaultKeyPrefix+saved.ID); got > 31*time.Minute {
			t.Fatalf("refresh near the cap: ttl %v, want ≤ 30 min left", got)
		}
		now.Add(int64(31 * time.Minute))
		sess, err := s.Get(request(rec), DefaultName)
		if err != nil || !sess.IsNew {
			t.Fatalf("session past its cap was loaded: %+v %v", sess, err)
		}
		if exists(t, client, DefaultKeyPrefix+saved.ID) || s.Stats().Expired != 1 {
			t.Fatalf("session past its cap not deleted: %+v", s.Stats())
		}
	})
	t.Run("injected clock: Save past the cap deletes", func(t *testing.T) {
		var now atomic.Int64
		now.Store(time.Now().UnixNano())
		clock := func() time.Time { return time.Unix(0, now.Load()) }
		s, client := newStore(t, Options{IdleTimeout: time.Hour, AbsoluteTimeout: 2 * time.Hour, Now: clock})
		rec, saved := saveNew(t, s, map[string]any{"k": "v"})
		r := request(rec)
		sess, _ := s.Get(r, DefaultName)
		now.Add(int64(3 * time.Hour)) // the request outlived the cap
		sess.Values["k"] = "w"
		if err := s.Save(r, httptest.NewRecorder(), sess); !errors.Is(err, ErrExpired) {
			t.Fatalf("err = %v", err)
		}
		if exists(t, client, DefaultKeyPrefix+saved.ID) {
			t.Fatal("expired session written")
		}
	})
}

func TestRegenerate(t *testing.T) {
	s, client := newStore(t, Options{})
	rec, saved := saveNew(t, s, map[string]any{"cart": 3})
	r := request(rec)
	sess, _ := s.Get(r, DefaultName)
	sess.Values["user"] = "alice"
	out := httptest.NewRecorder()
	if err := s.Regenerate(r, out, sess); err != nil {
		t.Fatal(err)
	}
	if sess.ID == saved.ID || !validID(sess.ID) {
		t.Fatalf("id not regenerated: %q", sess.ID)
	}
	if exists(t, client, DefaultKeyPrefix+saved.ID) {
		t.Fatal("old id still valid after regeneration")
	}
	if old, _ := s.Get(request(rec), DefaultName); !old.IsNew {
		t.Fatal("the old cookie still opens the session")
	}
	next, _ := s.Get(request(out), DefaultName)
	if next.ID != sess.ID || next.Values["cart"] != 3 || next.Values["user"] != "alice" {
		t.Fatalf("data not carried to the new id: %+v", next)
	}
	// Regenerating a brand-new empty session just issues an id.
	r2 := request(nil)
	fresh, _ := s.Get(r2, DefaultName)
	if err := s.Regenerate(r2, httptest.NewRecorder(), fresh); err != nil || !exists(t, client, DefaultKeyPrefix+fresh.ID) {
		t.Fatalf("regenerate new session: %v", err)
	}
	if s.Stats().Regenerations != 2 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

func TestCommitWritesOnlyChanges(t *testing.T) {
	s, _ := newStore(t, Options{})
	values := map[string]any{}
	for i := 0; i < 20; i++ { // many keys: gob's map order varies between encodings
		values[fmt.Sprint("k", i)] = i
	}
	rec, _ := saveNew(t, s, values)
	base := s.Stats()

	_, sc := s.Attach(request(rec))
	sess, _ := sc.Session()
	_ = sess.Values["k3"] // read only
	out := httptest.NewRecorder()
	if err := sc.Commit(out); err != nil {
		t.Fatal(err)
	}
	st := s.Stats()
	if st.Writes != base.Writes || st.Refreshes != base.Refreshes+1 || len(out.Result().Cookies()) != 0 {
		t.Fatalf("read-only request: writes %d->%d refreshes %d->%d cookies %v", base.Writes, st.Writes, base.Refreshes, st.Refreshes, out.Result().Cookies())
	}

	_, sc = s.Attach(request(rec))
	sess, _ = sc.Session()
	sess.Values["k3"] = 33
	out = httptest.NewRecorder()
	if err := sc.Commit(out); err != nil {
		t.Fatal(err)
	}
	if s.Stats().Writes != base.Writes+1 || sessionCookie(t, out, DefaultName) == nil {
		t.Fatal("a modified session was not saved with its cookie")
	}
	// A second commit after the handler saves only what changed since.
	before := s.Stats().Writes
	sc.Commit(httptest.NewRecorder())
	if s.Stats().Writes != before {
		t.Fatal("a second commit rewrote an unchanged session")
	}
	sess.Values["late"] = true
	sc.Commit(httptest.NewRecorder())
	if s.Stats().Writes != before+1 {
		t.Fatal("a change after the first commit was lost")
	}

	// No load: no I/O at all.
	loads := s.Stats().Loads
	_, sc = s.Attach(request(rec))
	sc.Commit(httptest.NewRecorder())
	if s.Stats().Loads != loads {
		t.Fatal("commit loaded a session nobody asked for")
	}
}

func TestCookieOptions(t *testing.T) {
	s, client := newStore(t, Options{Name: "sid", Path: "/app", Domain: "example.com", Secure: true, DisableHTTPOnly: true, SameSite: http.SameSiteStrictMode, MaxAge: 3600, KeyPrefix: "app:sess:"})
	rec, saved := saveNew(t, s, map[string]any{"k": "v"})
	c := sessionCookie(t, rec, "sid")
	if c == nil || c.Path != "/app" || c.Domain != "example.com" || !c.Secure || c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.MaxAge != 3600 {
		t.Fatalf("cookie %+v", c)
	}
	if !exists(t, client, "app:sess:"+saved.ID) {
		t.Fatal("key prefix not applied")
	}
	// With MaxAge > 0 a refresh re-sends the cookie, sliding the browser's expiry.
	_, sc := s.Attach(request(rec))
	sc.Session()
	out := httptest.NewRecorder()
	sc.Commit(out)
	if sessionCookie(t, out, "sid") == nil {
		t.Fatal("persistent cookie not re-sent on refresh")
	}
}

func TestLoadFailureIsReportedAndNotOverwritten(t *testing.T) {
	client := newClient(t)
	s := NewStore(client, Options{}, hashKey)
	rec, _ := saveNew(t, s, map[string]any{"k": "v"})
	broken, _ := sdk.Connect(context.Background(), fmt.Sprintf("zaris://inproc/session-broken-%d", storeSeq.Add(1)))
	broken.Close()
	bs := NewStore(broken, Options{}, hashKey)
	_, sc := bs.Attach(request(rec))
	sess, err := sc.Session()
	if !errors.Is(err, sdk.ErrClosed) || sess == nil || !sess.IsNew {
		t.Fatalf("load on a closed client: %+v %v", sess, err)
	}
	sess.Values["x"] = 1
	out := httptest.NewRecorder()
	if err := sc.Commit(out); err != nil || len(out.Result().Cookies()) != 0 {
		t.Fatalf("commit after a failed load replaced the session: %v %v", err, out.Result().Cookies())
	}
}

func TestValuesTooLarge(t *testing.T) {
	cfg := store.DefaultConfig()
	cfg.MaxItemBytes = 1024
	s := NewStore(newClientCfg(t, &cfg), Options{}, hashKey)
	r := request(nil)
	sess, _ := s.Get(r, DefaultName)
	sess.Values["blob"] = strings.Repeat("x", 4096)
	err := s.Save(r, httptest.NewRecorder(), sess)
	if !errors.Is(err, sdk.ErrItemTooLarge) {
		t.Fatalf("err = %v, want sdk.ErrItemTooLarge", err)
	}
}

func TestEncryptedCookie(t *testing.T) {
	s, _ := newStore(t, Options{}, hashKey, blockKey)
	rec, saved := saveNew(t, s, map[string]any{"k": "v"})
	c := sessionCookie(t, rec, DefaultName)
	var raw []byte
	if err := securecookie.New(hashKey, nil).SetSerializer(securecookie.NopEncoder{}).Decode(DefaultName, c.Value, &raw); err == nil && string(raw) == saved.ID {
		t.Fatal("with a block key the id must be encrypted")
	}
}

func TestConcurrentRequests(t *testing.T) {
	s, _ := newStore(t, Options{})
	rec, saved := saveNew(t, s, map[string]any{"n": 0})
	cookies := rec.Result().Cookies()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				r := httptest.NewRequest(http.MethodGet, "/", nil)
				r.AddCookie(cookies[0])
				_, sc := s.Attach(r)
				sess, err := sc.Session()
				if err != nil || sess.ID != saved.ID {
					t.Errorf("load: %v %q", err, sess.ID)
					return
				}
				if j%2 == 0 {
					sess.Values["n"] = i*100 + j
				}
				if err := sc.Commit(httptest.NewRecorder()); err != nil {
					t.Error(err)
				}
			}
		}(i)
	}
	wg.Wait()
}

func TestObserveLoads(t *testing.T) {
	s, _ := newStore(t, Options{})
	var outer, inner atomic.Int64
	r := request(nil)
	ctx := ObserveLoads(r.Context(), func() { outer.Add(1) })
	ctx = ObserveLoads(ctx, func() { inner.Add(1) })
	r = r.WithContext(ctx)
	if _, err := s.Get(r, DefaultName); err != nil {
		t.Fatal(err)
	}
	if outer.Load() == 0 || inner.Load() == 0 {
		t.Fatalf("observers not called: %d %d", outer.Load(), inner.Load())
	}
	// A request that never loads a session notifies nobody.
	var none atomic.Int64
	r2 := request(nil)
	_, sc := s.Attach(r2.WithContext(ObserveLoads(r2.Context(), func() { none.Add(1) })))
	sc.Commit(httptest.NewRecorder())
	if none.Load() != 0 {
		t.Fatal("observer called without a load")
	}
}

func TestGobSerializerCanonical(t *testing.T) {
	a := sessions.NewSession(nil, "x")
	b := sessions.NewSession(nil, "x")
	for i := 0; i < 50; i++ {
		a.Values[fmt.Sprint("k", i)] = i
		a.Values[i] = "int key"
	}
	for i := 49; i >= 0; i-- {
		b.Values[i] = "int key"
		b.Values[fmt.Sprint("k", i)] = i
	}
	ea, err := GobSerializer{}.Serialize(a)
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 5; n++ {
		eb, _ := GobSerializer{}.Serialize(b)
		if string(ea) != string(eb) {
			t.Fatal("equal values encode differently")
		}
	}
	back := sessions.NewSession(nil, "x")
	if err := (GobSerializer{}).Deserialize(ea, back); err != nil || len(back.Values) != 100 || back.Values["k7"] != 7 || back.Values[7] != "int key" {
		t.Fatalf("round trip: %v %v", back.Values, err)
	}
}

// orderedByMap is a serializer whose bytes follow map order: Commit must fall
// back to comparing values.
type orderedByMap struct{ GobSerializerNonCanonical }

// GobSerializerNonCanonical encodes the raw map with gob (order-dependent).
type GobSerializerNonCanonical struct{}

func (GobSerializerNonCanonical) Serialize(s *sessions.Session) ([]byte, error) {
	var buf strings.Builder
	err := gob.NewEncoder(&buf).Encode(s.Values)
	return []byte(buf.String()), err
}

func (GobSerializerNonCanonical) Deserialize(data []byte, s *sessions.Session) error {
	return gob.NewDecoder(strings.NewReader(string(data))).Decode(&s.Values)
}

func TestCustomSerializerChangeDetection(t *testing.T) {
	s, _ := newStore(t, Options{Serializer: orderedByMap{}})
	values := map[string]any{}
	for i := 0; i < 20; i++ {
		values[fmt.Sprint("k", i)] = i
	}
	rec, _ := saveNew(t, s, values)
	writes := s.Stats().Writes
	for i := 0; i < 5; i++ {
		_, sc := s.Attach(request(rec))
		sess, _ := sc.Session()
		if sess.Values["k3"] != 3 {
			t.Fatal("custom serializer round trip")
		}
		sc.Commit(httptest.NewRecorder())
	}
	if s.Stats().Writes != writes {
		t.Fatal("an unchanged session was rewritten (map order mistaken for a change)")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(123, []byte("payload")))
	f.Add([]byte("ZS\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		created, payload, err := decodeRecord(b)
		if err != nil {
			return
		}
		if created <= 0 || string(encodeRecord(created, payload)) != string(b) {
			t.Fatalf("bad record accepted: %d", created)
		}
	})
}

// TestRemoteBackend runs the suite again with every client behind a real
// native-protocol server over TCP (the store uses only the public SDK).
func TestRemoteBackend(t *testing.T) {
	remoteMode = true
	defer func() { remoteMode = false }()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"SaveAndLoad", TestSaveAndLoad},
		{"RegisteredTypeRoundTrip", TestRegisteredTypeRoundTrip},
		{"EmptySessionNeverWritten", TestEmptySessionNeverWritten},
		{"UnknownIDNeverAdopted", TestUnknownIDNeverAdopted},
		{"BadCookiesYieldNewSession", TestBadCookiesYieldNewSession},
		{"KeyRotation", TestKeyRotation},
		{"MaxAgeNegativeDeletes", TestMaxAgeNegativeDeletes},
		{"SlidingRefresh", TestSlidingRefresh},
		{"AbsoluteCap", TestAbsoluteCap},
		{"Regenerate", TestRegenerate},
		{"CommitWritesOnlyChanges", TestCommitWritesOnlyChanges},
		{"CookieOptions", TestCookieOptions},
		{"ValuesTooLarge", TestValuesTooLarge},
		{"EncryptedCookie", TestEncryptedCookie},
		{"ConcurrentRequests", TestConcurrentRequests},
		{"CustomSerializer", TestCustomSerializerChangeDetection},
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
		d := ttl(t, c, key)
		if d < 0 {
			t.Fatalf("%s vanished while its ttl ran down", key)
		}
		return d < slideWindow-300*time.Millisecond
	})
}
