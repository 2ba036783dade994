package failover

import "time"

// HealthEvent is what the leader's sweep observed for a partition.
type HealthEvent uint8

const (
	EventReplicaLost   HealthEvent = iota + 1 // an assigned copy is gone
	EventOwnerPromoted                        // promotion done; the state comes with it
	EventCaughtUp                             // the recovering owner proved completeness
	EventAllSynced                            // every assigned copy live and synced
	EventNoSurvivor                           // no live copy at all
	// EventOwnerBack: the owner of a partition held Unavailable is alive
	// again, or answers its possession query directly while the membership
	// view still has it away (a CPU-starved node's probes time out for
	// minutes after it answers again).
	EventOwnerBack
)

// DefaultHealthDebounce is how long a partition must stay fully synced
// before it is declared Healthy again.
const DefaultHealthDebounce = 5 * time.Second

// NextHealth is the health state machine Healthy → Degraded/Recovering →
// Healthy (R-REP-7); the caller bumps the epoch on every edge. Losing
// redundancy is cheap and reversible, so Degraded is immediate; returning to
// Healthy waits for the debounce so a flapping node cannot drag the runtime
// through a storm of transitions.
func NextHealth(cur Health, ev HealthEvent, promoted Health, syncedSince, now time.Time, debounce time.Duration) Health {
	switch ev {
	case EventNoSurvivor:
		return Unavailable
	case EventOwnerBack:
		if cur == Unavailable {
			return Degraded // it holds the one copy: serve it
		}
	case EventReplicaLost:
		if cur == Healthy {
			return Degraded
		}
	case EventOwnerPromoted:
		return promoted
	case EventCaughtUp:
		if cur == Recovering {
			return Degraded
		}
	case EventAllSynced:
		if (cur == Degraded) && !syncedSince.IsZero() && now.Sub(syncedSince) >= debounce {
			return Healthy
		}
	}
	return cur
}
