package replication

import "fmt"

// Mode is when a write is acknowledged (R-REP-2).
type Mode uint8

const (
	// Async acknowledges after the local apply; replicas follow the op-log
	// stream. The default.
	Async Mode = iota
	// Sync acknowledges once the write is applied on the quorum of
	// replicas (the write barrier).
	Sync
)

func (m Mode) String() string {
	if m == Sync {
		return "sync"
	}
	return "async"
}

// Quorum is how many replicas a sync write waits for (R-REP-2).
type Quorum uint8

const (
	// All: every replica of the partition in the map.
	All Quorum = iota
	// Majority: a majority of the copies, the owner's included.
	Majority
	// BestEffort: every replica with a live session, up to the sync
	// timeout; the write is acknowledged even when they do not answer.
	BestEffort
)

func (q Quorum) String() string {
	switch q {
	case All:
		return "all"
	case Majority:
		return "majority"
	case BestEffort:
		return "besteffort"
	}
	return fmt.Sprintf("Quorum(%d)", uint8(q))
}

// QuorumNeed is how many of a partition's replicas must have applied a
// write before a sync write is acknowledged (pure). replicas is the number
// of replicas the map assigns (the owner excluded). Majority counts copies:
// ⌊(replicas+1)/2⌋+1 of them including the owner, so ⌊(replicas+1)/2⌋
// replicas. BestEffort needs every replica it can reach (the caller counts
// the unreachable ones as done).
func QuorumNeed(q Quorum, replicas int) int {
	if replicas <= 0 {
		return 0
	}
	if q == Majority {
		return (replicas + 1) / 2
	}
	return replicas
}
