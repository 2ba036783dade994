package cluster

import (
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"

	"github.com/zaris-io/zaris/internal/acl"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/cluster/failover"
)

// Timings are the cluster's clocks. DefaultTimings are the production
// values; tests shorten them (TestTimings).
type Timings struct {
	// FormationStable: membership unchanged this long lets the leader plan
	// the first map (R-CLU-5, default 3 s). FormationTimeout forces it
	// (default 30 s).
	FormationStable, FormationTimeout time.Duration
	// TrafficGuard: a node whose map never converges opens its doors after
	// this long anyway, with a warning (default 60 s).
	TrafficGuard time.Duration
	// MemberGrace: an unreachable member is Lost after this long (R-CLU-2,
	// default 30 s).
	MemberGrace time.Duration
	// DigestInterval: digest gossip and drift evaluation cadence (R-CLU-6,
	// default 1 s).
	DigestInterval time.Duration
	// Tick: the control loop's cadence (membership polling, grace windows,
	// the leader's reconciliation). Default 250 ms.
	Tick time.Duration
	// Raft: hashicorp/raft's HeartbeatTimeout, ElectionTimeout,
	// LeaderLeaseTimeout and CommitTimeout (defaults 1 s, 1 s, 500 ms, 50 ms).
	RaftHeartbeat, RaftElection, RaftLeaderLease, RaftCommit time.Duration
	// Gossip: memberlist's ProbeInterval, ProbeTimeout, GossipInterval
	// (defaults 500 ms, 250 ms, 200 ms) and SuspicionMult (default 4). A
	// dead node is declared dead about probe interval × (2 + 4 ×
	// max(1, log10 members)) after it stopped — 3 s under 10 members —
	// and failover acts on that verdict: the probe interval is the knob
	// that trades failover time against false suspicions (memberlist's
	// LAN profile, 1 s and 500 ms, doubles it: measured in BENCHMARKS.md).
	GossipProbeInterval, GossipProbeTimeout, GossipInterval time.Duration
	GossipSuspicionMult                                     int
	// JoinRetry: how often a node that has not joined anyone retries its
	// seeds (default 1 s).
	JoinRetry time.Duration
	// SuspectEscalation: an active owner silent this long (not alive in
	// membership, no clean departure) is confirmed dead and failed over
	// (R-REP-3, default 10 s). Lower fails over faster and risks promoting
	// over a long pause.
	SuspectEscalation time.Duration
	// HealthDebounce: a Degraded partition whose copies are all alive and
	// caught up turns Healthy after this long (R-REP-7, default 5 s).
	HealthDebounce time.Duration
}

// DefaultTimings are the production timings.
func DefaultTimings() Timings {
	return Timings{
		FormationStable: 3 * time.Second, FormationTimeout: 30 * time.Second, TrafficGuard: 60 * time.Second,
		MemberGrace: DefaultGraceWindow, DigestInterval: time.Second, Tick: 250 * time.Millisecond,
		RaftHeartbeat: time.Second, RaftElection: time.Second, RaftLeaderLease: 500 * time.Millisecond, RaftCommit: 50 * time.Millisecond,
		GossipProbeInterval: 500 * time.Millisecond, GossipProbeTimeout: 250 * time.Millisecond, GossipInterval: 200 * time.Millisecond,
		GossipSuspicionMult: 4, JoinRetry: time.Second,
		SuspectEscalation: failover.DefaultSuspectEscalation, HealthDebounce: failover.DefaultHealthDebounce,
	}
}

// TestTimings are short timings for clusters inside one test process on
// loopback, tolerant of a loaded two-CPU machine running -race, where every
// node of the process starves at once: formation in 200 ms (forced only
// after 20 s — a test cluster formed with part of its members is a split
// cluster), a probe answered within 200 ms, a node dead after about a
// second of silence, a 5 s grace window before an RF 1 partition may move
// away from its owner, a raft lease that survives a scheduling hiccup.
// Tests scale them with ZARIS_TEST_TIME_SCALE (server/clustertest).
func TestTimings() Timings {
	return Timings{
		FormationStable: 200 * time.Millisecond, FormationTimeout: 20 * time.Second, TrafficGuard: 20 * time.Second,
		MemberGrace: 5 * time.Second, DigestInterval: 100 * time.Millisecond, Tick: 25 * time.Millisecond,
		RaftHeartbeat: 800 * time.Millisecond, RaftElection: 800 * time.Millisecond, RaftLeaderLease: 400 * time.Millisecond, RaftCommit: 10 * time.Millisecond,
		GossipProbeInterval: 250 * time.Millisecond, GossipProbeTimeout: 200 * time.Millisecond, GossipInterval: 50 * time.Millisecond,
		GossipSuspicionMult: 4, JoinRetry: 100 * time.Millisecond,
		SuspectEscalation: 2 * time.Second, HealthDebounce: 500 * time.Millisecond,
	}
}

// Scaled returns t with every duration multiplied by f (f ≤ 0 = t): one
// knob that stretches test timings on a slow or busy machine.
func (t Timings) Scaled(f float64) Timings {
	if f <= 0 {
		return t
	}
	for _, d := range []*time.Duration{&t.FormationStable, &t.FormationTimeout, &t.TrafficGuard, &t.MemberGrace,
		&t.DigestInterval, &t.Tick, &t.RaftHeartbeat, &t.RaftElection, &t.RaftLeaderLease, &t.RaftCommit,
		&t.GossipProbeInterval, &t.GossipProbeTimeout, &t.GossipInterval, &t.JoinRetry, &t.SuspectEscalation,
		&t.HealthDebounce} {
		*d = time.Duration(float64(*d) * f)
	}
	return t
}

// Validate checks the timings against each other.
func (t Timings) Validate() error {
	for name, d := range map[string]time.Duration{
		"formation-stable": t.FormationStable + 1, "formation-timeout": t.FormationTimeout, "traffic-guard": t.TrafficGuard,
		"member-grace": t.MemberGrace, "digest-interval": t.DigestInterval, "tick": t.Tick,
		"raft-heartbeat-timeout": t.RaftHeartbeat, "raft-election-timeout": t.RaftElection,
		"raft-leader-lease": t.RaftLeaderLease, "raft-commit-timeout": t.RaftCommit,
		"gossip-probe-interval": t.GossipProbeInterval, "gossip-probe-timeout": t.GossipProbeTimeout,
		"gossip-interval": t.GossipInterval, "join-retry": t.JoinRetry,
		"suspect-escalation": t.SuspectEscalation, "health-debounce": t.HealthDebounce,
	} {
		if d <= 0 {
			return fmt.Errorf("%s: must be positive", name)
		}
	}
	switch {
	case t.RaftLeaderLease > t.RaftHeartbeat:
		return errors.New("raft-leader-lease: must not exceed raft-heartbeat-timeout")
	case t.RaftElection < t.RaftHeartbeat:
		return errors.New("raft-election-timeout: must not be below raft-heartbeat-timeout")
	case t.GossipProbeTimeout > t.GossipProbeInterval:
		return errors.New("gossip-probe-timeout: must not exceed gossip-probe-interval")
	case t.GossipSuspicionMult < 1:
		return errors.New("gossip-suspicion-mult: must be at least 1")
	}
	return nil
}

