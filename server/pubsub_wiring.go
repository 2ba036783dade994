package server

import (
	"context"
	"net"
	"time"

	"github.com/zaris-io/zaris/server/bus"
	"github.com/zaris-io/zaris/server/cluster"
)

// The cluster pub/sub bus (R-DS-7, R-RESP-3): the node's broker forwards
// every message published here to the other members of the applied map,
// one frame per member, and delivers the messages they forward. The links
// follow the map (applyMap calls Sync); cluster settings
// (notify-keyspace-events, the members' client-tracking interest) and
// client-side-caching invalidations travel on them too.

// newBus builds the node's bus (called by New, before the cluster starts).
func (n *Node) newBus() *bus.Bus {
	b := bus.New(bus.Config{
		Self:   n.cfg.NodeID,
		Broker: n.store.PubSub(),
		Peers:  n.busPeers,
		Dial: func(ctx context.Context, p bus.Peer) (net.Conn, error) {
			c := n.Cluster()
			if c == nil {
				return nil, ErrStopped
			}
			return c.DialPeerNode(ctx, p.Addr, cluster.NodeID(p.ID), bus.Proto)
		},
		OnSetting:    n.applyClusterSetting,
		OnInvalidate: n.applyInvalidation,
		OnLinkLost:   n.busLinkLost,
		Log:          n.log.With("component", "pubsub-bus"),
		ResyncEvery:  time.Second, // links also catch up with a map applied before the cluster was readable
	})
	n.store.PubSub().SetForwarder(b.Forward)
	return b
}

// busPeers are the other nodes of the map this node last aligned to. Not
// the cluster's applied map: applyMap runs (and starts Sync) before the
// cluster publishes the map it applies, so Sync read the previous map — at
// formation none — and a message published in the next second (until the
// resync tick) reached no other node (TestRealClusterSuite/Watch/PubSub,
// 1 run in 25 beside a CPU hog).
func (n *Node) busPeers() []bus.Peer {
	n.ownMu.Lock()
	m := n.aligned
	n.ownMu.Unlock()
	if m == nil {
		if c := n.Cluster(); c != nil {
			m = c.Map()
		}
	}
	if m == nil {
		return nil
	}
	out := make([]bus.Peer, 0, len(m.Nodes))
	for _, ni := range m.Nodes {
		if string(ni.ID) != n.cfg.NodeID {
			out = append(out, bus.Peer{ID: string(ni.ID), Addr: cluster.PeerAddr(ni)})
		}
	}
	return out
}

// applyClusterSetting applies a setting another node made (the RESP front
// end owns the settings the bus carries).
func (n *Node) applyClusterSetting(name, value string) {
	if r := n.respSrv; r != nil {
		r.ApplyClusterSetting(name, value)
	}
}

// applyInvalidation hands a member's client-side-caching invalidations to
// the RESP front end (CLIENT TRACKING).
func (n *Node) applyInvalidation(keys []string, flush bool) {
	if r := n.respSrv; r != nil {
		r.ApplyInvalidation(keys, flush)
	}
}

// busLinkLost: a member's link to this node ended; what it had queued is
// lost, so the RESP front end's tracking clients flush their caches.
func (n *Node) busLinkLost() {
	if r := n.respSrv; r != nil {
		r.LinkLost()
	}
}
