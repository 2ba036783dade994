package replication

import "github.com/zaris-io/zaris/server/cluster"

// lineage names the history a segment's content came from: the partition
// (by identity), the owner that produced its revisions, the ownership
// generation it produced them under, and that owner's incarnation (a
// random number drawn when its process started). Two copies whose lineage
// is equal hold prefixes of one sequence of revisions; revisions of
// different lineages may mean different writes and never compare.
type lineage struct {
	Identity    string
	Owner       cluster.NodeID
	Generation  uint64
	Incarnation uint64
}

// sameLease reports whether a and b were produced by the same owner under
// the same ownership lease, incarnation aside.
func (a lineage) sameLease(b lineage) bool {
	return a.Identity == b.Identity && a.Owner == b.Owner && a.Generation == b.Generation
}

// CatchUp is how a session starts shipping one segment.
type CatchUp uint8

const (
	// CatchUpOps ships the operations after the replica's revision (after
	// 0 for an empty replica), or a snapshot when they are below the trim
	// floor.
	CatchUpOps CatchUp = iota + 1
	// CatchUpSnapshot replaces the replica's copy with the owner's.
	CatchUpSnapshot
	// CatchUpHold ships nothing over this segment: the replica may hold
	// writes the owner does not.
	CatchUpHold
)

func (c CatchUp) String() string {
	switch c {
	case CatchUpOps:
		return "ops"
	case CatchUpSnapshot:
		return "snapshot"
	case CatchUpHold:
		return "hold"
	}
	return "unknown"
}

// PlanCatchUp decides, at the start of a session, how the owner brings one
// segment of a replica up to date, from the replica's applied revision and
// lineage, the owner's revision and the owner's own lineage (pure).
//
//   - an empty replica (revision 0) replays the op-log from the start;
//   - a replica of the same history at or below the owner replays the
//     operations after its revision (R-REP-1);
//   - a replica of the same lease but another incarnation of the owner
//     means the owner restarted — its memory is gone and the replica may
//     hold acknowledged writes it lost: hold, never overwrite the better
//     copy with the owner's hole (restart recovery, R-REP-6, decides);
//   - a replica of the same history ahead of the owner cannot happen
//     unless the owner lost state: hold too;
//   - anything else (another owner, generation or partition) is a foreign
//     history whose revisions mean other writes: replace it by a snapshot.
func PlanCatchUp(replicaRev uint64, replica lineage, ownerRev uint64, owner lineage) CatchUp {
	switch {
	case replicaRev == 0:
		return CatchUpOps
	case replica == owner && replicaRev <= ownerRev:
		return CatchUpOps
	case replica.sameLease(owner):
		return CatchUpHold
	}
	return CatchUpSnapshot
}
