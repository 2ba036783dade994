package server

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"fmt"
	"net"
	"os"
	"sync/atomic"

	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/bus"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/native"
)

// A node is always a cluster member (R-CLU): alone it bootstraps a cluster
// of one and leads it; with --join, an --expect-nodes above 1 or a registry
// it forms or joins a cluster of several. Its client-facing listeners are
// bound at Start (the ports are reserved and advertised) but serve only
// once the traffic gate opens; until then /readyz answers 503 and every
// segment is unowned (anything reaching the store answers Moved).

// clusterRouting adapts the node's cluster to native.RoutingSource; it
// answers no map until the cluster runs.
type clusterRouting struct {
	c    atomic.Pointer[cluster.Cluster]
	idle chan struct{} // never closed
}

var _ native.RoutingSource = (*clusterRouting)(nil)

func (r *clusterRouting) RoutingMap() *wire.RoutingMap {
	c := r.c.Load()
	if c == nil {
		return nil
	}
	m, _ := c.RoutingMap()
	return m
}

func (r *clusterRouting) Changed() <-chan struct{} {
	c := r.c.Load()
	if c == nil {
		return r.idle
	}
	_, ch := c.RoutingMap()
	return ch
}

// advertiseHost is the host other nodes and clients reach this node at:
// its registry entry's, else the bind address, else (bound to every
// interface) the host name.
func (c Config) advertiseHost() string {
	if e, ok := c.registryEntry(c.NodeID); ok {
		return e.Host
	}
	if ip := net.ParseIP(c.Bind); ip == nil || !ip.IsUnspecified() {
		return c.Bind
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		return h
	}
	return c.Bind
}

func (c Config) registryInfos() []cluster.NodeInfo {
	out := make([]cluster.NodeInfo, len(c.Nodes))
	for i, e := range c.Nodes {
		out[i] = cluster.NodeInfo{ID: cluster.NodeID(e.ID), Host: e.Host, ClientPort: e.ClientPort, PeerPort: e.PeerPort,
			GossipPort: e.GossipPort, RESPPort: e.RESPPort, HTTPPort: e.HTTPPort}
	}
	return out
}

// newCluster builds the node's cluster member on its bound listeners
// (called by Start under n.mu).
func (n *Node) newClusterLocked(peer net.Listener) (*cluster.Cluster, error) {
	c := n.cfg
	self := cluster.NodeInfo{ID: cluster.NodeID(c.NodeID), Host: c.advertiseHost(), PeerPort: portOf(peer.Addr()), Zone: c.Zone}
	if ln := n.listeners[EndpointClient]; ln != nil {
		self.ClientPort = portOf(ln.Addr())
	}
	if ln := n.listeners[EndpointRESP]; ln != nil {
		self.RESPPort = portOf(ln.Addr())
	}
	if ln := n.listeners[EndpointHTTP]; ln != nil {
		self.HTTPPort = portOf(ln.Addr())
	}
	gossip := c.GossipPort
	if gossip == EphemeralPort {
		gossip = 0
	}
	var dial cluster.Dialer
	if n.tlsState != nil {
		dial = n.tlsState.dialPeer
	}
	return cluster.New(cluster.Config{
		Self: self, Store: c.Store, ClusterID: c.ClusterID,
		GossipBind: c.Bind, GossipPort: gossip,
		Registry: c.registryInfos(), Join: c.Join, ExpectNodes: c.ExpectNodes,
		Partitions: c.Partitions, ReplicationFactor: c.ReplicationFactor, TotalSegments: n.store.Segments(),
		DataDir: c.DataDir, PeerListener: peer, Dial: dial, Timings: c.Timings, Secret: n.secret,
		Logger:        slog.New(n.events.Tap(n.log.Handler())), // the console's timeline (server/events)
		ACL:           n.acl,
		OnMap:         n.applyMap,
		PeerHandlers:  map[byte]func(net.Conn){cluster.PeerReplication: n.repl.ServePeer, bus.Proto: n.bus.Serve},
		Possession:    n.repl.Possession,
		Migrate:       n.repl.Migrate,
		AutoRebalance: c.AutoRebalance,
		PhaseHook:     c.MigrationPhaseHook,
		FailoverHook:  c.FailoverHook,
		OnTraffic: func(d cluster.TrafficDecision) {
			// A restarted owner opens its listeners once restart recovery
			// released its segments (bounded: the gate stays authoritative).
			go func() {
				n.repl.WaitSettled(settleBound)
				n.openTraffic(d)
			}()
		},
	})
}

