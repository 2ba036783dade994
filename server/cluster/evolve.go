package cluster

import (
	"errors"
	"fmt"
	"slices"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

// EvolveMap is the leader's rule for a map that already exists (R-CLU-2/4),
// pure: given the committed map and the tracked members it returns the next
// map (Version and TopologyVersion bumped), or nil when nothing changes.
//
// Policy — a live owner's data is never dropped or moved silently (RF 1 has
// no copy, and data migration is a later issue):
//   - a member in a map-affecting state (lost, evicted, decommissioned)
//     leaves the map. Each partition it owned goes to a spare (a live member
//     that owns nothing), or else is merged into a neighbouring partition
//     whose owner is live. Its data was on the departed node: with RF 1 it
//     is lost either way, and the partition restarts empty.
//   - a live member that is not in the map joins it as a spare: listed in
//     Nodes (clients learn its addresses) but owning nothing. Partitions
//     never move to it by themselves; Rebalance does that, on an operator's
//     request.
//   - a member whose addresses changed gets its new addresses.
//   - a partition whose owner departed goes first to one of its copies
//     that has not departed — a replica or its preferred primary, alive
//     or else only away (OrphanHeir: it holds the data, R-REP-1) — and
//     only when none is left to a spare (failover.AbsentOwner:
//     PromoteCopy, else Reassign). An owner that is only away (suspected,
//     unreachable: inside the member grace) keeps its partition whatever
//     (HoldUnavailable).
//   - a partition with fewer than rf-1 replicas takes spares as replicas
//     (a replica starts empty and catches up from the owner's op-log or a
//     snapshot); a promoted replica's slot is refilled the same way.
//
// Members the tracker does not know, or knows only as alive, suspected or
// unreachable, keep their place: runtime states never change the map.
func EvolveMap(cur *PartitionMap, members []MemberView, rf int) *PartitionMap {
	if cur == nil {
		return nil
	}
	byID := make(map[NodeID]MemberView, len(members))
	for _, m := range members {
		byID[m.Info.ID] = m
	}
	departed := func(id NodeID) bool {
		m, ok := byID[id]
		return ok && m.State.MapAffecting()
	}

	next := cur.Clone()
	changed := false

	// Addresses and departures.
	kept := next.Nodes[:0]
	for _, n := range next.Nodes {
		if departed(n.ID) {
			changed = true
			continue
		}
		if m, ok := byID[n.ID]; ok && m.Info.Host != "" && m.Info != n {
			n = m.Info
			changed = true
		}
		kept = append(kept, n)
	}
	next.Nodes = kept

	// Joins: live members not in the map become spares.
	for _, m := range members {
		if m.State != MemberAlive {
			continue
		}
		if _, in := next.Node(m.Info.ID); !in {
			next.Nodes = append(next.Nodes, m.Info)
			changed = true
		}
	}
	slices.SortFunc(next.Nodes, func(a, b NodeInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	// Replicas on departed nodes are dropped, and so are their demotions
	// and the copies a migration was building on them (a move to a
	// departed node ends there).
	for i := range next.Partitions {
		p := &next.Partitions[i]
		p.ReplicaNodeIDs = slices.DeleteFunc(p.ReplicaNodeIDs, departed)
		p.Demoted = slices.DeleteFunc(p.Demoted, departed)
		p.Incoming = slices.DeleteFunc(p.Incoming, departed)
		if len(p.Incoming) == 0 {
			p.Incoming = nil
		}
		if departed(p.MoveTo) {
			p.MoveTo = ""
		}
	}
	// Orphaned partitions: a live replica takes each (it holds the data),
	// else a spare, in order; the rest merge.
	for i := range next.Partitions {
		p := &next.Partitions[i]
		if !departed(p.ActiveOwner) {
			// Alive, or only away: a map change never moves the partition
			// (failover moves a live copy in at runtime, not the map).
			if departed(p.PrimaryNodeID) {
				p.PrimaryNodeID = p.ActiveOwner // the serving owner stays where it is
				owner := p.ActiveOwner
				p.ReplicaNodeIDs = slices.DeleteFunc(p.ReplicaNodeIDs, func(id NodeID) bool { return id == owner })
			}
			continue
		}
		r := OrphanHeir(p, byID, func(id NodeID) bool { _, in := next.Node(id); return in })
		switch failover.AbsentOwner(failover.OwnerGone, r != "") {
		case failover.PromoteCopy:
			p.PrimaryNodeID, p.ActiveOwner = r, r
			p.ReplicaNodeIDs = slices.DeleteFunc(p.ReplicaNodeIDs, func(id NodeID) bool { return id == r })
		default: // Reassign: to a spare, else merged into a neighbour
			if spare := firstSpare(next, byID); spare != "" {
				p.PrimaryNodeID, p.ActiveOwner = spare, spare
				p.ReplicaNodeIDs = slices.DeleteFunc(p.ReplicaNodeIDs, func(id NodeID) bool { return id == spare })
			} else {
				p.PrimaryNodeID, p.ActiveOwner = "", ""
			}
		}
	}
	next.Partitions = mergeOrphans(next.Partitions)
	if len(next.Partitions) == 0 {
		return nil // no live owner left at all: keep the map rather than plan nothing
	}
	// Replica slots: spares fill the partitions short of rf-1 replicas.
	for i := range next.Partitions {
		p := &next.Partitions[i]
		owner := p.ActiveOwner
		p.Demoted = slices.DeleteFunc(p.Demoted, func(id NodeID) bool { return id == owner })
		if len(p.Demoted) == 0 {
			p.Demoted = nil
		}
		for len(p.ReplicaNodeIDs) < rf-1 {
			spare := firstSpare(next, byID)
			if spare == "" {
				break
			}
			p.ReplicaNodeIDs = append(p.ReplicaNodeIDs, spare)
			changed = true
		}
	}
	if !changed {
		return nil
	}
	next.SegmentToPartition = make([]int, next.TotalSegments)
	for i := range next.Partitions {
		p := &next.Partitions[i]
		p.ID = i
		for s := p.FirstSegment; s <= p.LastSegment; s++ {
			next.SegmentToPartition[s] = i
		}
	}
	next.Version = cur.Version + 1
	next.TopologyVersion = cur.TopologyVersion + 1
	if next.Validate() != nil {
		return nil
	}
	return next
}

// OrphanHeir is the copy that takes a partition whose active owner left
// the map (pure): one of its established copies — its replicas and its
// preferred primary, never a copy a migration is still building — that
// has not departed itself and is still a member of the map (inMap); ""
// when none is left (Reassign). A live copy first, then one only away
// (suspected, unreachable: inside its member grace), each time an
// undemoted one first, in the map's order.
//
// The failures it prevents (issue #16, TestLiveMigrationFaults lost whole
// partitions in a slow run): a partition a failover had moved to its
// replica keeps its former owner as preferred primary, not as a replica —
// looking at the replicas alone found no copy, and a lost new owner sent
// the range to an empty spare or merged it into a neighbour whose owner
// held none of it, which then replaced the primary's copy by its
// emptiness. And a copy that is only away holds the data as surely as an
// away owner does (failover.AbsentOwner): reassigning past it turns a
// hiccup into data loss; given to it, the partition is Unavailable until
// it answers, or is reassigned once it is lost too.
func OrphanHeir(p *Partition, byID map[NodeID]MemberView, inMap func(NodeID) bool) NodeID {
	var copies []NodeID
	for _, id := range append(slices.Clone(p.ReplicaNodeIDs), p.PrimaryNodeID) {
		if id != "" && id != p.ActiveOwner && !slices.Contains(p.Incoming, id) && !slices.Contains(copies, id) {
			copies = append(copies, id)
		}
	}
	for _, alive := range []bool{true, false} {
		for _, demoted := range []bool{false, true} {
			for _, id := range copies {
				v, known := byID[id]
				if slices.Contains(p.Demoted, id) != demoted || (known && v.State.MapAffecting()) || !inMap(id) {
					continue
				}
				if (known && v.State == MemberAlive) == alive {
					return id
				}
			}
		}
	}
	return ""
}

// firstLiveReplica is the first of p's replicas that is alive.
func firstLiveReplica(p *Partition, byID map[NodeID]MemberView) NodeID {
	for _, id := range p.ReplicaNodeIDs {
		if v, ok := byID[id]; ok && v.State == MemberAlive {
			return id
		}
	}
	return ""
}

// firstSpare is the first live member (by id) in no partition group.
func firstSpare(m *PartitionMap, byID map[NodeID]MemberView) NodeID {
	used := map[NodeID]bool{}
	for _, p := range m.Partitions {
		used[p.PrimaryNodeID], used[p.ActiveOwner] = true, true
		for _, r := range p.ReplicaNodeIDs {
			used[r] = true
		}
		for _, r := range p.Incoming {
			used[r] = true
		}
	}
	for _, n := range m.Nodes {
		if v, ok := byID[n.ID]; ok && v.State == MemberAlive && !used[n.ID] {
			return n.ID
		}
	}
	return ""
}

// mergeOrphans folds every ownerless partition's segment range into a
// neighbour with an owner (the previous one when there is one), keeping
// ranges contiguous and the neighbour's identity.
func mergeOrphans(ps []Partition) []Partition {
	out := make([]Partition, 0, len(ps))
	pendingFirst := -1 // first segment of orphans waiting for a next owner
	for _, p := range ps {
		switch {
		case p.ActiveOwner == "" && len(out) > 0:
			out[len(out)-1].LastSegment = p.LastSegment
		case p.ActiveOwner == "":
			if pendingFirst < 0 {
				pendingFirst = p.FirstSegment
			}
		default:
			if pendingFirst >= 0 {
				p.FirstSegment, pendingFirst = pendingFirst, -1
			}
			out = append(out, p)
		}
	}
	return out
}

// ErrOwnerAway: a rebalance is refused while a partition's only copy is on
// an owner that is away (suspected or unreachable, inside the member
// grace): the plan would move the partition to a live member, empty, while
// its data may come back a moment later (failover.AbsentOwner).
var ErrOwnerAway = errors.New("cluster: a partition's owner is away and holds its only copy")

// Presence is what the tracked members say of node id (failover.OwnerPresence):
// alive, gone (lost, evicted, decommissioned), else away — a member the
// tracker does not know is never guessed gone.
func Presence(id NodeID, byID map[NodeID]MemberView) failover.OwnerPresence {
	m, ok := byID[id]
	if !ok {
		return failover.OwnerAway
	}
	return StatePresence(m.State)
}

// StatePresence maps a member state onto failover.OwnerPresence.
func StatePresence(s MemberState) failover.OwnerPresence {
	switch {
	case s == MemberAlive:
		return failover.OwnerAlive
	case s.MapAffecting():
		return failover.OwnerGone
	}
	return failover.OwnerAway
}

// HeldPartitions checks cur against the members with failover.AbsentOwner:
// an error wrapping ErrOwnerAway names every partition that must stay with
// an away owner (no live copy), nil when none must.
func HeldPartitions(cur *PartitionMap, members []MemberView) error {
	if cur == nil {
		return nil
	}
	byID := make(map[NodeID]MemberView, len(members))
	for _, m := range members {
		byID[m.Info.ID] = m
	}
	var held []string
	for _, p := range cur.Partitions {
		if p.ActiveOwner == "" {
			continue
		}
		if failover.AbsentOwner(Presence(p.ActiveOwner, byID), firstLiveReplica(&p, byID) != "") == failover.HoldUnavailable {
			held = append(held, fmt.Sprintf("partition %d on %s (%s)", p.ID, p.ActiveOwner, byID[p.ActiveOwner].State))
		}
	}
	if len(held) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %v; retry once it is back, or once it is lost (member grace) or evicted", ErrOwnerAway, held)
}

// Rebalance re-plans the map over every live member with the planner
// (sticky: a live owner keeps the segments it can keep). Segments that change
// owner start EMPTY on their new owner — with RF 1 and no data migration
// yet, their data stays behind on the old owner, unreachable. It is an
// operator's decision, never taken automatically. Nil when nothing changes.
func Rebalance(cur *PartitionMap, members []MemberView, partitions, rf int, newIdentity func() string) *PartitionMap {
	if cur == nil {
		return nil
	}
	var live []NodeInfo
	for _, m := range members {
		if m.State == MemberAlive {
			live = append(live, m.Info)
		}
	}
	next := Plan(PlanInput{Members: live, TotalSegments: cur.TotalSegments, Partitions: partitions, RF: rf,
		Previous: cur, Store: cur.Store, Cluster: cur.ClusterID, NewIdentity: newIdentity})
	if next == nil || sameLayout(cur, next) {
		return nil
	}
	next.Version = cur.Version + 1
	next.TopologyVersion = cur.TopologyVersion + 1
	return next
}

func sameLayout(a, b *PartitionMap) bool {
	if len(a.Partitions) != len(b.Partitions) || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	for i := range a.Nodes {
		if a.Nodes[i] != b.Nodes[i] {
			return false
		}
	}
	for i := range a.Partitions {
		pa, pb := a.Partitions[i], b.Partitions[i]
		if pa.FirstSegment != pb.FirstSegment || pa.LastSegment != pb.LastSegment || pa.ActiveOwner != pb.ActiveOwner ||
			!slices.Equal(pa.ReplicaNodeIDs, pb.ReplicaNodeIDs) {
			return false
		}
	}
	return true
}
