package resp

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/evloop"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/bus"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/store"
)

// Config configures a Server. Build it with the fields you need; New fills
// the defaults of the zero fields.
type Config struct {
	// Store is the engine every command runs on. Required.
	Store *store.Store
	// NodeID is the Zaris node id. CLUSTER MYID and the node id in CLUSTER
	// SLOTS/SHARDS/NODES are its SHA-1 in hex (Redis Cluster ids are 40 hex
	// characters); INFO server reports both.
	NodeID string
	// Version is the Zaris version, reported by INFO server.
	Version string
	// Token, when set, must be presented with AUTH <token>, AUTH default
	// <token> or HELLO <proto> AUTH default <token> before any other command
	// (R-OPS-5). Empty = no authentication.
	Token string
	// ACL holds the users (Redis ACL); nil = a registry of its own whose
	// default user has Token as its password.
	ACL *acl.Registry
	// Limits bound what a client may send (bulk length, arguments, inline
	// size). Zero fields take their defaults.
	Limits Limits
	// MaxQueryBuffer bounds the bytes of one command not yet complete
	// (Redis's client-query-buffer-limit): a client that goes beyond is
	// disconnected. Default 1 GiB.
	MaxQueryBuffer int
	// OutputBufferLimit bounds the replies waiting for a client that does not
	// read them (Redis's client-output-buffer-limit hard limit): beyond it
	// the connection is closed. Default 256 MiB.
	OutputBufferLimit int
	// WriteTimeout closes a connection whose pending replies make no progress
	// for this long. Default 30 s.
	WriteTimeout time.Duration
	// IdleTimeout closes a connection that sends nothing for this long
	// (Redis's timeout). Default 0: never.
	IdleTimeout time.Duration
	// AuthTimeout closes a connection that has not authenticated this long
	// after it was accepted (when the default user needs a password).
	// Default 10 s.
	AuthTimeout time.Duration
	// MaxClients bounds the open connections; one more is refused with
	// "-ERR max number of clients reached". Default 10000.
	MaxClients int
	// Routing is the cluster's committed partition map (the source the
	// native protocol serves too): CLUSTER SLOTS/SHARDS/NODES describe it
	// and MOVED redirects point into it. Nil, or no map yet: this node
	// serves every slot.
	Routing RoutingSource
	// Arriving, when set, reports whether segment seg is moving to this
	// node (a live migration's target that has not applied the flip yet):
	// a request for it answers TRYAGAIN instead of a MOVED back to the
	// source, which has already handed it over (a Redis Cluster client
	// would bounce between the two until it gives up).
	Arriving func(seg int) bool
	// Metrics receives per-command operation counts and latencies,
	// connection counts and authentication failures. Optional.
	Metrics *metrics.Recorder
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// WriteBarrier, when set, holds the reply of every successful write
	// command until it returns (sync replication, R-REP-2): the replies of
	// a pipelined read batch wait once per segment written, at the highest
	// revision written there; a failed wait answers -TIMEOUT instead (the
	// write stays applied). nil = a write is answered right after its local
	// apply, at no extra cost.
	WriteBarrier WriteBarrier
	// Replicas, when set, tells WAIT how many replicas applied a segment's
	// writes (the replication manager). nil: WAIT answers 0 at once.
	Replicas ReplicaWaiter
	// FreezeCheck, when set, is called once per read batch, with the time
	// read once for it, before the batch's first request runs: the node's
	// freeze fence (it may unown every segment, which then answers Moved).
	// nil = nothing is checked and no clock is read for it.
	FreezeCheck func(now time.Time)
	// ReadOnly, when set, is asked before every write command (scripts'
	// included); a non-empty answer refuses it with Redis's READONLY error
	// (a follower cluster, R-OPS-4). It must be cheap: a lock-free load.
	ReadOnly func() string
	// MaxRSSBytes is the node's process memory bound (--memory-max-rss),
	// reported by INFO memory. 0 = off.
	MaxRSSBytes int64
	// Partitions, when set, lists the node's view of each partition's owner
	// and replicas for INFO replication (zaris_partition_<n> lines).
	// nil = only the counts of owned and replica partitions are reported.
	Partitions func() []PartitionInfo
	// Bus, when set, is the node's cluster pub/sub bus: PUBSUB CHANNELS /
	// NUMSUB / NUMPAT ask every member through it, and CONFIG SET
	// notify-keyspace-events is sent to every member on it.
	Bus *bus.Bus
	// Cluster, when set, describes the cluster for CLUSTER INFO (state,
	// failing slots, epoch). nil: a node on its own, always ok.
	Cluster func() ClusterInfo

	// ScriptTimeLimit is how long a script runs before other clients get
	// BUSY and SCRIPT KILL may stop it (Redis's busy-reply-threshold).
	// Default 5 s.
	ScriptTimeLimit time.Duration
	// EventLoops is how many event loops serve plain-TCP connections
	// (Linux; D66): 0 = one per two CPUs, at least one; negative = none,
	// every connection on its own goroutine. TLS connections always have
	// their own goroutine.
	EventLoops int
}