// Config configures one node's membership and control plane.
type Config struct {
	// Self is this node's registry entry; GossipPort is filled in at Start
	// when it was ephemeral.
	Self NodeInfo
	// Store and ClusterID name what this node belongs to: a peer of another
	// store or cluster is refused.
	Store, ClusterID string
	// GossipBind is the address memberlist binds; GossipPort 0 = ephemeral.
	GossipBind string
	GossipPort int
	// Registry is the configured node list (may be empty). Join lists gossip
	// addresses (HOST:PORT) of existing members.
	Registry []NodeInfo
	Join     []string
	// ExpectNodes is the formation gate's MinMembers; 0 = len(Registry), or 1.
	ExpectNodes int
	// Partitions (the first map's least partition count, 0 = as the
	// placement needs), ReplicationFactor (≥ 1) and
	// TotalSegments (the store's segment count) feed the planner.
	Partitions, ReplicationFactor, TotalSegments int
	// DataDir holds raft's log and snapshots; "" = in memory.
	DataDir string
	// PeerListener is the bound peer listener (TLS-wrapped when the node
	// speaks TLS); Dial opens peer connections (nil = plain TCP).
	PeerListener net.Listener
	Dial         Dialer
	Timings      Timings
	// Now is the clock (nil = time.Now); injected so tests control time.
	Now func() time.Time
	// Logger receives the cluster's log lines; nil discards them.
	Logger *slog.Logger
	// ACL, when set, is the node's user registry: the FSM folds EntryACL
	// into it and its changes are committed through the log (CommitACL).
	ACL *acl.Registry
	// OnMap is called on the control loop with every newly applied map,
	// before it counts as applied: the node aligns its store's ownership
	// (runtime ownership) to it there.
	OnMap func(*PartitionMap)
	// OnTraffic is called once, on the control loop, when the traffic gate
	// opens (TrafficOpen or TrafficOpenUnconverged).
	OnTraffic func(TrafficDecision)
	// Possession answers the leader's possession queries (PeerPossession):
	// what this node holds of a partition's segments and, as their owner,
	// how its copies keep up. nil = an empty report.
	Possession func(q PossessionQuery) PossessionReport
	// Migrate serves a moving partition's source side (PeerMigrate: the
	// cut-over fence and its undo); nil = refused.
	Migrate func(q MigrateRequest) MigrateReply
	// AutoRebalance: a member that holds nothing once membership is
	// stable is given its share by a live migration (R-MIG-1); off leaves
	// it a spare until an operator's rebalance.
	AutoRebalance bool
	// MaxMoves bounds the partitions migrating at once (0 = 2).
	MaxMoves int
	// PhaseHook (tests only) is called by the leader's migration driver as
	// a move reaches a phase (MigrationPhase*); false abandons that step.
	PhaseHook func(phase string, p Partition) bool
	// FailoverHook (tests only) is called by the leader's failover sweep
	// before it acts on a partition whose owner is not alive; false leaves
	// that partition alone in this sweep (the map change of a lost member
	// then decides alone).
	FailoverHook func(p Partition) bool
	// PeerHandlers serve further peer protocols by their first byte
	// (PeerReplication); raft and map fetches are the cluster's own. Each
	// handler owns its connection until it returns (the mux closes it then,
	// and on Stop).
	PeerHandlers map[byte]func(net.Conn)
	// Secret, when it holds a key, secures the cluster plane (peerauth.go):
	// gossip is encrypted under its keyring and every peer connection
	// authenticates before its protocol. nil = open (the default). Rotate
	// its keys with ReloadSecret.
	Secret *Secret
}

// Standalone reports whether the node forms a cluster of its own: nobody
// to join, nobody expected.
func (c *Config) Standalone() bool {
	if len(c.Join) > 0 || c.ExpectNodes > 1 {
		return false
	}
	for _, n := range c.Registry {
		if n.ID != c.Self.ID {
			return false
		}
	}
	return true
}

func (c *Config) expect() int {
	switch {
	case c.ExpectNodes > 0:
		return c.ExpectNodes
	case len(c.Registry) > 0:
		return len(c.Registry)
	}
	return 1
}

// ErrNotLeader: the operation needs the control-plane leader.
var ErrNotLeader = errors.New("cluster: this node is not the control-plane leader")

// Cluster is one node's membership and control plane. Start runs it, Stop
// ends it. One goroutine — the control loop — owns the member tracker and
// takes every decision; memberlist and raft callbacks only hand it inputs.
type Cluster struct {
	cfg   Config
	t     Timings
	log   *slog.Logger
	now   func() time.Time
	self  Meta
	fsm   *fsm
	mux   *PeerMux
	raft  *raft.Raft
	logs  raft.LogStore // the raft log (Reconfirm reads entry types)
	trans *raft.NetworkTransport
	bolt  *boltStore
	ml    *memberlist.Memberlist
	bq    *memberlist.TransmitLimitedQueue
	// gossipRing is memberlist's keyring when the cluster has a secret
	// (ReloadSecret rotates it; memberlist guards it itself).
	gossipRing *memberlist.Keyring

	evMu     sync.Mutex // guards evQueue
	evQueue  []memberEvent
	evSignal chan struct{}

	digMu   sync.Mutex // guards digests
	digests map[NodeID]digestAt
	leaving atomic.Bool // decommissioning: announced in the node metadata

	probeMu sync.Mutex // guards probed
	// probed: when each member (by gossip name) last answered a direct
	// probe of ours (memberlist's PingDelegate): the suspicion producer.
	probed map[string]time.Time
	// reprobing: Suspected members with a direct ping of ours in flight.
	reprobing map[string]bool

	refusedMu sync.Mutex // guards refused
	refused   map[string]bool

	mu          sync.RWMutex // guards the published state below
	applied     *PartitionMap
	routing     *wire.RoutingMap
	routingCh   chan struct{}
	members     []MemberView
	trafficOpen bool
	traffic     TrafficDecision
	repairs     uint64
	joined      bool

	// loop-owned
	tracker     *Tracker
	startedAt   time.Time
	leaderSince time.Time
	streak      int
	joinLogged  bool
	lastJoin    time.Time
	// pushedOnce: this incarnation completed one join (a push-pull with a
	// seed). Hearing of members is not enough: peers that declared this
	// node dead ignore the alive messages of its fresh incarnation until a
	// state exchange shows it the dead verdict to refute.
	pushedOnce bool

	requests                                            chan request
	leaderCh                                            chan bool     // raft's leadership notifications
	promotions, unavailables, healthChanges, recoveries atomic.Uint64 // FailoverStats

	stop         chan struct{}
	done         chan struct{}
	failoverDone chan struct{} // closed when failoverLoop returns
	stopOnce     sync.Once

	mig            migrations
	migrationDone  chan struct{} // closed when migrationLoop returns
	leaderReady    atomic.Bool   // leader, and the log applied up to its term (the barrier passed)
	membersChanged time.Time     // guarded by mu: the tracker's last change of present members
}

