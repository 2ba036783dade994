package store

// Restart and resync apply modes on the receiving side (R-REP-6 step 3): a
// snapshot can be adopted whole (InstallSnapshot, "wipe"), merged
// (MergeSnapshot, "reconcile") or found already held (AdoptRevision, "skip").

// MergeSnapshot merges snap into the segment without dropping what the
// segment received after it: a revision-bounded reconcile, for a passive
// replica whose revisions all come from the snapshot's source (they
// compare). Up to snap.Revision the snapshot is the truth: a record it
// holds replaces an older local one or fills a missing key, and a local
// record at or below snap.Revision that it does not hold is dead at the
// source (deleted, expired, evicted) and goes. A local record above
// snap.Revision is a later write of the same source and stays.
//
// It returns the shortfall: the snapshot records the segment does not hold
// at their revision afterwards (an undecodable collection). A shortfall
// means the merge cannot make this copy level; the caller escalates to
// InstallSnapshot (recovery.ResyncApplyMode's priorReconcileShortfall).
func (g *Segment) MergeSnapshot(snap Snapshot) (shortfall int) {
	now := g.store.clock.NowNano()
	stamp := g.store.freshAccess(now)
	g.mu.Lock()
	defer g.mu.Unlock()
	inSnap := make(map[string]struct{}, len(snap.Records))
	for i := range snap.Records {
		r := snap.Records[i]
		inSnap[r.Key()] = struct{}{}
		if old := g.items.get(r.Key()); old != nil && old.Revision >= r.Revision {
			continue // locally as new or newer
		}
		r.access = stamp
		if err := r.materialize(); err != nil {
			g.store.log.Error("store: an undecodable collection in a snapshot to merge", "key", r.Key(), "err", err)
			shortfall++
			continue
		}
		g.replaceLocked(&r)
	}
	var stale []*Record // dropped after the walk: the table forbids deletes during one
	for old := range g.items.all() {
		if _, ok := inSnap[old.Key()]; !ok && old.Revision <= snap.Revision {
			stale = append(stale, old)
		}
	}
	for _, old := range stale {
		g.dropLocked(old)
	}
	g.tombstones = g.tombstones[:0]
	for r := range g.items.all() {
		if r.Deleted() {
			g.tombstones = append(g.tombstones, r.Key())
		}
	}
	if snap.Revision > g.revision {
		g.revision = snap.Revision
	}
	// The op-log cannot describe a merge: catch-up from below it needs a
	// snapshot.
	g.log.reset(g.revision)
	g.resetFeedLocked()
	return shortfall
}

// AdoptRevision records that the segment already holds exactly the content
// of a snapshot at rev (digests matched: "skip"): only the revision moves,
// and the op-log restarts there.
func (g *Segment) AdoptRevision(rev uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.revision = max(g.revision, rev)
	g.log.reset(g.revision)
	g.resetFeedLocked()
}

// replaceLocked puts r in place of the key's record, keeping the indexes
// and the memory accounting (no op-log entry, no watch event: a merge is
// not a mutation of this node's history).
func (g *Segment) replaceLocked(r *Record) {
	if old := g.items.get(r.Key()); old != nil {
		g.dropLocked(old)
	}
	if g.growable != nil {
		g.settleGrowableLocked(r.Key(), r)
	}
	g.items.set(r)
	n := r.accountedBytes()
	g.bytes += n
	live := 0
	if !r.Deleted() {
		g.live++
		live = 1
		if r.ExpiresAt() != 0 {
			g.countTTLKeysLocked()
		}
	}
	g.store.account(g.owned, n, int64(live))
}

// dropLocked removes r, the key's record, keeping the accounting.
func (g *Segment) dropLocked(r *Record) {
	g.items.delete(r.Key())
	if g.growable != nil {
		g.settleGrowableLocked(r.Key(), nil)
	}
	g.countTTLKeysLocked()
	n := r.accountedBytes()
	g.bytes -= n
	live := 0
	if !r.Deleted() {
		g.live--
		live = -1
	}
	g.store.account(g.owned, -n, int64(live))
}
