// Package httpapi owns a node's HTTP service (R-OPS-2, R-OPS-5), built on
// echo: the health and readiness probes, the Prometheus scrape endpoint, the
// node info document and a REST key-value API over the node's store.
//
//	GET  /healthz              200 while the process is up (never authenticated)
//	GET  /readyz               200 once the node serves traffic, else 503 (never authenticated)
//	GET  /metrics              Prometheus text of the node's registry
//	GET  /v1/openapi.json      the OpenAPI 3 document of this API (never authenticated)
//	GET  /v1/info              node info as JSON (no secrets)
//	GET  /v1/cluster           the cluster as this node sees it: mapVersion, leader, term, nodes, partitions
//	GET  /v1/changes           the change feed as Server-Sent Events (?cursor=, ?prefix=, ?snapshot=, ?resync=)
//	POST /v1/cluster/rebalance
//	                           re-plan the map over every live member (on the leader; 409 elsewhere)
//	POST /v1/cluster/evict?node=ID
//	                           evict a node for good (on the leader; 409 elsewhere, 404 unknown node,
//	                           400 for the leader itself)
//	GET  /v1/keys/{key}        the value; ETag, X-Zaris-Revision, X-Zaris-TTL
//	HEAD /v1/keys/{key}        the same headers, no body
//	PUT  /v1/keys/{key}        body = the value; ?ttl=30s|30, ?keepttl=true; If-Match, If-None-Match: *
//	DELETE /v1/keys/{key}      204, or 404 on a miss
//	GET  /ui/                  the web console (ui.go), its JSON under /ui/api/
//
// When a token is configured, /metrics and /v1/* require
// "Authorization: Bearer <token>" (401 otherwise). Errors are RFC 9457
// problem documents (application/problem+json, see Problem):
// {"type":"about:blank","title":"Payload Too Large","status":413,
// "detail":"value of 2048 bytes exceeds --max-item-bytes 1024",
// "code":"ItemTooLarge","limit":1024}. Unknown query parameters are
// refused (400) naming them; /v1/openapi.json is the OpenAPI 3 document of
// this API.
//
// The handlers are thin: they parse the request, call one store method,
// record the operation in the node's metrics.Recorder and render the
// result. This package must not import the server package (which builds
// it) nor any other protocol front end.
package httpapi

