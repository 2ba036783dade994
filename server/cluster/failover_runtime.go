package cluster

import (
	"context"
	"slices"
	"time"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

// The failover runtime (R-REP-3/4/5/7): the leader's loop that drives the
// pure rules of server/cluster/failover. The partition map stays put; only
// a partition's active owner and its health move, each move an
// OwnershipChange committed through raft with a new epoch:
//
//	owner declared down (memberlist's dead verdict, lost, evicted,
//	decommissioned), or suspected for the suspect escalation window
//	─ConfirmOwnerDown─▶ re-check: the
//	owner answers a possession query directly? stay. Else ask every live
//	copy what it holds ─ChooseCandidate─▶ none: Unavailable (loudly).
//	A candidate: PromotionState (Degraded serves; Recovering syncs first),
//	NextEpoch, the old owner demoted (it no longer counts for sync quorums
//	and is fenced: replicas refuse its sessions, its own map says Moved).
//
//	Healthy ─a copy not alive─▶ Degraded ─every copy alive and caught up
//	for HealthDebounce─▶ Healthy (demotions cleared).
//
// The loop runs in its own goroutine (it does network queries), reads the
// folded map and the published members, and commits through the control
// loop; only the leader acts, and the fold refuses a deposed leader's
// decision (its term).

// FailoverStats count the failover decisions this node committed as
// leader (R-REP-3/5/7).
type FailoverStats struct {
	Promotions    uint64 `json:"promotions"`    // a copy promoted to active owner
	Unavailable   uint64 `json:"unavailable"`   // a partition declared unavailable (no copy survived)
	HealthChanges uint64 `json:"healthChanges"` // health edges with the owner in place (degraded, healthy, caught up)
	Recoveries    uint64 `json:"recoveries"`    // restart recoveries started (a restarted owner syncs from its replica)
}

// FailoverStats returns the failover decisions this node committed.
func (c *Cluster) FailoverStats() FailoverStats {
	return FailoverStats{Promotions: c.promotions.Load(), Unavailable: c.unavailables.Load(), HealthChanges: c.healthChanges.Load(),
		Recoveries: c.recoveries.Load()}
}

// healthyLag is how far behind (revisions over the partition) a streaming
// copy may be and still count as caught up for Degraded → Healthy: under a
// steady write load a copy is never exactly level, and a sync write only
// waits a little longer for one slightly behind.
const healthyLag = 1024

// possessionTimeout bounds one possession query.
const possessionTimeout = time.Second

// failoverState is owned by the failover loop.
type failoverState struct {
	suspected map[NodeID]time.Time // owners seen not alive, since when
	synced    map[string]time.Time // partition identity → every copy caught up since
	recheck   map[string]time.Time // partition identity → last restart-recovery query of its owner
}

func newFailoverState() *failoverState {
	return &failoverState{suspected: map[NodeID]time.Time{}, synced: map[string]time.Time{}, recheck: map[string]time.Time{}}
}

func (c *Cluster) failoverLoop() {
	defer close(c.failoverDone)
	t := time.NewTicker(c.t.Tick)
	defer t.Stop()
	st := newFailoverState()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		if !c.IsLeader() {
			if len(st.suspected) > 0 || len(st.synced) > 0 {
				st = newFailoverState() // a new leader starts its own clocks
			}
			continue
		}
		c.failoverSweep(st)
	}
}

func (c *Cluster) failoverSweep(st *failoverState) {
	m := c.fsm.Map()
	if m == nil {
		return
	}
	c.mu.RLock()
	members := c.members
	c.mu.RUnlock()
	state := make(map[NodeID]MemberState, len(members))
	for _, mv := range members {
		state[mv.Info.ID] = mv.State
	}
	alive := func(id NodeID) bool { return id == c.cfg.Self.ID || state[id] == MemberAlive }
	presence := func(id NodeID) failover.OwnerPresence {
		if id == c.cfg.Self.ID {
			return failover.OwnerAlive
		}
		mv, ok := state[id]
		if !ok {
			return failover.OwnerAway // unknown: never guessed gone
		}
		return StatePresence(mv)
	}
	now := c.now()
	for id := range st.suspected {
		if alive(id) {
			delete(st.suspected, id)
		}
	}
	for i := range m.Partitions {
		p := &m.Partitions[i]
		if p.ActiveOwner == "" {
			continue
		}
		if alive(p.ActiveOwner) {
			c.heal(st, m, p, alive, presence, now)
			continue
		}
		delete(st.synced, p.Identity)
		if c.cfg.FailoverHook != nil && !c.cfg.FailoverHook(*p) {
			continue
		}
		if _, ok := st.suspected[p.ActiveOwner]; !ok {
			st.suspected[p.ActiveOwner] = now
		}
		c.failOver(st, m, p, state[p.ActiveOwner], alive, now)
	}
}