// ClusterInfo is the cluster's health as CLUSTER INFO reports it.
type ClusterInfo struct {
	// FailSlots are the slots of partitions that no node serves
	// (Unavailable: no live copy to promote).
	FailSlots int
	// CurrentEpoch is the committed map's version; MyEpoch the highest
	// epoch of the partitions this node owns.
	CurrentEpoch, MyEpoch uint64
}

// PartitionInfo is one partition as INFO replication reports it.
type PartitionInfo struct {
	Partition int
	Owner     string   // node id
	Replicas  []string // node ids
	Revision  uint64   // the owner's latest revision as this node knows it
	Epoch     uint64   // the failover epoch
	// Health: healthy, degraded, recovering, unavailable, suspect.
	Health string
	// ReplicaOffsets: on the owner, each replica's applied revision (the
	// owner's revision less the replica's lag) and its session state.
	ReplicaOffsets []ReplicaOffset
}

// ReplicaOffset is one replica's progress as its partition's owner sees it.
type ReplicaOffset struct {
	Node   string
	State  string // connecting, streaming, disconnected, held
	Offset uint64
}

// RoutingSource yields the cluster's current routing map (nil before the
// cluster runs).
type RoutingSource interface {
	RoutingMap() *wire.RoutingMap
}

// Defaults of Config.
const (
	DefaultMaxQueryBuffer    = 1 << 30
	DefaultOutputBufferLimit = 256 << 20
	DefaultWriteTimeout      = 30 * time.Second
	DefaultMaxClients        = 10000
	DefaultAuthTimeout       = 10 * time.Second
)

func (c *Config) setDefaults() error {
	if c.Store == nil {
		return errors.New("resp: Config.Store is required")
	}
	c.Limits = c.Limits.withDefaults()
	if c.MaxQueryBuffer <= 0 {
		c.MaxQueryBuffer = DefaultMaxQueryBuffer
	}
	if c.OutputBufferLimit <= 0 {
		c.OutputBufferLimit = DefaultOutputBufferLimit
	}
	if c.WriteTimeout <= 0 {
		c.WriteTimeout = DefaultWriteTimeout
	}
	if c.IdleTimeout < 0 {
		return fmt.Errorf("resp: negative IdleTimeout %v", c.IdleTimeout)
	}
	if c.ScriptTimeLimit <= 0 {
		c.ScriptTimeLimit = DefaultScriptTimeLimit
	}
	if c.AuthTimeout <= 0 {
		c.AuthTimeout = DefaultAuthTimeout
	}
	if c.MaxClients <= 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.NodeID == "" {
		c.NodeID = "zaris"
	}
	return nil
}

