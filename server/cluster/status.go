package cluster

import (
	"net"
	"strconv"

	"github.com/hashicorp/raft"

	"github.com/zaris-io/zaris/internal/placement"
)

// Status is a point-in-time description of the cluster as this node sees
// it (STYLE 12), served as JSON by GET /v1/cluster.
type Status struct {
	Self            NodeID        `json:"self"`
	Store           string        `json:"store"`
	ClusterID       string        `json:"clusterId"`
	MapVersion      uint64        `json:"mapVersion"`
	TopologyVersion uint64        `json:"topologyVersion"`
	TotalSegments   int           `json:"totalSegments"`
	Leader          NodeID        `json:"leader"`
	Term            uint64        `json:"term"`
	TrafficGate     string        `json:"trafficGate"` // hold, open, open-unconverged
	Joined          bool          `json:"joined"`
	DriftRepairs    uint64        `json:"driftRepairs"`
	Failover        FailoverStats `json:"failover"` // decisions this node committed as leader
	// Rebalance is the leader's live-migration status (R-MIG-1; only on
	// the leader).
	Rebalance *RebalanceStatus `json:"rebalance,omitempty"`
	Draining  []NodeID         `json:"draining,omitempty"`
	// PlacementWarnings say where the map in force falls short of
	// R-CLU-7: copies sharing a host or a zone, fewer members than the
	// replication factor (PlacementWarnings).
	PlacementWarnings []string `json:"placementWarnings,omitempty"`
	// Follow is the WAN follower's state (R-OPS-4): set by the node
	// (cluster.FollowState.StatusOf); nil on a cluster that never followed.
	Follow     *FollowStatus     `json:"follow,omitempty"`
	Nodes      []NodeStatus      `json:"nodes"`
	Partitions []PartitionStatus `json:"partitions"`
}

// NodeStatus is one member: its addresses, state and roles.
type NodeStatus struct {
	ID         NodeID `json:"id"`
	Host       string `json:"host"`
	ClientAddr string `json:"clientAddr"`
	RESPAddr   string `json:"respAddr,omitempty"`
	HTTPAddr   string `json:"httpAddr,omitempty"`
	PeerAddr   string `json:"peerAddr"`
	GossipAddr string `json:"gossipAddr"`
	State      string `json:"state"`      // alive, suspected, unreachable, lost, evicted, decommissioned
	InMap      bool   `json:"inMap"`      // listed in the applied map
	Raft       string `json:"raft"`       // voter, nonvoter, or "" when not in the raft configuration
	Leader     bool   `json:"leader"`     // leads the control plane
	Partitions []int  `json:"partitions"` // partitions it actively owns
}

// PartitionStatus is one partition of the applied map.
type PartitionStatus struct {
	ID          int      `json:"id"`
	Identity    string   `json:"identity"`
	Primary     NodeID   `json:"primary"`
	ActiveOwner NodeID   `json:"activeOwner"`
	Replicas    []NodeID `json:"replicas"`
	Epoch       uint64   `json:"epoch"`
	Generation  uint64   `json:"generation"`
	LeaderTerm  uint64   `json:"leaderTerm"`
	// Health: healthy, degraded (serving with less redundancy than
	// planned), recovering (the owner syncs from SyncSource before it
	// serves), unavailable (no live copy), suspect (the owner is suspected).
	Health string `json:"health"`
	// Demoted are copies a failover confirmed dead: they do not count for
	// sync quorums until the partition is healthy again.
	Demoted    []NodeID `json:"demoted,omitempty"`
	SyncSource NodeID   `json:"syncSource,omitempty"`
	// Incoming and MoveTo: a live migration in flight (copies being built,
	// the node the ownership moves to).
	Incoming     []NodeID `json:"incoming,omitempty"`
	MoveTo       NodeID   `json:"moveTo,omitempty"`
	FirstSegment int      `json:"firstSegment"`
	LastSegment  int      `json:"lastSegment"`
	FirstSlot    int      `json:"firstSlot"`
	LastSlot     int      `json:"lastSlot"`
	// Replication is the replicas' progress as the partition's active
	// owner sees it: filled on the active owner only (the node that ships),
	// absent elsewhere.
	Replication []ReplicaStatus `json:"replication,omitempty"`
	// Recovery is restart recovery's state on the active owner (R-REP-6):
	// "certified" (its store is authoritative), "held" (segments wait for
	// the pull from a replica) or "uncertified" (serving, not yet proven);
	// absent elsewhere.
	Recovery string `json:"recovery,omitempty"`
}

