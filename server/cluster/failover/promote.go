package failover

// Health is a partition's runtime health (R-REP-7).
type Health uint8

const (
	Healthy     Health = iota + 1 // every assigned copy live and synced
	Degraded                      // serving, with less redundancy than planned
	Recovering                    // the owner syncs from a more complete peer first: not serving
	Unavailable                   // no copy survives: fail loudly, serve nothing
)

func (h Health) String() string {
	switch h {
	case Healthy:
		return "healthy"
	case Degraded:
		return "degraded"
	case Recovering:
		return "recovering"
	case Unavailable:
		return "unavailable"
	}
	return "unknown"
}

// Serving reports whether clients are served in that state.
func (h Health) Serving() bool { return h == Healthy || h == Degraded }

// Candidate is a replica considered for promotion.
type Candidate struct {
	ID             string
	Alive          bool
	SyncedSegments int
	HeldKeys       int64 // from a fresh, term-aligned report; stale reports are not live sources
	// MissingRevisions: revisions of the dead owner's lease that another
	// live copy applied and this one did not (MissingRevisions).
	MissingRevisions uint64
}

// ChooseCandidate picks the live replica with the most synced segments
// (availability first; ties by fewer missing revisions, then held keys,
// then id for determinism). ok=false when no replica is alive: the
// partition is Unavailable, never given a fake owner.
func ChooseCandidate(cands []Candidate) (best Candidate, ok bool) {
	for _, c := range cands {
		if !c.Alive {
			continue
		}
		if !ok || c.SyncedSegments > best.SyncedSegments ||
			(c.SyncedSegments == best.SyncedSegments && (c.MissingRevisions < best.MissingRevisions ||
				(c.MissingRevisions == best.MissingRevisions && (c.HeldKeys > best.HeldKeys ||
					(c.HeldKeys == best.HeldKeys && c.ID < best.ID))))) {
			best, ok = c, true
		}
	}
	return best, ok
}

// PromotionState is the proof of possession (R-REP-5): the promoted node
// serves at once (Degraded) unless a live holder is strictly more complete,
// in which case it syncs first (Recovering) — an incomplete owner would
// answer NotFound, or an older value, for acknowledged writes that exist on
// its sibling, and its first session would then replace the sibling's copy
// by its own: the writes would be lost. More complete means more keys, or
// later revisions of the dead owner's lease than the candidate applied
// (under a majority quorum a write is acknowledged once one replica has
// it, and an overwrite changes no key count). A lone survivor always
// serves: blocking the only copy left helps nobody.
func PromotionState(candidateHeldKeys, bestOtherLiveHolderKeys int64, candidateMissingRevisions uint64) Health {
	if bestOtherLiveHolderKeys > candidateHeldKeys || candidateMissingRevisions > 0 {
		return Recovering
	}
	return Degraded
}

// SegmentRevision is what one copy holds of one segment: its applied
// revision, and whether that copy follows the dead owner's lease (its
// revisions then compare with the other copies' that follow it).
type SegmentRevision struct {
	Segment      int
	Revision     uint64
	FollowsLease bool
}

// MissingRevisions counts, per live copy, the revisions of the dead
// owner's lease that the most advanced live copy applied and it did not,
// summed over segments. A segment this copy holds from another history
// counts whole (its revisions do not compare: nothing of the lease is
// known to be there).
func MissingRevisions(copies map[string][]SegmentRevision) map[string]uint64 {
	head := map[int]uint64{}
	for _, segs := range copies {
		for _, s := range segs {
			if s.FollowsLease && s.Revision > head[s.Segment] {
				head[s.Segment] = s.Revision
			}
		}
	}
	out := make(map[string]uint64, len(copies))
	for id, segs := range copies {
		held := map[int]uint64{}
		for _, s := range segs {
			if s.FollowsLease {
				held[s.Segment] = s.Revision
			}
		}
		var missing uint64
		for seg, h := range head {
			if r := held[seg]; r < h {
				missing += h - r
			}
		}
		out[id] = missing
	}
	return out
}