// Server serves the Redis protocol for one store. Its zero value is not
// usable: build it with New.
type Server struct {
	cfg       Config
	log       *slog.Logger
	store     *store.Store
	segs      int
	acl       *acl.Registry
	clusterID string // 40 hex: CLUSTER MYID
	runID     string // 40 hex, random per server: INFO run_id
	started   time.Time
	conns     *metrics.ConnGauge

	mu        sync.Mutex // guards listeners, clients, shutting
	listeners map[net.Listener]struct{}
	clients   map[*conn]struct{}
	shutting  bool
	connWG    sync.WaitGroup
	sampler   chan struct{} // closed to stop the ops/sec sampler

	nextID     atomic.Int64
	loops      []*evloop.Loop // nil until the first Serve, or without event loops
	loopsErr   error          // why the loops could not start (every connection then has a goroutine)
	loopNext   atomic.Uint32
	stats      stats
	listenAddr atomic.Value // *net.TCPAddr of the first listener served
	scanCache  segCache
	sampleOnce sync.Once

	cfgMu        sync.Mutex        // guards notifyEvents, cfgVals
	notifyEvents string            // CONFIG SET notify-keyspace-events, normalised
	cfgVals      map[string]string // CONFIG parameters without a live home (cmd_config.go)
	notify       notifier          // the keyspace-notification publisher
	shards       shardSubs         // connections with shard subscriptions (pubsub_cluster.go)
	live         liveLimits        // limits CONFIG SET changes while connections read them

	slowlog  slowlog       // SLOWLOG (slowlog.go)
	latency  latencyLog    // LATENCY (slowlog.go)
	cmdStats cmdStatsTable // INFO commandstats/errorstats (cmd_info2.go)
	monitors monitorSet    // MONITOR (monitor.go)
	pause    clientPause   // CLIENT PAUSE (monitor.go)

	scripts *scripting  // EVAL's script cache, FUNCTION libraries, Lua states
	trk     tracker     // CLIENT TRACKING (tracking.go)
	blocked *blockQueue // blocked commands, served in the order they blocked (blockqueue.go)
}

// New validates cfg and returns a server ready to Serve.
func New(cfg Config) (*Server, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var run [20]byte
	_, _ = rand.Read(run[:])
	s := &Server{
		cfg: cfg, log: cfg.Logger.With("component", "resp"),
		store:     cfg.Store,
		segs:      cfg.Store.Segments(),
		acl:       cfg.ACL,
		clusterID: redisNodeID(cfg.NodeID),
		runID:     hex.EncodeToString(run[:]),
		started:   time.Now(),
		conns:     cfg.Metrics.Conns(metrics.ProtoRESP),
		listeners: map[net.Listener]struct{}{},
		clients:   map[*conn]struct{}{},
		sampler:   make(chan struct{}),
		scripts:   newScripting(cfg.ScriptTimeLimit),
	}
	s.blocked = newBlockQueue(s.store, s.log)
	aclReady()
	loopReady()
	if s.acl == nil {
		s.acl = acl.NewRegistry(cfg.Token)
	}
	s.initConfig()
	s.initObservability()
	return s, nil
}

