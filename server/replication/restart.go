package replication

import (
	"slices"
	"sync"
	"time"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/cluster/recovery"
)

// Restart recovery (R-REP-6) on this node: the runtime side of the pure
// policies of server/cluster/recovery.
//
// A node starts with every partition uncertified (its memory is gone; it
// trusts nothing local). While it is the serving owner of an uncertified
// partition that has a copy not known gone for good
// (ShouldReverseSyncOwnedSegment, failover.AwaitCopy),
// each owned segment is held by the serve gate (ServeGate): the store does
// not own it, so clients get a retryable redirect instead of NotFound for
// keys the replica kept. Every shipper session's catch-up plan is evidence
// per segment: a plan that ships (ops, or a snapshot ShouldRefuse allows)
// marks the segment synced — the replica holds nothing this owner lacks; a
// plan that holds (the replica kept later revisions of this owner's lease)
// is reported to the leader in the possession report (ReplicaProgress.Held),
// which puts the partition Recovering with that replica as the sync source
// under a new ownership generation: the replica ships its copy to the
// owner through the ordinary protocol, and when the partition serves again
// its segments count as synced, with the last revision the source shipped
// as the source's head: a segment below it stays held (HoldBehindSource)
// and does not count towards certification. ShouldCertify then sets the sticky
// certified flag and the gate opens for good.
type restartState struct {
	mu        sync.Mutex
	certified map[string]bool     // partition identity → certified in this incarnation (sticky)
	proven    []bool              // per segment: pulled from a recovery source, or proved by a cut-over
	levelWith []map[string]uint64 // per segment: copy → its head, for each copy whose catch-up plan showed it keeps nothing this owner lacks
	synced    []bool              // per segment: level (recovery.SegmentLevel), as of the last gate evaluation
	srcHead   []uint64            // per segment: the source's head revision when proven (0: none known)
	pulled    []uint64            // per segment: the highest revision a recovery source shipped here
	held      []bool              // per segment: the serve gate holds it (the store does not own it)
	released  []bool              // per segment: served once in this incarnation (never held again)
}

func newRestartState(segments int) *restartState {
	levelWith := make([]map[string]uint64, segments)
	for i := range levelWith {
		levelWith[i] = map[string]uint64{}
	}
	return &restartState{certified: map[string]bool{}, synced: make([]bool, segments), proven: make([]bool, segments),
		levelWith: levelWith,
		srcHead:   make([]uint64, segments), pulled: make([]uint64, segments), held: make([]bool, segments), released: make([]bool, segments)}
}

// Certified reports whether this node certified the partition with
// identity id in this incarnation (its store is authoritative for it).
func (m *Manager) Certified(identity string) bool {
	m.rs.mu.Lock()
	defer m.rs.mu.Unlock()
	return m.rs.certified[identity]
}

// Held reports whether the serve gate holds owned segment seg: the store
// must not own it yet (the node's map alignment asks before it gains one).
func (m *Manager) Held(seg int) bool {
	m.rs.mu.Lock()
	defer m.rs.mu.Unlock()
	return seg >= 0 && seg < len(m.rs.held) && m.rs.held[seg]
}

// Holding reports whether any segment is held by the serve gate.
func (m *Manager) Holding() bool {
	m.rs.mu.Lock()
	defer m.rs.mu.Unlock()
	for _, h := range m.rs.held {
		if h {
			return true
		}
	}
	return false
}