import (
	"context"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/panics"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// Options configure a Server.
type Options struct {
	// Store is the store the REST API reads and writes. Required.
	Store *store.Store
	// Metrics records every REST operation, HTTP connections and
	// authentication failures, and backs /metrics. nil = no metrics and no
	// /metrics endpoint.
	Metrics *metrics.Recorder
	// Logger receives request logs (debug level) and server errors. nil =
	// discard.
	Logger *slog.Logger
	// Token, when set, protects /metrics and /v1/* with a bearer token.
	Token string
	// ACL, when set, replaces Token: requests authenticate as a user
	// (Basic or Bearer) and are checked against its permissions (acl.go).
	ACL *acl.Registry
	// Ready reports whether the node serves traffic (/readyz). nil = ready
	// whenever the HTTP service runs.
	Ready func() bool
	// Info returns the document served by /v1/info, encoded as JSON.
	// nil = /v1/info answers 404.
	Info func() any
	// Cluster returns the document served by /v1/cluster. nil = 404.
	Cluster func() any
	// Rebalance re-plans the partition map and returns the committed map
	// version; an error wrapping ErrNotLeader answers 409. nil = 404.
	Rebalance func(ctx context.Context) (uint64, error)
	// Evict evicts a node (R-CLU-2); an error wrapping ErrNotLeader answers
	// 409, ErrUnknownNode 404, ErrEvictSelf 400. nil = 404.
	Evict func(ctx context.Context, node string) error
	// WriteBarrier, when set, holds the answer of a successful PUT or
	// DELETE until it returns (sync replication, R-REP-2): a status other
	// than Success is answered instead (Timeout: 504; the write stays
	// applied on this node). nil = answered after the local apply.
	WriteBarrier func(ctx context.Context, seg uint16, revision uint64) kv.Status
	// FreezeCheck, when set, is called once per key request with the time
	// the request started, before the store is touched: the node's freeze
	// fence (it may unown every segment, which then answers Moved).
	FreezeCheck func(now time.Time)
	// Decommission, when set, starts taking this node out of the cluster
	// for good (POST /v1/node/decommission answers 202): it must return at
	// once, the node then announces its leave and stops. Called at most
	// once. nil = 404.
	Decommission func()
	// Console wires the web console at /ui/ (ui.go); the zero value serves
	// it with this node's store, metrics, info and cluster documents.
	Console ConsoleOptions
	// Changes opens the change feed GET /v1/changes serves as Server-Sent
	// Events (changes.go): on a cluster, a feed of every segment that
	// survives failovers and migrations. nil = 404.
	Changes func(ctx context.Context, opts *sdk.ChangesOptions) (*sdk.ChangeFeed, error)
	// ReadOnly, when set, is asked before every PUT and DELETE of a key; a
	// non-empty answer refuses it with 403 and code ReadOnly (a follower
	// cluster, R-OPS-4). nil = writes are never refused for it.
	ReadOnly func() string
	// Follow, when set, serves POST /v1/cluster/follow?source=zaris://…
	// (start following another cluster's change feed) and POST
	// /v1/cluster/promote (stop following, open writes): follow.go. nil = 404.
	Follow FollowControl
}

// openAPIDocument is the OpenAPI 3 description of this API, served at
// /v1/openapi.json (never authenticated: it holds no data).
//
//go:embed openapi.json
var openAPIDocument []byte

// ErrNotLeader is wrapped by a Rebalance error on a node that does not lead
// the control plane.
var ErrNotLeader = errors.New("not the control-plane leader")

// ErrUnknownNode is wrapped by an Evict error naming a node the cluster
// does not know.
var ErrUnknownNode = errors.New("unknown node")

// ErrEvictSelf is wrapped by an Evict error naming the leader itself.
var ErrEvictSelf = errors.New("a node cannot evict itself")

// BodySlack is how far above the store's MaxItemBytes a PUT body may go
// before the upload is cut off: a value over MaxItemBytes is refused with
// 413 either way, the slack only lets the store give the precise answer for
// values just over the cap while a large upload is refused early.
const BodySlack = 1 << 10

// Server is the HTTP service of one node. It satisfies the node's listener
// contract: Serve(net.Listener) blocks until Shutdown, Shutdown drains
// in-flight requests, Close drops connections.
type Server struct {
	store   *store.Store
	rec     *metrics.Recorder
	log     *slog.Logger
	ready   func() bool
	info    func() any
	cluster func() any
	rebal   func(ctx context.Context) (uint64, error)
	evict   func(ctx context.Context, node string) error
	barrier func(ctx context.Context, seg uint16, revision uint64) kv.Status
	freeze  func(now time.Time)
	changes func(ctx context.Context, opts *sdk.ChangesOptions) (*sdk.ChangeFeed, error)
	ro      func() string
	follow  FollowControl
	bearer  []byte // "Bearer <token>" material; nil = no authentication
	acl     *acl.Registry
	maxItem int64

	e  *echo.Echo
	hs *http.Server
	// streams ends with Shutdown: long-lived responses (the change feed)
	// stop then instead of holding the drain to its deadline.
	streams    context.Context
	endStreams context.CancelFunc
}

// New builds the HTTP service. It does not listen: call Serve.
func New(opts Options) (*Server, error) {
	if opts.Store == nil {
		return nil, errors.New("httpapi: Options.Store is required")
	}
	s := &Server{
		store:   opts.Store,
		rec:     opts.Metrics,
		log:     opts.Logger,
		ready:   opts.Ready,
		info:    opts.Info,
		cluster: opts.Cluster,
		rebal:   opts.Rebalance,
		evict:   opts.Evict,
		barrier: opts.WriteBarrier,
		freeze:  opts.FreezeCheck,
		changes: opts.Changes,
		ro:      opts.ReadOnly,
		follow:  opts.Follow,
		maxItem: int64(opts.Store.Config().MaxItemBytes),
		acl:     opts.ACL,
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.ready == nil {
		s.ready = func() bool { return true }
	}
	if opts.Token != "" {
		s.bearer = []byte(opts.Token)
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.Logger.SetOutput(io.Discard) // echo's own logger is unused; errors go to slog
	e.HTTPErrorHandler = s.handleError
	e.Use(s.containPanics)
	e.Use(s.logRequests)

	e.GET("/healthz", s.healthz)
	e.GET("/readyz", s.readyz)
	e.GET("/v1/openapi.json", func(c echo.Context) error { return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, openAPIDocument) })
	protected := e.Group("", s.authenticate)
	if s.rec != nil {
		protected.GET("/metrics", echo.WrapHandler(s.rec.Handler()))
	}
	protected.GET("/v1/info", s.getInfo)
	protected.GET("/v1/cluster", s.getCluster)
	protected.GET("/v1/changes", s.getChanges)
	protected.POST("/v1/cluster/rebalance", s.rebalance)
	protected.POST("/v1/cluster/evict", s.evictNode)
	protected.POST("/v1/node/decommission", decommissionHandler(opts.Decommission))
	protected.POST("/v1/cluster/follow", s.startFollow)
	protected.POST("/v1/cluster/promote", s.promote)
	protected.GET(keysPrefix+"*", s.getKey)
	protected.HEAD(keysPrefix+"*", s.getKey)
	protected.PUT(keysPrefix+"*", s.putKey)
	protected.DELETE(keysPrefix+"*", s.deleteKey)
	s.mountConsole(e, opts.Token, opts.Console)
	s.e = e

	conns := s.rec.Conns(metrics.ProtoHTTP)
	s.streams, s.endStreams = context.WithCancel(context.Background())
	s.hs = &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState: func(_ net.Conn, state http.ConnState) {
			switch state {
			case http.StateNew:
				conns.Inc()
			case http.StateClosed, http.StateHijacked:
				conns.Dec()
			}
		},
	}
	s.hs.RegisterOnShutdown(s.endStreams)
	return s, nil
}

// Handler is the service's HTTP handler, for embedding or tests.
func (s *Server) Handler() http.Handler { return s.e }

// Serve serves HTTP on l until Shutdown or Close; it then returns nil.
func (s *Server) Serve(l net.Listener) error {
	if err := s.hs.Serve(problemListener{l}); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Shutdown stops accepting connections and waits for in-flight requests
// until ctx ends (then it returns ctx's error; call Close).
func (s *Server) Shutdown(ctx context.Context) error { return s.hs.Shutdown(ctx) }

// Close drops every connection at once.
func (s *Server) Close() error { return s.hs.Close() }

// Problem is the body of every error response: an RFC 9457 problem
// document (Content-Type application/problem+json). Code is the kv.Status
// name ("ItemTooLarge"); Limit, when the request passed a limit, is that
// limit (bytes for sizes).
type Problem struct {
	Type   string `json:"type"`             // always "about:blank": Title is the HTTP status text
	Title  string `json:"title"`            // http.StatusText(Status)
	Status int    `json:"status"`           // the HTTP status code
	Detail string `json:"detail,omitempty"` // what went wrong and what to do
	Code   string `json:"code"`             // the kv.Status name
	Limit  *int64 `json:"limit,omitempty"`  // the limit the request passed
}

// MIMEProblem is the media type of error bodies (RFC 9457).
const MIMEProblem = "application/problem+json"

// fail writes an error response for status st.
func fail(c echo.Context, st kv.Status, msg string) error {
	return failCode(c, HTTPStatus(st), st, msg, nil)
}

// failLimit is fail naming the limit the request passed.
func failLimit(c echo.Context, st kv.Status, msg string, limit int64) error {
	return failCode(c, HTTPStatus(st), st, msg, &limit)
}

// failCode writes a problem document with an explicit HTTP code.
func failCode(c echo.Context, code int, st kv.Status, msg string, limit *int64) error {
	if msg == "" {
		msg = st.Err().Error()
	}
	p := Problem{Type: "about:blank", Title: http.StatusText(code), Status: code, Detail: msg, Code: st.String(), Limit: limit}
	if c.Request().Method == http.MethodHead {
		c.Response().Header().Set(echo.HeaderContentType, MIMEProblem)
		return c.NoContent(code)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return c.Blob(code, MIMEProblem, b)
}

// HTTPStatus maps an operation status to its HTTP status code.
func HTTPStatus(st kv.Status) int {
	switch st {
	case kv.StatusSuccess:
		return http.StatusOK
	case kv.StatusNotFound:
		return http.StatusNotFound
	case kv.StatusConflict:
		return http.StatusPreconditionFailed // the only conflicts here are If-Match / If-None-Match
	case kv.StatusItemTooLarge:
		return http.StatusRequestEntityTooLarge
	case kv.StatusCapacityExceeded:
		return http.StatusInsufficientStorage
	case kv.StatusMoved:
		return http.StatusMisdirectedRequest
	case kv.StatusUnauthorized:
		return http.StatusUnauthorized
	case kv.StatusBadRequest:
		return http.StatusBadRequest
	case kv.StatusTimeout:
		return http.StatusGatewayTimeout
	case kv.StatusWrongType:
		return http.StatusConflict
	case kv.StatusInternal:
		return http.StatusInternalServerError
	case kv.StatusReadOnly:
		return http.StatusForbidden // a follower cluster: writes open after zarisctl promote
	}
	// OwnershipChanging, Migrating, ReplicaSyncPending, ReplicaWriteRejected,
	// Unavailable: transient, retry later.
	return http.StatusServiceUnavailable
}

// handleError renders errors that did not come from a handler's own
// response (unknown routes, wrong methods, panics) in the same JSON shape.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	code, msg := http.StatusInternalServerError, "internal error"
	var he *echo.HTTPError
	if errors.As(err, &he) {
		code = he.Code
		msg = strings.ToLower(http.StatusText(code))
		if m, ok := he.Message.(string); ok && m != "" {
			msg = m
		}
	} else {
		s.log.Error("http handler error", "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	st := kv.StatusInternal
	switch {
	case code == http.StatusNotFound:
		st = kv.StatusNotFound
		msg = "no such endpoint: " + c.Request().URL.EscapedPath() + " (see /v1/openapi.json)"
	case code == http.StatusMethodNotAllowed:
		st = kv.StatusBadRequest
		msg = c.Request().Method + " is not allowed on " + c.Request().URL.EscapedPath()
		if allow := c.Response().Header().Get(echo.HeaderAllow); allow != "" {
			msg += "; allowed: " + allow
		}
	case code == http.StatusUnauthorized:
		st = kv.StatusUnauthorized
	case code == http.StatusRequestEntityTooLarge:
		st = kv.StatusItemTooLarge
	case code == http.StatusServiceUnavailable:
		st = kv.StatusUnavailable
	case code >= 400 && code < 500:
		st = kv.StatusBadRequest
	}
	if err := failCode(c, code, st, msg, nil); err != nil {
		s.log.Debug("http error response not written", "err", err)
	}
}

// logRequests logs every request at debug level.
func (s *Server) logRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if !s.log.Enabled(c.Request().Context(), slog.LevelDebug) {
			return next(c)
		}
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		r := c.Request()
		s.log.Debug("http request", "method", r.Method, "path", r.URL.EscapedPath(),
			"status", c.Response().Status, "bytes", c.Response().Size,
			"duration", time.Since(start), "remote", r.RemoteAddr)
		return nil
	}
}

// authenticate requires "Authorization: Bearer <token>" when a token is set.
// The comparison is constant-time.
func (s *Server) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	if s.acl != nil {
		return s.aclAuthenticate(next)
	}
	if s.bearer == nil {
		return next
	}
	return func(c echo.Context) error {
		scheme, token, _ := strings.Cut(c.Request().Header.Get(echo.HeaderAuthorization), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), s.bearer) != 1 {
			s.rec.AuthFailure(metrics.ProtoHTTP)
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="zaris"`)
			return fail(c, kv.StatusUnauthorized, "missing or wrong bearer token")
		}
		return next(c)
	}
}

type probeBody struct {
	Status string `json:"status"`
}

func (s *Server) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, probeBody{Status: "ok"})
}

func (s *Server) readyz(c echo.Context) error {
	if !s.ready() {
		return fail(c, kv.StatusUnavailable, "node not ready")
	}
	return c.JSON(http.StatusOK, probeBody{Status: "ready"})
}

func (s *Server) getInfo(c echo.Context) error {
	if s.info == nil {
		return fail(c, kv.StatusNotFound, "no info")
	}
	return c.JSON(http.StatusOK, s.info())
}

func (s *Server) getCluster(c echo.Context) error {
	if s.cluster == nil {
		return fail(c, kv.StatusNotFound, "no cluster")
	}
	return c.JSON(http.StatusOK, s.cluster())
}

type rebalanceBody struct {
	MapVersion uint64 `json:"mapVersion"`
	Status     string `json:"status"` // "rebalancing"
}

// rebalance asks the leader to re-plan and migrate live (R-MIG-1): 202,
// the moves run in the background (GET /v1/cluster shows them). Nothing is
// lost, so nothing needs confirming.
func (s *Server) rebalance(c echo.Context) error {
	if s.rebal == nil {
		return fail(c, kv.StatusNotFound, "no cluster")
	}
	v, err := s.rebal(c.Request().Context())
	switch {
	case errors.Is(err, ErrNotLeader):
		return failCode(c, http.StatusConflict, kv.StatusMoved, err.Error(), nil)
	case err != nil:
		return fail(c, kv.StatusUnavailable, err.Error())
	}
	return c.JSON(http.StatusAccepted, rebalanceBody{MapVersion: v, Status: "rebalancing"})
}

type evictBody struct {
	Evicted string `json:"evicted"`
}

// evictNode evicts ?node=ID for good (R-CLU-2): the leader records it in the
// control-plane log, drops it from the map and from raft.
func (s *Server) evictNode(c echo.Context) error {
	if s.evict == nil {
		return fail(c, kv.StatusNotFound, "no cluster")
	}
	node := c.QueryParam("node")
	if node == "" {
		return fail(c, kv.StatusBadRequest, "missing ?node=ID")
	}
	err := s.evict(c.Request().Context(), node)
	switch {
	case errors.Is(err, ErrNotLeader):
		return failCode(c, http.StatusConflict, kv.StatusMoved, err.Error(), nil)
	case errors.Is(err, ErrUnknownNode):
		return fail(c, kv.StatusNotFound, err.Error())
	case errors.Is(err, ErrEvictSelf):
		return fail(c, kv.StatusBadRequest, err.Error())
	case err != nil:
		return fail(c, kv.StatusUnavailable, err.Error())
	}
	return c.JSON(http.StatusOK, evictBody{Evicted: node})
}

// containPanics makes a panic while serving one request cost that request
// only: the locks it held are released by their defers, it is answered 500
// (status Internal) with "Connection: close" — or, when its response had
// begun, its connection is aborted — and the node serves on. The log names
// the route pattern, never the path (it holds the key), with the stack.
func (s *Server) containPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler { //nolint:errorlint // net/http's sentinel, compared as net/http does
				panic(v)
			}
			s.rec.Panic(metrics.ProtoHTTP)
			s.log.Error("panic while serving a request; its connection is closed, the node serves on",
				"method", c.Request().Method, "route", c.Path(), "panic", panics.Describe(v), "stack", string(debug.Stack()))
			if c.Response().Committed {
				panic(http.ErrAbortHandler) // the status is sent: only closing tells the client
			}
			c.Response().Header().Set(echo.HeaderConnection, "close")
			err = fail(c, kv.StatusInternal, "internal error")
		}()
		return next(c)
	}
}
