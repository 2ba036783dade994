package replication

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/store"
)

// Config configures a node's Manager.
type Config struct {
	// Store is the node's store engine. Required.
	Store *store.Store
	// Self is this node's id. Required.
	Self cluster.NodeID
	// StoreName and ClusterID must match on both ends of a session.
	StoreName, ClusterID string
	// Mode and Quorum decide when a write is acknowledged (Wait). Default
	// Async, All.
	Mode   Mode
	Quorum Quorum
	// SyncTimeout bounds a sync write's wait for its replicas; after it the
	// write answers StatusTimeout (BestEffort: Success). Default 2 s.
	SyncTimeout time.Duration
	// Dial opens a connection to a peer address that already speaks
	// cluster.PeerReplication (the first byte written). Required to ship.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Heartbeat is the owner's ping cadence on an idle session (default
	// 500 ms); PeerTimeout the silence after which a session is broken
	// (default 5 s, at least 2 heartbeats).
	Heartbeat, PeerTimeout time.Duration
	// RetryMin and RetryMax bound the backoff between sessions (defaults
	// 50 ms and 1 s).
	RetryMin, RetryMax time.Duration
	// AsyncLinger, under Async only, is the least time between two of a
	// shipper's sends (writes gather meanwhile) and between two of a
	// replica's acks: nobody waits on either, and one write and one
	// ack per few hundred microseconds cost a fraction of one per write
	// (issue 17). Default 1 ms; negative: none. Sync never lingers: its
	// writes wait for the acks.
	AsyncLinger time.Duration
	// MaintainEvery is the cadence of the low-water-mark updates (default
	// 100 ms).
	MaintainEvery time.Duration
	// Presence is what the membership knows of a node: restart recovery
	// waits for a copy as failover.AwaitCopy says; nil: every node is
	// alive.
	Presence func(cluster.NodeID) failover.OwnerPresence
	// Logger receives the manager's log lines; nil discards them.
	Logger *slog.Logger
}

// DefaultAsyncLinger is Config.AsyncLinger's default.
const DefaultAsyncLinger = time.Millisecond

// linger is the gathering time of shippers and acks: AsyncLinger under
// Async, none under Sync.
func (c *Config) linger() time.Duration {
	if c.Mode == Sync || c.AsyncLinger < 0 {
		return 0
	}
	return c.AsyncLinger
}

// DefaultSyncTimeout bounds a sync write's wait for its replicas.
const DefaultSyncTimeout = 2 * time.Second

