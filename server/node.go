package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/server/bus"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/events"
	"github.com/zaris-io/zaris/server/follow"
	"github.com/zaris-io/zaris/server/httpapi"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/native"
	"github.com/zaris-io/zaris/server/replication"
	"github.com/zaris-io/zaris/server/resp"
	"github.com/zaris-io/zaris/server/store"
)

// Service is a protocol front end served on one of the node's listeners.
// The Node owns the listener: it binds it (wrapped in TLS when TLS is
// configured) and hands it to Serve.
//
// Serve blocks, serving connections from l, until Shutdown or Close; it
// returns nil after a shutdown and a non-nil error when it failed on its own.
// Shutdown stops accepting, waits for in-flight requests to finish until ctx
// ends, and returns ctx's error if they did not. A Service that also
// implements io.Closer is closed when its Shutdown did not finish in time;
// otherwise the Node closes its listener.
//
// The Node runs Serve in its own goroutine, so Shutdown may be called before
// Serve has begun; Serve must then return promptly (http.Server behaves that
// way). Serve, Shutdown and Close are each called at most once.
type Service interface {
	Serve(l net.Listener) error
	Shutdown(ctx context.Context) error
}

// Endpoint names one of the node's listeners.
type Endpoint uint8

const (
	// EndpointClient is the native-protocol listener on ClientPort.
	EndpointClient Endpoint = iota
	// EndpointRESP is the Redis-protocol listener on RESPPort.
	EndpointRESP
	// EndpointHTTP is the built-in HTTP service on HTTPPort.
	EndpointHTTP

	numEndpoints
)

var endpointNames = [numEndpoints]string{"client", "resp", "http"}

func (e Endpoint) String() string {
	if e < numEndpoints {
		return endpointNames[e]
	}
	return "Endpoint(" + strconv.Itoa(int(e)) + ")"
}

// port is the configured port of endpoint e.
func (c Config) port(e Endpoint) int {
	switch e {
	case EndpointClient:
		return c.ClientPort
	case EndpointRESP:
		return c.RESPPort
	case EndpointHTTP:
		return c.HTTPPort
	}
	return 0
}

type nodeState uint8

const (
	stateCreated nodeState = iota
	stateRunning
	stateStopping
	stateStopped
)

var stateNames = [...]string{"created", "running", "stopping", "stopped"}

// Errors of the Node lifecycle.
var (
	ErrStarted = errors.New("server: node already started")
	ErrStopped = errors.New("server: node stopped")
	// ErrDecommissioned is reported on Failed once a decommission asked
	// over HTTP (POST /v1/node/decommission) has completed: the node left
	// the cluster and stopped as asked — the process exits normally.
	ErrDecommissioned = errors.New("server: node decommissioned")
)

// Node is one Zaris server process's worth of state: the store engine, the
// metrics recorder, the listeners and the services attached to them.
//
// Lifecycle: NewNode → Attach (optional, per protocol) → Start → Stop.
// Stop is graceful and safe to call more than once, and before Start.
type Node struct {
	cfg     Config
	log     *slog.Logger
	store   *store.Store
	metrics *metrics.Recorder
	tls     *tls.Config // the client-facing listeners'; nil = plain TCP
	// tlsState is the reloadable TLS material (security.go); secret the
	// cluster secret (nil = none).
	tlsState *tlsState
	secret   *cluster.Secret
	events   *events.Ring  // cluster events for the web console's timeline
	feed     feedClient    // behind GET /v1/changes (changes_wiring.go)
	follow   followRuntime // the WAN follower (follow_wiring.go)

	mu        sync.Mutex // guards state, services, listeners, served, peer, cluster, startedAt
	state     nodeState
	services  [numEndpoints]Service
	builtin   [numEndpoints]bool // the service is the node's own default; Attach may replace it
	listeners [numEndpoints]net.Listener
	served    [numEndpoints]bool // Serve was started on the listener
	peer      net.Listener       // the peer port (raft; replication later)
	cluster   *cluster.Cluster
	startedAt time.Time

	native    *native.Server // the built-in native service (request counters)
	repl      *replication.Manager
	bus       *bus.Bus     // cluster pub/sub (pubsub_wiring.go)
	respSrv   *resp.Server // the built-in RESP service (nil without a RESP port)
	routing   *clusterRouting
	readyCh   chan struct{} // closed when the traffic gate opens
	readyOnce sync.Once

	ready    atomic.Bool // serving traffic: /readyz
	stopping atomic.Bool // set before services are shut down: their Serve returning is expected
	serving  sync.WaitGroup
	failed   chan error // the first unexpected Serve failure; buffered 1

	stopOnce sync.Once
	stopErr  error

	// The freeze fence (freeze.go). ownMu serialises every change of the
	// store's segment ownership made by the node — a map applied, a fence,
	// its lifting — and guards aligned; fenced is written under it.
	ownMu      sync.Mutex
	aligned    *cluster.PartitionMap // the last map applyMap aligned to
	fenced     atomic.Bool           // no segment served until the map is re-confirmed
	freeze     *freezeDetector
	freezeStop chan struct{}  // closed by stopFreezeDetector (under ownMu)
	bg         sync.WaitGroup // the detector's goroutines
	fences     prometheus.Counter

	// acl is the node's users (Redis ACL), shared by RESP, the native
	// protocol and HTTP; in a cluster folded from the raft log.
	acl *acl.Registry
}

