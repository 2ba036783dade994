package recovery

// ApplyMode is how a recovering node applies the snapshot it pulled (step 3).
type ApplyMode uint8

const (
	// Skip: content digests already match; nothing to transfer.
	Skip ApplyMode = iota + 1
	// Reconcile: merge non-destructively, revision-bounded (keep the locally
	// newer record, fill missing keys, apply tombstones): keeps the writes a
	// passive replica received on the live channel during a slow bootstrap.
	Reconcile
	// Wipe: drop local state and adopt the snapshot whole.
	Wipe
)

func (m ApplyMode) String() string {
	switch m {
	case Skip:
		return "skip"
	case Reconcile:
		return "reconcile"
	case Wipe:
		return "wipe"
	}
	return "unknown"
}

// ResyncApplyMode decides between Skip, Reconcile and Wipe.
//
// Reconcile is allowed only for a purely passive subordinate of the single
// live owner: its revisions all came from that owner, so they compare. A
// node that is or was itself an owner of the partition has revisions that
// mean different writes on each side; merging would silently interleave two
// histories, so it wipes. priorReconcileShortfall escalates to Wipe after a
// reconcile finished yet left the segment behind the snapshot (a
// revision-bounded merge fencing out the same records on every session,
// looping forever); it is only ever set after a measured shortfall.
func ResyncApplyMode(digestMatches, isPassiveSubordinateReplica, priorReconcileShortfall bool) ApplyMode {
	switch {
	case digestMatches:
		return Skip
	case isPassiveSubordinateReplica && !priorReconcileShortfall:
		return Reconcile
	}
	return Wipe
}
