package replication

import (
	"fmt"
	"slices"
	"time"

	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/migration"
	"github.com/zaris-io/zaris/server/store"
)

// The source side of a live migration's cut-over (R-MIG-2/3). The incoming
// copy is built by an ordinary shipper (the map lists it in
// Partition.Incoming): a revision-anchored snapshot with the trim floor
// pinned, then the op-log. When the leader sees it nearly level it asks
// the source to fence: writes to the partition answer Migrating, the
// revision read after the fence is final, the shipper delivers the final
// delta, and the source answers the digests of its content as the proof.
// The fence stays up until a map flips the owner (the segments stop being
// served) or ends the move; a failed fence is lowered at once.

// cutoverFence is one raised fence.
type cutoverFence struct {
	identity    string
	gen         uint64
	first, last int
	moveTo      cluster.NodeID
	targets     []cluster.NodeID
}

// proofRecord is a segment's cut-over proof, kept until the drop decision.
type proofRecord struct {
	at     int64
	digest uint64
	count  int
}

// Migrate answers the leader's PeerMigrate requests (cluster.Config.Migrate).
func (m *Manager) Migrate(q cluster.MigrateRequest) cluster.MigrateReply {
	switch q.Op {
	case cluster.MigrateFence:
		return m.fenceForCutover(q)
	case cluster.MigrateUnfence:
		m.fenceMu.Lock()
		defer m.fenceMu.Unlock()
		m.mu.Lock()
		f := m.fences[q.Identity]
		delete(m.fences, q.Identity)
		m.mu.Unlock()
		if f != nil {
			m.lowerFence(f)
		}
		return cluster.MigrateReply{OK: true}
	}
	return cluster.MigrateReply{Reason: "unsupported", Message: "unknown migration request " + q.Op}
}

func (m *Manager) lowerFence(f *cutoverFence) {
	for seg := f.first; seg <= f.last && seg < m.st.Segments(); seg++ {
		m.st.Segment(uint16(seg)).SetWriteFence(false)
	}
	m.log.Info("migration fence lowered", "partition_identity", f.identity, "segments", fmt.Sprintf("%d..%d", f.first, f.last))
}

