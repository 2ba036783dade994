package migration

// Reason names why a cut-over did not complete. A move that stops for any
// reason is aborted loudly and restarted from a new snapshot; it never
// flips on a partial proof.
type Reason string

const (
	// Ready: the proof holds; the flip may be committed.
	Ready Reason = ""
	// FinalDeltaBelowTrimFloor: the source's op-log no longer holds the
	// operations the target still needs (its trim floor passed the
	// target's cursor): the final delta would be partial.
	FinalDeltaBelowTrimFloor Reason = "FinalDeltaBelowTrimFloor"
	// FinalDeltaTimeout: the target did not apply the fenced source's last
	// revision within the fence budget (a slow or stalled stream).
	FinalDeltaTimeout Reason = "FinalDeltaTimeout"
	// TargetBehind: the target's copy of a segment is below the source's
	// fenced revision.
	TargetBehind Reason = "TargetBehind"
	// TargetDiverged: the target reached the revision but its content
	// digest differs from the source's proof.
	TargetDiverged Reason = "TargetDiverged"
	// TargetForeignHistory: the target's copy does not follow the source's
	// ownership lease (its revisions mean other writes).
	TargetForeignHistory Reason = "TargetForeignHistory"
	// ReplicaAhead: a live replica holds a later revision of the source's
	// lease than the target: flipping would lose what only it holds.
	ReplicaAhead Reason = "ReplicaAhead"
	// MissingSegment: the proof or the target's report lacks a segment.
	MissingSegment Reason = "MissingSegment"
)

// SegmentProof is what the fenced source recorded for one segment: its
// final revision and the digest of its live content at time At (Unix ns;
// the target computes its digest at the same instant so that a key expiring
// in between does not differ).
type SegmentProof struct {
	Segment  int
	Revision uint64
	Digest   uint64
	Count    int
}

// Holding is what a copy reports of one segment: its applied revision, the
// digest of its live content at the proof's instant, and whether its
// revisions follow the source's current ownership lease.
type Holding struct {
	Segment       int
	Revision      uint64
	Digest        uint64
	Count         int
	FollowsSource bool
}

// MaxFenceLag is how many revisions (over the whole partition) an incoming
// owner may still be behind when the source is fenced: the fence holds
// writes while that delta crosses, so it is kept small.
const MaxFenceLag = 256

// ShouldFence decides when the source raises its write fence: only once the
// incoming owner's stream is live and nearly level. Fencing earlier would
// hold every write of the partition for as long as a bulk copy takes.
func ShouldFence(streaming bool, lag uint64) bool {
	return streaming && lag <= MaxFenceLag
}

// CutoverVerdict is the gate before the flip (R-MIG-2 step 4). The target
// must hold, for every segment of the proof, exactly the fenced source's
// content: the same lease history, at least the proof's revision, and an
// equal digest — equality of content, not the absence of an error. And it
// must dominate every live replica: a replica that applied a later
// revision of the source's lease than the target holds something the
// target lacks (the source acknowledged it after the proof, or the proof
// is wrong), and the flip would lose it.
func CutoverVerdict(proof []SegmentProof, target []Holding, replicas [][]Holding) (Reason, int) {
	bySeg := make(map[int]Holding, len(target))
	for _, h := range target {
		bySeg[h.Segment] = h
	}
	if len(proof) == 0 {
		return MissingSegment, -1
	}
	for _, p := range proof {
		h, ok := bySeg[p.Segment]
		switch {
		case !ok:
			return MissingSegment, p.Segment
		case !h.FollowsSource && (p.Revision > 0 || h.Revision > 0):
			return TargetForeignHistory, p.Segment
		case h.Revision < p.Revision:
			return TargetBehind, p.Segment
		case h.Digest != p.Digest || h.Count != p.Count:
			return TargetDiverged, p.Segment
		}
		for _, rep := range replicas {
			for _, r := range rep {
				if r.Segment == p.Segment && r.FollowsSource && r.Revision > h.Revision {
					return ReplicaAhead, p.Segment
				}
			}
		}
	}
	return Ready, -1
}

// ShouldRetainAfterCutover is the safety on the source's drop after the
// flip (R-MIG-3): a segment that carries a cut-over proof is dropped only
// while its live digest still equals the proof. A write that landed after
// the proof (the new owner never received it) changes the digest, and the
// copy is kept — an unserved orphan costs memory, a drop on a stale proof
// loses an acknowledged write. A segment without a proof (never migrated,
// a failover) is not this rule's business: false.
func ShouldRetainAfterCutover(hasProof bool, liveDigest, proofDigest uint64, liveCount, proofCount int) bool {
	if !hasProof {
		return false
	}
	return liveDigest != proofDigest || liveCount != proofCount
}
