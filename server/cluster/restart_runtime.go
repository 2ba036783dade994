package cluster

import (
	"slices"
	"time"

	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/cluster/recovery"
)

// Restart recovery, the leader's part (R-REP-6). An owner that restarted
// empty under its lease keeps its partition (the failover did not fire),
// but a replica kept the writes it lost: the owner's shipper holds that
// replica's segments (PlanCatchUp) and the owner, uncertified, reports the
// copy Held in its possession report. The leader then puts the partition
// Recovering, the owner in place under a new ownership generation (fencing
// the sessions of its earlier lease), with that copy as the sync Source:
// the failover's Recovering machinery ships the copy to the owner, and
// heal lets the owner serve once it is level (maxLag 0). The new
// generation makes the owner's later sessions replace the replica's copy
// of the old lease by a snapshot of the owner's, now complete, content.

// restartRecheck: the leader asks each owner whether it holds a copy back
// (restart recovery) every this many control-loop ticks.
const restartRecheck = 4

// restartRecheckSlow is the cadence for an owner alive for longer than
// restartFresh (a restart it has not been seen down for is still found).
const (
	restartRecheckSlow = 40
	restartFresh       = time.Minute
)

// aliveSince is when the membership last saw node id become alive.
func (c *Cluster) aliveSince(id NodeID) (time.Time, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, mv := range c.members {
		if mv.Info.ID == id && mv.State == MemberAlive {
			return mv.Since, !mv.Since.IsZero()
		}
	}
	return time.Time{}, false
}

// Presence is what the membership knows of node id (restart recovery asks
// it of every copy, failover.AwaitCopy): an unknown node is away, never
// guessed gone.
func (c *Cluster) Presence(id NodeID) failover.OwnerPresence {
	if id == c.cfg.Self.ID {
		return failover.OwnerAlive
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, mv := range c.members {
		if mv.Info.ID == id {
			return StatePresence(mv.State)
		}
	}
	return failover.OwnerAway
}

// restartRecovery starts the reverse sync of a partition whose live owner
// reports a held copy; it reports whether it committed (or tried to).
func (c *Cluster) restartRecovery(st *failoverState, m *PartitionMap, p *Partition, alive func(NodeID) bool, now time.Time) bool {
	switch p.HealthState() {
	case failover.Healthy, failover.Degraded:
	default:
		return false
	}
	// Without a live copy besides the owner nothing can be held.
	other := false
	for _, id := range p.Established() {
		other = other || (id != p.ActiveOwner && alive(id))
	}
	if !other {
		return false
	}
	// One query of the owner per partition every restartRecheck ticks
	// while it (re)joined recently, every restartRecheckSlow ticks after.
	every := time.Duration(restartRecheck)
	if since, ok := c.aliveSince(p.ActiveOwner); ok && now.Sub(since) > restartFresh {
		every = restartRecheckSlow
	}
	if last, ok := st.recheck[p.Identity]; ok && now.Sub(last) < every*c.t.Tick {
		return false
	}
	st.recheck[p.Identity] = now
	rep, err := c.query(m, p.ActiveOwner, p)
	if err != nil {
		return false
	}
	for _, r := range rep.Replicas {
		// A held copy means the owner is uncertified (it reports Held
		// only then).
		if !r.Held || r.Node == p.ActiveOwner || !slices.Contains(p.Established(), r.Node) ||
			!recovery.ShouldReverseSyncOwnedSegment(false, p.PrimaryNodeID == p.ActiveOwner, alive(r.Node)) {
			continue
		}
		epoch, ok := failover.NextEpoch(p.Epoch, p.Epoch)
		if !ok {
			return true
		}
		c.log.Warn("restart recovery: the owner restarted without writes a replica kept; it syncs from that replica before it serves",
			"partition", p.ID, "owner", p.ActiveOwner, "source", r.Node, "epoch", epoch)
		if c.commitChange(OwnershipChange{Partition: p.ID, Identity: p.Identity, Owner: p.ActiveOwner, Generation: p.OwnershipGeneration + 1,
			Epoch: epoch, Health: failover.Recovering, Demoted: p.Demoted, Source: r.Node}) {
			c.recoveries.Add(1)
		}
		return true
	}
	return false
}
