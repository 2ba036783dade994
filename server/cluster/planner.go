package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
)

// PlanInput is everything the planner looks at.
type PlanInput struct {
	Members       []NodeInfo // the live members to plan with
	TotalSegments int
	// Partitions is the least number of partitions the map is cut into
	// (the largest ranges are halved until it is reached); 0 = as many as
	// the placement needs: one per run of segments with the same copies.
	Partitions int
	RF         int // replication factor, ≥ 1
	// Previous is the map in force, if any: segments keep their live owner
	// and their live copies as far as balance allows (every change of a
	// copy is a data move), and partition identities survive.
	Previous *PartitionMap
	Store    string
	Cluster  string
	// NewIdentity mints partition identities; nil = random. Injected so
	// tests are deterministic.
	NewIdentity func() string
}

// Plan is the DesiredMapPlanner (R-CLU-4, R-CLU-7), a pure function of its
// input: the same members and previous map give the same plan on every
// leader. It places every segment, then cuts the map into partitions:
//
//   - owners are balanced: every member is the active owner of
//     ⌊S/N⌋ or ⌈S/N⌉ of the S segments, so writes and reads spread over
//     all nodes;
//   - owners move the minimum: a segment keeps its previous owner while
//     that owner is a member under its share; the ⌈S/N⌉ shares go to the
//     members that already own the most. A joining node therefore takes
//     exactly its share (from the tails of the others' ranges), and a
//     leaving node's segments — and only those — go to the others,
//     preferably to the node that already holds a copy (a promotion moves
//     no data);
//   - each segment gets RF-1 replicas, never on its owner: previous copies
//     (replicas, or the previous owner) are kept while their node is under
//     its replica share, the rest go to the least loaded node that keeps
//     each owner's replicas spread over the other nodes (a failure's load
//     spreads too), preferring another host and another zone than the
//     partition's other copies (PlacementWarnings says when that could not
//     be met);
//   - partitions are the maximal contiguous runs of segments with the same
//     owner and replicas: a node may own several ranges.
//
// The caller assigns Version and TopologyVersion. Nil when there is no
// member or no segment.
func Plan(in PlanInput) *PartitionMap {
	members := slices.Clone(in.Members)
	slices.SortFunc(members, func(a, b NodeInfo) int { return strings.Compare(string(a.ID), string(b.ID)) })
	n, segs := len(members), in.TotalSegments
	if n == 0 || segs <= 0 {
		return nil
	}
	prev := in.Previous
	if prev != nil && (prev.TotalSegments != segs || len(prev.SegmentToPartition) != segs) {
		prev = nil
	}
	copies := min(max(in.RF, 1), n)
	pl := placer{members: members, segs: segs, prev: prev, index: map[NodeID]int{}}
	for i, m := range members {
		pl.index[m.ID] = i
	}
	owners := pl.owners()
	replicas := pl.replicas(owners, copies-1)
	for _, r := range replicas {
		slices.Sort(r) // by id: equal groups form one run
	}

	newID := in.NewIdentity
	if newID == nil {
		newID = randomIdentity
	}
	m := &PartitionMap{TotalSegments: segs, Store: in.Store, ClusterID: in.Cluster, Nodes: members}
	type run struct{ first, last int }
	var runs []run
	for s := range segs {
		if s > 0 && owners[s] == owners[s-1] && slices.Equal(replicas[s], replicas[s-1]) {
			runs[len(runs)-1].last = s
			continue
		}
		runs = append(runs, run{s, s})
	}
	// At least in.Partitions partitions: halve the largest run (the first
	// of equals) until there are enough.
	for len(runs) < min(in.Partitions, segs) {
		big := 0
		for i, r := range runs {
			if r.last-r.first > runs[big].last-runs[big].first {
				big = i
			}
		}
		r := runs[big]
		mid := r.first + (r.last-r.first+1)/2
		runs = slices.Insert(runs, big+1, run{mid, r.last})
		runs[big].last = mid - 1
	}
	usedIdentity := map[string]bool{}
	for i, r := range runs {
		owner := members[owners[r.first]].ID
		var reps []NodeID
		for _, ri := range replicas[r.first] {
			reps = append(reps, members[ri].ID)
		}
		slices.Sort(reps)
		// A run keeps the identity of the previous partition its first
		// segment belonged to, once: identities stay unique.
		identity := ""
		if prev != nil {
			if j := prev.SegmentToPartition[r.first]; j >= 0 && j < len(prev.Partitions) && !usedIdentity[prev.Partitions[j].Identity] {
				identity = prev.Partitions[j].Identity
			}
		}
		for try := 0; identity == "" || usedIdentity[identity]; try++ {
			identity = newID()
			if try > 8 && usedIdentity[identity] {
				identity += fmt.Sprint("-", i) // a generator that repeats itself
			}
		}
		usedIdentity[identity] = true
		m.Partitions = append(m.Partitions, Partition{ID: i, Identity: identity, PrimaryNodeID: owner, ActiveOwner: owner,
			ReplicaNodeIDs: reps, FirstSegment: r.first, LastSegment: r.last})
	}
	renumber(m)
	return m
}

