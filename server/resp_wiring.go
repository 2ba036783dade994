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
		Store:        n.store,
		NodeID:       n.cfg.NodeID,
		Version:      Version(),
		Token:        n.cfg.Token,
		Metrics:      n.metrics,
		Logger:       n.log,
		Routing:      n.routing,
		Arriving:     n.arriving,
		MaxRSSBytes:  n.cfg.MemoryMaxRSS,
		Partitions:   n.respPartitions,
		Bus:          n.bus,
	})
}

// respPartitions lists the applied map's partitions for INFO replication:
// the active owner, the replicas and, for the segments this node holds,
// the highest revision it has of each partition.
func (n *Node) respPartitions() []resp.PartitionInfo {
	c := n.Cluster()
	if c == nil {
		return nil
	}
	m := c.Map()
	if m == nil {
		return nil
	}
	out := make([]resp.PartitionInfo, 0, len(m.Partitions))
	for _, p := range m.Partitions {
		pi := resp.PartitionInfo{Partition: p.ID, Owner: string(p.ActiveOwner)}
		for _, r := range p.ReplicaNodeIDs {
			pi.Replicas = append(pi.Replicas, string(r))
		}
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < n.store.Segments(); seg++ {
			pi.Revision = max(pi.Revision, n.store.Segment(uint16(seg)).Revision())
		}
		out = append(out, pi)
	}
	return out
}