// ACL returns the node's users and permissions.
func (n *Node) ACL() *acl.Registry { return n.acl }

// NewNode validates cfg, creates the store and the metrics recorder, loads
// the TLS material and builds the HTTP service (unless HTTPPort is 0). It
// binds nothing: Start does. logger receives every log line of the node;
// nil discards them.
func NewNode(cfg Config, logger *slog.Logger) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.NodeID == "" {
		host, _ := os.Hostname()
		cfg.NodeID = NodeIDFromHostname(host)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With("node_id", cfg.NodeID, "store", cfg.Store)

	tlsSt, err := loadTLSState(cfg)
	if err != nil {
		return nil, err
	}
	var tlsConfig *tls.Config
	if tlsSt != nil {
		tlsConfig = tlsSt.listenerConfig(false)
	}
	secret, err := loadSecret(cfg)
	if err != nil {
		return nil, err
	}
	st, err := store.New(cfg.storeConfig(logger.With("component", "store")))
	if err != nil {
		return nil, fmt.Errorf("server: store: %w", err)
	}
	// Nothing is owned until a committed map says so (see cluster_wiring.go).
	for i := range st.Segments() {
		st.Segment(uint16(i)).SetOwned(false)
	}
	n := &Node{
		cfg:      cfg,
		log:      logger,
		store:    st,
		tls:      tlsConfig,
		tlsState: tlsSt,
		secret:   secret,
		failed:   make(chan error, 1),
		routing:  &clusterRouting{idle: make(chan struct{})},
		readyCh:  make(chan struct{}),
		freeze:   newFreezeDetector(cfg.Timings.FreezeThreshold()),
		fences:   newFenceCounter(),
		events:   events.NewRing(cfg.NodeID, events.DefaultCapacity),
		metrics: metrics.New(metrics.Options{
			NodeID: cfg.NodeID, Store: cfg.Store, Version: Version(), Stats: st.Stats,
		}),
	}
	n.freezeStop = make(chan struct{})
	n.follow.stats = follow.NewStats()
	resp.RegisterACLCatalog() // the command categories users are built on
	n.acl = acl.NewRegistry(cfg.Token)
	repl, err := n.newReplication()
	if err != nil {
		_ = st.Close()
		return nil, err
	}
	n.repl = repl
	n.bus = n.newBus()
	n.metrics.Registry().MustRegister(repl.Collector(), failoverCollector{n: n}, n.fences,
		metrics.NewMigrationCollector(n.migrationStats), peerAuthCollector{n: n})
	n.metrics.Registry().MustRegister(metrics.NewPubSubCollector(st.PubSub().Stats))
	n.metrics.Registry().MustRegister(n.follow.stats.Collector(func() bool { return n.followState().Following() }))
	fail := func(err error) (*Node, error) {
		repl.Close()
		_ = st.Close()
		return nil, err
	}
	if cfg.HTTPPort != 0 {
		h, err := httpapi.New(httpapi.Options{
			Store:        st,
			Metrics:      n.metrics,
			Logger:       logger.With("component", "http"),
			Token:        cfg.Token,
			ACL:          n.acl,
			Ready:        n.Ready,
			Info:         func() any { return n.Info() },
			Cluster:      func() any { return n.ClusterStatus() },
			WriteBarrier: n.httpBarrier(),
			FreezeCheck:  n.freezeCheck,
			Console:      n.consoleOptions(),
			Changes:      n.openChanges,
			ReadOnly:     n.readOnly,
			Follow:       followControl{n: n},
			// POST /v1/node/decommission: the handler has answered 202;
			// the leave and the stop run on their own goroutine (the stop
			// shuts this HTTP service down and waits for its handlers), and
			// its end is reported on Failed, the channel the binary waits on
			// to stop and exit.
			Decommission: func() {
				go func() {
					report := ErrDecommissioned
					err := n.Decommission(context.Background())
					if errors.Is(err, cluster.ErrCannotDrain) {
						// Nothing can take its partitions: it keeps serving.
						n.log.Error("decommission refused; the node keeps serving", "err", err)
						return
					}
					if err != nil {
						report = fmt.Errorf("server: decommission failed: %w", err)
					}
					select {
					case n.failed <- report:
					default:
					}
				}()
			},
			Rebalance: func(ctx context.Context) (uint64, error) {
				v, err := n.Rebalance(ctx)
				if errors.Is(err, cluster.ErrNotLeader) {
					err = fmt.Errorf("%w: %w", httpapi.ErrNotLeader, err)
				}
				return v, err
			},
			Evict: func(ctx context.Context, node string) error {
				err := n.Evict(ctx, node)
				switch {
				case errors.Is(err, cluster.ErrNotLeader):
					err = fmt.Errorf("%w: %w", httpapi.ErrNotLeader, err)
				case errors.Is(err, cluster.ErrUnknownNode):
					err = fmt.Errorf("%w: %w", httpapi.ErrUnknownNode, err)
				case errors.Is(err, cluster.ErrEvictSelf):
					err = fmt.Errorf("%w: %w", httpapi.ErrEvictSelf, err)
				}
				return err
			},
		})
		if err != nil {
			return fail(err)
		}
		n.services[EndpointHTTP] = h
	}
	nat, err := n.newNativeService()
	if err != nil {
		return fail(err)
	}
	n.services[EndpointClient] = nat
	n.builtin[EndpointClient] = true
	n.native = nat
	if cfg.RESPPort != 0 {
		rs, err := n.newRESPService()
		if err != nil {
			_ = nat.Shutdown(context.Background())
			return fail(err)
		}
		n.services[EndpointRESP] = rs
		n.respSrv = rs
		n.builtin[EndpointRESP] = true
	}
	if cfg.Token != "" && tlsConfig == nil {
		logger.Warn("a token is configured without TLS: it travels in clear text")
	}
	return n, nil
}