// placer holds one planning run's state; members are sorted by id and
// referred to by index.
type placer struct {
	members []NodeInfo
	segs    int
	prev    *PartitionMap
	index   map[NodeID]int
}

// prevOwner is the member index of segment s's previous active owner, -1
// when there is none or it is not a member any more.
func (pl *placer) prevOwner(s int) int {
	if pl.prev == nil {
		return -1
	}
	if i, ok := pl.index[pl.prev.OwnerOfSegment(s)]; ok {
		return i
	}
	return -1
}

// prevReplicas are the member indexes of segment s's previous replicas,
// in the previous map's order.
func (pl *placer) prevReplicas(s int) []int {
	if pl.prev == nil {
		return nil
	}
	j := pl.prev.SegmentToPartition[s]
	if j < 0 || j >= len(pl.prev.Partitions) {
		return nil
	}
	var out []int
	for _, id := range pl.prev.Partitions[j].ReplicaNodeIDs {
		if i, ok := pl.index[id]; ok {
			out = append(out, i)
		}
	}
	return out
}

// owners places every segment's active owner (member index per segment).
func (pl *placer) owners() []int {
	n, segs := len(pl.members), pl.segs
	owner := make([]int, segs)
	count := make([]int, n)
	for s := range owner {
		owner[s] = pl.prevOwner(s)
		if owner[s] >= 0 {
			count[owner[s]]++
		}
	}
	// Shares: the ⌈S/N⌉ ones go to the members that own the most already
	// (the fewest moves), then by id.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return count[b] - count[a] })
	share := make([]int, n)
	for k, i := range order {
		share[i] = segs / n
		if k < segs%n {
			share[i]++
		}
	}
	// An owner above its share releases the surplus from its smallest
	// ranges first (fewer, larger ranges remain), each from its tail.
	for i := range n {
		surplus := count[i] - share[i]
		if surplus <= 0 {
			continue
		}
		type run struct{ first, last int }
		var runs []run
		for s := range segs {
			if owner[s] != i {
				continue
			}
			if len(runs) > 0 && runs[len(runs)-1].last == s-1 {
				runs[len(runs)-1].last = s
			} else {
				runs = append(runs, run{s, s})
			}
		}
		slices.SortStableFunc(runs, func(a, b run) int { return (a.last - a.first) - (b.last - b.first) })
		for _, r := range runs {
			for s := r.last; s >= r.first && surplus > 0; s-- {
				owner[s] = -1
				count[i]--
				surplus--
			}
		}
	}
	// Free segments go to members under their share: one that already
	// holds a copy of the segment (a promotion, no data to move), else the
	// owner of the segment before it (one range rather than two), else the
	// member furthest below its share.
	for s := range segs {
		if owner[s] >= 0 {
			continue
		}
		best, bestKey := -1, [3]int{}
		for i := range n {
			if count[i] >= share[i] {
				continue
			}
			key := [3]int{0, 0, share[i] - count[i]}
			if slices.Contains(pl.prevReplicas(s), i) {
				key[0] = 1
			}
			if s > 0 && owner[s-1] == i {
				key[1] = 1
			}
			if best < 0 || keyGreater(key, bestKey) {
				best, bestKey = i, key
			}
		}
		owner[s] = best
		count[best]++
	}
	return owner
}

