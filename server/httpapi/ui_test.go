package httpapi

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/events"
	"github.com/zaris-io/zaris/server/store"
)

func withConsole(co ConsoleOptions) fixtureOption {
	return func(_ *store.Config, o *Options) { o.Console = co }
}

func decode[T any](t *testing.T, r response) T {
	t.Helper()
	var v T
	require.NoError(t, json.Unmarshal(r.body, &v), "body %q", r.body)
	return v
}

func TestConsoleAssets(t *testing.T) {
	f := newFixture(t, withToken("s3cret"))
	// The page and its assets hold no data: served without the token.
	for path, typ := range map[string]string{"/ui/": "text/html", "/ui/app.js": "javascript", "/ui/style.css": "text/css"} {
		r := f.do(http.MethodGet, path, nil, "Authorization", "")
		require.Equal(t, http.StatusOK, r.code, path)
		require.Contains(t, r.header.Get("Content-Type"), typ, path)
		require.Contains(t, r.header.Get("Content-Security-Policy"), "script-src 'self'", path)
	}
	page := f.do(http.MethodGet, "/ui/", nil)
	require.NotContains(t, string(page.body), "http://", "the page loads nothing from elsewhere (no CDN)")
	require.NotContains(t, string(page.body), "https://")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(f.url + "/ui")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	require.Equal(t, "/ui/", resp.Header.Get("Location"))
}

func TestConsoleAccessWithToken(t *testing.T) {
	f := newFixture(t, withToken("s3cret"), withConsole(ConsoleOptions{NodeID: "n1"}))
	// Signed out: the session says so (200), every data call is 401.
	s := decode[sessionBody](t, f.do(http.MethodGet, "/ui/api/session", nil, "Authorization", ""))
	require.Equal(t, sessionBody{Node: "n1", Access: "none", Login: true}, s)
	for _, path := range []string{"/ui/api/info", "/ui/api/stats", "/ui/api/keys", "/ui/api/slowlog", "/ui/api/events"} {
		r := f.do(http.MethodGet, path, nil, "Authorization", "Bearer wrong")
		require.Equal(t, http.StatusUnauthorized, r.code, path)
		require.Equal(t, "Unauthorized", r.errStatus(t))
	}
	// The token is admin: it reads and deletes.
	s = decode[sessionBody](t, f.do(http.MethodGet, "/ui/api/session", nil))
	require.Equal(t, "admin", s.Access)
	require.True(t, f.store.Put("k", []byte("v"), &kv.PutOptions{}).OK())
	r := f.do(http.MethodDelete, "/ui/api/keys?key64="+base64.RawURLEncoding.EncodeToString([]byte("k")), nil)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	require.Equal(t, deleteBody{Node: "n1", Deleted: true}, decode[deleteBody](t, r))
	require.Equal(t, kv.StatusNotFound, f.store.Get("k").Status)
	r = f.do(http.MethodDelete, "/ui/api/keys?key64="+base64.RawURLEncoding.EncodeToString([]byte("k")), nil)
	require.Equal(t, deleteBody{Node: "n1", Deleted: false}, decode[deleteBody](t, r))
	r = f.do(http.MethodDelete, "/ui/api/keys?key64=!!", nil)
	require.Equal(t, http.StatusBadRequest, r.code)
}

func TestConsoleWithoutTokenIsReadOnly(t *testing.T) {
	f := newFixture(t, withConsole(ConsoleOptions{NodeID: "n1"}))
	s := decode[sessionBody](t, f.do(http.MethodGet, "/ui/api/session", nil))
	require.Equal(t, sessionBody{Node: "n1", Access: "read", Login: false}, s)
	require.True(t, f.store.Put("k", []byte("v"), &kv.PutOptions{}).OK())
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/ui/api/keys", nil).code)
	r := f.do(http.MethodDelete, "/ui/api/keys?key64="+base64.RawURLEncoding.EncodeToString([]byte("k")), nil)
	require.Equal(t, http.StatusForbidden, r.code)
	require.Equal(t, "Unauthorized", r.errStatus(t))
	require.True(t, f.store.Get("k").OK(), "a refused delete deletes nothing")
}