func (m *Manager) fenceForCutover(q cluster.MigrateRequest) cluster.MigrateReply {
	m.fenceMu.Lock() // one cut-over step at a time on this node
	defer m.fenceMu.Unlock()
	refuse := func(reason migration.Reason, format string, args ...any) cluster.MigrateReply {
		return cluster.MigrateReply{Reason: string(reason), Message: fmt.Sprintf(format, args...)}
	}
	m.mu.Lock()
	var p *cluster.Partition
	if m.cur != nil {
		for i := range m.cur.Partitions {
			if m.cur.Partitions[i].Identity == q.Identity {
				p = &m.cur.Partitions[i]
			}
		}
	}
	switch {
	case p == nil:
		m.mu.Unlock()
		return refuse("NotReady", "no partition %s in this node's map", q.Identity)
	case !serves(p, m.cfg.Self) || p.OwnershipGeneration != q.Generation:
		m.mu.Unlock()
		return refuse("NotReady", "this node does not own partition %d at generation %d", p.ID, q.Generation)
	case p.MoveTo != q.Target || !slices.Equal(cluster.CutoverTargets(p), q.Targets) || p.FirstSegment != q.First ||
		p.LastSegment != q.Last:
		version := m.cur.Version
		m.mu.Unlock()
		return refuse("NotReady", "this node's map (version %d) does not move partition %d to %v", version, p.ID, q.Targets)
	}
	if m.gated(q.First, q.Last) {
		// A restarted owner whose restart recovery still holds segments
		// (it came back empty and pulls its data from a copy): its content
		// is not the partition's, and a proof of it would hand a target
		// its holes.
		m.mu.Unlock()
		return refuse("NotReady", "restart recovery holds segments of partition %d on this node", p.ID)
	}
	var ships []*shipper
	for _, id := range q.Targets {
		if s := m.shippers[keyOf(p, id)]; s != nil {
			ships = append(ships, s)
		}
	}
	if len(ships) != len(q.Targets) || len(ships) == 0 {
		m.mu.Unlock()
		return refuse("NotReady", "no stream to every one of %v yet", q.Targets)
	}
	f := m.fences[q.Identity]
	raise := f == nil
	if raise {
		f = &cutoverFence{identity: q.Identity, gen: q.Generation, first: q.First, last: q.Last, moveTo: q.Target,
			targets: slices.Clone(q.Targets)}
		m.fences[q.Identity] = f
	}
	m.mu.Unlock()
	fail := func(reason migration.Reason, format string, args ...any) cluster.MigrateReply {
		m.mu.Lock()
		delete(m.fences, q.Identity)
		m.mu.Unlock()
		m.lowerFence(f)
		m.log.Warn("migration cut-over aborted at the source", "partition_identity", q.Identity, "target", q.Target,
			"reason", string(reason), "detail", fmt.Sprintf(format, args...))
		return refuse(reason, format, args...)
	}
	started := time.Now()
	if raise {
		// Fence first, then read the revision: no write acknowledged after
		// the read can exist (SetWriteFence waits for the writes in flight).
		for seg := q.First; seg <= q.Last; seg++ {
			m.st.Segment(uint16(seg)).SetWriteFence(true)
		}
	}
	wait := time.Duration(q.WaitMillis) * time.Millisecond
	if wait <= 0 {
		wait = 2 * time.Second
	}
	deadline := started.Add(wait)
	// Prepared transactions commit after the fence (a commit never
	// fails): wait for them to resolve before the revision is final
	// (cutOverTxStep).
	for seg := q.First; seg <= q.Last; seg++ {
		for {
			step := cutOverTxStep(m.st.Segment(uint16(seg)).PendingTransactions(), time.Now(), deadline)
			if step == txCutOverProceed {
				break
			}
			if step == txCutOverAbort {
				return fail(migration.FinalDeltaTimeout, "segment %d: prepared transactions did not resolve within %v", seg, wait)
			}
			time.Sleep(time.Millisecond)
		}
	}
	fencedIn := time.Since(started)
	n := q.Last - q.First + 1
	heads := make([]uint64, n)
	for i := range n {
		heads[i] = m.st.Segment(uint16(q.First + i)).Revision()
	}
	// The final delta: each shipper streams what landed since its
	// target's cursor; wait until every target acknowledged the fenced head.
	for {
		behind := -1
		var ship *shipper
		for _, s := range ships {
			for i := range n {
				if s.applied[i].Load() < heads[i] {
					behind, ship = i, s
					break
				}
			}
			if behind >= 0 {
				break
			}
		}
		if behind < 0 {
			break
		}
		if time.Now().After(deadline) {
			g := m.st.Segment(uint16(q.First + behind))
			if floor := g.TrimFloor(); floor > ship.applied[behind].Load() {
				return fail(migration.FinalDeltaBelowTrimFloor,
					"segment %d: the target applied revision %d, the op-log starts after %d: the final delta would be partial",
					q.First+behind, ship.applied[behind].Load(), floor)
			}
			return fail(migration.FinalDeltaTimeout, "segment %d: %s applied revision %d of %d within %v",
				q.First+behind, ship.key.replica, ship.applied[behind].Load(), heads[behind], wait)
		}
		ship.markDirty(q.First + behind)
		time.Sleep(200 * time.Microsecond)
	}
	deltaIn := time.Since(started)
	at := m.st.Now()
	proof := make([]migration.SegmentProof, n)
	for i := range n {
		seg := q.First + i
		d := m.st.Segment(uint16(seg)).DigestAt(at)
		proof[i] = migration.SegmentProof{Segment: seg, Revision: heads[i], Digest: d.Sum, Count: d.Count}
	}
	m.mu.Lock()
	for _, pr := range proof {
		m.proofs[pr.Segment] = proofRecord{at: at, digest: pr.Digest, count: pr.Count}
	}
	m.mu.Unlock()
	m.log.Info("migration fence up: final delta applied by the target, proof recorded", "partition_identity", q.Identity,
		"targets", q.Targets, "segments", n, "fenced_in", fencedIn.Round(time.Microsecond),
		"final_delta_in", deltaIn.Round(time.Microsecond), "took", time.Since(started).Round(time.Microsecond))
	return cluster.MigrateReply{OK: true, At: at, Proof: proof}
}