func keyGreater(a, b [3]int) bool {
	for k := range a {
		if a[k] != b[k] {
			return a[k] > b[k]
		}
	}
	return false
}

// replicas places each segment's perReplicas replicas (member indexes).
func (pl *placer) replicas(owner []int, perSegment int) [][]int {
	n, segs := len(pl.members), pl.segs
	out := make([][]int, segs)
	if perSegment <= 0 {
		return out
	}
	owned := make([]int, n)
	for _, o := range owner {
		owned[o]++
	}
	// A node's replica share, and the share of one owner's replicas any
	// one other node takes (so that a failure's load spreads).
	nodeCap, nodeFloor := ceilDiv(perSegment*segs, n), perSegment*segs/n
	pairCap := make([]int, n)
	for o := range n {
		pairCap[o] = ceilDiv(owned[o]*perSegment, max(n-1, 1))
	}
	load := make([]int, n)
	pair := make([][]int, n)
	for o := range pair {
		pair[o] = make([]int, n)
	}
	zoneLevel, hostLevel := pl.diversityLevels(perSegment + 1)
	conflicts := func(s, c int) (zone, host int) {
		for _, x := range append([]int{owner[s]}, out[s]...) {
			a, b := pl.members[c], pl.members[x]
			if a.Zone != "" && a.Zone == b.Zone {
				zone++
			}
			if a.Host != "" && a.Host == b.Host {
				host++
			}
		}
		return zone, host
	}
	add := func(s, c int) {
		out[s] = append(out[s], c)
		load[c]++
		pair[owner[s]][c]++
	}
	// Sticky: a node that holds segment s (a replica, or its previous
	// owner) keeps it while under its share and not against a diversity
	// rule that can be met. Segments whose owner changes go first: their
	// new owner holds nothing yet, so a holder kept there saves a copy the
	// old owners' own segments would not need (they keep theirs anyway).
	order := make([]int, 0, segs)
	for s := range segs {
		if pl.prevOwner(s) != owner[s] {
			order = append(order, s)
		}
	}
	for s := range segs {
		if pl.prevOwner(s) == owner[s] {
			order = append(order, s)
		}
	}
	for _, s := range order {
		holders := pl.prevReplicas(s)
		if o := pl.prevOwner(s); o >= 0 {
			holders = append(holders, o)
		}
		for _, h := range holders {
			if len(out[s]) == perSegment || h == owner[s] || slices.Contains(out[s], h) || load[h] >= nodeCap {
				continue
			}
			if z, hs := conflicts(s, h); (zoneLevel && z > 0) || (hostLevel && hs > 0) {
				continue
			}
			add(s, h)
		}
	}
	// The rest: the best candidate by, in order, zone and host diversity,
	// the node's replica share, the owner's spread, the same node as the
	// segment before (one range rather than two), the lightest load, id.
	for s := range segs {
		for len(out[s]) < perSegment {
			best, bestKey := -1, [8]int{}
			for c := range n {
				if c == owner[s] || slices.Contains(out[s], c) {
					continue
				}
				z, h := conflicts(s, c)
				key := [8]int{z, h, b2i(load[c] >= nodeCap), b2i(load[c] >= nodeFloor), b2i(pair[owner[s]][c] >= pairCap[owner[s]]), 1, load[c], c}
				if s > 0 && owner[s-1] == owner[s] && slices.Contains(out[s-1], c) {
					key[5] = 0
				}
				if best < 0 || slices.Compare(key[:], bestKey[:]) < 0 {
					best, bestKey = c, key
				}
			}
			if best < 0 {
				break // fewer members than copies: Plan clamps, so not reached
			}
			add(s, best)
		}
	}
	// Balance: while one node holds two replicas more than another, the
	// most loaded hands one (from its last segments: ranges stay whole) to
	// the least loaded, where that breaks no diversity the segment has.
	stuck := map[[2]int]bool{}
	for {
		hi, lo := -1, -1
		for c := range n {
			if hi < 0 || load[c] > load[hi] {
				hi = c
			}
			if lo < 0 || load[c] < load[lo] {
				lo = c
			}
		}
		if load[hi]-load[lo] <= 1 || stuck[[2]int{hi, lo}] {
			break
		}
		moved := false
		for s := segs - 1; s >= 0 && !moved; s-- {
			k := slices.Index(out[s], hi)
			if k < 0 || owner[s] == lo || slices.Contains(out[s], lo) {
				continue
			}
			out[s] = slices.Delete(out[s], k, k+1)
			zh, hh := conflicts(s, hi)
			zl, hl := conflicts(s, lo)
			if zl > zh || hl > hh {
				out[s] = slices.Insert(out[s], k, hi)
				continue
			}
			out[s] = slices.Insert(out[s], k, lo)
			load[hi]--
			load[lo]++
			moved = true
		}
		if !moved {
			stuck[[2]int{hi, lo}] = true
		}
	}
	return out
}