func (c *Config) setDefaults() error {
	switch {
	case c.Store == nil:
		return errors.New("replication: Config.Store is required")
	case c.Self == "":
		return errors.New("replication: Config.Self is required")
	}
	if c.SyncTimeout <= 0 {
		c.SyncTimeout = DefaultSyncTimeout
	}
	if c.AsyncLinger == 0 {
		c.AsyncLinger = DefaultAsyncLinger
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = 500 * time.Millisecond
	}
	if c.PeerTimeout <= 0 {
		c.PeerTimeout = 5 * time.Second
	}
	if c.PeerTimeout < 2*c.Heartbeat {
		return fmt.Errorf("replication: PeerTimeout %v must be at least two heartbeats (%v)", c.PeerTimeout, c.Heartbeat)
	}
	if c.RetryMin <= 0 {
		c.RetryMin = 50 * time.Millisecond
	}
	if c.RetryMax < c.RetryMin {
		c.RetryMax = max(time.Second, c.RetryMin)
	}
	if c.MaintainEvery <= 0 {
		c.MaintainEvery = 100 * time.Millisecond
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// Manager is one node's replication: the shippers of the partitions it
// owns, the sessions of the partitions it replicates, the write barrier.
//
// Goroutines: one per shipper (its session loop, plus an ack reader per
// session), one per incoming session (ServePeer's caller) and the
// maintenance loop. All stop in Close. The store's commit hook marks what
// the shippers have to ship.
type Manager struct {
	cfg         Config
	log         *slog.Logger
	st          *store.Store
	incarnation uint64

	// route[seg] is the replication state of an owned segment (nil when
	// this node does not own it); replaced whole on every map.
	route atomic.Pointer[[]*partState]

	mu       sync.Mutex // guards everything below; never held while blocking on I/O
	cur      *cluster.PartitionMap
	shippers map[shipKey]*shipper
	parts    map[string]*partState        // by partition identity: the owned partitions
	sessions map[*replicaSession]struct{} // incoming sessions (this node a replica)
	managed  []bool                       // per segment: its low-water mark is ours to move
	closed   bool
	stop     chan struct{}
	wg       sync.WaitGroup

	linMu    sync.Mutex // guards lineages
	lineages []lineage  // per segment: the history of this node's replica copy

	syncWaits, syncTimeouts, syncBestEffort atomic.Uint64
	// snapshot applies on this node as a replica, by recovery.ApplyMode
	// (index 0 unused).
	snapModes [4]atomic.Uint64

	rs *restartState // restart recovery: certification and the serve gate

	fenceMu  sync.Mutex               // serializes cut-over fences on this node
	fences   map[string]*cutoverFence // by partition identity (guarded by mu)
	proofs   map[int]proofRecord      // segment → its cut-over proof (guarded by mu)
	retained atomic.Uint64            // copies kept after a cut-over: changed after the proof
}

// New validates cfg and starts the maintenance loop; nothing ships until
// Apply gives it a map.
func New(cfg Config) (*Manager, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	m := &Manager{
		cfg: cfg, log: cfg.Logger.With("component", "replication"), st: cfg.Store,
		incarnation: binary.LittleEndian.Uint64(b[:]) | 1,
		shippers:    map[shipKey]*shipper{},
		rs:          newRestartState(cfg.Store.Segments()),
		parts:       map[string]*partState{},
		sessions:    map[*replicaSession]struct{}{},
		managed:     make([]bool, cfg.Store.Segments()),
		lineages:    make([]lineage, cfg.Store.Segments()),
		stop:        make(chan struct{}),
		fences:      map[string]*cutoverFence{},
		proofs:      map[int]proofRecord{},
	}
	empty := make([]*partState, cfg.Store.Segments())
	m.route.Store(&empty)
	cfg.Store.SetCommitHook(m.committed)
	m.wg.Add(1)
	go m.maintain()
	return m, nil
}

// Close stops every shipper and incoming session and releases the sync
// writes still waiting (StatusTimeout). Safe twice.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.stop)
	ships := make([]*shipper, 0, len(m.shippers))
	for _, s := range m.shippers {
		ships = append(ships, s)
	}
	m.shippers = map[shipKey]*shipper{}
	for _, ps := range m.parts {
		ps.retire()
	}
	m.parts = map[string]*partState{}
	for rs := range m.sessions {
		rs.fence("node stopping")
	}
	m.st.SetCommitHook(nil)
	m.mu.Unlock()
	for _, s := range ships {
		s.halt()
	}
	empty := make([]*partState, m.st.Segments())
	m.route.Store(&empty)
	m.wg.Wait()
}

// Incarnation identifies this run of the node in lineages.
func (m *Manager) Incarnation() uint64 { return m.incarnation }

// shipKey names one shipper: a partition's ownership lease and a replica.
type shipKey struct {
	identity    string
	gen         uint64
	first, last int
	replica     cluster.NodeID
}

func keyOf(p *cluster.Partition, replica cluster.NodeID) shipKey {
	return shipKey{p.Identity, p.OwnershipGeneration, p.FirstSegment, p.LastSegment, replica}
}

// Apply aligns replication to a newly applied map: it starts a shipper for
// every (owned partition, replica), stops those the map no longer wants,
// and fences incoming sessions whose source the map no longer names. It
// does not block on the network (the node's control loop calls it).
func (m *Manager) Apply(pm *cluster.PartitionMap) {
	if pm == nil {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	prev := m.cur
	m.cur = pm
	m.recoveredLocked(prev, pm)
	m.migratedInLocked(prev, pm)
	want := map[shipKey]*cluster.Partition{}
	for i := range pm.Partitions {
		p := &pm.Partitions[i]
		switch {
		case serves(p, m.cfg.Self):
			for _, r := range p.Copies() {
				want[keyOf(p, r)] = p
			}
		case recoversFrom(p, m.cfg.Self):
			// This node holds the most complete copy of a partition whose
			// promoted owner syncs before it serves (R-REP-5).
			want[keyOf(p, p.ActiveOwner)] = p
		}
	}
	var halted []*shipper
	for k, s := range m.shippers {
		if _, ok := want[k]; !ok {
			halted = append(halted, s)
			delete(m.shippers, k)
		}
	}
	for k, p := range want {
		if _, ok := m.shippers[k]; !ok {
			s := newShipper(m, k, p)
			m.shippers[k] = s
			m.wg.Add(1)
			go s.run()
		}
	}

	// The owned partitions' barrier and routing state.
	parts := map[string]*partState{}
	route := make([]*partState, m.st.Segments())
	for i := range pm.Partitions {
		p := &pm.Partitions[i]
		if !serves(p, m.cfg.Self) {
			continue
		}
		var ships []*shipper
		for _, r := range p.Copies() {
			if s := m.shippers[keyOf(p, r)]; s != nil {
				ships = append(ships, s)
			}
		}
		ps := m.parts[p.Identity]
		if ps == nil || !ps.same(p, ships) {
			ps = newPartState(p, ships)
		}
		parts[p.Identity] = ps
		for _, s := range ships {
			s.ps.Store(ps)
		}
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < len(route); seg++ {
			route[seg] = ps
			if len(ships) > 0 && !m.managed[seg] {
				// From now on tombstones wait for the replicas (R-KV-4).
				m.managed[seg] = true
				m.st.Segment(uint16(seg)).SetLowWaterMark(0)
			}
		}
	}
	for id, ps := range m.parts {
		if parts[id] != ps {
			ps.retire()
		}
	}
	m.parts = parts
	m.route.Store(&route)

	// Fence incoming sessions the map no longer allows.
	for rs := range m.sessions {
		if st, why := admit(pm, m.cfg.Self, rs.h); st != replyOK {
			rs.fence(why)
		}
	}
	m.alignFencesLocked(pm)
	m.dropStrayCopiesLocked(pm)
	m.gateLocked(pm, true)
	m.mu.Unlock()
	for _, s := range halted {
		s.halt()
	}
}

// dropStrayCopiesLocked empties the segments of partitions this node is no
// longer a copy of (neither their active owner nor one of their copies):
// no failover or recovery ever asks it for them again, a later session
// would replace them by a snapshot anyway, and kept they are memory nobody
// counts against the cap — or stale data a later ownership of the segment
// would serve. A segment the store owns is never touched. The sessions
// that fed it were fenced just before (m.mu held).
func (m *Manager) dropStrayCopiesLocked(pm *cluster.PartitionMap) {
	for i := range pm.Partitions {
		p := &pm.Partitions[i]
		if p.ActiveOwner == m.cfg.Self || slices.Contains(p.Copies(), m.cfg.Self) {
			continue
		}
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < m.st.Segments(); seg++ {
			g := m.st.Segment(uint16(seg))
			if g.Owned() || (g.Revision() == 0 && g.Len() == 0) || m.retainUnproven(seg, g) {
				continue
			}
			m.log.Info("replication: dropping the copy of a partition this node no longer holds",
				"partition", p.ID, "segment", seg, "revision", g.Revision(), "keys", g.Len())
			g.InstallSnapshot(store.Snapshot{Segment: uint16(seg)})
			_ = g.InstallPreparedTx(nil) // and the transactions it held for its owner: never an error without markers
			m.setLineage(uint16(seg), lineage{})
		}
	}
}

// serves reports whether self is p's active owner and ships it (a
// Recovering owner syncs first and ships nothing).
func serves(p *cluster.Partition, self cluster.NodeID) bool {
	return p.ActiveOwner == self && p.HealthState() != failover.Recovering
}

// recoversFrom reports whether self is the copy p's Recovering owner syncs
// from.
func recoversFrom(p *cluster.Partition, self cluster.NodeID) bool {
	return p.HealthState() == failover.Recovering && p.Source == self && p.ActiveOwner != self && p.ActiveOwner != ""
}

// committed is the store's commit hook: a mutation of seg, under its
// segment's lock. The shippers of seg's partition have something to ship.
func (m *Manager) committed(seg uint16) {
	if route := *m.route.Load(); int(seg) < len(route) {
		if ps := route[seg]; ps != nil {
			for _, s := range ps.shippers {
				s.markDirty(int(seg))
			}
		}
	}
}

// maintain moves the low-water marks (R-KV-4): for every owned segment
// with replicas, the lowest revision every replica of the map has applied;
// for a segment whose partition lost its replicas, its own revision.
func (m *Manager) maintain() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.MaintainEvery)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		m.reevaluate()
		route := *m.route.Load()
		m.mu.Lock()
		managed := slices.Clone(m.managed)
		m.mu.Unlock()
		for seg, on := range managed {
			if !on {
				continue
			}
			g := m.st.Segment(uint16(seg))
			ps := route[seg]
			if ps != nil { // nil: not owned any more, no mark to keep
				g.SetLowWaterMark(ps.lowWater(seg, g.Revision()))
			}
		}
	}
}

