package replication

import (
	"slices"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/server/cluster"
)

// ReplicaStatus describes the replicas of the partition with identity id
// as this node ships to them (nil when this node ships nothing for it),
// ordered by replica id.
func (m *Manager) ReplicaStatus(identity string) []cluster.ReplicaStatus {
	m.mu.Lock()
	ps := m.parts[identity]
	m.mu.Unlock()
	if ps == nil || len(ps.shippers) == 0 {
		return nil
	}
	out := make([]cluster.ReplicaStatus, 0, len(ps.shippers))
	for _, s := range ps.shippers {
		out = append(out, cluster.ReplicaStatus{Node: s.key.replica, State: s.stateName(), LagRevisions: s.lag(),
			Snapshots: s.snapshots.Load(), OpsShipped: s.opsShipped.Load(), Sessions: s.sessions.Load()})
	}
	slices.SortFunc(out, func(a, b cluster.ReplicaStatus) int {
		switch {
		case a.Node < b.Node:
			return -1
		case a.Node > b.Node:
			return 1
		}
		return 0
	})
	return out
}

// Annotate fills the replication fields of st's partitions that this node
// actively owns (GET /v1/cluster).
func (m *Manager) Annotate(st *cluster.Status) {
	for i := range st.Partitions {
		p := &st.Partitions[i]
		if p.ActiveOwner == m.cfg.Self {
			p.Replication = m.ReplicaStatus(p.Identity)
			switch {
			case m.Certified(p.Identity):
				p.Recovery = "certified"
			case m.gated(p.FirstSegment, p.LastSegment):
				p.Recovery = "held"
			default:
				p.Recovery = "uncertified"
			}
		}
	}
}

// SyncStats are the write barrier's counters.
type SyncStats struct {
	Waits      uint64 // sync writes that waited
	Timeouts   uint64 // answered StatusTimeout
	BestEffort uint64 // BestEffort writes acknowledged after the timeout without their replicas
}

// SyncStats returns the barrier's counters.
func (m *Manager) SyncStats() SyncStats {
	return SyncStats{Waits: m.syncWaits.Load(), Timeouts: m.syncTimeouts.Load(), BestEffort: m.syncBestEffort.Load()}
}

// Collector exposes replication metrics to Prometheus: per (partition,
// replica) the lag in revisions, whether a session streams, snapshots and
// operations shipped; the barrier's counters.
func (m *Manager) Collector() prometheus.Collector { return collector{m: m} }

var (
	descLag = prometheus.NewDesc("zaris_replication_lag_revisions",
		"Revisions the replica has not applied yet, summed over the partition's segments (seen from the active owner).",
		[]string{"partition", "replica"}, nil)
	descStreaming = prometheus.NewDesc("zaris_replication_streaming",
		"1 when a replication session to the replica is established.", []string{"partition", "replica"}, nil)
	descSnapshots = prometheus.NewDesc("zaris_replication_snapshots_total",
		"Segment snapshots shipped to the replica.", []string{"partition", "replica"}, nil)
	descOps = prometheus.NewDesc("zaris_replication_ops_shipped_total",
		"Op-log entries shipped to the replica.", []string{"partition", "replica"}, nil)
	descSessions = prometheus.NewDesc("zaris_replication_sessions_total",
		"Replication sessions established to the replica.", []string{"partition", "replica"}, nil)
	descSync = prometheus.NewDesc("zaris_replication_sync_writes_total",
		"Sync writes by barrier outcome: waited, timeout, besteffort (acknowledged without their replicas).",
		[]string{"outcome"}, nil)
	descSnapApplies = prometheus.NewDesc("zaris_replication_snapshot_applies_total",
		"Snapshots this node applied as a replica, by mode: skip (already level), reconcile (merged), wipe (replaced).",
		[]string{"mode"}, nil)
)

type collector struct{ m *Manager }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLag, descStreaming, descSnapshots, descOps, descSessions, descSync, descSnapApplies} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.Lock()
	var ships []*shipper
	for _, s := range c.m.shippers {
		ships = append(ships, s)
	}
	c.m.mu.Unlock()
	for _, s := range ships {
		part, rep := strconv.Itoa(s.pid), string(s.key.replica)
		streaming := 0.0
		if s.state.Load() == stateStreaming {
			streaming = 1
		}
		ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, float64(s.lag()), part, rep)
		ch <- prometheus.MustNewConstMetric(descStreaming, prometheus.GaugeValue, streaming, part, rep)
		ch <- prometheus.MustNewConstMetric(descSnapshots, prometheus.CounterValue, float64(s.snapshots.Load()), part, rep)
		ch <- prometheus.MustNewConstMetric(descOps, prometheus.CounterValue, float64(s.opsShipped.Load()), part, rep)
		ch <- prometheus.MustNewConstMetric(descSessions, prometheus.CounterValue, float64(s.sessions.Load()), part, rep)
	}
	st := c.m.SyncStats()
	ch <- prometheus.MustNewConstMetric(descSync, prometheus.CounterValue, float64(st.Waits), "waited")
	ch <- prometheus.MustNewConstMetric(descSync, prometheus.CounterValue, float64(st.Timeouts), "timeout")
	ch <- prometheus.MustNewConstMetric(descSync, prometheus.CounterValue, float64(st.BestEffort), "besteffort")
	skip, reconcile, wipe := c.m.SnapshotApplies()
	ch <- prometheus.MustNewConstMetric(descSnapApplies, prometheus.CounterValue, float64(skip), "skip")
	ch <- prometheus.MustNewConstMetric(descSnapApplies, prometheus.CounterValue, float64(reconcile), "reconcile")
	ch <- prometheus.MustNewConstMetric(descSnapApplies, prometheus.CounterValue, float64(wipe), "wipe")
}

// Possession answers the leader's possession query (cluster.PeerPossession,
// R-REP-5): the live keys this node holds of the queried segments, each
// segment's revision and the lease its copy follows, and the progress of
// the copies this node ships the partition to.
func (m *Manager) Possession(q cluster.PossessionQuery) cluster.PossessionReport {
	var rep cluster.PossessionReport
	if q.First < 0 || q.Last < q.First || q.Last >= m.st.Segments() {
		return rep
	}
	for seg := q.First; seg <= q.Last; seg++ {
		g := m.st.Segment(uint16(seg))
		rep.HeldKeys += int64(g.Len())
		rep.HeldBytes += g.Bytes()
		h := cluster.SegmentHolding{Segment: seg, Revision: g.Revision()}
		if q.DigestAt != 0 {
			d := g.DigestAt(q.DigestAt)
			h.Digest, h.Count = d.Sum, d.Count
		}
		if l := m.lineage(uint16(seg)); l.Identity == q.Identity {
			h.Owner, h.Generation = l.Owner, l.Generation
		}
		rep.Segments = append(rep.Segments, h)
	}
	m.mu.Lock()
	var ships []*shipper
	for _, s := range m.shippers {
		if s.key.identity == q.Identity {
			ships = append(ships, s)
		}
	}
	m.mu.Unlock()
	for _, s := range ships {
		rep.Replicas = append(rep.Replicas, cluster.ReplicaProgress{Node: s.key.replica,
			Streaming: s.stateName() == "streaming", Lag: s.lag(), Held: s.holding() && !m.Certified(q.Identity) && m.gated(q.First, q.Last)})
	}
	return rep
}

// holding reports whether some segment of the session is held (PlanCatchUp
// or ShouldRefuse said the replica keeps writes this owner lacks).
func (s *shipper) holding() bool {
	for i := range s.held {
		if s.held[i].Load() {
			return true
		}
	}
	return false
}