// settleBound bounds how long the traffic gate waits for restart recovery
// to release the owned segments before it opens anyway.
const settleBound = 10 * time.Second

// applyOwnership aligns the store's runtime ownership to map m — the
// segments it loses (gain false) or those it gains: a segment this node
// does not actively own answers Moved to every client operation.
func (n *Node) applyOwnership(m *cluster.PartitionMap, gain bool) {
	owned := m.OwnedSegments(cluster.NodeID(n.cfg.NodeID))
	for i := 0; i < n.store.Segments() && i < len(owned); i++ {
		if owned[i] == gain && !(gain && n.repl.Held(i)) {
			// A segment held by restart recovery's serve gate is released
			// by the replication manager once it may serve.
			n.store.Segment(uint16(i)).SetOwned(owned[i])
		}
	}
}

// applyMap aligns the node to a newly applied map, in an order that never
// lets a client write and a replication stream touch one segment at once:
// first the segments it no longer serves stop serving, then replication
// follows the map (sessions the map no longer allows are fenced, their
// in-flight frame finished), and only then the segments it now owns serve.
//
// A fenced node (freeze.go) gains nothing: the fence's lifting re-aligns
// to the last map applied here.
func (n *Node) applyMap(m *cluster.PartitionMap) {
	n.ownMu.Lock()
	defer n.ownMu.Unlock()
	n.aligned = m
	// Change-feed positions carry their partition's epoch (R-OPS-4).
	for _, p := range m.Partitions {
		for sg := p.FirstSegment; sg <= p.LastSegment && sg < n.store.Segments(); sg++ {
			n.store.Segment(uint16(sg)).SetEpoch(p.Epoch)
		}
	}
	n.applyOwnership(m, false)
	n.repl.Apply(m)
	if !n.fenced.Load() {
		n.applyOwnership(m, true)
	}
	go n.bus.Sync() // the pub/sub links follow the members (Sync reads the map itself)
}

// openTraffic starts serving the client and RESP listeners (the traffic
// gate opened) and marks the node ready.
func (n *Node) openTraffic(d cluster.TrafficDecision) {
	n.mu.Lock()
	if n.state != stateRunning {
		n.mu.Unlock()
		return
	}
	for _, ep := range []Endpoint{EndpointClient, EndpointRESP} {
		if ln := n.listeners[ep]; ln != nil && !n.served[ep] {
			n.served[ep] = true
			n.serve(ep, n.services[ep], ln)
		}
	}
	n.mu.Unlock()
	n.ready.Store(true)
	n.readyOnce.Do(func() { close(n.readyCh) })
	attrs := []any{"converged", d == cluster.TrafficOpen}
	if m := n.Cluster().Map(); m != nil {
		attrs = append(attrs, "map_version", m.Version)
	}
	for _, ep := range []Endpoint{EndpointClient, EndpointRESP} {
		if a := n.Addr(ep); a != nil {
			attrs = append(attrs, ep.String()+"_addr", a.String())
		}
	}
	n.log.Info("node ready", attrs...)
}

// WaitReady blocks until the node serves traffic (its traffic gate opened),
// ctx ends, or a service fails.
func (n *Node) WaitReady(ctx context.Context) error {
	select {
	case <-n.readyCh:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("server: waiting for the traffic gate: %w", ctx.Err())
	}
}

// Cluster is the node's membership and control plane (nil before Start).
func (n *Node) Cluster() *cluster.Cluster {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cluster
}

