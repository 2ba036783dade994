package cluster

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server/cluster/failover"
)

// NodeID is a node's stable identity (R-CLU-1): the same across restarts.
type NodeID string

// NodeInfo is a member's registry entry: how to reach it.
type NodeInfo struct {
	ID         NodeID `msgpack:"id"`
	Host       string `msgpack:"host"`
	ClientPort int    `msgpack:"client"`
	PeerPort   int    `msgpack:"peer"`
	GossipPort int    `msgpack:"gossip"`
	RESPPort   int    `msgpack:"resp,omitempty"`
	HTTPPort   int    `msgpack:"http,omitempty"`
	// Zone is the failure domain the operator labelled the node with
	// (--zone, R-CLU-7): the planner keeps a partition's copies in
	// distinct zones when it can. "" = unlabelled.
	Zone string `msgpack:"zone,omitempty"`
}

// Partition is one group of segments with its placement and its runtime
// owner (R-CLU-3). PrimaryNodeID is where the plan wants it; ActiveOwner is
// who serves it now — they differ during a failover or a migration.
type Partition struct {
	ID             int      `msgpack:"id"`
	Identity       string   `msgpack:"identity"` // minted at birth, survives renumbering
	PrimaryNodeID  NodeID   `msgpack:"primary"`
	ReplicaNodeIDs []NodeID `msgpack:"replicas,omitempty"`
	// Runtime ownership lease: granted by the leader at LeaderTerm.
	ActiveOwner         NodeID `msgpack:"owner"`
	OwnershipGeneration uint64 `msgpack:"generation"`
	LeaderTerm          uint64 `msgpack:"term"`
	// Epoch is the per-partition failover epoch; it never regresses (R-REP-4).
	Epoch uint64 `msgpack:"epoch"`
	// FirstSegment and LastSegment (inclusive) are the partition's contiguous
	// segment range.
	FirstSegment int `msgpack:"first"`
	LastSegment  int `msgpack:"last"`
	// Health is the runtime health (R-REP-7): 0 (a map that predates it)
	// means Healthy. Every change of it is an OwnershipChange with a new
	// epoch.
	Health failover.Health `msgpack:"health,omitempty"`
	// Demoted are copies of the group a failover confirmed dead (the
	// former owner): they are still shipped to when they come back, but do
	// not count toward a sync write's quorum until the partition is
	// Healthy again.
	Demoted []NodeID `msgpack:"demoted,omitempty"`
	// Source is, while the partition is Recovering, the more complete copy
	// the promoted owner syncs from before it serves (R-REP-5); "" else.
	Source NodeID `msgpack:"source,omitempty"`
	// Incoming are copies a live migration is building (R-MIG-2): the
	// active owner streams to them like to a replica — snapshot, then its
	// op-log — but they claim nothing: they count for no write quorum,
	// no failover promotes them, and an aborted move drops them.
	Incoming []NodeID `msgpack:"incoming,omitempty"`
	// MoveTo is the node this partition's ownership is moving to (one of
	// Incoming, or a replica), "" when only copies move. The cut-over fences the active
	// owner, proves the target level, and flips ActiveOwner to it in one
	// map commit.
	MoveTo NodeID `msgpack:"moveto,omitempty"`
}

// Migrating reports whether a live migration is in flight on p: copies
// being built, or its ownership moving (to an incoming copy or to one of
// its replicas).
func (p *Partition) Migrating() bool { return len(p.Incoming) > 0 || p.MoveTo != "" }

// HealthState is the partition's runtime health (Healthy when unset).
func (p *Partition) HealthState() failover.Health {
	if p.Health == 0 {
		return failover.Healthy
	}
	return p.Health
}

