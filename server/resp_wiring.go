package server

import (
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/resp"
)

// arriving reports whether segment seg is moving to this node: the map it
// applied names it the partition's MoveTo while another node still owns it.
func (n *Node) arriving(seg int) bool {
	c := n.Cluster()
	if c == nil {
		return false
	}
	m := c.Map()
	if m == nil || seg < 0 || seg >= len(m.SegmentToPartition) {
		return false
	}
	p := &m.Partitions[m.SegmentToPartition[seg]]
	self := cluster.NodeID(n.cfg.NodeID)
	return p.MoveTo == self && p.ActiveOwner != self
}

// newRESPService builds the Redis-protocol front end of the node (R-RESP).
// TLS is applied by the Node on the listener, so the service itself runs
// plain; the token is the one the native protocol and the HTTP API require;
// the routing source is the one the native protocol serves, so CLUSTER SLOTS
// and MOVED redirects follow the committed partition map.
func (n *Node) newRESPService() (*resp.Server, error) {
	var barrier resp.WriteBarrier
	if n.repl.Barrier() {
		barrier = n.repl // sync replication; async writes pay nothing
	}
	var replicas resp.ReplicaWaiter
	if n.repl != nil {
		replicas = n.repl // WAIT counts the replicas that applied a client's writes
	}
	return resp.New(resp.Config{
		WriteBarrier: barrier,
		Replicas:     replicas,
		FreezeCheck:  n.freezeCheck,
		ReadOnly:     n.readOnly,
		Store:        n.store,
		NodeID:       n.cfg.NodeID,
		Version:      Version(),
		Token:        n.cfg.Token,
		ACL:          n.acl,
		Metrics:      n.metrics,
		Logger:       n.log,
		Routing:      n.routing,
		Arriving:     n.arriving,
		MaxRSSBytes:  n.cfg.MemoryMaxRSS,
		Partitions:   n.respPartitions,
		Bus:          n.bus,
		Cluster:      n.respClusterInfo,
		EventLoops:   n.cfg.RESPEventLoops,
	})
}

// respPartitions lists the partitions for INFO replication, from the
// cluster's status as this node sees it: the active owner, the replicas,
// the failover epoch and health, for the segments this node holds the
// highest revision it has of each partition, and, where this node owns it,
// each replica's applied revision.
func (n *Node) respPartitions() []resp.PartitionInfo {
	c := n.Cluster()
	if c == nil || c.Map() == nil {
		return nil
	}
	st := n.ClusterStatus()
	out := make([]resp.PartitionInfo, 0, len(st.Partitions))
	for _, p := range st.Partitions {
		pi := resp.PartitionInfo{Partition: p.ID, Owner: string(p.ActiveOwner), Epoch: p.Epoch, Health: p.Health}
		for _, r := range p.Replicas {
			pi.Replicas = append(pi.Replicas, string(r))
		}
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < n.store.Segments(); seg++ {
			pi.Revision = max(pi.Revision, n.store.Segment(uint16(seg)).Revision())
		}
		var sum uint64 // the owner's revisions summed, as the replicas' lag is
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < n.store.Segments(); seg++ {
			sum += n.store.Segment(uint16(seg)).Revision()
		}
		for _, r := range p.Replication {
			off := uint64(0)
			if sum > r.LagRevisions {
				off = sum - r.LagRevisions
			}
			pi.ReplicaOffsets = append(pi.ReplicaOffsets, resp.ReplicaOffset{Node: string(r.Node), State: r.State, Offset: off})
		}
		out = append(out, pi)
	}
	return out
}

// respClusterInfo is CLUSTER INFO's view of the cluster: the slots of the
// partitions no node can serve (Unavailable), the highest failover epoch
// (current) and the highest of the partitions this node owns (mine).
func (n *Node) respClusterInfo() resp.ClusterInfo {
	info := resp.ClusterInfo{CurrentEpoch: 1}
	if n.Cluster() == nil {
		return info
	}
	st := n.ClusterStatus()
	self := cluster.NodeID(n.cfg.NodeID)
	for _, p := range st.Partitions {
		info.CurrentEpoch = max(info.CurrentEpoch, p.Epoch)
		if p.ActiveOwner == self {
			info.MyEpoch = max(info.MyEpoch, p.Epoch)
		}
		if p.Health == "unavailable" {
			info.FailSlots += p.LastSlot - p.FirstSlot + 1
		}
	}
	return info
}
