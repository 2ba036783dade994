package cluster

import (
	"slices"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

// Live migration (R-MIG-1..3) as map transitions. The leader computes a
// target layout (the planner over the members that stay) and walks the
// committed map towards it one pure step at a time:
//
//	split   a partition whose segments want different groups is cut at
//	        the boundaries (layout only: same owner, same copies, no data
//	        moves), so that every partition wants exactly one group;
//	start   a partition whose group differs from the one it wants gets its
//	        missing copies as Incoming — streamed by the owner like a
//	        replica, claiming nothing — and, when its owner changes, MoveTo;
//	finish  once every incoming copy is level (and, for an owner change,
//	        the fenced source's proof holds), one map commit makes the
//	        wanted group the partition's group: the owner flips, copies the
//	        group no longer wants leave only now, after the new ones exist;
//	abort   the incoming copies are dropped, the group stands.
//
// Each function here is pure; the runtime (migrate.go) decides when.

// SegmentGroup is the group a segment wants: its owner and its replicas
// (sorted).
type SegmentGroup struct {
	Owner    NodeID   `msgpack:"o"`
	Replicas []NodeID `msgpack:"r,omitempty"`
}

func (g SegmentGroup) equal(o SegmentGroup) bool {
	return g.Owner == o.Owner && slices.Equal(g.Replicas, o.Replicas)
}

// WantedGroups is, per segment, the group target gives it.
func WantedGroups(target *PartitionMap) []SegmentGroup {
	out := make([]SegmentGroup, target.TotalSegments)
	for _, p := range target.Partitions {
		g := SegmentGroup{Owner: p.ActiveOwner, Replicas: sortedIDs(p.ReplicaNodeIDs)}
		for s := p.FirstSegment; s <= p.LastSegment; s++ {
			out[s] = g
		}
	}
	return out
}

// groupOf is the group p has now.
func groupOf(p *Partition) SegmentGroup {
	return SegmentGroup{Owner: p.ActiveOwner, Replicas: sortedIDs(p.ReplicaNodeIDs)}
}

func sortedIDs(ids []NodeID) []NodeID {
	out := slices.Clone(ids)
	slices.Sort(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// StepKind is what NextMigrationStep asks for.
type StepKind uint8

const (
	// StepDone: every segment has its wanted group; nothing moves.
	StepDone StepKind = iota
	// StepCommit: commit Map (a split, or the start of moves).
	StepCommit
	// StepWait: moves are in flight (or a partition is not healthy enough
	// to split or move); the runtime drives them.
	StepWait
)

// MigrationStep is the next transition towards the wanted layout.
type MigrationStep struct {
	Kind StepKind
	Map  *PartitionMap // StepCommit: the next map (Version bumped)
	Why  string
}

// MaxMoveSegments bounds the segments one move carries: the cut-over's
// write fence lasts as long as the final delta and the digests of the
// moving segments take, so a large range moves as several small moves
// (a fence over 4 segments of 4 000 keys each costs ~10–30 ms here) rather
// than one long pause.
const MaxMoveSegments = 4

// Movable reports whether a partition may be split or start a move: it
// has an owner, is healthy (a Degraded, Recovering or Unavailable
// partition is failover's business first) and no move is in flight.
func Movable(p *Partition) bool {
	return p.ActiveOwner != "" && p.HealthState() == failover.Healthy && !p.Migrating() && p.MoveTo == ""
}

// NextMigrationStep is the pure planner of a rebalance: given the committed
// map, the wanted group of every segment and how many moves may run at
// once, the next map to commit. Splits come first and are committed alone
// (a layout change, TopologyVersion bumped); then up to maxMoves partitions
// start moving (Version bumped only). A wanted group naming a node that is
// not a member of cur is ignored for that segment (it left meanwhile).
func NextMigrationStep(cur *PartitionMap, want []SegmentGroup, maxMoves int, newIdentity func() string) MigrationStep {
	if cur == nil || len(want) != cur.TotalSegments {
		return MigrationStep{Kind: StepWait, Why: "no map or a target of another size"}
	}
	if newIdentity == nil {
		newIdentity = randomIdentity
	}
	member := func(id NodeID) bool { _, ok := cur.Node(id); return ok }
	wanted := func(seg int) (SegmentGroup, bool) {
		g := want[seg]
		if g.Owner == "" || !member(g.Owner) {
			return g, false
		}
		for _, r := range g.Replicas {
			if !member(r) {
				return g, false
			}
		}
		return g, true
	}

	// Splits: cut every movable partition where the wanted group changes,
	// and a range that must move into pieces of at most MaxMoveSegments.
	split := false
	waitSplit := false
	var parts []Partition
	for i := range cur.Partitions {
		p := cur.Partitions[i]
		cuts := []int{}
		first := p.FirstSegment
		for s := p.FirstSegment + 1; s <= p.LastSegment; s++ {
			g, ok := wanted(s)
			moves := ok && !groupOf(&p).equal(g)
			if !want[s-1].equal(want[s]) || (moves && s-first >= MaxMoveSegments) {
				cuts = append(cuts, s)
				first = s
			}
		}
		if len(cuts) == 0 {
			parts = append(parts, p)
			continue
		}
		if !Movable(&p) {
			waitSplit = true
			parts = append(parts, p)
			continue
		}
		split = true
		first = p.FirstSegment
		for k, c := range append(cuts, p.LastSegment+1) {
			piece := p
			piece.ReplicaNodeIDs = slices.Clone(p.ReplicaNodeIDs)
			piece.Demoted = slices.Clone(p.Demoted)
			piece.FirstSegment, piece.LastSegment = first, c-1
			if k > 0 {
				// A new identity: the piece is a partition of its own from
				// now on (its copies are re-shipped under it).
				piece.Identity = newIdentity()
			}
			parts = append(parts, piece)
			first = c
		}
	}
	if split {
		next := cur.Clone()
		next.Partitions = parts
		renumber(next)
		next.Version = cur.Version + 1
		next.TopologyVersion = cur.TopologyVersion + 1
		if next.Validate() != nil {
			return MigrationStep{Kind: StepWait, Why: "split would not validate"}
		}
		return MigrationStep{Kind: StepCommit, Map: next, Why: "split"}
	}

	inFlight := 0
	for i := range cur.Partitions {
		if cur.Partitions[i].Migrating() {
			inFlight++
		}
	}
	next := cur.Clone()
	started := 0
	finished := 0
	for i := range next.Partitions {
		p := &next.Partitions[i]
		g, ok := wanted(p.FirstSegment)
		if !ok || groupOf(p).equal(g) || !Movable(p) {
			continue
		}
		var incoming []NodeID
		moveTo := NodeID("")
		if g.Owner != p.ActiveOwner {
			moveTo = g.Owner
			if !slices.Contains(p.ReplicaNodeIDs, g.Owner) {
				incoming = append(incoming, g.Owner)
			}
		}
		for _, r := range g.Replicas {
			if r != p.ActiveOwner && !slices.Contains(p.ReplicaNodeIDs, r) && !slices.Contains(incoming, r) {
				incoming = append(incoming, r)
			}
		}
		if moveTo == "" && len(incoming) == 0 {
			// Only copies leave the group: nothing to build first.
			p.ReplicaNodeIDs = slices.Clone(g.Replicas)
			p.PrimaryNodeID = p.ActiveOwner
			finished++
			continue
		}
		if inFlight+started >= maxMoves {
			continue
		}
		p.Incoming, p.MoveTo = incoming, moveTo
		started++
	}
	if started+finished > 0 {
		next.Version = cur.Version + 1
		if next.Validate() != nil {
			return MigrationStep{Kind: StepWait, Why: "moves would not validate"}
		}
		return MigrationStep{Kind: StepCommit, Map: next, Why: "start moves"}
	}
	if inFlight > 0 || waitSplit {
		return MigrationStep{Kind: StepWait, Why: "moves in flight"}
	}
	for i := range cur.Partitions {
		p := &cur.Partitions[i]
		if g, ok := wanted(p.FirstSegment); ok && !groupOf(p).equal(g) {
			return MigrationStep{Kind: StepWait, Why: "a partition is not healthy enough to move"}
		}
	}
	return MigrationStep{Kind: StepDone}
}

// renumber gives every partition its index as ID and rebuilds the segment
// table.
func renumber(m *PartitionMap) {
	m.SegmentToPartition = make([]int, m.TotalSegments)
	for i := range m.Partitions {
		p := &m.Partitions[i]
		p.ID = i
		for s := p.FirstSegment; s <= p.LastSegment; s++ {
			m.SegmentToPartition[s] = i
		}
	}
}

// FinishMove is the flip (R-MIG-2 step 5): partition idx takes the group
// its move was building — MoveTo (when set) becomes its active owner and
// preferred primary, replicas become exactly the wanted ones among the
// copies that exist (its established replicas, its incoming copies, the
// former owner) — and its move ends. A new owner gets the next ownership
// generation when the map is folded (FoldMapCommit). Nil when idx is not a
// partition in flight.
func FinishMove(cur *PartitionMap, idx int, replicas []NodeID) *PartitionMap {
	if cur == nil || idx < 0 || idx >= len(cur.Partitions) || !cur.Partitions[idx].Migrating() {
		return nil
	}
	next := cur.Clone()
	p := &next.Partitions[idx]
	holders := append([]NodeID{p.ActiveOwner}, p.ReplicaNodeIDs...)
	holders = append(holders, p.Incoming...)
	owner := p.ActiveOwner
	if p.MoveTo != "" {
		owner = p.MoveTo
	}
	reps := FlipReplicas(owner, replicas, holders, p.Demoted)
	p.ActiveOwner, p.PrimaryNodeID, p.ReplicaNodeIDs = owner, owner, reps
	p.Incoming, p.MoveTo = nil, ""
	p.Demoted = slices.DeleteFunc(p.Demoted, func(id NodeID) bool { return id == owner || !slices.Contains(reps, id) })
	if len(p.Demoted) == 0 {
		p.Demoted = nil
	}
	next.Version = cur.Version + 1
	if next.Validate() != nil {
		return nil
	}
	return next
}

// FlipReplicas are a flip's replicas: the wanted ones among the copies
// that exist (holders: the former owner, the established replicas, the
// incoming copies) and, make-before-break, as many leaving holders as it
// takes for the group to keep as many level copies (not demoted) as it
// wants replicas. Without the second part a flip could drop the only
// level copies besides the new owner: a wanted replica that holds nothing
// (the wanted layout changed during the move) or that a failover demoted
// (it fell behind, or restarted empty) left the partition with one real
// copy, and that copy's loss lost the partition at RF 2. The kept copies
// leave later, by the planner's "only copies leave" step, which waits for
// a Healthy partition (every copy level again).
func FlipReplicas(owner NodeID, wanted, holders, demoted []NodeID) []NodeID {
	var reps []NodeID
	need := 0
	for i, r := range wanted {
		if r == owner || slices.Contains(wanted[:i], r) {
			continue
		}
		need++
		if slices.Contains(holders, r) {
			reps = append(reps, r)
		}
	}
	level := 0
	for _, r := range reps {
		if !slices.Contains(demoted, r) {
			level++
		}
	}
	for _, h := range holders {
		if level >= need {
			break
		}
		if h != owner && h != "" && !slices.Contains(reps, h) && !slices.Contains(demoted, h) {
			reps = append(reps, h)
			level++
		}
	}
	return reps
}

// ProofStillHolds reports whether a cut-over proof taken on partition
// proved still speaks for cur, the partition as the map stands at the
// flip: the same partition, owned by the same node under the same lease,
// moving to the same copies. The proof compared the targets with that
// owner's fenced content; once a failover has promoted another copy (a
// new lease that may have taken writes since) or the move changed, the
// flip must wait for a new fence and a new proof.
func ProofStillHolds(proved, cur *Partition) bool {
	return proved.Identity == cur.Identity && proved.ActiveOwner == cur.ActiveOwner &&
		proved.OwnershipGeneration == cur.OwnershipGeneration && proved.MoveTo == cur.MoveTo &&
		slices.Equal(proved.Incoming, cur.Incoming)
}

// CutoverTargets are the copies a move's cut-over must prove level before
// its flip: its incoming copies and the node its ownership moves to (a
// replica included: under async replication it may lag), never the
// active owner itself.
func CutoverTargets(p *Partition) []NodeID {
	var out []NodeID
	for _, id := range append(slices.Clone(p.Incoming), p.MoveTo) {
		if id != "" && id != p.ActiveOwner && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// AbortMove ends partition idx's move without a flip: its incoming copies
// leave the group (each drops what it received) and the source lowers its
// fence when it applies the map. Nil when idx is not in flight.
func AbortMove(cur *PartitionMap, idx int) *PartitionMap {
	if cur == nil || idx < 0 || idx >= len(cur.Partitions) || !cur.Partitions[idx].Migrating() {
		return nil
	}
	next := cur.Clone()
	p := &next.Partitions[idx]
	p.Incoming, p.MoveTo = nil, ""
	next.Version = cur.Version + 1
	return next
}