func TestConsoleAccessIsOneSwappableFunction(t *testing.T) {
	// A custom rule (as ACL users will bring): "viewer" reads, "root" is admin.
	rule := func(r *http.Request) Access {
		switch r.Header.Get("Authorization") {
		case "Bearer root":
			return AccessAdmin
		case "Bearer viewer":
			return AccessRead
		}
		return AccessNone
	}
	f := newFixture(t, withConsole(ConsoleOptions{NodeID: "n1", Access: rule}))
	require.True(t, f.store.Put("k", []byte("v"), &kv.PutOptions{}).OK())
	del := "/ui/api/keys?key64=" + base64.RawURLEncoding.EncodeToString([]byte("k"))
	require.Equal(t, http.StatusUnauthorized, f.do(http.MethodGet, "/ui/api/keys", nil).code)
	require.Equal(t, http.StatusOK, f.do(http.MethodGet, "/ui/api/keys", nil, "Authorization", "Bearer viewer").code)
	require.Equal(t, http.StatusForbidden, f.do(http.MethodDelete, del, nil, "Authorization", "Bearer viewer").code)
	require.Equal(t, http.StatusOK, f.do(http.MethodDelete, del, nil, "Authorization", "Bearer root").code)
	s := decode[sessionBody](t, f.do(http.MethodGet, "/ui/api/session", nil, "Authorization", "Bearer viewer"))
	require.Equal(t, "read", s.Access)
}

func TestConsoleKeys(t *testing.T) {
	f := newFixture(t, withConsole(ConsoleOptions{NodeID: "n1"}))
	bin := []byte{0xff, 0x00, 0x01}
	long := strings.Repeat("x", previewBytes+50)
	require.True(t, f.store.Put("user:1", []byte(`{"n":1}`), &kv.PutOptions{TTL: 90 * time.Second}).OK())
	require.True(t, f.store.Put("user:2", bin, &kv.PutOptions{}).OK())
	require.True(t, f.store.Put("user:3", []byte(long), &kv.PutOptions{}).OK())
	require.True(t, f.store.Put("other", []byte("o"), &kv.PutOptions{}).OK())

	got := decode[keysBody](t, f.do(http.MethodGet, "/ui/api/keys?prefix=user:", nil))
	require.Equal(t, "n1", got.Node)
	require.False(t, got.More)
	require.Len(t, got.Items, 3)
	k1, k2, k3 := got.Items[0], got.Items[1], got.Items[2]
	require.Equal(t, keyBody{Key: "user:1", Key64: base64.RawURLEncoding.EncodeToString([]byte("user:1")), Type: "string",
		Size: 7, Preview: `{"n":1}`, TTLms: 90_000, Version: 1}, k1)
	require.Equal(t, hex.EncodeToString(bin), k2.Preview)
	require.True(t, k2.Binary)
	require.Equal(t, len(long), k3.Size)
	require.Equal(t, long[:previewBytes], k3.Preview)

	got = decode[keysBody](t, f.do(http.MethodGet, "/ui/api/keys?prefix=user:&limit=2", nil))
	require.Len(t, got.Items, 2)
	require.True(t, got.More, "a limit that cuts the list says so")
	require.Zero(t, f.store.ScanStats().OpenSessions, "the browser leaves no scan session open")
	for _, bad := range []string{"0", "501", "x"} {
		require.Equal(t, http.StatusBadRequest, f.do(http.MethodGet, "/ui/api/keys?limit="+bad, nil).code, bad)
	}
}

