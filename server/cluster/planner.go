package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"slices"
)

// PlanInput is everything the planner looks at.
type PlanInput struct {
	Members       []NodeInfo // the live members to plan with
	TotalSegments int
	// Partitions is the number of partitions; 0 = one per member with
	// RF 1 (R-CLU-7), one per RF members otherwise, so that every
	// partition can get its RF-1 replicas (groups are disjoint).
	Partitions int
	RF         int // replication factor, ≥ 1
	// Previous is the map in force, if any: its live serving owners stay in
	// place (sticky placement) and its partition identities survive.
	Previous *PartitionMap
	Store    string
	Cluster  string
	// NewIdentity mints partition identities; nil = random. Injected so
	// tests are deterministic.
	NewIdentity func() string
}

// Plan is the DesiredMapPlanner (R-CLU-4), a pure function of its input:
//   - segments split into balanced contiguous ranges, the first partitions
//     taking the remainder;
//   - disjoint groups: the first members (in id order) become distinct
//     primaries, the rest fill replica slots round-robin, so no node is in
//     two partition groups;
//   - sticky placement: a partition whose previous active owner is still a
//     member keeps it as primary and owner, and keeps its previous replicas
//     while they are free members (every change of placement is a data
//     move).
//
// The caller assigns Version and TopologyVersion. Plan never returns an
// invalid map: with too few members for the partitions it plans fewer
// partitions.
func Plan(in PlanInput) *PartitionMap {
	members := slices.Clone(in.Members)
	slices.SortFunc(members, func(a, b NodeInfo) int {
		switch {
		case a.ID < b.ID:
			return -1
		case a.ID > b.ID:
			return 1
		}
		return 0
	})
	rf := max(in.RF, 1)
	nparts := in.Partitions
	if nparts <= 0 {
		nparts = max(len(members)/rf, 1)
	}
	nparts = min(nparts, len(members), in.TotalSegments)
	if nparts == 0 {
		return nil
	}
	newID := in.NewIdentity
	if newID == nil {
		newID = randomIdentity
	}
	m := &PartitionMap{TotalSegments: in.TotalSegments, Store: in.Store, ClusterID: in.Cluster, Nodes: members,
		SegmentToPartition: make([]int, in.TotalSegments), Partitions: make([]Partition, nparts)}

	// Balanced contiguous ranges.
	base, extra := in.TotalSegments/nparts, in.TotalSegments%nparts
	next := 0
	for p := range nparts {
		size := base
		if p < extra {
			size++
		}
		m.Partitions[p] = Partition{ID: p, FirstSegment: next, LastSegment: next + size - 1}
		for s := next; s < next+size; s++ {
			m.SegmentToPartition[s] = p
		}
		next += size
	}

	// Primaries: sticky owners first, then the remaining members in order.
	isMember := map[NodeID]bool{}
	for _, n := range members {
		isMember[n.ID] = true
	}
	taken := map[NodeID]bool{}
	if prev := in.Previous; prev != nil && prev.TotalSegments == in.TotalSegments {
		for p := range m.Partitions {
			owner := stickyOwner(prev, &m.Partitions[p])
			if owner != "" && isMember[owner] && !taken[owner] {
				m.Partitions[p].PrimaryNodeID = owner
				m.Partitions[p].Identity = identityCovering(prev, &m.Partitions[p])
				taken[owner] = true
			}
		}
	}
	// Sticky replicas: a sticky owner keeps the copies it had, when its
	// whole range had the same ones and they are free members — a
	// re-plan moves no copy it does not have to (every move is a copy).
	if prev := in.Previous; prev != nil && prev.TotalSegments == in.TotalSegments {
		for p := range m.Partitions {
			if m.Partitions[p].PrimaryNodeID == "" {
				continue
			}
			for _, r := range stickyReplicas(prev, &m.Partitions[p]) {
				if isMember[r] && !taken[r] && len(m.Partitions[p].ReplicaNodeIDs) < rf-1 {
					m.Partitions[p].ReplicaNodeIDs = append(m.Partitions[p].ReplicaNodeIDs, r)
					taken[r] = true
				}
			}
		}
	}
	free := make([]NodeID, 0, len(members))
	for _, n := range members {
		if !taken[n.ID] {
			free = append(free, n.ID)
		}
	}
	for p := range m.Partitions {
		if m.Partitions[p].PrimaryNodeID == "" {
			m.Partitions[p].PrimaryNodeID, free = free[0], free[1:]
		}
		if m.Partitions[p].Identity == "" {
			m.Partitions[p].Identity = newID()
		}
	}
	// Replicas: round-robin over the members left, up to RF-1 per partition.
	for slot := 0; slot < rf-1 && len(free) > 0; slot++ {
		for p := range m.Partitions {
			if len(free) == 0 {
				break
			}
			if len(m.Partitions[p].ReplicaNodeIDs) > slot {
				continue
			}
			m.Partitions[p].ReplicaNodeIDs = append(m.Partitions[p].ReplicaNodeIDs, free[0])
			free = free[1:]
		}
	}
	for p := range m.Partitions {
		m.Partitions[p].ActiveOwner = m.Partitions[p].PrimaryNodeID
	}
	return m
}

// stickyOwner is the previous active owner of the segments a new partition
// covers, when they all had the same owner.
func stickyOwner(prev *PartitionMap, p *Partition) NodeID {
	owner := prev.OwnerOfSegment(p.FirstSegment)
	for s := p.FirstSegment + 1; s <= p.LastSegment; s++ {
		if prev.OwnerOfSegment(s) != owner {
			return ""
		}
	}
	return owner
}

// stickyReplicas are the replicas the previous map gave every segment of
// p's range, when they were the same across it (nil otherwise).
func stickyReplicas(prev *PartitionMap, p *Partition) []NodeID {
	idx := prev.SegmentToPartition[p.FirstSegment]
	if idx < 0 || idx >= len(prev.Partitions) {
		return nil
	}
	want := prev.Partitions[idx].ReplicaNodeIDs
	for s := p.FirstSegment + 1; s <= p.LastSegment; s++ {
		j := prev.SegmentToPartition[s]
		if j < 0 || j >= len(prev.Partitions) || !slices.Equal(prev.Partitions[j].ReplicaNodeIDs, want) {
			return nil
		}
	}
	return want
}

func identityCovering(prev *PartitionMap, p *Partition) string {
	idx := prev.SegmentToPartition[p.FirstSegment]
	if idx >= 0 && idx < len(prev.Partitions) {
		return prev.Partitions[idx].Identity
	}
	return ""
}

func randomIdentity() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