// NodeIDFromHostname derives a valid node id from a host name: characters
// outside [A-Za-z0-9._-] become '-', the result is cut to 64 characters, and
// an unusable name gives "zaris".
func NodeIDFromHostname(host string) string {
	b := []byte(host)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '-'
		}
	}
	id := strings.TrimLeft(string(b), "._-")
	if len(id) > 64 {
		id = id[:64]
	}
	if !ValidNodeID(id) {
		return "zaris"
	}
	return id
}

// Attach plugs a protocol front end into the node's client or RESP
// endpoint. It must be called before Start; on the client endpoint it
// replaces the built-in native-protocol service. The HTTP endpoint is built in;
// the RESP endpoint cannot be attached when RESPPort is 0 (off). An
// endpoint without a Service is not bound.
func (n *Node) Attach(ep Endpoint, svc Service) error {
	if svc == nil {
		return errors.New("server: Attach: nil service")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case n.state != stateCreated:
		return fmt.Errorf("server: Attach %s: %w", ep, ErrStarted)
	case ep != EndpointClient && ep != EndpointRESP:
		return fmt.Errorf("server: Attach: %s is not an attachable endpoint", ep)
	case n.cfg.port(ep) == 0:
		return fmt.Errorf("server: Attach: %s is off (port 0)", ep)
	case n.services[ep] != nil && !n.builtin[ep]:
		return fmt.Errorf("server: Attach: %s already has a service", ep)
	}
	if old, ok := n.services[ep].(interface{ Shutdown(context.Context) error }); ok && n.builtin[ep] {
		_ = old.Shutdown(context.Background()) // never served: releases its worker pool
	}
	n.services[ep] = svc
	n.builtin[ep] = false
	return nil
}