type memberEvent struct {
	info NodeInfo
	sig  MemberSignal
}

type digestAt struct {
	d  Digest
	at time.Time
}

type request struct {
	fn   func() error
	done chan error
}

// New validates cfg. Nothing runs until Start.
func New(cfg Config) (*Cluster, error) {
	switch {
	case cfg.Self.ID == "":
		return nil, errors.New("cluster: Config.Self.ID is required")
	case cfg.PeerListener == nil:
		return nil, errors.New("cluster: Config.PeerListener is required")
	case cfg.TotalSegments < 1:
		return nil, errors.New("cluster: Config.TotalSegments is required")
	}
	if err := cfg.Timings.Validate(); err != nil {
		return nil, fmt.Errorf("cluster: timings: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ReplicationFactor < 1 {
		cfg.ReplicationFactor = 1
	}
	c := &Cluster{
		cfg: cfg, t: cfg.Timings, log: cfg.Logger.With("component", "cluster"), now: cfg.Now,
		self:          Meta{Info: cfg.Self, Store: cfg.Store, Cluster: cfg.ClusterID, Proto: MetaProto},
		fsm:           newFSM(cfg.Store, cfg.ClusterID),
		evSignal:      make(chan struct{}, 1),
		digests:       map[NodeID]digestAt{},
		probed:        map[string]time.Time{},
		reprobing:     map[string]bool{},
		refused:       map[string]bool{},
		routingCh:     make(chan struct{}),
		requests:      make(chan request),
		leaderCh:      make(chan bool, 16),
		stop:          make(chan struct{}),
		done:          make(chan struct{}),
		failoverDone:  make(chan struct{}),
		migrationDone: make(chan struct{}),
	}
	if cfg.ACL != nil {
		c.fsm.aclReg, c.fsm.users = cfg.ACL, cfg.ACL.Users()
		cfg.ACL.SetCommitter(c.CommitACL)
	}
	return c, nil
}

// Start brings up the peer mux, raft and memberlist and starts the control
// loop. On error everything started is stopped again.
func (c *Cluster) Start() (err error) {
	c.startedAt = c.now()
	c.mux = NewPeerMux(c.cfg.PeerListener, c.cfg.Self.ID, c.cfg.Dial, c.log.With("component", "peer"))
	c.mux.UseSecret(c.cfg.Secret)
	c.mux.Handle(PeerMapFetch, func(conn net.Conn) { serveMapFetch(conn, c.Map) })
	c.mux.Handle(PeerPossession, func(conn net.Conn) { servePossession(conn, c.cfg.Possession) })
	c.mux.Handle(PeerMigrate, func(conn net.Conn) { serveMigrate(conn, c.answerMigrate) })
	for b, h := range c.cfg.PeerHandlers {
		if b != PeerRaft && b != PeerMapFetch && b != PeerPossession && b != PeerMigrate {
			c.mux.Handle(b, h)
		}
	}
	defer func() {
		if err != nil {
			c.shutdown()
		}
	}()
	if err := c.startRaft(); err != nil {
		return err
	}
	c.mux.Serve()
	if err := c.startMemberlist(); err != nil {
		return err
	}
	// After memberlist: Self now carries the bound gossip port.
	c.tracker = NewTracker(c.cfg.Self, c.t.MemberGrace, c.startedAt)
	go c.loop()
	go c.failoverLoop()
	go c.migrationLoop()
	return nil
}

// peerAddr is n's peer target, "id@host:port" (PeerTarget): the raft server
// address of n and what every dial to a known node uses, so that a node
// that took over n's address cannot answer as n. Raft state written by an
// older run holds plain host:port addresses: they are dialed unchecked, and
// the leader re-adds each live member at its target (PlanVoters).
func (c *Cluster) peerAddr(n NodeInfo) string { return PeerTarget(n) }

func (c *Cluster) startRaft() error {
	hl := newHCLogger(c.log.With("component", "raft"), c.stopping)
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(c.cfg.Self.ID)
	// One millisecond above the configured timeout: a node alone lowers it
	// to the configured value right after start, and raft re-arms a
	// follower's timer at once when its timeout is lowered — so a single
	// voter elects itself immediately instead of waiting a heartbeat
	// timeout for a leader that cannot exist.
	rc.HeartbeatTimeout = c.t.RaftHeartbeat + time.Millisecond
	rc.ElectionTimeout = c.t.RaftElection + time.Millisecond
	rc.LeaderLeaseTimeout = c.t.RaftLeaderLease
	rc.CommitTimeout = c.t.RaftCommit
	rc.Logger = hl
	rc.NotifyCh = c.leaderCh
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("cluster: raft config: %w", err)
	}

	var (
		logs   raft.LogStore
		stable raft.StableStore
		snaps  raft.SnapshotStore
	)
	if c.cfg.DataDir == "" {
		mem := raft.NewInmemStore()
		logs, stable, snaps = mem, mem, raft.NewInmemSnapshotStore()
	} else {
		dir := filepath.Join(c.cfg.DataDir, "raft")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("cluster: data dir: %w", err)
		}
		bs, err := openBoltStore(filepath.Join(dir, "raft.db"))
		if err != nil {
			return err
		}
		c.bolt = bs
		fs, err := raft.NewFileSnapshotStoreWithLogger(dir, 2, hl)
		if err != nil {
			return fmt.Errorf("cluster: snapshots: %w", err)
		}
		logs, stable, snaps = bs, bs, fs
	}
	advertise := advertiseAddr(c.peerAddr(c.cfg.Self))
	c.trans = raft.NewNetworkTransportWithConfig(&raft.NetworkTransportConfig{
		Stream: &raftLayer{m: c.mux, advertise: advertise}, MaxPool: 3, Timeout: 5 * time.Second, Logger: hl,
	})
	c.logs = logs
	existing, err := raft.HasExistingState(logs, stable, snaps)
	if err != nil {
		return fmt.Errorf("cluster: raft state: %w", err)
	}
	r, err := raft.NewRaft(rc, c.fsm, logs, stable, snaps, c.trans)
	if err != nil {
		return fmt.Errorf("cluster: raft: %w", err)
	}
	c.raft = r
	if !existing {
		if servers := c.bootstrapServers(); servers != nil {
			if err := r.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil && !errors.Is(err, raft.ErrCantBootstrap) {
				return fmt.Errorf("cluster: raft bootstrap: %w", err)
			}
		}
	}
	if f := r.GetConfiguration(); f.Error() == nil {
		srv := f.Configuration().Servers
		if len(srv) == 1 && srv[0].ID == rc.LocalID && srv[0].Suffrage == raft.Voter {
			rl := r.ReloadableConfig()
			rl.HeartbeatTimeout, rl.ElectionTimeout = c.t.RaftHeartbeat, c.t.RaftElection
			_ = r.ReloadConfig(rl)
		}
	}
	return nil
}