// alignFencesLocked lowers every fence the map pm no longer calls for: the
// owner flipped (the segments are no longer served here — fenced or not,
// they answer Moved) or the move ended without a flip (m.mu held).
func (m *Manager) alignFencesLocked(pm *cluster.PartitionMap) {
	for id, f := range m.fences {
		keep := false
		for i := range pm.Partitions {
			p := &pm.Partitions[i]
			if p.Identity == id && serves(p, m.cfg.Self) && p.OwnershipGeneration == f.gen && p.MoveTo == f.moveTo &&
				slices.Equal(cluster.CutoverTargets(p), f.targets) && p.FirstSegment == f.first && p.LastSegment == f.last {
				keep = true
			}
		}
		if !keep {
			delete(m.fences, id)
			m.lowerFence(f)
		}
	}
	// A segment this node owns again needs no proof.
	owned := pm.OwnedSegments(m.cfg.Self)
	for seg := range m.proofs {
		if seg < len(owned) && owned[seg] {
			delete(m.proofs, seg)
		}
	}
}

// retainUnproven applies ShouldRetainAfterCutover to a segment about to be
// dropped (m.mu held): true keeps it.
func (m *Manager) retainUnproven(seg int, g *store.Segment) bool {
	pr, ok := m.proofs[seg]
	if !ok {
		return false
	}
	d := g.DigestAt(pr.at)
	if migration.ShouldRetainAfterCutover(true, d.Sum, pr.digest, d.Count, pr.count) {
		m.retained.Add(1)
		m.log.Error("migration: the source's copy changed after its cut-over proof; keeping it (the new owner may lack a write)",
			"segment", seg, "keys", g.Len())
		return true
	}
	delete(m.proofs, seg)
	return false
}

// migratedInLocked marks synced the segments of the partitions this node
// now serves that, in prev, were moving to it (m.mu held): the cut-over
// proved its copy level with the fenced source, so restart recovery's
// serve gate has nothing to wait for.
func (m *Manager) migratedInLocked(prev, next *cluster.PartitionMap) {
	m.servedSince(prev, next, func(q, _ *cluster.Partition) bool {
		return q.MoveTo == m.cfg.Self && q.ActiveOwner != m.cfg.Self
	}, func(p *cluster.Partition) {
		for seg := p.FirstSegment; seg <= p.LastSegment; seg++ {
			m.markProven(seg, 0)
		}
		m.rs.mu.Lock()
		m.rs.certified[p.Identity] = true
		m.rs.mu.Unlock()
	})
}

// Fenced counts the segments under a migration write fence on this node.
func (m *Manager) Fenced() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, f := range m.fences {
		n += f.last - f.first + 1
	}
	return n
}

// txCutOver is what a cut-over does about the prepared transactions of a
// fenced segment.
type txCutOver uint8

const (
	txCutOverProceed txCutOver = iota // none left: the revision read next is final
	txCutOverWait                     // some prepared: poll again
	txCutOverAbort                    // still some at the deadline: abort the cut-over, the source keeps the partition
)

// cutOverTxStep is the migration rule for prepared transactions (R-DS-4,
// R-MIG-2): a partition never moves with prepared state. The fence already
// refuses new prepares; the cut-over waits for the prepared ones to commit,
// abort or lapse, and gives up at its deadline, leaving the partition (and
// the transactions, which its replicas also hold) with the source. The
// failure it prevents: a commit arriving after the cut-over recorded its
// proof writes on the source past the fenced revision — a write the target
// never receives, half of a transaction lost.
func cutOverTxStep(pending int, now, deadline time.Time) txCutOver {
	switch {
	case pending == 0:
		return txCutOverProceed
	case now.After(deadline):
		return txCutOverAbort
	}
	return txCutOverWait
}