// fenceDeposed stops serving the owned partition with identity id when a
// copy's committed map holds it at ownership generation gen, above this
// node's: a newer owner exists (a failover happened while this node could
// not hear the control plane). Its segments answer Moved and its sync
// writes stop waiting, until the next map sets them right.
func (m *Manager) fenceDeposed(id string, gen uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ps := m.parts[id]
	if ps == nil || ps.gen >= gen || m.closed {
		return
	}
	m.log.Warn("fenced: a copy knows a newer owner of this partition; not serving it any more",
		"partition_identity", id, "generation", ps.gen, "newer_generation", gen)
	route := slices.Clone(*m.route.Load())
	for seg := ps.first; seg <= ps.last && seg < len(route); seg++ {
		route[seg] = nil
		m.st.Segment(uint16(seg)).SetOwned(false)
	}
	m.route.Store(&route)
	delete(m.parts, id)
	ps.retire()
}

// peerAddr is the peer target of node id in the current map: its address
// naming the node, so that a different node now at that address refuses
// the session (cluster.ErrWrongPeer) instead of taking it as its own.
func (m *Manager) peerAddr(id cluster.NodeID) (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return "", false
	}
	n, ok := m.cur.Node(id)
	if !ok || n.PeerPort <= 0 {
		return "", false
	}
	return cluster.PeerTarget(n), true
}

func (m *Manager) mapVersion() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cur == nil {
		return 0
	}
	return m.cur.Version
}

func (m *Manager) lineage(seg uint16) lineage {
	m.linMu.Lock()
	defer m.linMu.Unlock()
	return m.lineages[seg]
}

func (m *Manager) setLineage(seg uint16, l lineage) {
	m.linMu.Lock()
	m.lineages[seg] = l
	m.linMu.Unlock()
}
