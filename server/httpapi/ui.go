package httpapi

// The web console (issue #18 item 5): static assets under /ui/ (embedded,
// no CDN, never authenticated: they hold no data) and a small JSON API under
// /ui/api/ that the page polls. Every API call goes through one access
// check (ConsoleOptions.Access): read for the views, admin for a delete.
//
//	GET    /ui/api/session     {"node", "access": none|read|admin, "login"}; always 200
//	GET    /ui/api/info        the node info document (/v1/info)
//	GET    /ui/api/cluster     the cluster document (/v1/cluster)
//	GET    /ui/api/stats       counters and gauges for the live charts
//	GET    /ui/api/keys        ?prefix=&limit= this node's owned keys: type, preview, TTL, version
//	DELETE /ui/api/keys        ?key64= (base64url of the key); admin only
//	GET    /ui/api/slowlog     the RESP slow log, newest first
//	GET    /ui/api/events      ?after=SEQ the node's event ring, oldest first
//
// Any API call with ?node=ID naming another member is forwarded to that
// member's HTTP address with the caller's Authorization header (the member
// decides access), so one page can show every node's keys, slow log and
// events.

import (
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/labstack/echo/v4"
	dto "github.com/prometheus/client_model/go"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/events"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

//go:embed ui
var uiAssets embed.FS

// Access is what a console request may do.
type Access uint8

const (
	AccessNone  Access = iota // nothing: the page asks for a credential
	AccessRead                // every view, no change
	AccessAdmin               // the views and deleting keys
)

func (a Access) String() string {
	switch a {
	case AccessRead:
		return "read"
	case AccessAdmin:
		return "admin"
	}
	return "none"
}

// AccessFunc decides a console request's access from its credentials. It
// is the console's only authorization point: swapping it (for ACL users)
// changes who may see and who may change, nothing else.
type AccessFunc func(r *http.Request) Access

// TokenAccess is the console's rule with the node's --token: without a
// token everyone reads and no one is admin (nothing can prove who is); with
// one, a request bearing it is admin and any other gets nothing, as on
// /v1/*.
func TokenAccess(token string) AccessFunc {
	if token == "" {
		return func(*http.Request) Access { return AccessRead }
	}
	want := []byte(token)
	return func(r *http.Request) Access {
		scheme, got, _ := strings.Cut(r.Header.Get(echo.HeaderAuthorization), " ")
		if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) == 1 {
			return AccessAdmin
		}
		return AccessNone
	}
}

// Peer is a cluster member the console can forward to.
type Peer struct {
	ID       string
	HTTPAddr string // host:port of its HTTP service; "" = none
}

// SlowEntry is one RESP slow-log entry.
type SlowEntry struct {
	ID         int64     `json:"id"`
	At         time.Time `json:"at"`
	Micros     int64     `json:"micros"`
	Args       []string  `json:"args"`
	Client     string    `json:"client"`
	ClientName string    `json:"clientName"`
}

// ConsoleOptions wire the console to its node. Every field is optional.
type ConsoleOptions struct {
	// NodeID is this node's id (requests with ?node=NodeID stay here).
	NodeID string
	// Access decides each API request's access; nil = TokenAccess(Token).
	Access AccessFunc
	// Login tells the page whether signing in can raise its access (a
	// custom Access is assumed to have credentials); nil = Token != "".
	Login *bool
	// Events returns the node's events after a sequence number.
	Events func(after uint64) []events.Event
	// Slowlog returns up to n RESP slow-log entries, newest first.
	Slowlog func(n int) []SlowEntry
	// Peers lists the members ?node= may name.
	Peers func() []Peer
	// PeerClient sends forwarded requests; nil = a plain client with a 5 s
	// timeout. PeerScheme is "http" (default) or "https".
	PeerClient *http.Client
	PeerScheme string
}

type console struct {
	s      *Server
	opts   ConsoleOptions
	access AccessFunc
	login  bool
	client *http.Client
	scheme string
}

