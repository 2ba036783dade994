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
}

// ChooseCandidate picks the live replica with the most synced segments
// (availability first; ties by held keys, then id for determinism). ok=false
// when no replica is alive: the partition is Unavailable, never given a
// fake owner.
func ChooseCandidate(cands []Candidate) (best Candidate, ok bool) {
	for _, c := range cands {
		if !c.Alive {
			continue
		}
		if !ok || c.SyncedSegments > best.SyncedSegments ||
			(c.SyncedSegments == best.SyncedSegments && (c.HeldKeys > best.HeldKeys ||
				(c.HeldKeys == best.HeldKeys && c.ID < best.ID))) {
			best, ok = c, true
		}
	}
	return best, ok
}

// PromotionState is the proof of possession (R-REP-5): the promoted node
// serves at once (Degraded) unless a live holder is strictly more complete,
// in which case it syncs first (Recovering) — an incomplete owner would
// answer NotFound for acknowledged keys that exist on its sibling. A lone
// survivor always serves: blocking the only copy left helps nobody.
func PromotionState(candidateHeldKeys, bestOtherLiveHolderKeys int64) Health {
	if bestOtherLiveHolderKeys > candidateHeldKeys {
		return Recovering
	}
	return Degraded
}