func TestConsoleStatsFollowOperations(t *testing.T) {
	f := newFixture(t, withConsole(ConsoleOptions{NodeID: "n1"}))
	require.Equal(t, http.StatusCreated, f.do(http.MethodPut, key("a"), strings.NewReader("v")).code)
	for range 3 {
		require.Equal(t, http.StatusOK, f.do(http.MethodGet, key("a"), nil).code)
	}
	require.Equal(t, http.StatusNotFound, f.do(http.MethodGet, key("missing"), nil).code)
	st := decode[statsBody](t, f.do(http.MethodGet, "/ui/api/stats", nil))
	require.Equal(t, 3.0, st.GetHits)
	require.Equal(t, 1.0, st.GetMisses)
	require.Equal(t, 5.0, st.Ops)
	require.Equal(t, int64(1), st.Items)
	require.Positive(t, st.MemoryUsed)
	require.Equal(t, f.store.Stats().MaxMemoryBytes, st.MemoryMax)
}

func TestConsoleEventsAndSlowlog(t *testing.T) {
	ring := events.NewRing("n1", 8)
	ring.Add("failover", "WARN", "failover: promoting a replica", map[string]string{"partition": "2"})
	ring.Add("migration", "INFO", "migration complete", nil)
	at := time.Unix(1_700_000_000, 0).UTC()
	f := newFixture(t, withConsole(ConsoleOptions{NodeID: "n1", Events: ring.Since,
		Slowlog: func(n int) []SlowEntry {
			return []SlowEntry{{ID: 7, At: at, Micros: 12000, Args: []string{"KEYS", "*"}, Client: "127.0.0.1:5"}}[:min(n, 1)]
		}}))
	ev := decode[eventsBody](t, f.do(http.MethodGet, "/ui/api/events", nil))
	require.Len(t, ev.Events, 2)
	require.Equal(t, "failover", ev.Events[0].Kind)
	require.Equal(t, "2", ev.Events[0].Attrs["partition"])
	ev = decode[eventsBody](t, f.do(http.MethodGet, "/ui/api/events?after=1", nil))
	require.Len(t, ev.Events, 1)
	require.Equal(t, uint64(2), ev.Events[0].Seq)
	require.Equal(t, http.StatusBadRequest, f.do(http.MethodGet, "/ui/api/events?after=-1", nil).code)
	sl := decode[slowlogBody](t, f.do(http.MethodGet, "/ui/api/slowlog", nil))
	require.Equal(t, []SlowEntry{{ID: 7, At: at, Micros: 12000, Args: []string{"KEYS", "*"}, Client: "127.0.0.1:5"}}, sl.Entries)
}

func TestConsoleForwardsToMembers(t *testing.T) {
	var peers []Peer
	list := func() []Peer { return peers }
	a := newFixture(t, withToken("tok"), withConsole(ConsoleOptions{NodeID: "a", Peers: list}))
	b := newFixture(t, withToken("tok"), withConsole(ConsoleOptions{NodeID: "b", Peers: list}))
	peers = []Peer{{ID: "a", HTTPAddr: strings.TrimPrefix(a.url, "http://")}, {ID: "b", HTTPAddr: strings.TrimPrefix(b.url, "http://")}}
	require.True(t, b.store.Put("on-b", []byte("1"), &kv.PutOptions{}).OK())

	got := decode[keysBody](t, a.do(http.MethodGet, "/ui/api/keys?node=b&prefix=on-", nil))
	require.Equal(t, "b", got.Node)
	require.Len(t, got.Items, 1)
	require.Equal(t, "on-b", got.Items[0].Key)
	// ?node= naming this node stays here.
	require.Equal(t, "a", decode[keysBody](t, a.do(http.MethodGet, "/ui/api/keys?node=a", nil)).Node)
	// The caller's credentials travel with it: b decides, and a relays.
	r := a.do(http.MethodDelete, "/ui/api/keys?node=b&key64="+base64.RawURLEncoding.EncodeToString([]byte("on-b")), nil)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	require.Equal(t, kv.StatusNotFound, b.store.Get("on-b").Status)
	// No credential: refused here, nothing is forwarded.
	require.Equal(t, http.StatusUnauthorized, a.do(http.MethodGet, "/ui/api/keys?node=b", nil, "Authorization", "").code)
	r = a.do(http.MethodGet, "/ui/api/keys?node=zz", nil)
	require.Equal(t, http.StatusNotFound, r.code)
	require.Contains(t, string(r.body), `no member \"zz\"`)
}