// mountConsole adds /ui/ and /ui/api/ to e.
func (s *Server) mountConsole(e *echo.Echo, token string, opts ConsoleOptions) {
	cn := &console{s: s, opts: opts, access: opts.Access, client: opts.PeerClient, scheme: opts.PeerScheme}
	if cn.access == nil {
		cn.access = TokenAccess(token)
		if s.acl != nil {
			cn.access = s.aclAccess // users and permissions (D43); the token is the default user's password
		}
	}
	cn.login = token != ""
	if opts.Login != nil {
		cn.login = *opts.Login
	}
	if cn.client == nil {
		cn.client = &http.Client{Timeout: 5 * time.Second}
	}
	if cn.scheme == "" {
		cn.scheme = "http"
	}

	assets, err := fs.Sub(uiAssets, "ui")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(assets))
	e.GET("/ui", func(c echo.Context) error { return c.Redirect(http.StatusMovedPermanently, "/ui/") })
	e.GET("/ui/*", func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Cache-Control", "no-cache")
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	})

	e.GET("/ui/api/session", cn.session)
	api := e.Group("/ui/api", cn.forward)
	api.GET("/info", cn.need(AccessRead, cn.info))
	api.GET("/cluster", cn.need(AccessRead, cn.cluster))
	api.GET("/stats", cn.need(AccessRead, cn.stats))
	api.GET("/keys", cn.need(AccessRead, cn.keys))
	api.DELETE("/keys", cn.need(AccessAdmin, cn.deleteKey))
	api.GET("/slowlog", cn.need(AccessRead, cn.slowlog))
	api.GET("/events", cn.need(AccessRead, cn.events))
}