// Serve accepts connections on l until Shutdown or Close, and returns nil
// then; it returns an error when accepting fails for good.
func (s *Server) Serve(l net.Listener) error {
	s.mu.Lock()
	if s.shutting {
		s.mu.Unlock()
		_ = l.Close() // Shutdown ran before this Serve: it never saw l
		return nil
	}
	first := len(s.listeners) == 0
	if s.loops == nil && s.loopsErr == nil && s.cfg.EventLoops >= 0 {
		n := s.cfg.EventLoops
		if n == 0 {
			n = evloop.DefaultLoops()
		}
		s.loops, s.loopsErr = evloop.Start(n, s.log)
		if s.loopsErr != nil {
			s.log.Warn("event loops unavailable; every connection gets its own goroutine", "err", s.loopsErr)
		}
	}
	s.listeners[l] = struct{}{}
	s.mu.Unlock()
	if first {
		if a, ok := l.Addr().(*net.TCPAddr); ok {
			s.listenAddr.Store(a)
		}
		s.sampleOnce.Do(func() { go s.stats.sample(s, s.sampler) })
	}
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
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTooManyFiles(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		s.stats.connsReceived.Add(1)
		s.mu.Lock()
		switch {
		case s.shutting:
			s.mu.Unlock()
			_ = nc.Close()
			return nil
		case int64(len(s.clients)) >= s.live.maxClients.Load():
			s.mu.Unlock()
			s.stats.rejected.Add(1)
			_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = nc.Write([]byte("-ERR max number of clients reached\r\n"))
			_ = nc.Close()
			continue
		}
		var loop *evloop.Loop
		if len(s.loops) > 0 {
			var ok bool
			if nc, ok = evloop.Wrap(nc); ok {
				loop = s.loops[s.loopNext.Add(1)%uint32(len(s.loops))]
			}
		}
		c := newConn(s, nc)
		if loop != nil {
			c.setClock(time.Now())
			c.member = loop.NewMember(nc, c)
		}
		s.clients[c] = struct{}{}
		s.connWG.Add(1)
		s.mu.Unlock()
		s.conns.Inc()
		c.startAuthTimer()
		switch {
		case c.member == nil || !c.member.Register():
			go c.serve()
		case c.stopping.Load():
			c.member.Abort(false) // a shutdown between the insert and the registration
		}
	}
}

// Shutdown stops accepting, lets every connection finish the commands it
// has already read (their replies are written), and closes them. If ctx
// ends first, the remaining connections are closed at once and ctx's error
// is returned. Safe to call more than once, and before Serve.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.shutting {
		s.shutting = true
		close(s.sampler)
	}
	for l := range s.listeners {
		_ = l.Close()
	}
	for c := range s.clients {
		c.stopReading()
	}
	s.mu.Unlock()
	s.stopNotify()
	s.stopShardWatch()
	s.stopTracking()

	done := make(chan struct{})
	go func() { s.connWG.Wait(); close(done) }()
	select {
	case <-done:
		s.stopLoops()
		return nil
	case <-ctx.Done():
		s.closeAll()
		<-done
		s.stopLoops()
		return ctx.Err()
	}
}

// Close closes the listeners and every connection at once.
func (s *Server) Close() error {
	s.mu.Lock()
	if !s.shutting {
		s.shutting = true
		close(s.sampler)
	}
	for l := range s.listeners {
		_ = l.Close()
	}
	s.mu.Unlock()
	s.stopNotify()
	s.stopShardWatch()
	s.stopTracking()
	s.closeAll()
	s.connWG.Wait()
	s.stopLoops()
	return nil
}

// stopLoops ends the event loops once no connection is left on them.
func (s *Server) stopLoops() {
	s.mu.Lock()
	loops := s.loops
	s.mu.Unlock()
	for _, l := range loops {
		l.Stop()
	}
}

func (s *Server) closeAll() {
	s.scripts.killAll()
	s.mu.Lock()
	for c := range s.clients {
		c.abort()
	}
	s.mu.Unlock()
}

func (s *Server) forget(c *conn) {
	s.mu.Lock()
	delete(s.clients, c)
	s.mu.Unlock()
	s.trackForget(c)
	s.stats.retire(c)
	s.conns.Dec()
	s.connWG.Done()
}

// Connections returns the number of open client connections.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}

