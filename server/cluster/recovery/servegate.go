package recovery

// ServeDecision is the serve gate's answer for one segment (step 2).
type ServeDecision uint8

const (
	// HoldUnsynced: no sync pass has completed yet.
	HoldUnsynced ServeDecision = iota + 1
	// HoldBehindSource: a sync pass completed, but the source has accepted
	// writes since (its head revision is ahead of ours).
	HoldBehindSource
	// Serve: caught up.
	Serve
)

func (d ServeDecision) String() string {
	switch d {
	case HoldUnsynced:
		return "hold-unsynced"
	case HoldBehindSource:
		return "hold-behind-source"
	case Serve:
		return "serve"
	}
	return "unknown"
}

// ServeGate gates serving on a position, not a flag: a completed sync pass
// is not the same as being caught up — the temporary owner that kept serving
// may have accepted writes the recovering node has not pulled, and serving
// then answers NotFound for exactly those acknowledged keys. A source head of
// 0 carries no information: the gate never blocks on a missing fact, only on
// one that says "you are behind".
func ServeGate(synced bool, localHeadRevision, sourceHeadRevision uint64) ServeDecision {
	if !synced {
		return HoldUnsynced
	}
	if sourceHeadRevision > 0 && localHeadRevision < sourceHeadRevision {
		return HoldBehindSource
	}
	return Serve
}