// ReplicaStatus is one replica of a partition, seen from its active owner
// (server/replication).
type ReplicaStatus struct {
	Node NodeID `json:"node"`
	// State: connecting (no session yet), streaming (caught up or catching
	// up on a live session), disconnected (the last session broke; retrying),
	// held (a segment's replica is ahead of this owner under the same
	// history: nothing is shipped over it until restart recovery).
	State string `json:"state"`
	// LagRevisions is how far behind the replica is: the sum over the
	// partition's segments of (owner revision − replica's applied revision).
	LagRevisions uint64 `json:"lagRevisions"`
	// Snapshots counts the segment snapshots shipped to it (catch-up from
	// below the op-log's trim floor or over a foreign history); OpsShipped
	// the op-log entries.
	Snapshots  uint64 `json:"snapshots"`
	OpsShipped uint64 `json:"opsShipped"`
	// Sessions counts the sessions opened to the replica.
	Sessions uint64 `json:"sessions"`
}

var trafficNames = [...]string{TrafficHold: "hold", TrafficOpen: "open", TrafficOpenUnconverged: "open-unconverged"}

// Status describes the cluster now.
func (c *Cluster) Status() Status {
	c.mu.RLock()
	m, members, open, traffic, repairs, joined := c.applied, c.members, c.trafficOpen, c.traffic, c.repairs, c.joined
	c.mu.RUnlock()
	if !open {
		traffic = TrafficHold
	}
	st := Status{Self: c.cfg.Self.ID, Store: c.cfg.Store, ClusterID: c.cfg.ClusterID, Leader: c.Leader(), Term: c.Term(),
		TrafficGate: trafficNames[traffic], Joined: joined, DriftRepairs: repairs, Failover: c.FailoverStats(),
		Nodes: []NodeStatus{}, Partitions: []PartitionStatus{}, Draining: c.fsm.Draining()}
	if c.IsLeader() {
		rs := c.RebalanceStatus()
		st.Rebalance = &rs
	}
	roles := map[NodeID]string{}
	if c.raft != nil {
		if f := c.raft.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				roles[NodeID(s.ID)] = "nonvoter"
				if s.Suffrage == raft.Voter {
					roles[NodeID(s.ID)] = "voter"
				}
			}
		}
	}
	state := map[NodeID]MemberState{}
	infos := map[NodeID]NodeInfo{}
	var order []NodeID
	for _, mv := range members {
		state[mv.Info.ID] = mv.State
		infos[mv.Info.ID] = mv.Info
		order = append(order, mv.Info.ID)
	}
	owned := map[NodeID][]int{}
	if m != nil {
		st.MapVersion, st.TopologyVersion, st.TotalSegments = m.Version, m.TopologyVersion, m.TotalSegments
		st.PlacementWarnings = PlacementWarnings(m, c.cfg.ReplicationFactor)
		for _, n := range m.Nodes {
			if _, ok := infos[n.ID]; !ok {
				infos[n.ID] = n
				order = append(order, n.ID)
			}
		}
		for _, p := range m.Partitions {
			owned[p.ActiveOwner] = append(owned[p.ActiveOwner], p.ID)
			first, _ := placement.SlotRange(uint16(p.FirstSegment), m.TotalSegments)
			_, last := placement.SlotRange(uint16(p.LastSegment), m.TotalSegments)
			health := p.HealthState().String()
			switch s := state[p.ActiveOwner]; {
			case p.ActiveOwner == "" || s == MemberUnreachable || s.MapAffecting():
				health = "unavailable"
			case s == MemberSuspected && health == "healthy":
				health = "suspect"
			}
			st.Partitions = append(st.Partitions, PartitionStatus{ID: p.ID, Identity: p.Identity, Primary: p.PrimaryNodeID,
				ActiveOwner: p.ActiveOwner, Replicas: append([]NodeID{}, p.ReplicaNodeIDs...), Epoch: p.Epoch,
				Generation: p.OwnershipGeneration, LeaderTerm: p.LeaderTerm, Health: health,
				Demoted: append([]NodeID(nil), p.Demoted...), SyncSource: p.Source, Incoming: append([]NodeID(nil), p.Incoming...), MoveTo: p.MoveTo,
				FirstSegment: p.FirstSegment, LastSegment: p.LastSegment, FirstSlot: int(first), LastSlot: int(last)})
		}
	}
	for _, id := range order {
		n := infos[id]
		ns := NodeStatus{ID: id, Host: n.Host, ClientAddr: hostPort(n.Host, n.ClientPort), RESPAddr: hostPort(n.Host, n.RESPPort),
			HTTPAddr: hostPort(n.Host, n.HTTPPort), PeerAddr: hostPort(n.Host, n.PeerPort), GossipAddr: hostPort(n.Host, n.GossipPort),
			State: "unknown", Raft: roles[id], Leader: id == st.Leader, Partitions: append([]int{}, owned[id]...)}
		if s, ok := state[id]; ok {
			ns.State = s.String()
		}
		if m != nil {
			_, ns.InMap = m.Node(id)
		}
		st.Nodes = append(st.Nodes, ns)
	}
	return st
}

func hostPort(host string, port int) string {
	if port <= 0 {
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