// bootstrapServers decides the first raft configuration of a node without
// state: a registry member bootstraps the whole registry (identical on every
// registry node, which raft allows; the first MaxVoters by registry order
// vote); a node with nothing to join bootstraps alone; a joiner waits for
// the leader to add it (nil).
func (c *Cluster) bootstrapServers() []raft.Server {
	inRegistry := false
	for _, n := range c.cfg.Registry {
		inRegistry = inRegistry || n.ID == c.cfg.Self.ID
	}
	switch {
	case inRegistry:
		var out []raft.Server
		for i, n := range c.cfg.Registry {
			s := raft.Server{ID: raft.ServerID(n.ID), Address: raft.ServerAddress(c.peerAddr(n)), Suffrage: raft.Voter}
			if i >= MaxVoters {
				s.Suffrage = raft.Nonvoter
			}
			out = append(out, s)
		}
		return out
	case len(c.cfg.Join) == 0 && len(c.cfg.Registry) == 0:
		return []raft.Server{{ID: raft.ServerID(c.cfg.Self.ID), Address: raft.ServerAddress(c.peerAddr(c.cfg.Self)), Suffrage: raft.Voter}}
	}
	return nil
}

func (c *Cluster) startMemberlist() error {
	mc := memberlist.DefaultLANConfig()
	mc.Name = string(c.cfg.Self.ID)
	mc.BindAddr = c.cfg.GossipBind
	mc.BindPort = c.cfg.GossipPort
	mc.AdvertisePort = c.cfg.GossipPort
	if ip := advertiseIP(c.cfg.Self.Host); ip != "" {
		mc.AdvertiseAddr = ip
	}
	mc.ProbeInterval, mc.ProbeTimeout, mc.GossipInterval = c.t.GossipProbeInterval, c.t.GossipProbeTimeout, c.t.GossipInterval
	mc.SuspicionMult = c.t.GossipSuspicionMult
	mc.DeadNodeReclaimTime = min(c.t.MemberGrace, 10*time.Second)
	d := &delegate{c: c}
	mc.Delegate, mc.Events, mc.Merge, mc.Alive, mc.Conflict = d, d, d, d, d
	mc.Ping = d
	mc.Logger = log.New(levelWriter{log: c.log.With("component", "gossip"), filter: c.gossipRefusal}, "", 0)
	if keys := c.cfg.Secret.Keys(); len(keys) > 0 {
		// AES-GCM on every gossip packet and stream; a message that no key
		// of the ring opens is dropped (GossipVerifyIncoming, the default).
		kr, err := memberlist.NewKeyring(keys, keys[0])
		if err != nil {
			return fmt.Errorf("cluster: gossip keyring: %w", err)
		}
		mc.Keyring, c.gossipRing = kr, kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
	}
	c.bq = &memberlist.TransmitLimitedQueue{NumNodes: func() int {
		if c.ml == nil {
			return 1
		}
		return c.ml.NumMembers()
	}, RetransmitMult: 2}
	ml, err := memberlist.Create(mc)
	if err != nil {
		return fmt.Errorf("cluster: gossip on %s:%d: %w", c.cfg.GossipBind, c.cfg.GossipPort, err)
	}
	c.ml = ml
	c.cfg.Self.GossipPort = int(ml.LocalNode().Port)
	return nil
}

// advertiseIP resolves host for memberlist, which wants an IP.
func advertiseIP(host string) string {
	if host == "" {
		return ""
	}
	if ip := net.ParseIP(host); ip != nil {
		if ip.IsUnspecified() {
			return ""
		}
		return ip.String()
	}
	ips, err := net.LookupIP(host)
	if err != nil || len(ips) == 0 {
		return ""
	}
	return ips[0].String()
}

// DialPeer opens a connection speaking protocol proto to the peer port at
// addr (TLS-wrapped when the node speaks TLS). The caller closes it. addr
// is a peer target, "id@host:port" (PeerTarget): only node id may answer
// there, another node refuses (ErrWrongPeer); a plain host:port is not
// checked.
func (c *Cluster) DialPeer(ctx context.Context, addr string, proto byte) (net.Conn, error) {
	if c.mux == nil {
		return nil, errors.New("cluster: not started")
	}
	return c.mux.Dial(ctx, addr, proto)
}

// DialPeerNode opens a connection speaking protocol proto to node id at
// peer address addr (host:port); another node answering there refuses it
// (*WrongPeerError, errors.Is ErrWrongPeer). The caller closes it.
func (c *Cluster) DialPeerNode(ctx context.Context, addr string, id NodeID, proto byte) (net.Conn, error) {
	if c.mux == nil {
		return nil, errors.New("cluster: not started")
	}
	return c.mux.DialNode(ctx, addr, id, proto)
}

// MisdirectedPeers counts the peer connections this node refused because
// they named another node (an address taken over from a dead node).
func (c *Cluster) MisdirectedPeers() uint64 {
	if c.mux == nil {
		return 0
	}
	return c.mux.Misdirected()
}

// PeerAddr is the peer address (host:port) of a map node.
func PeerAddr(n NodeInfo) string { return net.JoinHostPort(n.Host, strconv.Itoa(n.PeerPort)) }

// GossipPort is the bound gossip port (after Start).
func (c *Cluster) GossipPort() int { return c.cfg.Self.GossipPort }

// Stop ends the control loop, raft and memberlist. The node does not
// announce a leave: a stopped node is unreachable, then lost after the
// grace window — a restart inside it keeps its place (R-CLU-2: a departing
// node never changes the map by itself). Safe twice.
// Leave decommissions the node: it announces in its metadata that it is
// leaving (peers mark it Decommissioned, map-affecting: the leader drops it
// from the map and from raft at once, no grace window), then leaves the
// gossip. Stop follows. A plain Stop announces nothing, so a restart within
// the grace window keeps the node's place.
func (c *Cluster) Leave(timeout time.Duration) error {
	if c.ml == nil {
		return nil
	}
	c.leaving.Store(true)
	if err := c.ml.UpdateNode(timeout); err != nil {
		return err
	}
	return c.ml.Leave(timeout)
}

// stopping reports whether Stop has begun.
func (c *Cluster) stopping() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		close(c.stop)
		if c.tracker != nil && c.ml != nil {
			<-c.done
			<-c.failoverDone
			<-c.migrationDone
		}
		c.shutdown()
	})
}

