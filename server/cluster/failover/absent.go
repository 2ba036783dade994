package failover

// OwnerPresence is what the cluster knows of a partition's active owner
// (or of any node holding a copy: AwaitCopy).
type OwnerPresence uint8

const (
	// OwnerAlive: the owner answers.
	OwnerAlive OwnerPresence = iota + 1
	// OwnerAway: the owner is silent — suspected, or declared dead by the
	// failure detector — but inside the member grace window: it may be
	// only slow (CPU starvation, a GC pause, a stopped process) and come
	// back with its data.
	OwnerAway
	// OwnerGone: the grace window ran out, or an operator evicted or
	// decommissioned it: it will not come back with its data.
	OwnerGone
)

func (p OwnerPresence) String() string {
	switch p {
	case OwnerAlive:
		return "alive"
	case OwnerAway:
		return "away"
	case OwnerGone:
		return "gone"
	}
	return "unknown"
}

// AbsentOwnerAction is what may become of a partition given where its
// owner is.
type AbsentOwnerAction uint8

const (
	// KeepOwner: the owner is alive; nothing moves.
	KeepOwner AbsentOwnerAction = iota + 1
	// PromoteCopy: a live copy holds the data; it may take the partition
	// over (failover, or the map change once the owner is gone).
	PromoteCopy
	// HoldUnavailable: no live copy, and the owner may come back with the
	// only copy of the data. It stays the owner: the partition is
	// Unavailable meanwhile, and neither a map change nor a rebalance moves
	// it away.
	HoldUnavailable
	// Reassign: no live copy and the owner is gone for good; the partition
	// may move to another node, where it starts empty (its data is lost
	// either way).
	Reassign
)

func (a AbsentOwnerAction) String() string {
	switch a {
	case KeepOwner:
		return "keep-owner"
	case PromoteCopy:
		return "promote-copy"
	case HoldUnavailable:
		return "hold-unavailable"
	case Reassign:
		return "reassign"
	}
	return "unknown"
}

// AbsentOwner is the rule that tells slow from dead where it costs data. A
// partition moved away from an owner that was only slow restarts EMPTY on
// its new owner while the real data sits on a node that comes back a moment
// later (at RF 1 there is no other copy): a hiccup turned into data loss.
// So a partition leaves its owner only for a live copy that holds the data,
// or once the owner is gone for good (the member grace has run out); until
// then an owner without a live copy keeps the partition, Unavailable —
// clients get a clear error instead of an empty answer, and the data is
// back the moment the owner is.
func AbsentOwner(owner OwnerPresence, liveCopy bool) AbsentOwnerAction {
	switch {
	case owner == OwnerAlive:
		return KeepOwner
	case liveCopy:
		return PromoteCopy
	case owner == OwnerGone:
		return Reassign
	}
	return HoldUnavailable // away, or unknown: never guess a node dead
}

// AwaitCopy is the same rule for a copy that may hold writes a serving
// owner lacks: the sync source of a Recovering owner, or a copy a
// restarted owner must be level with before it serves (R-REP-5/6). Such a
// copy is waited for unless it is gone for good. Letting the owner serve
// as soon as the copy was only silent — suspected on a loaded machine, or
// declared dead inside the member grace — answered NotFound for the
// acknowledged keys it had not pulled yet, and its next session then
// replaced the copy's data by its hole: a slow node turned into lost
// writes (a WAN follower lost mirrored keys across a restart of its
// applier's node under load). Waiting costs the partition's availability
// until the copy answers again or its grace runs out.
//
// A demoted copy (the former owner a failover confirmed dead) is waited
// for only while it is alive: the failover promoted a copy that proved it
// holds the data, and waiting for the dead former owner would undo it.
func AwaitCopy(copy OwnerPresence, demoted bool) bool {
	if demoted {
		return copy == OwnerAlive
	}
	return copy != OwnerGone
}

// CopyHoldsData reports whether a live copy can stand in for an absent
// owner (AbsentOwner's liveCopy): it follows the owner's lease in every
// segment of the partition. A replica that restarted empty and has not
// been sent the owner's data yet does not: promoting it served its hole
// as the partition's content while the owner was only away.
func CopyHoldsData(syncedSegments, segments int) bool {
	return segments > 0 && syncedSegments >= segments
}
