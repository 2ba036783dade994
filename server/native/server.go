package native

import (
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/evloop"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// Observer receives per-operation measurements (metrics). Implementations
// must be cheap and safe for concurrent use.
type Observer interface {
	// Op records one request; shard identifies the connection (a stable
	// number per connection, for sharded counters).
	Op(shard uint32, op wire.Opcode, status kv.Status, d time.Duration)
	ConnOpened()
	ConnClosed()
}

// Config configures a Server.
type Config struct {
	// Store is the engine requests run on. Required.
	Store *store.Store
	// StoreName is the name clients must present in the handshake. Required.
	StoreName string
	// NodeID and Version are reported in the handshake and Info.
	NodeID, Version string
	// ReplicationFactor, when positive, is reported in Info
	// ("replication_factor"): a client learns whether a partition whose
	// owner refuses connections can be taken over by a copy (> 1) or not.
	ReplicationFactor int
	// Token, when non-empty, must be presented in the handshake; a client
	// without it gets Unauthorized and nothing else (R-OPS-5).
	Token string
	// MaxConns bounds the open connections; one more is closed at once
	// (the native counterpart of RESP's maxclients). 0 = DefaultMaxConns.
	MaxConns int
	// EventLoops is how many event loops serve plain-TCP connections once
	// their handshake is done (Linux; D66): 0 = one per two CPUs, at least
	// one; negative = none, every connection on its own goroutine. TLS
	// connections always have their own goroutine.
	EventLoops int
	// ACL holds the users: the handshake names one (HandshakeRequest.User,
	// "" = default) with its password in Token, and every request is
	// checked against its permissions. nil = the token alone, no users.
	ACL *acl.Registry
	// KeyPerm, when set, is the permission a Redis command (lower-case
	// name) needs on its key by Redis's key specification, false when the
	// specification does not say alone: the RESP front end's rule
	// (resp.KeyPermOf), so that both protocols check a user alike.
	KeyPerm func(command string) (acl.Perm, bool)
	// TLS, when non-nil, wraps every accepted connection (zariss://).
	TLS *tls.Config
	// MaxFrameSize bounds a request frame. Default wire.DefaultMaxFrameSize.
	MaxFrameSize int
	// HandshakeTimeout bounds the time from accept (TLS included) to a
	// completed handshake. Default 10 s.
	HandshakeTimeout time.Duration
	// FrameTimeout bounds the time one frame may take to arrive once its
	// first byte is in: the slow-loris guard. Default 30 s.
	FrameTimeout time.Duration
	// WriteTimeout bounds one coalesced write to a client that does not
	// read its responses. Default 30 s.
	WriteTimeout time.Duration
	// MinWorkers and MaxWorkers bound the worker pool. Default DefaultWorkers().
	MinWorkers, MaxWorkers int
	// PoolBatchThreshold: batches with more items run on the worker pool
	// instead of inline on the connection's reader. Default 64.
	PoolBatchThreshold int
	// Routing answers OpRoutingMap (cluster-aware clients). Optional.
	Routing RoutingSource
	// Logger defaults to slog.Default(); Observer is optional.
	Logger   *slog.Logger
	Observer Observer
	// WriteBarrier, when set, holds the answer of every successful write
	// until it returns (sync replication, R-REP-2). nil = a write is
	// answered right after its local apply, at no extra cost.
	WriteBarrier WriteBarrier
	// FreezeCheck, when set, is called once per read batch, with the time
	// read once for it, before the batch's first request runs: the node's
	// freeze fence (it may unown every segment, which then answers Moved).
	// nil = nothing is checked and no clock is read for it.
	FreezeCheck func(now time.Time)
	// WriteGate, when set, is asked before every write (a follower
	// cluster, R-OPS-4). It must be cheap: a lock-free load when nothing
	// is refused.
	WriteGate WriteGate
}

// WriteGate admits or refuses a connection's writes one by one: Enter is
// asked with the connection's handshake client name before each write
// (each write item of a batch); a status other than Success answers the
// write with the message; held means the write runs under the gate and
// Exit must be called once it is applied (before any replica wait).
type WriteGate interface {
	Enter(clientName string) (held bool, st kv.Status, msg string)
	Exit()
}

// WriteBarrier decides when a write applied locally may be acknowledged.
// Wait is called after a successful write of revision on segment seg and
// returns the status to answer: StatusSuccess once the write is durable
// enough, StatusTimeout when it could not be made so in time (the write
// stays applied on this node). It blocks the connection's reader: the
// answers of a pipelined read batch are held until their writes' waits
// return — one wait per segment, at the highest revision the batch wrote
// there (a revision's apply implies every earlier one of its segment) — and
// are written in order.
type WriteBarrier interface {
	Wait(ctx context.Context, seg uint16, revision uint64) kv.Status
	// WaitAll is Wait for the writes of one batch, one entry per segment:
	// it sets status[i] for writes[i], asking every partition's replicas
	// at once (one round trip for the batch, not one per partition).
	WaitAll(ctx context.Context, writes []kv.SegmentWrite, status []kv.Status)
}

func (c *Config) setDefaults() error {
	if c.Store == nil {
		return errors.New("native: Config.Store is required")
	}
	if c.StoreName == "" {
		return errors.New("native: Config.StoreName is required")
	}
	if c.MaxFrameSize <= 0 {
		c.MaxFrameSize = wire.DefaultMaxFrameSize
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.FrameTimeout <= 0 {
		c.FrameTimeout = 30 * time.Second
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = 30 * time.Second
	}
	dmin, dmax := DefaultWorkers()
	if c.MaxWorkers <= 0 {
		c.MaxWorkers = dmax
	}
	if c.MinWorkers <= 0 {
		c.MinWorkers = min(dmin, c.MaxWorkers)
	}
	if c.MinWorkers > c.MaxWorkers {
		return fmt.Errorf("native: min workers %d above max workers %d", c.MinWorkers, c.MaxWorkers)
	}
	if c.PoolBatchThreshold <= 0 {
		c.PoolBatchThreshold = 64
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// Server serves the native protocol for one store.
type Server struct {
	cfg     Config
	log     *slog.Logger
	pool    *pool
	segs    int
	token   []byte
	acl     *acl.Registry
	counts  counters
	connSeq atomic.Uint32 // numbers connections: their counter shard

	mu        sync.Mutex // guards listeners, conns, shutting
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	// refusedConns counts connections closed over MaxConns.
	refusedConns   atomic.Uint64
	lastRefusalLog atomic.Value // time.Time
	shutting       bool
	connWG         sync.WaitGroup

	loops      []*evloop.Loop // nil until the first Serve, or without event loops; guarded by mu
	loopsTried bool
	loopNext   atomic.Uint32
	loopLeaves atomic.Uint64 // connections that left an event loop for a goroutine
}

// DefaultMaxConns is Config.MaxConns's default (RESP's maxclients default).
const DefaultMaxConns = 10000

// RefusedConns is the number of connections closed over MaxConns.
func (s *Server) RefusedConns() uint64 { return s.refusedConns.Load() }

// New validates cfg and returns a server ready to Serve.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	s := &Server{
		cfg: cfg, log: cfg.Logger.With("component", "native"),
		pool:      newPool(cfg.MinWorkers, cfg.MaxWorkers),
		segs:      cfg.Store.Segments(),
		token:     []byte(cfg.Token),
		acl:       cfg.ACL,
		listeners: map[net.Listener]struct{}{},
		conns:     map[*conn]struct{}{},
	}
	s.lastRefusalLog.Store(time.Time{})
	return s, nil
}

// ErrServerClosed is returned by Serve after Shutdown.
var ErrServerClosed = errors.New("native: server closed")

// Serve accepts connections on l until Shutdown. It always returns a
// non-nil error; after Shutdown, ErrServerClosed.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		_ = l.Close() // Shutdown ran before this Serve: it never saw l
		return ErrServerClosed
	}
	s.listeners[l] = struct{}{}
	if !s.loopsTried && s.cfg.TLS == nil && s.cfg.EventLoops >= 0 {
		s.loopsTried = true
		n := s.cfg.EventLoops
		if n == 0 {
			n = evloop.DefaultLoops()
		}
		var err error
		if s.loops, err = evloop.Start(n, s.log); err != nil {
			s.log.Warn("event loops unavailable; every connection keeps its own goroutine", "err", err)
		}
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listeners, l)
		s.mu.Unlock()
	}()
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			s.mu.Lock()
			shutting := s.shutting
			s.mu.Unlock()
			if shutting {
				return ErrServerClosed
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, errTooManyFiles) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if s.cfg.TLS != nil {
			nc = tls.Server(nc, s.cfg.TLS)
		}
		c := newConn(s, nc)
		s.mu.Lock()
		if s.shutting {
			s.mu.Unlock()
			_ = nc.Close()
			return ErrServerClosed
		}
		if max := s.cfg.MaxConns; max > 0 && len(s.conns) >= max {
			// Over the bound: closed before any byte is read, logged once a second at most.
			s.mu.Unlock()
			s.refusedConns.Add(1)
			if now := time.Now(); now.Sub(s.lastRefusalLog.Load().(time.Time)) > time.Second {
				s.lastRefusalLog.Store(now)
				s.log.Warn("refusing a connection: max connections reached", "max_conns", max, "remote", nc.RemoteAddr().String())
			}
			_ = nc.Close()
			continue
		}
		s.conns[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		go c.serve()
	}
}

// Shutdown stops accepting, lets every connection finish the requests it has
// already read (their responses are written), closes the connections and
// the worker pool. If ctx ends first, the remaining connections are closed
// at once. Safe to call more than once.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.shutting = true
	for l := range s.listeners {
		_ = l.Close()
	}
	for c := range s.conns {
		c.stopReading()
	}
	s.mu.Unlock()

	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		s.mu.Lock()
		for c := range s.conns {
			c.abort()
		}
		s.mu.Unlock()
		<-done
	}
	s.pool.close()
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.Stop()
	}
	return err
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.connWG.Done()
}

// Connections returns the number of open client connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// authenticate checks a handshake's user and password: against the users
// when there is a registry, else against the token. It returns the user
// name the connection runs as ("" when refused).
func (s *Server) authenticate(user, presented string) string {
	if s.acl == nil {
		if user != "" && user != "default" || !s.tokenOK(presented) {
			return ""
		}
		return "default"
	}
	if user == "" {
		user = "default"
	}
	if s.acl.Authenticate(user, []byte(presented)) == nil {
		return ""
	}
	return user
}

func (s *Server) tokenOK(presented string) bool {
	if len(s.token) == 0 {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(presented), s.token) == 1
}