func (c *Cluster) shutdown() {
	if c.ml != nil {
		_ = c.ml.Shutdown()
	}
	if c.raft != nil {
		_ = c.raft.Shutdown().Error()
	}
	if c.trans != nil {
		_ = c.trans.Close()
	}
	if c.mux != nil {
		c.mux.Close()
	}
	if c.bolt != nil {
		_ = c.bolt.Close()
	}
}

// Map is the map this node applied (nil before the first). Callers must
// not modify it.
func (c *Cluster) Map() *PartitionMap {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.applied
}

// RoutingMap is the clients' view of the applied map (nil before the
// first) and a channel closed when it is replaced (push to clients).
func (c *Cluster) RoutingMap() (*wire.RoutingMap, <-chan struct{}) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.routing, c.routingCh
}

// IsLeader reports whether this node leads the control plane.
func (c *Cluster) IsLeader() bool { return c.raft != nil && c.raft.State() == raft.Leader }

// Leader is the current leader's id ("" when unknown).
func (c *Cluster) Leader() NodeID {
	if c.raft == nil {
		return ""
	}
	_, id := c.raft.LeaderWithID()
	return NodeID(id)
}

// Term is the current raft term.
func (c *Cluster) Term() uint64 {
	if c.raft == nil {
		return 0
	}
	return c.raft.CurrentTerm()
}

// Rebalance asks the leader to re-plan over every live member that is not
// draining and to migrate live towards the plan (RequestRebalance): no
// data is lost, segments keep being served by their source until their
// cut-over. It returns the map version in force when the request was
// taken; ErrNotLeader on a follower.
func (c *Cluster) Rebalance(ctx context.Context) (uint64, error) {
	if _, err := c.RequestRebalance(ctx); err != nil {
		return 0, err
	}
	return c.fsm.Map().Version, nil
}

// ErrUnknownNode: an eviction names a node the cluster does not know.
var ErrUnknownNode = errors.New("cluster: unknown node")

// ErrEvictSelf: the leader refuses to evict itself.
var ErrEvictSelf = errors.New("cluster: a node cannot evict itself")

// Evict records an operator's eviction of node id in the control-plane log
// (R-CLU-2). Every node's tracker then holds it Evicted (final, whatever it
// later says), the leader drops it from the map and from raft. It must run
// on the leader (ErrNotLeader otherwise); evicting the leader itself is
// refused (ErrEvictSelf), an id neither tracked nor in the map is
// ErrUnknownNode.
func (c *Cluster) Evict(ctx context.Context, id NodeID) error {
	return c.do(ctx, func() error {
		if !c.IsLeader() {
			return fmt.Errorf("%w (leader: %q)", ErrNotLeader, c.Leader())
		}
		if id == c.cfg.Self.ID {
			return ErrEvictSelf
		}
		_, known := c.tracker.Get(id)
		if m := c.fsm.Map(); !known && m != nil {
			_, known = m.Node(id)
		}
		if !known {
			return fmt.Errorf("%w: %q", ErrUnknownNode, id)
		}
		data, err := EncodeEvict(id)
		if err != nil {
			return err
		}
		if err := c.apply(data); err != nil {
			return err
		}
		c.log.Warn("member evicted by an operator", "member", id)
		c.applyEvictions(c.now())
		return nil
	})
}

// applyEvictions signals SignalEvict for every id the control-plane log
// evicted (the FSM's set), so the tracker holds them Evicted.
func (c *Cluster) applyEvictions(now time.Time) {
	changed := false
	for _, id := range c.fsm.Evicted() {
		m, ok := c.tracker.Get(id)
		if !ok || m.State == MemberEvicted {
			continue
		}
		if c.tracker.Signal(m.Info, SignalEvict, now) {
			changed = true
			c.log.Info("member state", "member", id, "state", MemberEvicted.String())
		}
	}
	if changed {
		c.publishMembers()
	}
}

// CommitOwnership writes an OwnershipChange (failover) at the leader's term.
func (c *Cluster) CommitOwnership(ctx context.Context, oc OwnershipChange) error {
	return c.do(ctx, func() error {
		if !c.IsLeader() {
			return ErrNotLeader
		}
		oc.Term = c.raft.CurrentTerm()
		data, err := EncodeOwnershipChange(oc)
		if err != nil {
			return err
		}
		return c.apply(data)
	})
}

// CommitMap writes a MapCommit as is (the fold still applies AcceptMap:
// a stale or foreign map is refused with its error). For operators' tools
// and tests of the commit rule.
func (c *Cluster) CommitMap(ctx context.Context, m *PartitionMap) error {
	return c.do(ctx, func() error {
		if !c.IsLeader() {
			return ErrNotLeader
		}
		return c.commit(m)
	})
}

