package server

import (
	"context"
	"errors"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/metrics"
	"github.com/zaris-io/zaris/server/replication"
)

// Replication (R-REP-1/2): every node runs a replication.Manager. The
// cluster hands it every applied map (after the store's ownership was
// aligned) and its peer connections of protocol cluster.PeerReplication;
// the native front end calls its write barrier after every successful
// write when the node runs --replication-mode sync.

func (n *Node) newReplication() (*replication.Manager, error) {
	c := n.cfg
	mode := replication.Async
	if c.ReplicationMode == ReplicationSync {
		mode = replication.Sync
	}
	quorum := replication.All
	switch c.WriteQuorum {
	case WriteQuorumMajority:
		quorum = replication.Majority
	case WriteQuorumBestEffort:
		quorum = replication.BestEffort
	}
	return replication.New(replication.Config{
		Store: n.store, Self: cluster.NodeID(c.NodeID), StoreName: c.Store, ClusterID: c.ClusterID,
		Mode: mode, Quorum: quorum, SyncTimeout: c.SyncTimeout,
		Dial: func(ctx context.Context, addr string) (net.Conn, error) {
			cl := n.Cluster()
			if cl == nil {
				return nil, errors.New("server: the cluster is not running")
			}
			return cl.DialPeer(ctx, addr, cluster.PeerReplication)
		},
		Presence: func(id cluster.NodeID) failover.OwnerPresence {
			if cl := n.Cluster(); cl != nil {
				return cl.Presence(id)
			}
			return failover.OwnerAway
		},
		Logger: n.log,
	})
}

// httpBarrier is the REST API's write barrier: the manager's under sync
// replication, none otherwise.
func (n *Node) httpBarrier() func(ctx context.Context, seg uint16, revision uint64) kv.Status {
	if !n.repl.Barrier() {
		return nil
	}
	return n.repl.Wait
}

// failoverCollector exposes the failover decisions this node committed as
// control-plane leader (zaris_failover_*_total).
type failoverCollector struct{ n *Node }

var (
	descPromotions = prometheus.NewDesc("zaris_failover_promotions_total",
		"Copies promoted to active owner by this node as control-plane leader.", nil, nil)
	descUnavailable = prometheus.NewDesc("zaris_failover_unavailable_total",
		"Partitions this node, as leader, declared unavailable (no copy survived).", nil, nil)
	descHealth = prometheus.NewDesc("zaris_failover_health_changes_total",
		"Partition health changes (degraded, healthy, caught up) this node committed as leader.", nil, nil)
	descUnavailableNow = prometheus.NewDesc("zaris_partitions_unavailable",
		"Partitions the applied map marks unavailable now: no live copy; an owner that is only away keeps them (and their data) until it is back or lost.", nil, nil)
	descRecoveries = prometheus.NewDesc("zaris_failover_restart_recoveries_total",
		"Restart recoveries this node, as leader, started (a restarted owner syncs from the replica that kept its writes).", nil, nil)
)

func (f failoverCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPromotions
	ch <- descUnavailable
	ch <- descHealth
	ch <- descRecoveries
	ch <- descUnavailableNow
}

func (f failoverCollector) Collect(ch chan<- prometheus.Metric) {
	var st cluster.FailoverStats
	unavailable := 0
	if c := f.n.Cluster(); c != nil {
		st = c.FailoverStats()
		if m := c.Map(); m != nil {
			for i := range m.Partitions {
				if m.Partitions[i].HealthState() == failover.Unavailable {
					unavailable++
				}
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(descUnavailableNow, prometheus.GaugeValue, float64(unavailable))
	ch <- prometheus.MustNewConstMetric(descPromotions, prometheus.CounterValue, float64(st.Promotions))
	ch <- prometheus.MustNewConstMetric(descUnavailable, prometheus.CounterValue, float64(st.Unavailable))
	ch <- prometheus.MustNewConstMetric(descHealth, prometheus.CounterValue, float64(st.HealthChanges))
	ch <- prometheus.MustNewConstMetric(descRecoveries, prometheus.CounterValue, float64(st.Recoveries))
}

// migrationStats feeds the migration collector (server/metrics) from the
// cluster's rebalance status at scrape time.
func (n *Node) migrationStats() metrics.MigrationStats {
	c := n.Cluster()
	if c == nil {
		return metrics.MigrationStats{}
	}
	rs, fp := c.RebalanceStatus(), c.FencePauses()
	s := metrics.MigrationStats{InFlight: len(rs.Migrations), Completed: rs.Completed, Aborted: rs.Aborted,
		KeysMoved: rs.KeysMoved, BytesMoved: rs.BytesMoved, Active: rs.Active, SegmentsTotal: rs.SegmentsTotal,
		SegmentsLeft: rs.SegmentsLeft, PauseBounds: cluster.FencePauseBuckets[:], PauseBuckets: fp.Buckets[:],
		PauseCount: fp.Count, PauseSum: fp.Sum.Seconds(), PauseMax: rs.MaxFencePause.Seconds()}
	return s
}

// Replication is the node's replication manager.
func (n *Node) Replication() *replication.Manager { return n.repl }