// Copies are the members of the partition's group other than its active
// owner — the nodes the owner replicates to: its replicas, the planned
// primary when a failover moved the active owner away from it, and the
// copies a migration is building (Incoming).
func (p *Partition) Copies() []NodeID {
	out := p.Established()
	for _, id := range p.Incoming {
		if id != "" && id != p.ActiveOwner && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// Established are the copies that hold the partition by replication, not
// by a migration still in progress: the ones write quorums count and
// failover may promote.
func (p *Partition) Established() []NodeID {
	var out []NodeID
	for _, id := range append([]NodeID{p.PrimaryNodeID}, p.ReplicaNodeIDs...) {
		if id != "" && id != p.ActiveOwner && !slices.Contains(out, id) && !slices.Contains(p.Incoming, id) {
			out = append(out, id)
		}
	}
	return out
}

// PartitionMap is the versioned plan every node routes with (R-CLU-3).
type PartitionMap struct {
	// Version grows strictly with every change; a node applies only a map
	// whose Version is strictly greater than the one it holds.
	Version uint64 `msgpack:"version"`
	// TopologyVersion grows only on structural change (members or
	// partitions), not on an ownership move.
	TopologyVersion uint64 `msgpack:"topology"`
	TotalSegments   int    `msgpack:"segments"`
	Partitions      []Partition
	// SegmentToPartition[s] is the partition of segment s; len == TotalSegments.
	SegmentToPartition []int `msgpack:"seg2part"`
	// Nodes are the members the map was planned with, with their addresses.
	Nodes []NodeInfo `msgpack:"nodes"`
	// Store and ClusterID name what the map is for: a node of another store
	// or cluster refuses it.
	Store     string `msgpack:"store"`
	ClusterID string `msgpack:"cluster"`
}

// Node returns the registry entry of id.
func (m *PartitionMap) Node(id NodeID) (NodeInfo, bool) {
	for _, n := range m.Nodes {
		if n.ID == id {
			return n, true
		}
	}
	return NodeInfo{}, false
}

// OwnerOfSegment returns the active owner of segment seg.
func (m *PartitionMap) OwnerOfSegment(seg int) NodeID {
	if seg < 0 || seg >= len(m.SegmentToPartition) {
		return ""
	}
	p := m.SegmentToPartition[seg]
	if p < 0 || p >= len(m.Partitions) {
		return ""
	}
	return m.Partitions[p].ActiveOwner
}

// OwnerOfKey returns the active owner of key through the one placement function.
func (m *PartitionMap) OwnerOfKey(key string) NodeID {
	return m.OwnerOfSegment(int(placement.SegmentOf(key, m.TotalSegments)))
}

// OwnedSegments returns, for node id, a bitmap of the segments it actively
// owns and serves: a Recovering owner syncs before it serves (R-REP-5), so
// its segments are not served yet.
func (m *PartitionMap) OwnedSegments(id NodeID) []bool {
	owned := make([]bool, m.TotalSegments)
	for seg := range owned {
		p := m.SegmentToPartition[seg]
		owned[seg] = m.OwnerOfSegment(seg) == id && m.Partitions[p].HealthState() != failover.Recovering
	}
	return owned
}

// ErrInvalidMap wraps every Validate error.
var ErrInvalidMap = errors.New("cluster: invalid partition map")

// Validate checks the map's internal consistency: a full segment table,
// contiguous ranges that match it, known owners, no node twice in one
// partition's group. A node may hold several partitions (a migration moves
// a partition to a node that already owns others).
func (m *PartitionMap) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w (version %d): %s", ErrInvalidMap, m.Version, fmt.Sprintf(format, args...))
	}
	if m.TotalSegments < 1 || m.TotalSegments > placement.SlotCount {
		return bad("total segments %d", m.TotalSegments)
	}
	if len(m.SegmentToPartition) != m.TotalSegments {
		return bad("segment table has %d entries for %d segments", len(m.SegmentToPartition), m.TotalSegments)
	}
	if len(m.Partitions) == 0 {
		return bad("no partitions")
	}
	known := map[NodeID]bool{}
	for _, n := range m.Nodes {
		if n.ID == "" || known[n.ID] {
			return bad("node %q missing or listed twice", n.ID)
		}
		known[n.ID] = true
	}
	next := 0
	for i, p := range m.Partitions {
		if p.ID != i {
			return bad("partition %d listed at index %d", p.ID, i)
		}
		if p.FirstSegment != next || p.LastSegment < p.FirstSegment || p.LastSegment >= m.TotalSegments {
			return bad("partition %d range [%d,%d] not contiguous after %d", i, p.FirstSegment, p.LastSegment, next)
		}
		for s := p.FirstSegment; s <= p.LastSegment; s++ {
			if m.SegmentToPartition[s] != i {
				return bad("segment %d maps to %d, range says %d", s, m.SegmentToPartition[s], i)
			}
		}
		next = p.LastSegment + 1
		members := append([]NodeID{p.PrimaryNodeID}, p.ReplicaNodeIDs...)
		for j, id := range members {
			if !known[id] {
				return bad("partition %d names unknown node %q", i, id)
			}
			if slices.Contains(members[j+1:], id) {
				return bad("node %q is twice in partition %d", id, i)
			}
		}
		if p.ActiveOwner != "" && !known[p.ActiveOwner] {
			return bad("partition %d owned by unknown node %q", i, p.ActiveOwner)
		}
		for j, id := range p.Incoming {
			switch {
			case !known[id]:
				return bad("partition %d migrates to unknown node %q", i, id)
			case id == p.ActiveOwner || slices.Contains(p.ReplicaNodeIDs, id) || slices.Contains(p.Incoming[j+1:], id):
				return bad("incoming copy %q of partition %d already holds it", id, i)
			}
		}
		// MoveTo may equal ActiveOwner: a failover promoted the target
		// replica meanwhile, and the move has nothing left to flip.
		if p.MoveTo != "" && p.MoveTo != p.ActiveOwner &&
			!slices.Contains(p.Incoming, p.MoveTo) && !slices.Contains(p.ReplicaNodeIDs, p.MoveTo) {
			return bad("partition %d moves to %q, which is neither an incoming copy nor a replica", i, p.MoveTo)
		}
	}
	if next != m.TotalSegments {
		return bad("partitions cover segments up to %d of %d", next, m.TotalSegments)
	}
	return nil
}