// need refuses a request below access min: 401 without a usable credential,
// 403 with one that does not allow this.
func (cn *console) need(min Access, next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		a := cn.access(c.Request())
		switch {
		case a >= min:
			return next(c)
		case a == AccessNone:
			if c.Request().Header.Get(echo.HeaderAuthorization) != "" {
				cn.s.rec.AuthFailure(metrics.ProtoHTTP)
			}
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="zaris"`)
			return fail(c, kv.StatusUnauthorized, "sign in: missing or wrong bearer token")
		}
		return failCode(c, http.StatusForbidden, kv.StatusUnauthorized,
			"this needs admin access; you have "+a.String()+" access", nil)
	}
}

type sessionBody struct {
	Node   string `json:"node"`
	Access string `json:"access"`
	Login  bool   `json:"login"` // signing in can raise access
}

func (cn *console) session(c echo.Context) error {
	return c.JSON(http.StatusOK, sessionBody{Node: cn.opts.NodeID, Access: cn.access(c.Request()).String(), Login: cn.login})
}

// forward sends a request naming another member (?node=ID) to that member
// and relays its answer.
func (cn *console) forward(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		q := r.URL.Query()
		node := q.Get("node")
		if node == "" || node == cn.opts.NodeID {
			return next(c)
		}
		// Only members' consoles are reachable, and only by a caller this
		// node would let read: the node is no open relay.
		if cn.access(r) < AccessRead {
			return cn.need(AccessRead, next)(c)
		}
		addr := ""
		if cn.opts.Peers != nil {
			for _, p := range cn.opts.Peers() {
				if p.ID == node {
					addr = p.HTTPAddr
				}
			}
		}
		if addr == "" {
			return fail(c, kv.StatusNotFound, "no member "+strconv.Quote(node)+" with an HTTP address")
		}
		q.Del("node")
		u := url.URL{Scheme: cn.scheme, Host: addr, Path: r.URL.Path, RawQuery: q.Encode()}
		req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), nil)
		if err != nil {
			return fail(c, kv.StatusBadRequest, err.Error())
		}
		if a := r.Header.Get(echo.HeaderAuthorization); a != "" {
			req.Header.Set(echo.HeaderAuthorization, a)
		}
		resp, err := cn.client.Do(req)
		if err != nil {
			return fail(c, kv.StatusUnavailable, "member "+node+" did not answer: "+err.Error())
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			return fail(c, kv.StatusUnavailable, "member "+node+" answer cut: "+err.Error())
		}
		return c.Blob(resp.StatusCode, resp.Header.Get(echo.HeaderContentType), body)
	}
}

func (cn *console) info(c echo.Context) error {
	if cn.s.info == nil {
		return fail(c, kv.StatusNotFound, "no info")
	}
	return c.JSON(http.StatusOK, cn.s.info())
}

func (cn *console) cluster(c echo.Context) error {
	if cn.s.cluster == nil {
		return fail(c, kv.StatusNotFound, "no cluster")
	}
	return c.JSON(http.StatusOK, cn.s.cluster())
}

// statsBody is what the live charts plot: counters (the page turns them into
// rates) and gauges, read from the node's own metrics.
type statsBody struct {
	Node          string  `json:"node"`
	AtMillis      int64   `json:"atMillis"`
	Ops           float64 `json:"ops"`       // zaris_ops_total, every op and status
	GetHits       float64 `json:"getHits"`   // op=get status=Success
	GetMisses     float64 `json:"getMisses"` // op=get status=NotFound
	Evictions     uint64  `json:"evictions"`
	Expirations   uint64  `json:"expirations"`
	Items         int64   `json:"items"`
	MemoryUsed    int64   `json:"memoryUsed"`
	MemoryMax     int64   `json:"memoryMax"`
	ReplicaBytes  int64   `json:"replicaBytes"`
	ReplLagMax    float64 `json:"replLagMax"` // the largest zaris_replication_lag_revisions series
	ReplLagSum    float64 `json:"replLagSum"`
	ReplicaSeries int     `json:"replicaSeries"`
}

func (cn *console) stats(c echo.Context) error {
	st := cn.s.store.Stats()
	b := statsBody{
		Node: cn.opts.NodeID, AtMillis: time.Now().UnixMilli(),
		Evictions: st.Evicted, Expirations: st.Expired, Items: st.Items,
		MemoryUsed: st.OwnedBytes, MemoryMax: st.MaxMemoryBytes, ReplicaBytes: st.ReplicaBytes,
	}
	if cn.s.rec != nil {
		fams, err := cn.s.rec.Registry().Gather()
		if err != nil {
			return fail(c, kv.StatusInternal, "metrics: "+err.Error())
		}
		for _, f := range fams {
			switch f.GetName() {
			case metrics.MetricOps:
				for _, m := range f.GetMetric() {
					v := m.GetCounter().GetValue()
					b.Ops += v
					if label(m, "op") == "get" {
						switch label(m, "status") {
						case kv.StatusSuccess.String():
							b.GetHits += v
						case kv.StatusNotFound.String():
							b.GetMisses += v
						}
					}
				}
			case "zaris_replication_lag_revisions":
				for _, m := range f.GetMetric() {
					v := m.GetGauge().GetValue()
					b.ReplLagSum += v
					b.ReplLagMax = max(b.ReplLagMax, v)
					b.ReplicaSeries++
				}
			}
		}
	}
	return c.JSON(http.StatusOK, b)
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// keyBody is one key of the browser.
type keyBody struct {
	Key     string `json:"key"`   // the key as text (invalid UTF-8 replaced)
	Key64   string `json:"key64"` // the exact bytes, base64url: what a delete names
	Type    string `json:"type"`
	Size    int    `json:"size"` // value bytes (strings); -1 for collections
	Preview string `json:"preview"`
	Binary  bool   `json:"binary"` // preview is hex
	TTLms   int64  `json:"ttlMs"`  // 0 = no expiry
	Version uint64 `json:"version"`
}

type keysBody struct {
	Node  string    `json:"node"`
	Items []keyBody `json:"items"`
	More  bool      `json:"more"` // the limit cut the list
}

// Key browser bounds: a page shows at most maxKeys keys and the first
// previewBytes of each value.
const (
	defaultKeys  = 50
	maxKeys      = 500
	previewBytes = 120
)

func (cn *console) keys(c echo.Context) error {
	limit := defaultKeys
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxKeys {
			return fail(c, kv.StatusBadRequest, "limit must be 1.."+strconv.Itoa(maxKeys))
		}
		limit = n
	}
	// One page of limit+1 tells whether more remain; a scan that needs a
	// second page holds a session, closed at once.
	page, err := cn.s.store.ScanPage(store.ScanRequest{
		Range: store.KeyRange{Prefix: c.QueryParam("prefix")}, PageSize: limit + 1, LimitCount: limit + 1, IncludeValues: true,
	})
	if err != nil {
		return fail(c, kv.StatusBadRequest, err.Error())
	}
	if page.ResumeToken != "" {
		cn.s.store.CloseScan(page.ResumeToken)
	}
	out := keysBody{Node: cn.opts.NodeID, Items: make([]keyBody, 0, min(len(page.Items), limit))}
	for i, it := range page.Items {
		if i == limit {
			out.More = true
			break
		}
		k := keyBody{
			Key: strings.ToValidUTF8(it.Key, "\uFFFD"), Key64: base64.RawURLEncoding.EncodeToString([]byte(it.Key)),
			Type: typeName(it.Kind), Size: -1, Version: it.Version,
		}
		if it.TTL > 0 {
			k.TTLms = max(1, it.TTL.Milliseconds())
		}
		if it.Kind == store.KindString {
			k.Size = len(it.Value)
			v := it.Value[:min(len(it.Value), previewBytes)]
			if utf8.Valid(v) {
				k.Preview = string(v)
			} else {
				k.Preview, k.Binary = hex.EncodeToString(v), true
			}
		}
		out.Items = append(out.Items, k)
	}
	return c.JSON(http.StatusOK, out)
}

// typeName is the Redis TYPE name of a kind (the store names kinds so).
func typeName(k store.ValueKind) string { return k.String() }

type deleteBody struct {
	Node    string `json:"node"`
	Deleted bool   `json:"deleted"` // false: the key was not there
}

// deleteKey deletes one key as DELETE /v1/keys/{key} does: the freeze fence
// first, the write barrier after (sync replication).
func (cn *console) deleteKey(c echo.Context) error {
	start := time.Now()
	if cn.s.freeze != nil {
		cn.s.freeze(start)
	}
	raw, err := base64.RawURLEncoding.DecodeString(c.QueryParam("key64"))
	if err != nil || len(raw) == 0 {
		return cn.s.refuse(c, metrics.OpDelete, start, kv.StatusBadRequest, "key64 must be the key's bytes in unpadded base64url")
	}
	key := string(raw)
	res := cn.s.store.Delete(key)
	res.Status = cn.s.acknowledge(c, key, res)
	cn.s.rec.Op(metrics.OpDelete, res.Status, time.Since(start))
	switch {
	case res.Status == kv.StatusNotFound:
		return c.JSON(http.StatusOK, deleteBody{Node: cn.opts.NodeID})
	case !res.OK():
		return cn.s.failResult(c, res)
	}
	return c.JSON(http.StatusOK, deleteBody{Node: cn.opts.NodeID, Deleted: true})
}

type slowlogBody struct {
	Node    string      `json:"node"`
	Entries []SlowEntry `json:"entries"`
}

func (cn *console) slowlog(c echo.Context) error {
	out := slowlogBody{Node: cn.opts.NodeID, Entries: []SlowEntry{}}
	if cn.opts.Slowlog != nil {
		out.Entries = append(out.Entries, cn.opts.Slowlog(128)...)
	}
	return c.JSON(http.StatusOK, out)
}

type eventsBody struct {
	Node   string         `json:"node"`
	Events []events.Event `json:"events"`
}

func (cn *console) events(c echo.Context) error {
	var after uint64
	if v := c.QueryParam("after"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fail(c, kv.StatusBadRequest, "after must be an event sequence number")
		}
		after = n
	}
	out := eventsBody{Node: cn.opts.NodeID, Events: []events.Event{}}
	if cn.opts.Events != nil {
		out.Events = append(out.Events, cn.opts.Events(after)...)
	}
	return c.JSON(http.StatusOK, out)
}
