package failover

import "time"

// ConfirmDecision says whether the leader may act on a silent owner.
type ConfirmDecision uint8

const (
	// Ignore: this node is not the leader, or the owner answers again.
	Ignore ConfirmDecision = iota + 1
	// Suspect: start (or keep) the suspicion timer; do nothing irreversible.
	Suspect
	// Confirm: the owner is dead; promotion may proceed.
	Confirm
)

// DefaultSuspectEscalation is how long a silent owner is suspected before
// it is confirmed dead (R-REP-3).
const DefaultSuspectEscalation = 10 * time.Second

// ConfirmOwnerDown is the guard before the irreversible promotion. Only the
// leader promotes (two nodes electing two owners is split-brain); a
// "node left" signal can race ahead of the membership table, so the leader
// re-checks liveness first and leaves a reachable owner in place; an owner
// that went silent without a clean signal is only suspected until the
// escalation window has passed.
func ConfirmOwnerDown(isLeader, ownerReachable, cleanDeparture bool, suspectedSince, now time.Time, escalation time.Duration) ConfirmDecision {
	switch {
	case !isLeader || ownerReachable:
		return Ignore
	case cleanDeparture:
		return Confirm
	case suspectedSince.IsZero() || now.Sub(suspectedSince) < escalation:
		return Suspect
	}
	return Confirm
}