// WaitSettled waits until no segment is held, at most d, or the manager
// closes.
func (m *Manager) WaitSettled(d time.Duration) {
	deadline := time.Now().Add(d)
	for m.Holding() && time.Now().Before(deadline) {
		select {
		case <-m.stop:
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// presence is what the membership knows of node id.
func (m *Manager) presence(id cluster.NodeID) failover.OwnerPresence {
	if m.cfg.Presence == nil {
		return failover.OwnerAlive
	}
	return m.cfg.Presence(id)
}

// liveReplica reports whether p has a copy besides self worth waiting for.
func (m *Manager) liveReplica(p *cluster.Partition) bool { return len(m.liveCopies(p)) > 0 }

// markProven records that segment seg is level by construction (pulled
// from a recovery source whose head was srcHead, or proved by a cut-over).
func (m *Manager) markProven(seg int, srcHead uint64) {
	m.rs.mu.Lock()
	if seg >= 0 && seg < len(m.rs.proven) {
		m.rs.proven[seg], m.rs.synced[seg], m.rs.srcHead[seg] = true, true, srcHead
	}
	m.rs.mu.Unlock()
}

// noteLevelWith records, from a shipper's catch-up plan, that copy keeps
// nothing of segment seg that this owner lacks; head is its revision of
// this owner's own lease (0: another history). The segment is level once
// every live established copy said so (recovery.SegmentLevel).
func (m *Manager) noteLevelWith(seg int, copy cluster.NodeID, head uint64) {
	m.rs.mu.Lock()
	if seg >= 0 && seg < len(m.rs.levelWith) {
		m.rs.levelWith[seg][string(copy)] = head
	}
	m.rs.mu.Unlock()
}

// forgetLevelWith withdraws copy's evidence for seg: its latest plan held.
func (m *Manager) forgetLevelWith(seg int, copy cluster.NodeID) {
	m.rs.mu.Lock()
	if seg >= 0 && seg < len(m.rs.levelWith) {
		delete(m.rs.levelWith[seg], string(copy))
	}
	m.rs.mu.Unlock()
}

// liveCopies lists p's established copies besides self that
// failover.AwaitCopy waits for: the copies a restarted owner must be level
// with (a copy only away may come back with writes this owner lacks).
func (m *Manager) liveCopies(p *cluster.Partition) []string {
	var out []string
	for _, r := range p.Established() {
		if r != m.cfg.Self && failover.AwaitCopy(m.presence(r), slices.Contains(p.Demoted, r)) {
			out = append(out, string(r))
		}
	}
	return out
}

// levelLocked evaluates recovery.SegmentLevel for seg of p (rs.mu held),
// caches it in synced, and returns it with the head the serve gate must
// reach: the recovery source's when proven, else the highest head a level
// copy of this owner's lease reported.
func (m *Manager) levelLocked(p *cluster.Partition, seg int) (bool, uint64) {
	rs := m.rs
	if rs.proven[seg] {
		rs.synced[seg] = true
		return true, rs.srcHead[seg]
	}
	live := m.liveCopies(p)
	ev := rs.levelWith[seg]
	level := recovery.SegmentLevel(false, live, func(c string) bool { _, ok := ev[c]; return ok })
	rs.synced[seg] = level
	var head uint64
	if level {
		for _, c := range live {
			head = max(head, ev[c])
		}
	}
	return level, head
}

// refuse is the source-side rule (ShouldRefuse) for a shipper about to
// replace a replica's copy of seg by a snapshot: an uncertified owner that
// is not synced and holds nothing must not overwrite the replica that kept
// its writes with its hole.
func (m *Manager) refuse(identity string, seg int) bool {
	m.rs.mu.Lock()
	cert := m.rs.certified[identity]
	synced := seg >= 0 && seg < len(m.rs.synced) && m.rs.synced[seg]
	m.rs.mu.Unlock()
	return recovery.ShouldRefuse(true, cert, synced, m.st.Segment(uint16(seg)).Revision() > 0)
}

// notePulled records that a recovery source shipped segment seg up to
// revision rev (the source's head as this node last heard it).
func (m *Manager) notePulled(seg int, rev uint64) {
	m.rs.mu.Lock()
	if seg >= 0 && seg < len(m.rs.pulled) && rev > m.rs.pulled[seg] {
		m.rs.pulled[seg] = rev
	}
	m.rs.mu.Unlock()
}

// pulledHead is the highest revision a recovery source shipped for seg.
func (m *Manager) pulledHead(seg int) uint64 {
	m.rs.mu.Lock()
	defer m.rs.mu.Unlock()
	if seg < 0 || seg >= len(m.rs.pulled) {
		return 0
	}
	return m.rs.pulled[seg]
}

// recoveredLocked marks synced every segment of the partitions that were
// Recovering with this node as owner in prev and are served by it in next:
// the leader let them serve once the source reported this node level.
func (m *Manager) recoveredLocked(prev, next *cluster.PartitionMap) {
	m.servedSince(prev, next, func(q, p *cluster.Partition) bool {
		return q.ActiveOwner == m.cfg.Self && q.HealthState() == failover.Recovering &&
			q.OwnershipGeneration == p.OwnershipGeneration
	}, func(p *cluster.Partition) {
		for seg := p.FirstSegment; seg <= p.LastSegment; seg++ {
			// The source's head is the last revision it shipped: the
			// serve gate holds a segment that did not reach it
			// (HoldBehindSource) instead of answering NotFound.
			m.markProven(seg, m.pulledHead(seg))
		}
	})
}

// servedSince calls fn for every partition this node serves in next whose
// predecessor in prev (same identity) satisfies was.
func (m *Manager) servedSince(prev, next *cluster.PartitionMap, was func(q, p *cluster.Partition) bool, fn func(p *cluster.Partition)) {
	if prev == nil || next == nil {
		return
	}
	for i := range next.Partitions {
		p := &next.Partitions[i]
		if !serves(p, m.cfg.Self) {
			continue
		}
		for j := range prev.Partitions {
			if q := &prev.Partitions[j]; q.Identity == p.Identity && was(q, p) {
				fn(p)
			}
		}
	}
}

// gateLocked re-evaluates the serve gate and certification over map pm
// (m.mu held): segments not owned under pm are not owned by the store
// (undoing a release that raced the map), a held segment whose gate opens
// is released to the store, and a partition whose every owned segment is
// synced is certified. A released segment is never held again.
func (m *Manager) gateLocked(pm *cluster.PartitionMap, applying bool) {
	if pm == nil || m.closed {
		return
	}
	owned := pm.OwnedSegments(m.cfg.Self)
	rs := m.rs
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for seg := range rs.held {
		if seg >= len(owned) || !owned[seg] {
			if rs.held[seg] || applying {
				rs.held[seg] = false
				if applying {
					m.st.Segment(uint16(seg)).SetOwned(false)
				}
			}
		}
	}
	for i := range pm.Partitions {
		p := &pm.Partitions[i]
		if !serves(p, m.cfg.Self) {
			continue
		}
		cert := rs.certified[p.Identity]
		live := m.liveReplica(p)
		nSynced, nOwned := 0, 0
		heads := make(map[int]uint64, p.LastSegment-p.FirstSegment+1)
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < len(rs.held); seg++ {
			nOwned++
			level, head := m.levelLocked(p, seg)
			heads[seg] = head
			// Level is not enough to certify: a segment behind its
			// source's head (HoldBehindSource) is not level yet.
			if recovery.ServeGate(level, m.st.Segment(uint16(seg)).Revision(), head) == recovery.Serve {
				nSynced++
			}
		}
		if recovery.ShouldCertify(true, cert, nOwned, nSynced) {
			rs.certified[p.Identity], cert = true, true
			m.log.Info("restart recovery: partition certified (every owned segment synced); its store is authoritative",
				"partition", p.ID, "segments", nOwned)
		}
		for seg := p.FirstSegment; seg <= p.LastSegment && seg < len(rs.held); seg++ {
			g := m.st.Segment(uint16(seg))
			hold := false
			if recovery.ShouldReverseSyncOwnedSegment(cert, p.PrimaryNodeID == m.cfg.Self, live) {
				hold = recovery.ServeGate(rs.synced[seg], g.Revision(), heads[seg]) != recovery.Serve
			}
			switch {
			case rs.held[seg] && !hold:
				rs.held[seg], rs.released[seg] = false, true
				g.SetOwned(true)
			case rs.held[seg] || rs.released[seg] || !applying:
			case hold:
				// Held from the first map that makes this node the owner.
				// (the node's wiring never lets the store own it).
				rs.held[seg] = true
			default:
				rs.released[seg] = true
			}
		}
	}
}

// reevaluate re-runs the gate over the current map (the maintenance tick).
func (m *Manager) reevaluate() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gateLocked(m.cur, false)
}

// gated reports whether a segment of first..last is held by the serve
// gate: only then may the owner ask to be recovered — a segment it has
// served since is never overwritten by a pull (its writes would be lost).
func (m *Manager) gated(first, last int) bool {
	m.rs.mu.Lock()
	defer m.rs.mu.Unlock()
	for seg := max(first, 0); seg <= last && seg < len(m.rs.held); seg++ {
		if m.rs.held[seg] {
			return true
		}
	}
	return false
}