// do runs fn on the control loop.
func (c *Cluster) do(ctx context.Context, fn func() error) error {
	req := request{fn: fn, done: make(chan error, 1)}
	select {
	case c.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.stop:
		return errors.New("cluster: stopped")
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// --- the control loop ---

func (c *Cluster) loop() {
	defer close(c.done)
	tick := time.NewTicker(c.t.Tick)
	defer tick.Stop()
	dig := time.NewTicker(c.t.DigestInterval)
	defer dig.Stop()
	c.tryJoin()
	c.publishMembers()
	for {
		select {
		case <-c.stop:
			return
		case <-c.evSignal:
			c.drainEvents()
		case <-c.fsm.changed:
			c.applyEvictions(c.now())
			c.applyMap(c.fsm.Map(), "raft")
		case <-tick.C:
			c.tick()
		case <-c.leaderCh:
			c.tick() // act on a new leadership at once, not a tick later
		case <-dig.C:
			c.digestCycle()
		case req := <-c.requests:
			req.done <- req.fn()
		}
	}
}

func (c *Cluster) drainEvents() {
	c.evMu.Lock()
	evs := c.evQueue
	c.evQueue = nil
	c.evMu.Unlock()
	now := c.now()
	for _, ev := range evs {
		if c.tracker.Signal(ev.info, ev.sig, now) {
			m, _ := c.tracker.Get(ev.info.ID)
			c.log.Info("member state", "member", ev.info.ID, "state", m.State.String())
		}
	}
	c.publishMembers()
}

func (c *Cluster) tick() {
	now := c.now()
	c.drainEvents()
	// Member states come from memberlist's event callbacks (drainEvents),
	// which run under memberlist's lock and copy what they read: the *Node
	// values Members() returns are memberlist's own, written concurrently
	// (reading their Meta or State here was a data race).
	if m := c.Map(); m != nil {
		c.tracker.Expect(m.Nodes, now)
	}
	c.applyEvictions(now)
	c.probeCheck(now)
	for _, id := range c.tracker.Tick(now) {
		m, _ := c.tracker.Get(id)
		c.log.Info("member state", "member", id, "state", m.State.String())
	}
	c.publishMembers()
	c.tryJoin()
	c.leaderWork(now)
	c.trafficCheck(now)
}

func sig2state(s MemberSignal) string {
	if s == SignalSuspect {
		return MemberSuspected.String()
	}
	return MemberAlive.String()
}

func (c *Cluster) publishMembers() {
	ms := c.tracker.Members()
	c.mu.Lock()
	c.members = ms
	c.membersChanged = c.tracker.LastChange()
	c.mu.Unlock()
}

// seeds are the gossip addresses to join: --join and the registry's others.
func (c *Cluster) seeds() []string {
	out := slices.Clone(c.cfg.Join)
	for _, n := range c.cfg.Registry {
		if n.ID != c.cfg.Self.ID {
			out = append(out, net.JoinHostPort(n.Host, strconv.Itoa(n.GossipPort)))
		}
	}
	return out
}

func (c *Cluster) tryJoin() {
	seeds := c.seeds()
	joined, pushPull := JoinDecision(len(seeds), c.ml.NumMembers(), c.pushedOnce)
	if joined {
		c.setJoined(true)
	}
	if !pushPull {
		return
	}
	now := c.now()
	if !c.lastJoin.IsZero() && now.Sub(c.lastJoin) < c.t.JoinRetry {
		return
	}
	c.lastJoin = now
	n, err := c.ml.Join(seeds)
	if err != nil || n == 0 {
		if !c.joinLogged {
			hint := "the seeds do not answer yet"
			if c.cfg.Secret.Enabled() {
				hint += ", or they do not hold this node's cluster secret"
			} else {
				hint += ", or the cluster is secured and this node has no --cluster-secret-file"
			}
			c.log.Warn("cannot join the cluster yet; retrying", "seeds", seeds, "err", err, "hint", hint)
			c.joinLogged = true
		}
		return
	}
	c.log.Info("joined the cluster", "seeds", seeds, "contacted", n)
	c.pushedOnce = true
	c.setJoined(true)
}

// JoinDecision is the join rule, pure: whether this node counts as joined
// (it has somebody, or nobody to contact), and whether it must still
// exchange state with its seeds (a memberlist push-pull). Hearing of members
// is not enough for the second: a node restarted quickly hears its peers'
// gossip before it joins, but peers that declared its previous incarnation
// dead ignore the alive messages of the new one until a state exchange shows
// it the verdict to refute — the soak saw a restarted node serve its
// partitions empty for 47 s while its peers still had it unreachable.
func JoinDecision(seeds, members int, pushedOnce bool) (joined, pushPull bool) {
	if seeds == 0 {
		return true, false
	}
	return members > 1, !pushedOnce || members <= 1
}

func (c *Cluster) setJoined(v bool) {
	c.mu.Lock()
	c.joined = v
	c.mu.Unlock()
}

// leaderWork is the leader's reconciliation: raft membership, then the map.
func (c *Cluster) leaderWork(now time.Time) {
	if !c.IsLeader() {
		if !c.leaderSince.IsZero() {
			c.log.Info("no longer the control-plane leader")
		}
		c.leaderSince = time.Time{}
		c.leaderReady.Store(false)
		return
	}
	if c.leaderSince.IsZero() {
		// Apply everything committed before planning from the FSM.
		if err := c.raft.Barrier(c.t.RaftHeartbeat * 5).Error(); err != nil {
			c.log.Warn("leader barrier failed", "err", err)
			return
		}
		c.leaderSince = now
		c.leaderReady.Store(true)
		c.log.Info("control-plane leader", "term", c.raft.CurrentTerm())
	}
	c.reconcileVoters()
	cur := c.fsm.Map()
	if cur == nil {
		gate := FormationGate{MinMembers: c.cfg.expect(), StableFor: c.t.FormationStable, ForceAfter: c.t.FormationTimeout}
		if c.cfg.Standalone() {
			gate.StableFor = 0 // expecting no one: no membership to wait on
		}
		decision := gate.Decide(c.tracker.Present(), c.tracker.LastChange(), c.startedAt, now)
		if decision == FormationWait {
			return
		}
		var live []NodeInfo
		for _, m := range c.tracker.Members() {
			if m.State == MemberAlive {
				live = append(live, m.Info)
			}
		}
		m := Plan(PlanInput{Members: live, TotalSegments: c.cfg.TotalSegments, Partitions: c.cfg.Partitions,
			RF: c.cfg.ReplicationFactor, Store: c.cfg.Store, Cluster: c.cfg.ClusterID})
		if m == nil {
			return
		}
		m.Version, m.TopologyVersion = 1, 1
		if decision == FormationForced {
			c.log.Warn("formation forced: planning with the members present", "present", len(live), "expected", c.cfg.expect())
		}
		for _, w := range PlacementWarnings(m, c.cfg.ReplicationFactor) {
			c.log.Warn("placement (R-CLU-7): "+w, "members", len(live))
		}
		if err := c.commit(m); err != nil {
			c.log.Warn("first map not committed", "err", err)
		}
		return
	}
	if next := EvolveMap(cur, c.tracker.Members(), c.cfg.ReplicationFactor); next != nil {
		if err := c.commit(next); err != nil {
			c.log.Warn("map not committed", "version", next.Version, "err", err)
		}
	}
}

func (c *Cluster) reconcileVoters() {
	f := c.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return
	}
	var servers []RaftServer
	for _, s := range f.Configuration().Servers {
		servers = append(servers, RaftServer{ID: NodeID(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	timeout := c.t.RaftHeartbeat * 5
	for _, ch := range PlanVoters(c.cfg.Self.ID, servers, c.tracker.Members(), c.peerAddr) {
		var err error
		switch ch.Kind {
		case RaftAddVoter:
			err = c.raft.AddVoter(raft.ServerID(ch.ID), raft.ServerAddress(ch.Address), 0, timeout).Error()
		case RaftAddNonvoter:
			err = c.raft.AddNonvoter(raft.ServerID(ch.ID), raft.ServerAddress(ch.Address), 0, timeout).Error()
		case RaftRemove:
			err = c.raft.RemoveServer(raft.ServerID(ch.ID), 0, timeout).Error()
		}
		if err != nil {
			c.log.Warn("raft membership change failed", "change", ch.Kind, "member", ch.ID, "err", err)
			return
		}
		c.log.Info("raft membership changed", "change", raftChangeName(ch.Kind), "member", ch.ID, "address", ch.Address)
	}
}

func raftChangeName(k RaftChangeKind) string {
	switch k {
	case RaftAddVoter:
		return "add-voter"
	case RaftAddNonvoter:
		return "add-nonvoter"
	}
	return "remove"
}

func (c *Cluster) commit(m *PartitionMap) error {
	data, err := EncodeMapCommit(m)
	if err != nil {
		return err
	}
	if err := c.apply(data); err != nil {
		return err
	}
	c.log.Info("map committed", "version", m.Version, "topology", m.TopologyVersion, "partitions", len(m.Partitions), "nodes", len(m.Nodes))
	return nil
}

func (c *Cluster) apply(data []byte) error {
	f := c.raft.Apply(data, c.t.RaftHeartbeat*5)
	if err := f.Error(); err != nil {
		return err
	}
	if err, ok := f.Response().(error); ok && err != nil {
		return err
	}
	return nil
}

// applyMap applies m if it is strictly newer than the applied map: the
// node aligns its runtime ownership (OnMap), then the map counts as
// applied and clients are pushed the new routing.
func (c *Cluster) applyMap(m *PartitionMap, source string) bool {
	if m == nil {
		return false
	}
	cur := c.Map()
	if err := AcceptMap(cur, m, c.cfg.Store, c.cfg.ClusterID); err != nil {
		if !errors.Is(err, ErrStaleMap) {
			c.log.Warn("map refused", "source", source, "err", err)
		}
		return false
	}
	if c.cfg.OnMap != nil {
		c.cfg.OnMap(m)
	}
	rm := RoutingOf(m)
	c.mu.Lock()
	c.applied, c.routing = m, rm
	close(c.routingCh)
	c.routingCh = make(chan struct{})
	c.mu.Unlock()
	owned := 0
	for _, p := range m.Partitions {
		if p.ActiveOwner == c.cfg.Self.ID {
			owned += p.LastSegment - p.FirstSegment + 1
		}
	}
	c.log.Info("map applied", "version", m.Version, "source", source, "owned_segments", owned)
	c.tracker.Expect(m.Nodes, c.now())
	c.trafficCheck(c.now())
	return true
}

// RoutingOf is the clients' view of m.
func RoutingOf(m *PartitionMap) *wire.RoutingMap {
	rm := &wire.RoutingMap{Version: m.Version, TotalSegments: m.TotalSegments,
		Nodes: make([]wire.RoutingNode, len(m.Nodes)), SegmentOwner: make([]int32, m.TotalSegments)}
	idx := make(map[NodeID]int32, len(m.Nodes))
	for i, n := range m.Nodes {
		rm.Nodes[i] = wire.RoutingNode{ID: string(n.ID), Host: n.Host, ClientPort: n.ClientPort, RESPPort: n.RESPPort}
		idx[n.ID] = int32(i)
	}
	for s := range rm.SegmentOwner {
		if i, ok := idx[m.OwnerOfSegment(s)]; ok {
			rm.SegmentOwner[s] = i
		} else {
			rm.SegmentOwner[s] = -1
		}
	}
	return rm
}

func (c *Cluster) trafficCheck(now time.Time) {
	c.mu.RLock()
	open, m := c.trafficOpen, c.applied
	c.mu.RUnlock()
	if open {
		return
	}
	complete := m != nil
	if m != nil {
		for _, p := range m.Partitions {
			complete = complete && p.ActiveOwner != ""
		}
	}
	in := TrafficInputs{Map: m, RuntimeComplete: complete, WaitingFor: now.Sub(c.startedAt), Guard: c.t.TrafficGuard}
	if m != nil {
		in.RuntimeVersion = m.Version // OnMap aligned the store before the map counted as applied
	}
	d := TrafficGate(in)
	if d == TrafficHold {
		return
	}
	if d == TrafficOpenUnconverged {
		c.log.Warn("traffic guard passed without convergence: opening anyway", "guard", c.t.TrafficGuard)
	}
	c.mu.Lock()
	c.trafficOpen, c.traffic = true, d
	c.mu.Unlock()
	if c.cfg.OnTraffic != nil {
		c.cfg.OnTraffic(d)
	}
}

// --- digest gossip and drift repair (R-CLU-6) ---

func (c *Cluster) digestCycle() {
	self := DigestOf(c.cfg.Self.ID, c.Map(), c.Leader(), c.Term())
	if b := encodeDigest(self); b != nil {
		c.bq.QueueBroadcast(digestBroadcast{node: self.Node, msg: b})
	}
	now := c.now()
	var peers []Digest
	c.digMu.Lock()
	for id, d := range c.digests {
		m, ok := c.tracker.Get(id)
		if ok && present(m.State) && now.Sub(d.at) <= 3*c.t.DigestInterval {
			peers = append(peers, d.d)
		}
	}
	c.digMu.Unlock()
	var repair bool
	c.streak, repair = DetectDrift(self, peers, c.streak)
	if repair {
		c.repair()
	}
}

// repair refetches the committed map from the leader (or, without one, from
// the peers) and applies it if it is strictly newer.
func (c *Cluster) repair() {
	c.mu.Lock()
	c.repairs++
	c.mu.Unlock()
	// The leader's address is the one it advertises to raft: its peer
	// target (a plain host:port from an older leader, dialed unchecked).
	var targets []string
	if addr, id := c.raft.LeaderWithID(); id != "" && NodeID(id) != c.cfg.Self.ID {
		targets = append(targets, string(addr))
	}
	for _, m := range c.tracker.Members() {
		if m.Info.ID != c.cfg.Self.ID && m.State == MemberAlive && m.Info.PeerPort > 0 {
			targets = append(targets, c.peerAddr(m.Info))
		}
	}
	for _, addr := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), 2*c.t.DigestInterval+time.Second)
		m, err := c.mux.fetchMap(ctx, addr)
		cancel()
		if err != nil || m == nil {
			continue
		}
		if c.applyMap(m, "repair") {
			c.log.Warn("drift repaired: map refetched", "from", addr, "version", m.Version)
		}
		return
	}
}

type digestBroadcast struct {
	node NodeID
	msg  []byte
}

func (b digestBroadcast) Invalidates(other memberlist.Broadcast) bool {
	o, ok := other.(digestBroadcast)
	return ok && o.node == b.node
}
func (b digestBroadcast) Message() []byte { return b.msg }
func (b digestBroadcast) Finished()       {}

// --- memberlist delegates (called on memberlist's goroutines) ---

type delegate struct{ c *Cluster }

func (c *Cluster) infoOf(n *memberlist.Node) (NodeInfo, bool) {
	m, err := DecodeMeta(n.Meta)
	if err != nil || m.Store != c.cfg.Store || m.Cluster != c.cfg.ClusterID {
		return NodeInfo{}, false
	}
	info := m.Info
	info.GossipPort = int(n.Port)
	if info.Host == "" {
		info.Host = n.Addr.String()
	}
	return info, true
}

func (c *Cluster) queue(ev memberEvent) {
	c.evMu.Lock()
	c.evQueue = append(c.evQueue, ev)
	c.evMu.Unlock()
	select {
	case c.evSignal <- struct{}{}:
	default:
	}
}

func (d *delegate) NodeMeta(limit int) []byte {
	m := d.c.self
	m.Leaving = d.c.leaving.Load()
	b, err := EncodeMeta(m, limit)
	if err != nil {
		d.c.log.Error("node metadata too large", "err", err)
		return nil
	}
	return b
}

func (d *delegate) NotifyMsg(b []byte) {
	dg, ok := decodeDigest(b)
	if !ok {
		return
	}
	d.c.digMu.Lock()
	d.c.digests[dg.Node] = digestAt{d: dg, at: d.c.now()}
	d.c.digMu.Unlock()
}

func (d *delegate) GetBroadcasts(overhead, limit int) [][]byte {
	return d.c.bq.GetBroadcasts(overhead, limit)
}

func (d *delegate) LocalState(bool) []byte            { return nil }
func (d *delegate) MergeRemoteState(_ []byte, _ bool) {}

// AckPayload and NotifyPingComplete make the delegate memberlist's
// PingDelegate: a direct probe of ours that got its ack records when.
func (d *delegate) AckPayload() []byte { return nil }

func (d *delegate) NotifyPingComplete(other *memberlist.Node, _ time.Duration, _ []byte) {
	if other == nil {
		return
	}
	name := strings.Clone(other.Name)
	now := d.c.now()
	d.c.probeMu.Lock()
	d.c.probed[name] = now
	d.c.probeMu.Unlock()
}

// probeCheck is the Suspected producer (R-CLU-2): memberlist does not
// report its own suspicion, so an Alive member that answered none of our
// direct probes for ProbeSilenceLimit (and was Alive at least that long) is
// Suspected; a Suspected member that answers a probe again is Alive. Each
// Suspected member is pinged directly besides memberlist's round-robin:
// on a loaded node memberlist's own probe of it comes rarely (every members
// × a stretched interval) and an ack late past the probe timeout, or an
// indirect one, never reaches the PingDelegate; without the re-probe a
// member stayed Suspected for tens of seconds after it answered again.
func (c *Cluster) probeCheck(now time.Time) {
	if c.ml == nil {
		return
	}
	stale := ProbeSilenceLimit(c.ml.NumMembers(), c.t.GossipProbeInterval, c.t.GossipProbeTimeout, c.ml.GetHealthScore())
	c.probeMu.Lock()
	probed := maps.Clone(c.probed)
	c.probeMu.Unlock()
	for _, m := range c.tracker.Members() {
		if m.Info.ID == c.cfg.Self.ID {
			continue
		}
		last, ok := probed[string(m.Info.ID)]
		var sig MemberSignal
		switch m.State {
		case MemberAlive:
			ref := m.Since
			if ok && last.After(ref) {
				ref = last
			}
			if now.Sub(ref) > stale {
				sig = SignalSuspect
			}
		case MemberSuspected:
			if ok && last.After(m.Since) {
				sig = SignalAlive
			} else {
				c.reprobe(m.Info, stale)
			}
		}
		if sig != 0 && c.tracker.Signal(m.Info, sig, now) {
			nm, _ := c.tracker.Get(m.Info.ID)
			c.log.Info("member state", "member", m.Info.ID, "state", nm.State.String(), "probe-silence", stale)
		}
	}
}

// reprobe pings a Suspected member directly, one check in flight per
// member; an answer records it as probed, which the next probeCheck reads.
// The gossip ping waits memberlist's probe timeout; when that passes
// unanswered, the member's peer port is asked as well (a possession query
// of nothing: the dial checks it is that node), waiting up to patience. On
// a starved machine UDP acks came late for a minute on end while the
// member served: it stayed suspected, and a rebalance could not be planned
// (D70). Failover asks the same way before it acts.
func (c *Cluster) reprobe(info NodeInfo, patience time.Duration) {
	if info.Host == "" || info.GossipPort <= 0 {
		return // no gossip address known: memberlist's own probes only
	}
	name := string(info.ID)
	c.probeMu.Lock()
	if c.reprobing[name] {
		c.probeMu.Unlock()
		return
	}
	c.reprobing[name] = true
	c.probeMu.Unlock()
	go func() {
		defer func() {
			c.probeMu.Lock()
			delete(c.reprobing, name)
			c.probeMu.Unlock()
		}()
		addr, err := net.ResolveUDPAddr("udp", net.JoinHostPort(info.Host, strconv.Itoa(info.GossipPort)))
		if err != nil {
			return
		}
		_, err = c.ml.Ping(name, addr)
		if err != nil && info.PeerPort > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), patience)
			go func() {
				select {
				case <-c.stop: // a stopping node does not wait on its peers
					cancel()
				case <-ctx.Done():
				}
			}()
			_, err = c.mux.queryPossessionQ(ctx, c.peerAddr(info), PossessionQuery{First: 0, Last: -1})
			cancel()
		}
		if err == nil {
			now := c.now()
			c.probeMu.Lock()
			c.probed[name] = now
			c.probeMu.Unlock()
		}
	}()
}