// ClusterStatus describes the cluster as this node sees it (GET /v1/cluster).
func (n *Node) ClusterStatus() cluster.Status {
	c := n.Cluster()
	if c == nil {
		return cluster.Status{Self: cluster.NodeID(n.cfg.NodeID), Store: n.cfg.Store, ClusterID: n.cfg.ClusterID,
			TrafficGate: "hold", Nodes: []cluster.NodeStatus{}, Partitions: []cluster.PartitionStatus{}}
	}
	st := c.Status()
	n.repl.Annotate(&st)
	st.Follow = n.followStatus()
	return st
}

// Rebalance asks the control-plane leader to re-plan the map over every
// live member that is not draining and to migrate live towards it
// (R-MIG-1): each moving partition keeps being served by its source until
// its cut-over, and no acknowledged write is lost. It returns the map
// version in force when the request was taken; cluster.ErrNotLeader on a
// follower.
func (n *Node) Rebalance(ctx context.Context) (uint64, error) {
	c := n.Cluster()
	if c == nil {
		return 0, ErrStopped
	}
	return c.Rebalance(ctx)
}

// Evict evicts node id for good (R-CLU-2): recorded in the control-plane
// log, it leaves the map and raft and stays Evicted whatever it later says.
// It must run on the control-plane leader (cluster.ErrNotLeader
// otherwise); cluster.ErrUnknownNode, cluster.ErrEvictSelf.
func (n *Node) Evict(ctx context.Context, id string) error {
	c := n.Cluster()
	if c == nil {
		return ErrStopped
	}
	return c.Evict(ctx, cluster.NodeID(id))
}

// Decommission takes the node out of the cluster for good (R-CLU-2,
// R-MIG-1): it asks the leader to drain it — every partition it owns or
// copies moves to the other members live, nothing acknowledged is lost —
// waits until the map gives it no role any more, then announces its leave
// (peers mark it Decommissioned, the leader drops it from the map and from
// raft) and stops gracefully. A cluster of one is simply stopped; a node
// whose partitions no other live member can take is refused
// (cluster.ErrCannotDrain) and keeps serving.
func (n *Node) Decommission(ctx context.Context) error {
	if c := n.Cluster(); c != nil {
		self := cluster.NodeID(n.cfg.NodeID)
		if err := n.drain(ctx, c, self); err != nil {
			return err
		}
		if err := c.Leave(2 * time.Second); err != nil {
			n.log.Warn("leave not announced to every peer", "err", err)
		}
	}
	return n.Stop(ctx)
}

// drain asks for self's drain (retrying while no leader is known) and
// waits until the applied map gives self no role.
func (n *Node) drain(ctx context.Context, c *cluster.Cluster, self cluster.NodeID) error {
	if m := c.Map(); m != nil && len(m.Nodes) == 1 && m.Nodes[0].ID == self {
		// A cluster of one: there is nowhere to move anything, and the
		// operator asked to take the cluster's last node down.
		n.log.Warn("decommissioning the only member of the cluster: its data goes with it")
		return nil
	}
	asked := false
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if !asked {
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.Drain(rctx, self)
			cancel()
			switch {
			case err == nil:
				asked = true
				n.log.Info("draining: waiting for this node's partitions to move away")
			case errors.Is(err, cluster.ErrCannotDrain):
				return err
			default:
				n.log.Warn("drain not accepted yet; retrying", "err", err)
			}
		}
		if asked && !cluster.Holds(c.Map(), self) {
			n.log.Info("drained: this node holds no partition any more")
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("server: draining: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// RequestCounts are the requests received by the node's built-in
// native-protocol service: every frame after the handshake, the OpBatch
// frames and their items. A bulk call grouped by owner shows as exactly one
// batch per owner. Zero when the client endpoint was replaced by Attach.
type RequestCounts = native.RequestCounts

// RequestCounts returns the node's native request counters.
func (n *Node) RequestCounts() RequestCounts {
	if n.native == nil {
		return RequestCounts{}
	}
	return n.native.Counts()
}