// snapshotClients returns the open connections, ordered by id; one CLIENT
// KILL has closed is left out while its close completes.
func (s *Server) snapshotClients() []*conn {
	s.mu.Lock()
	out := make([]*conn, 0, len(s.clients))
	for c := range s.clients {
		if !c.killed.Load() {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	sortConns(out)
	return out
}

// authRequired: a new connection is not authenticated (the default user
// has a password or is off).
func (s *Server) authRequired() bool { return !s.defaultNoPass() }

// ACL returns the users the server enforces.
func (s *Server) ACL() *acl.Registry { return s.acl }

// NotifyKeyspaceEvents returns the notify-keyspace-events flags set with
// CONFIG SET (normalised, "" = off).
func (s *Server) NotifyKeyspaceEvents() string {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.notifyEvents
}

// stats are the server-wide counters INFO reports. Live connections count
// into their own counters (no shared cache line on the hot path); retire
// folds a closing connection's counters in here.
type stats struct {
	connsReceived, rejected           atomic.Uint64
	outputDisconnects                 atomic.Uint64 // connections closed over their output buffer limit
	authTimeouts                      atomic.Uint64 // connections closed for not authenticating in time
	loopLeaves                        atomic.Uint64 // connections that left an event loop for a goroutine (D66)
	cmds, netIn, netOut, hits, misses atomic.Uint64

	mu      sync.Mutex // guards the fields below
	base    counters   // CONFIG RESETSTAT: subtracted from every report
	samples [16]float64
	nsample int
	last    counters
	lastAt  time.Time
}

type counters struct{ cmds, netIn, netOut, hits, misses, connsReceived, rejected uint64 }

func (st *stats) retire(c *conn) {
	st.cmds.Add(c.cmds.Load())
	st.netIn.Add(c.netIn.Load())
	st.netOut.Add(c.netOut.Load())
	st.hits.Add(c.hits.Load())
	st.misses.Add(c.misses.Load())
}

// totals sums the retired counters and those of the live connections.
func (s *Server) totals() counters {
	st := &s.stats
	t := counters{
		cmds: st.cmds.Load(), netIn: st.netIn.Load(), netOut: st.netOut.Load(),
		hits: st.hits.Load(), misses: st.misses.Load(),
		connsReceived: st.connsReceived.Load(), rejected: st.rejected.Load(),
	}
	s.mu.Lock()
	for c := range s.clients {
		t.cmds += c.cmds.Load()
		t.netIn += c.netIn.Load()
		t.netOut += c.netOut.Load()
		t.hits += c.hits.Load()
		t.misses += c.misses.Load()
	}
	s.mu.Unlock()
	return t
}

// reported is totals minus the CONFIG RESETSTAT baseline.
func (s *Server) reported() counters {
	t := s.totals()
	s.stats.mu.Lock()
	b := s.stats.base
	s.stats.mu.Unlock()
	sub := func(a, b uint64) uint64 {
		if a < b {
			return 0
		}
		return a - b
	}
	return counters{
		cmds: sub(t.cmds, b.cmds), netIn: sub(t.netIn, b.netIn), netOut: sub(t.netOut, b.netOut),
		hits: sub(t.hits, b.hits), misses: sub(t.misses, b.misses),
		connsReceived: sub(t.connsReceived, b.connsReceived), rejected: sub(t.rejected, b.rejected),
	}
}

func (s *Server) resetStats() {
	t := s.totals()
	s.stats.mu.Lock()
	s.stats.base = t
	s.stats.mu.Unlock()
}

// sample measures the command rate every 100 ms and keeps the last 16
// samples, as Redis does for instantaneous_ops_per_sec.
func (st *stats) sample(s *Server, stop <-chan struct{}) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			t := s.totals()
			st.mu.Lock()
			if !st.lastAt.IsZero() {
				if dt := now.Sub(st.lastAt).Seconds(); dt > 0 && t.cmds >= st.last.cmds {
					st.samples[st.nsample%len(st.samples)] = float64(t.cmds-st.last.cmds) / dt
					st.nsample++
				}
			}
			st.last, st.lastAt = t, now
			st.mu.Unlock()
		}
	}
}

// opsPerSec is the mean of the recent rate samples.
func (st *stats) opsPerSec() int64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := min(st.nsample, len(st.samples))
	if n == 0 {
		return 0
	}
	var sum float64
	for _, v := range st.samples[:n] {
		sum += v
	}
	return int64(sum / float64(n))
}