// Start binds the listener of every endpoint that has a service and the
// peer port, joins (or bootstraps) the cluster and serves HTTP at once
// (/readyz answers 503). The client and RESP listeners serve only when the
// traffic gate opens: the node has applied a committed map (R-CLU-5); the
// node is then Ready. A node alone (no --join, no registry, expecting no
// one) leads its own cluster of one at once, and Start returns when it is
// ready; a node of a larger cluster returns right after binding — wait
// with WaitReady. If a listener cannot be bound or the cluster cannot
// start, nothing stays bound and Start returns the error; the node can then
// only be stopped. If ctx ends while a lone node waits for its gate, Start
// returns ctx's error with the node running (Stop it).
func (n *Node) Start(ctx context.Context) error {
	standalone, err := n.startLocked(ctx)
	if err != nil || !standalone {
		return err
	}
	select {
	case <-n.readyCh:
		return nil
	case err := <-n.failed:
		n.failed <- err
		return err
	case <-ctx.Done():
		return fmt.Errorf("server: start: waiting for the traffic gate: %w", ctx.Err())
	}
}

func (n *Node) startLocked(ctx context.Context) (standalone bool, err error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch n.state {
	case stateRunning:
		return false, ErrStarted
	case stateStopping, stateStopped:
		return false, ErrStopped
	}

	var lc net.ListenConfig
	listen := func(what string, port int, tc *tls.Config) (net.Listener, error) {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("server: start: %w", err)
		}
		if port == EphemeralPort {
			port = 0
		}
		addr := net.JoinHostPort(n.cfg.Bind, strconv.Itoa(port))
		ln, err := lc.Listen(ctx, "tcp", addr)
		if err != nil {
			return nil, fmt.Errorf("server: %s listener on %s: %w", what, addr, err)
		}
		if tc != nil {
			ln = tls.NewListener(ln, tc)
		}
		return ln, nil
	}
	for ep := Endpoint(0); ep < numEndpoints; ep++ {
		if n.services[ep] == nil {
			continue
		}
		ln, err := listen(ep.String(), n.cfg.port(ep), n.tls)
		if err != nil {
			n.closeListenersLocked()
			return false, err
		}
		n.listeners[ep] = ln
	}
	var peerTLS *tls.Config
	if n.tlsState != nil {
		peerTLS = n.tlsState.listenerConfig(true)
	}
	peer, err := listen("peer", n.cfg.PeerPort, peerTLS)
	if err != nil {
		n.closeListenersLocked()
		return false, err
	}
	cl, err := n.newClusterLocked(peer)
	if err == nil {
		err = cl.Start()
	}
	if err != nil {
		_ = peer.Close()
		n.closeListenersLocked()
		return false, fmt.Errorf("server: cluster: %w", err)
	}
	n.peer, n.cluster = peer, cl
	n.routing.c.Store(cl)
	n.startFreezeDetector()
	n.startFollower()

	if ln := n.listeners[EndpointHTTP]; ln != nil {
		n.served[EndpointHTTP] = true
		n.serve(EndpointHTTP, n.services[EndpointHTTP], ln)
	}
	n.state = stateRunning
	n.startedAt = time.Now()

	attrs := []any{"version", Version(), "config", n.cfg, "peer_addr", peer.Addr().String(),
		"gossip_port", cl.GossipPort()}
	for ep := Endpoint(0); ep < numEndpoints; ep++ {
		if ln := n.listeners[ep]; ln != nil {
			attrs = append(attrs, ep.String()+"_addr", ln.Addr().String())
		}
	}
	n.log.Info("node started; the client ports open with the traffic gate", attrs...)
	cc := cluster.Config{Join: n.cfg.Join, ExpectNodes: n.cfg.ExpectNodes, Registry: n.cfg.registryInfos(),
		Self: cluster.NodeInfo{ID: cluster.NodeID(n.cfg.NodeID)}}
	return cc.Standalone(), nil
}