// query asks node id for its possession report of p.
func (c *Cluster) query(m *PartitionMap, id NodeID, p *Partition) (PossessionReport, error) {
	if id == c.cfg.Self.ID && c.cfg.Possession != nil {
		return c.cfg.Possession(PossessionQuery{Identity: p.Identity, First: p.FirstSegment, Last: p.LastSegment}), nil
	}
	info, ok := m.Node(id)
	if !ok {
		return PossessionReport{}, ErrNotLeader // unreachable: not in the map
	}
	ctx, cancel := context.WithTimeout(context.Background(), possessionTimeout)
	defer cancel()
	return c.mux.queryPossession(ctx, c.peerAddr(info), p)
}

// failOver handles a partition whose active owner membership says is not
// alive.
func (c *Cluster) failOver(st *failoverState, m *PartitionMap, p *Partition, ownerState MemberState,
	alive func(NodeID) bool, now time.Time) {
	owner := p.ActiveOwner
	decision := failover.ConfirmOwnerDown(true, false, ownerState.DeclaredDown(), st.suspected[owner], now, c.t.SuspectEscalation)
	if decision != failover.Confirm {
		return
	}
	// The membership view can lag or lie: before the irreversible step,
	// ask the owner itself. One that answers stays where it is.
	if _, err := c.query(m, owner, p); err == nil {
		c.log.Info("failover: the owner answers directly; not failing over", "partition", p.ID, "owner", owner)
		st.suspected[owner] = now
		// Held Unavailable while it did not answer: it serves again now,
		// whatever the membership view still says.
		cur := p.HealthState()
		if next := failover.NextHealth(cur, failover.EventOwnerBack, 0, time.Time{}, now, c.t.HealthDebounce); next != cur {
			c.changeHealth(p, next, p.Demoted, "the owner answers directly")
		}
		return
	}
	var cands []failover.Candidate
	held := map[string][]failover.SegmentRevision{}
	for _, id := range p.Established() {
		cand := failover.Candidate{ID: string(id)}
		if alive(id) {
			if rep, err := c.query(m, id, p); err == nil {
				cand.Alive, cand.HeldKeys = true, rep.HeldKeys
				cand.SyncedSegments = rep.SyncedSegments(owner, p.OwnershipGeneration)
				held[string(id)] = rep.LeaseRevisions(owner, p.OwnershipGeneration)
			}
		}
		cands = append(cands, cand)
	}
	missing := failover.MissingRevisions(held)
	for i := range cands {
		cands[i].MissingRevisions = missing[cands[i].ID]
	}
	epoch, ok := failover.NextEpoch(p.Epoch, p.Epoch)
	if !ok {
		return
	}
	best, ok := failover.ChooseCandidate(cands)
	if ok && !failover.CopyHoldsData(best.SyncedSegments, p.LastSegment-p.FirstSegment+1) &&
		failover.AbsentOwner(StatePresence(ownerState), false) == failover.HoldUnavailable {
		// The best live copy does not follow the owner's lease in every
		// segment (a replica that restarted empty and was not sent the
		// owner's data yet): promoting it would serve its hole while the
		// owner, only away, may come back with the data. Held Unavailable
		// like a partition without a copy; once the owner is gone for good
		// the copy is promoted with what it has.
		ok = false
	}
	if !ok {
		// No live copy. An owner that is only away keeps the partition
		// (HoldUnavailable: its data comes back with it); one gone for good
		// is moved by the map change (Reassign). Unavailable either way
		// until then: a clear error, never an empty answer.
		action := failover.AbsentOwner(StatePresence(ownerState), false)
		if p.HealthState() != failover.Unavailable {
			c.log.Error("failover: partition UNAVAILABLE — its owner is down and no copy survives; "+
				"reads and writes of its keys fail until a copy comes back",
				"partition", p.ID, "owner", owner, "owner_state", ownerState.String(), "action", action.String(),
				"copies", p.Established())
			if c.commitChange(OwnershipChange{Partition: p.ID, Identity: p.Identity, Owner: owner, Generation: p.OwnershipGeneration, Epoch: epoch,
				Health: failover.Unavailable, Demoted: p.Demoted}) {
				c.unavailables.Add(1)
			}
		}
		return
	}
	// The sync source of a Recovering promotion: the live copy missing the
	// fewest revisions of the lease, then holding the most keys.
	other, source := int64(-1), NodeID("")
	var sourceMissing uint64
	for _, cd := range cands {
		if !cd.Alive || cd.ID == best.ID {
			continue
		}
		if source == "" || cd.MissingRevisions < sourceMissing || (cd.MissingRevisions == sourceMissing && cd.HeldKeys > other) {
			other, source, sourceMissing = cd.HeldKeys, NodeID(cd.ID), cd.MissingRevisions
		}
	}
	health := failover.PromotionState(best.HeldKeys, other, best.MissingRevisions)
	if health != failover.Recovering {
		source = ""
	}
	demoted := append(slices.Clone(p.Demoted), owner)
	c.log.Warn("failover: promoting a replica", "partition", p.ID, "from", owner, "to", best.ID, "epoch", epoch,
		"health", health.String(), "held_keys", best.HeldKeys, "synced_segments", best.SyncedSegments,
		"missing_revisions", best.MissingRevisions, "source", source)
	if c.commitChange(OwnershipChange{Partition: p.ID, Identity: p.Identity, Owner: NodeID(best.ID), Generation: p.OwnershipGeneration + 1,
		Epoch: epoch, Health: health, Demoted: demoted, Source: source}) {
		delete(st.suspected, owner)
		c.promotions.Add(1)
	}
}