// Clone returns a deep copy.
func (m *PartitionMap) Clone() *PartitionMap {
	c := *m
	c.Partitions = make([]Partition, len(m.Partitions))
	for i, p := range m.Partitions {
		p.ReplicaNodeIDs = append([]NodeID(nil), p.ReplicaNodeIDs...)
		p.Demoted = append([]NodeID(nil), p.Demoted...)
		if len(p.Demoted) == 0 {
			p.Demoted = nil
		}
		p.Incoming = slices.Clone(p.Incoming)
		c.Partitions[i] = p
	}
	c.SegmentToPartition = append([]int(nil), m.SegmentToPartition...)
	c.Nodes = append([]NodeInfo(nil), m.Nodes...)
	return &c
}

// AcceptMap is the commit rule (R-CLU-3): a node applies a map only if it is
// for its store and cluster, valid, and strictly newer than the one it holds.
func AcceptMap(current, incoming *PartitionMap, store, clusterID string) error {
	switch {
	case incoming == nil:
		return fmt.Errorf("%w: nil map", ErrInvalidMap)
	case incoming.Store != store:
		return fmt.Errorf("%w: map for store %q, this node serves %q", ErrForeignMap, incoming.Store, store)
	case clusterID != "" && incoming.ClusterID != clusterID:
		return fmt.Errorf("%w: map of cluster %q, this node is in %q", ErrForeignMap, incoming.ClusterID, clusterID)
	case current != nil && incoming.Version <= current.Version:
		return fmt.Errorf("%w: version %d, holding %d", ErrStaleMap, incoming.Version, current.Version)
	}
	return incoming.Validate()
}

// ErrStaleMap: a map not strictly newer than the one held (rejected, never
// applied: two nodes can never settle on different maps of one version).
var ErrStaleMap = errors.New("cluster: stale partition map")

// ErrForeignMap: a map of another store or cluster.
var ErrForeignMap = errors.New("cluster: partition map of another store or cluster")