func (n *Node) closeListenersLocked() {
	for ep, ln := range n.listeners {
		if ln != nil {
			_ = ln.Close()
			n.listeners[ep] = nil
		}
	}
}

// serve runs svc on ln in a tracked goroutine. A Serve that returns while
// the node is not stopping is a failure: the node stops being ready and the
// error is reported on Failed.
func (n *Node) serve(ep Endpoint, svc Service, ln net.Listener) {
	n.serving.Add(1)
	go func() {
		defer n.serving.Done()
		err := svc.Serve(ln)
		if n.stopping.Load() {
			if err != nil && !isServerClosed(err) {
				n.log.Warn("service returned an error while stopping", "endpoint", ep.String(), "err", err)
			}
			return
		}
		if err == nil {
			err = errors.New("stopped serving")
		}
		err = fmt.Errorf("server: %s service: %w", ep, err)
		n.ready.Store(false)
		n.log.Error("service failed", "endpoint", ep.String(), "err", err)
		select {
		case n.failed <- err:
		default:
		}
	}()
}

// Stop stops the node gracefully: it stops being ready, shuts the client and
// RESP services down (they stop accepting and drain in-flight requests),
// then the HTTP service — so /readyz answers 503 while client connections
// drain — and finally closes the store. It is bounded by ctx and by
// Config.ShutdownTimeout, whichever ends first; after that, remaining
// connections are closed and the returned error says what did not drain.
// Stop is safe to call more than once (later calls return the first
// result) and before Start.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() { n.stopErr = n.stop(ctx) })
	return n.stopErr
}

func (n *Node) stop(ctx context.Context) error {
	n.mu.Lock()
	wasRunning := n.state == stateRunning
	n.state = stateStopping
	n.mu.Unlock()
	n.stopping.Store(true)
	n.ready.Store(false)

	var errs []error
	if wasRunning {
		n.log.Info("node stopping", "timeout", n.cfg.ShutdownTimeout.String())
		ctx, cancel := context.WithTimeout(ctx, n.cfg.ShutdownTimeout)
		defer cancel()
		n.stopFollower() // the applier commits its cursor while the cluster still runs

		// Listeners are only written under mu before the state leaves
		// stateCreated, so reading them here without the lock is safe.
		var (
			wg   sync.WaitGroup
			emu  sync.Mutex // guards errs while the front ends shut down
			shut = func(ep Endpoint) {
				if err := n.shutdown(ctx, ep); err != nil {
					emu.Lock()
					errs = append(errs, err)
					emu.Unlock()
				}
			}
		)
		for _, ep := range []Endpoint{EndpointClient, EndpointRESP} {
			wg.Add(1)
			go func() { defer wg.Done(); shut(ep) }()
		}
		wg.Wait()
		// Replication stops once the client ports drained (their sync
		// writes had their answer), the cluster after it (clients drained
		// while the node was still a member) and before HTTP (/readyz says
		// 503 to the end).
		n.stopFreezeDetector()
		n.repl.Close()
		n.cluster.Stop()
		n.bus.Close()
		shut(EndpointHTTP)
		n.closeFeedClient()

		done := make(chan struct{})
		go func() { n.serving.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			// What did not drain was closed by shutdown; Serve returns
			// promptly after that unless the service ignores its listener.
			select {
			case <-done:
			case <-time.After(time.Second):
				errs = append(errs, fmt.Errorf("server: services did not return from Serve: %w", ctx.Err()))
			}
		}
	}
	n.repl.Close() // a node never started: nothing ran, Close is cheap
	n.closeFeedClient()
	if err := n.store.Close(); err != nil {
		errs = append(errs, fmt.Errorf("server: store: %w", err))
	}

	n.mu.Lock()
	n.state = stateStopped
	n.mu.Unlock()
	err := errors.Join(errs...)
	if wasRunning {
		if err != nil {
			n.log.Warn("node stopped", "err", err)
		} else {
			n.log.Info("node stopped")
		}
	}
	return err
}