// heal moves the health of a partition whose owner is alive (R-REP-7).
func (c *Cluster) heal(st *failoverState, m *PartitionMap, p *Partition, alive func(NodeID) bool,
	presence func(NodeID) failover.OwnerPresence, now time.Time) {
	cur := p.HealthState()
	change := func(next failover.Health, demoted []NodeID, why string) { c.changeHealth(p, next, demoted, why) }
	if c.restartRecovery(st, m, p, alive, now) {
		return
	}
	copies := p.Established()
	allAlive := true
	for _, id := range copies {
		allAlive = allAlive && alive(id)
	}
	switch cur {
	case failover.Unavailable:
		// The owner is back: it is the one copy there is.
		change(failover.NextHealth(cur, failover.EventOwnerBack, 0, time.Time{}, now, c.t.HealthDebounce), p.Demoted, "the owner is back")
		return
	case failover.Healthy:
		if !allAlive {
			change(failover.NextHealth(cur, failover.EventReplicaLost, 0, time.Time{}, now, c.t.HealthDebounce),
				p.Demoted, "a copy is not alive")
		}
		return
	case failover.Recovering:
		// The promoted owner syncs from the more complete copy (Source)
		// before it serves: the source ships to it, and reports its
		// progress like an owner reports its replicas'.
		copies = []NodeID{p.ActiveOwner}
		if p.Source == "" || !failover.AwaitCopy(presence(p.Source), slices.Contains(p.Demoted, p.Source)) {
			// The source is gone for good: nothing better to wait for; serve.
			change(failover.NextHealth(cur, failover.EventCaughtUp, 0, now, now, c.t.HealthDebounce), p.Demoted,
				"the more complete copy is gone")
			return
		}
		if !alive(p.Source) {
			// Away (suspected, or dead inside the member grace): it may
			// answer again with the writes the owner lacks; wait for it.
			delete(st.synced, p.Identity)
			return
		}
	}
	if !allAlive && cur != failover.Recovering {
		delete(st.synced, p.Identity)
		return
	}
	if len(copies) > 0 {
		reporter := p.ActiveOwner
		if cur == failover.Recovering {
			reporter = p.Source
		}
		rep, err := c.query(m, reporter, p)
		if err != nil {
			delete(st.synced, p.Identity)
			return
		}
		maxLag := uint64(healthyLag)
		if cur == failover.Recovering {
			maxLag = 0 // the source takes no writes: the owner must hold all of it
		}
		for _, id := range copies {
			i := slices.IndexFunc(rep.Replicas, func(r ReplicaProgress) bool { return r.Node == id })
			if i < 0 || !rep.Replicas[i].Streaming || rep.Replicas[i].Lag > maxLag {
				delete(st.synced, p.Identity)
				return
			}
		}
	}
	since, ok := st.synced[p.Identity]
	if !ok {
		since = now
		st.synced[p.Identity] = now
	}
	if cur == failover.Recovering {
		change(failover.NextHealth(cur, failover.EventCaughtUp, 0, since, now, c.t.HealthDebounce), p.Demoted,
			"caught up with the more complete copy")
		return
	}
	if next := failover.NextHealth(cur, failover.EventAllSynced, 0, since, now, c.t.HealthDebounce); next != cur {
		delete(st.synced, p.Identity)
		change(next, nil, "every copy alive and caught up")
	}
}

// changeHealth commits p's move from its health to next, under a new
// epoch (R-REP-7), logged with why.
func (c *Cluster) changeHealth(p *Partition, next failover.Health, demoted []NodeID, why string) {
	epoch, ok := failover.NextEpoch(p.Epoch, p.Epoch)
	if !ok {
		return
	}
	c.log.Info("partition health", "partition", p.ID, "from", p.HealthState().String(), "to", next.String(), "epoch", epoch, "reason", why)
	if c.commitChange(OwnershipChange{Partition: p.ID, Identity: p.Identity, Owner: p.ActiveOwner, Generation: p.OwnershipGeneration,
		Epoch: epoch, Health: next, Demoted: demoted, Source: p.Source}) {
		c.healthChanges.Add(1)
	}
}

// commitChange commits oc through the control loop; it reports success.
func (c *Cluster) commitChange(oc OwnershipChange) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*c.t.RaftHeartbeat)
	defer cancel()
	if err := c.CommitOwnership(ctx, oc); err != nil {
		c.log.Warn("ownership change not committed", "partition", oc.Partition, "owner", oc.Owner, "err", err)
		return false
	}
	return true
}