func (d *delegate) NotifyJoin(n *memberlist.Node) {
	if info, ok := d.c.infoOf(n); ok {
		sig := SignalAlive
		if leaving(n) {
			sig = SignalLeft
		}
		d.c.queue(memberEvent{info: info, sig: sig})
	}
}

// leaving reports whether n announced its decommission in its metadata
// (read under memberlist's lock, in its callbacks).
func leaving(n *memberlist.Node) bool {
	m, err := DecodeMeta(n.Meta)
	return err == nil && m.Leaving
}

func (d *delegate) NotifyUpdate(n *memberlist.Node) { d.NotifyJoin(n) }

func (d *delegate) NotifyLeave(n *memberlist.Node) {
	info, ok := d.c.infoOf(n)
	if !ok {
		return
	}
	sig := SignalDead
	if n.State == memberlist.StateLeft || leaving(n) {
		sig = SignalLeft
	}
	d.c.queue(memberEvent{info: info, sig: sig})
}

func (d *delegate) NotifyAlive(n *memberlist.Node) error {
	if n.Name == string(d.c.cfg.Self.ID) {
		return nil
	}
	_, err := CheckPeer(d.c.self, n.Name, n.Meta)
	if err != nil {
		d.c.refuse(n.Name, err)
	}
	return err
}

func (d *delegate) NotifyMerge(peers []*memberlist.Node) error {
	for _, n := range peers {
		if n.Name == string(d.c.cfg.Self.ID) {
			continue
		}
		if _, err := CheckPeer(d.c.self, n.Name, n.Meta); err != nil {
			d.c.refuse(n.Name, err)
			return err
		}
	}
	return nil
}

func (d *delegate) NotifyConflict(existing, other *memberlist.Node) {
	d.c.log.Error("two nodes claim the same node id; the second is ignored", "node_id", existing.Name,
		"address", existing.Address(), "other_address", other.Address())
}

// refuse logs a refused peer once per name.
func (c *Cluster) refuse(name string, err error) {
	c.refusedMu.Lock()
	first := !c.refused[name]
	c.refused[name] = true
	c.refusedMu.Unlock()
	if first {
		c.log.Warn("refused a node", "node", name, "err", err)
	}
}

// Refused reports the names of nodes refused as foreign so far.
func (c *Cluster) Refused() []string {
	c.refusedMu.Lock()
	defer c.refusedMu.Unlock()
	out := make([]string, 0, len(c.refused))
	for n := range c.refused {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