// shutdown drains one endpoint's service; when that does not finish in
// time it forces it closed.
func (n *Node) shutdown(ctx context.Context, ep Endpoint) error {
	n.mu.Lock()
	svc, ln, served := n.services[ep], n.listeners[ep], n.served[ep]
	n.mu.Unlock()
	if svc == nil || ln == nil {
		return nil
	}
	if !served {
		// The traffic gate never opened: nothing to drain. Shutdown still
		// releases what the service holds (the native worker pool).
		_ = ln.Close()
		_ = svc.Shutdown(ctx)
		return nil
	}
	err := svc.Shutdown(ctx)
	// The node owns the listener: close it whatever the service did. A
	// stop that raced the traffic gate's Serve call reached the service
	// before the listener was registered with it, and Serve then returned
	// on its own without closing it — the port stayed bound for good and
	// a restart on it failed ("address already in use").
	_ = ln.Close()
	if err == nil {
		return nil
	}
	if c, ok := svc.(io.Closer); ok {
		_ = c.Close()
	} else {
		_ = ln.Close()
	}
	n.log.Warn("service did not drain in time; closed", "endpoint", ep.String(), "err", err)
	return fmt.Errorf("server: %s shutdown: %w", ep, err)
}

// Ready reports whether the node serves traffic: started, not stopping, and
// no service has failed.
func (n *Node) Ready() bool { return n.ready.Load() }

// Failed delivers the first failure of a service while the node was
// running (a Serve that returned on its own). The binary stops the node
// when it fires.
func (n *Node) Failed() <-chan error { return n.failed }

// Store is the node's store engine.
func (n *Node) Store() *store.Store { return n.store }

// Metrics is the node's metrics recorder; front ends record their
// operations and connections into it.
func (n *Node) Metrics() *metrics.Recorder { return n.metrics }

// Logger is the node's logger (already carrying node_id and store).
func (n *Node) Logger() *slog.Logger { return n.log }

// Config is the node's configuration, NodeID resolved.
func (n *Node) Config() Config { return n.cfg }

// TLSConfig returns a copy of the node's server TLS configuration, or nil
// when TLS is off. Listeners bound by the node are already wrapped in TLS;
// front ends need it only for their own outgoing connections.
func (n *Node) TLSConfig() *tls.Config {
	if n.tls == nil {
		return nil
	}
	return n.tls.Clone()
}

// Addr is the address endpoint ep is bound to, or nil when it is not bound
// (no service, port 0, or the node not started).
func (n *Node) Addr(ep Endpoint) net.Addr {
	n.mu.Lock()
	defer n.mu.Unlock()
	if ep >= numEndpoints || n.listeners[ep] == nil {
		return nil
	}
	return n.listeners[ep].Addr()
}

// ClientAddr is Addr(EndpointClient).
func (n *Node) ClientAddr() net.Addr { return n.Addr(EndpointClient) }

// RESPAddr is Addr(EndpointRESP).
func (n *Node) RESPAddr() net.Addr { return n.Addr(EndpointRESP) }

// HTTPAddr is Addr(EndpointHTTP).
func (n *Node) HTTPAddr() net.Addr { return n.Addr(EndpointHTTP) }

// isServerClosed reports the "closed by Shutdown" error a front end's Serve
// returns after a graceful stop (like net/http's ErrServerClosed): expected,
// not worth a warning.
func isServerClosed(err error) bool {
	return errors.Is(err, native.ErrServerClosed) || errors.Is(err, http.ErrServerClosed) || errors.Is(err, net.ErrClosed)
}