// diversityLevels says which placement rules can be met with copies
// copies per partition: copies in distinct zones (when members carry
// zones) and on distinct hosts.
func (pl *placer) diversityLevels(copies int) (zone, host bool) {
	zones, hosts := map[string]bool{}, map[string]bool{}
	for _, m := range pl.members {
		if m.Zone != "" {
			zones[m.Zone] = true
		}
		if m.Host != "" {
			hosts[m.Host] = true
		}
	}
	return len(zones) >= copies, len(hosts) >= copies
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// PlacementWarnings says where map m falls short of R-CLU-7 at
// replication factor rf: fewer members than copies, or partitions whose
// copies share a host or a zone (one failure takes them together). Empty
// when the placement is as safe as the members allow to be, and as asked.
// Pure; the leader logs it with every plan and /v1/cluster shows it.
func PlacementWarnings(m *PartitionMap, rf int) []string {
	if m == nil {
		return nil
	}
	var out []string
	if rf > len(m.Nodes) {
		out = append(out, fmt.Sprintf("replication factor %d with %d members: partitions have only %d copies", rf, len(m.Nodes), len(m.Nodes)))
	}
	zoned, unzoned := 0, 0
	for _, n := range m.Nodes {
		if n.Zone != "" {
			zoned++
		} else {
			unzoned++
		}
	}
	if zoned > 0 && unzoned > 0 {
		out = append(out, fmt.Sprintf("%d of %d members carry no --zone: their copies are not spread by zone", unzoned, len(m.Nodes)))
	}
	for _, level := range []struct {
		name string
		of   func(NodeInfo) string
	}{{"host", func(n NodeInfo) string { return n.Host }}, {"zone", func(n NodeInfo) string { return n.Zone }}} {
		shared, segments := 0, 0
		for _, p := range m.Partitions {
			seen := map[string]bool{}
			dup := false
			for _, id := range append([]NodeID{p.ActiveOwner}, p.ReplicaNodeIDs...) {
				info, ok := m.Node(id)
				v := level.of(info)
				if !ok || v == "" {
					continue
				}
				dup = dup || seen[v]
				seen[v] = true
			}
			if dup {
				shared++
				segments += p.LastSegment - p.FirstSegment + 1
			}
		}
		if shared > 0 {
			out = append(out, fmt.Sprintf("%d partitions (%d segments) keep two copies in one %s: not enough distinct %ss for %d copies, or no room left on them",
				shared, segments, level.name, level.name, min(rf, len(m.Nodes))))
		}
	}
	return out
}

func randomIdentity() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
