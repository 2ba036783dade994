package cluster

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// planStats is what a plan gives every node, and what changed from prev.
type planStats struct {
	owned, replicated map[NodeID]int
	// ownerMoves counts segments whose active owner changed; copiesBuilt
	// the (segment, node) copies the plan has that prev had nowhere.
	ownerMoves, copiesBuilt int
}

func statsOf(prev, m *PartitionMap) planStats {
	st := planStats{owned: map[NodeID]int{}, replicated: map[NodeID]int{}}
	for _, n := range m.Nodes {
		st.owned[n.ID], st.replicated[n.ID] = 0, 0
	}
	for s := range m.TotalSegments {
		p := m.Partitions[m.SegmentToPartition[s]]
		st.owned[p.ActiveOwner]++
		for _, r := range p.ReplicaNodeIDs {
			st.replicated[r]++
		}
		if prev == nil {
			continue
		}
		q := prev.Partitions[prev.SegmentToPartition[s]]
		if q.ActiveOwner != p.ActiveOwner {
			st.ownerMoves++
		}
		for _, id := range append([]NodeID{p.ActiveOwner}, p.ReplicaNodeIDs...) {
			if id != q.ActiveOwner && !slices.Contains(q.ReplicaNodeIDs, id) {
				st.copiesBuilt++
			}
		}
	}
	return st
}

func spread(counts map[NodeID]int) (lo, hi int) {
	first := true
	for _, c := range counts {
		if first {
			lo, hi, first = c, c, false
		}
		lo, hi = min(lo, c), max(hi, c)
	}
	return lo, hi
}

func TestPlan(t *testing.T) {
	t.Run("3 nodes RF 1: one balanced range each (no hot node owns a double share)", func(t *testing.T) {
		m := Plan(PlanInput{Members: members("a", "b", "c"), TotalSegments: 256, RF: 1, NewIdentity: seqIdentity()})
		if got := owners(m); got != "[a[0-85] b[86-170] c[171-255]]" {
			t.Fatalf("layout %s", got)
		}
	})
	t.Run("members are ordered by id: every leader plans the same map from the same members", func(t *testing.T) {
		a := Plan(PlanInput{Members: members("c", "a", "d", "b"), TotalSegments: 256, RF: 2, NewIdentity: seqIdentity()})
		b := Plan(PlanInput{Members: members("b", "d", "a", "c"), TotalSegments: 256, RF: 2, NewIdentity: seqIdentity()})
		if groups(a) != groups(b) || a.Nodes[0].ID+a.Nodes[3].ID != "ad" {
			t.Fatalf("two plans of the same members differ:\n%s\n%s", groups(a), groups(b))
		}
	})
	t.Run("3 nodes RF 2: every node owns a third and replicates a third (no idle spare)", func(t *testing.T) {
		m := Plan(PlanInput{Members: members("a", "b", "c"), TotalSegments: 256, RF: 2, NewIdentity: seqIdentity()})
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		st := statsOf(nil, m)
		for _, id := range []NodeID{"a", "b", "c"} {
			if st.owned[id] < 85 || st.owned[id] > 86 || st.replicated[id] < 85 || st.replicated[id] > 86 {
				t.Fatalf("node %s owns %d and replicates %d of 256: %s", id, st.owned[id], st.replicated[id], groups(m))
			}
		}
	})
	t.Run("a failure's load spreads: each owner's replicas are split evenly over the other nodes", func(t *testing.T) {
		for _, rf := range []int{2, 3} {
			m := Plan(PlanInput{Members: members("a", "b", "c", "d", "e"), TotalSegments: 256, RF: rf, NewIdentity: seqIdentity()})
			pair := map[[2]NodeID]int{}
			owned := map[NodeID]int{}
			for _, p := range m.Partitions {
				size := p.LastSegment - p.FirstSegment + 1
				owned[p.ActiveOwner] += size
				for _, r := range p.ReplicaNodeIDs {
					pair[[2]NodeID{p.ActiveOwner, r}] += size
				}
			}
			for _, o := range []NodeID{"a", "b", "c", "d", "e"} {
				fair := (owned[o]*(rf-1) + 3) / 4 // ⌈owned·(RF-1)/(N-1)⌉
				for _, r := range []NodeID{"a", "b", "c", "d", "e"} {
					if r != o && (pair[[2]NodeID{o, r}] > fair+1 || pair[[2]NodeID{o, r}] < fair-2) {
						t.Fatalf("RF %d: %s holds %d of %s's %d segments (fair %d): its loss would land on few nodes; %s",
							rf, r, pair[[2]NodeID{o, r}], o, owned[o], fair, groups(m))
					}
				}
			}
		}
	})
	t.Run("RF above the member count: fewer copies, never a node twice in a partition, and a warning says so", func(t *testing.T) {
		m := Plan(PlanInput{Members: members("a", "b"), TotalSegments: 8, RF: 3, NewIdentity: seqIdentity()})
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		if got := groups(m); got != "[a[b][0-3] b[a][4-7]]" {
			t.Fatalf("layout %s", got)
		}
		if w := strings.Join(PlacementWarnings(m, 3), "; "); !strings.Contains(w, "replication factor 3 with 2 members") {
			t.Fatalf("warnings %q", w)
		}
	})
	t.Run("--partitions asks for more ranges: the largest are halved, owners unchanged", func(t *testing.T) {
		m := Plan(PlanInput{Members: members("a", "b"), TotalSegments: 8, Partitions: 5, RF: 1, NewIdentity: seqIdentity()})
		if got := owners(m); got != "[a[0-0] a[1-1] a[2-3] b[4-5] b[6-7]]" {
			t.Fatalf("layout %s", got)
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("no member plans nothing", func(t *testing.T) {
		if Plan(PlanInput{TotalSegments: 256}) != nil {
			t.Fatal("a map with no owner")
		}
	})
}

// TestPlanMovesTheMinimum: every segment that changes owner or gains a
// copy is data the cluster streams while serving.
func TestPlanMovesTheMinimum(t *testing.T) {
	plan := func(prev *PartitionMap, rf int, ids ...string) *PartitionMap {
		t.Helper()
		m := Plan(PlanInput{Members: members(ids...), TotalSegments: 256, RF: rf, Previous: prev, NewIdentity: seqIdentity()})
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, rf := range []int{1, 2} {
		three := plan(nil, rf, "a", "b", "c")
		four := plan(three, rf, "a", "b", "c", "d")
		t.Run(fmt.Sprintf("RF %d: 3→4 nodes moves ≤ 65 segments (not a third of them)", rf), func(t *testing.T) {
			st := statsOf(three, four)
			if st.ownerMoves > 65 || st.owned["d"] != 64 {
				t.Fatalf("%d segments changed owner, d owns %d", st.ownerMoves, st.owned["d"])
			}
			// The only copies built are the joiner's: its owned share and
			// its replica share.
			if st.copiesBuilt != st.owned["d"]+st.replicated["d"] {
				t.Fatalf("%d copies built, the joiner holds %d", st.copiesBuilt, st.owned["d"]+st.replicated["d"])
			}
		})
		five := plan(four, rf, "a", "b", "c", "d", "e")
		t.Run(fmt.Sprintf("RF %d: 4→5 nodes moves ≤ 53 segments", rf), func(t *testing.T) {
			if st := statsOf(four, five); st.ownerMoves > 53 || st.copiesBuilt != st.owned["e"]+st.replicated["e"] {
				t.Fatalf("%d segments changed owner, %d copies built; e owns %d and replicates %d",
					st.ownerMoves, st.copiesBuilt, st.owned["e"], st.replicated["e"])
			}
		})
		t.Run(fmt.Sprintf("RF %d: draining a node moves only its segments", rf), func(t *testing.T) {
			drained := plan(five, rf, "a", "b", "c", "e")
			before, after := statsOf(nil, five), statsOf(five, drained)
			if after.ownerMoves != before.owned["d"] || after.copiesBuilt != before.owned["d"]+before.replicated["d"] {
				t.Fatalf("%d owners moved and %d copies built; d owned %d and replicated %d",
					after.ownerMoves, after.copiesBuilt, before.owned["d"], before.replicated["d"])
			}
			for s := range 256 {
				if was := five.OwnerOfSegment(s); was != "d" && drained.OwnerOfSegment(s) != was {
					t.Fatalf("segment %d moved from %s, which stays", s, was)
				}
			}
		})
		t.Run(fmt.Sprintf("RF %d: a re-plan with the same members moves nothing", rf), func(t *testing.T) {
			again := plan(five, rf, "e", "d", "c", "b", "a")
			if groups(again) != groups(five) || NextMigrationStep(five, WantedGroups(again), 2, seqIdentity()).Kind != StepDone {
				t.Fatalf("re-plan changed the layout:\n%s\n%s", groups(five), groups(again))
			}
			for i := range again.Partitions {
				if again.Partitions[i].Identity != five.Partitions[i].Identity {
					t.Fatal("a kept partition lost its identity")
				}
			}
		})
	}
	t.Run("a serving owner a failover moved stays where it is", func(t *testing.T) {
		prev := Plan(PlanInput{Members: members("a", "b", "c"), TotalSegments: 12, RF: 1, NewIdentity: seqIdentity()})
		prev.Partitions[0].ActiveOwner = "c"
		prev.Partitions[2].ActiveOwner = "a"
		next := Plan(PlanInput{Members: members("a", "b", "c"), TotalSegments: 12, RF: 1, Previous: prev, NewIdentity: seqIdentity()})
		if got := owners(next); got != "[c[0-3] b[4-7] a[8-11]]" {
			t.Fatalf("sticky placement moved serving owners: %s", got)
		}
	})
	t.Run("a lost owner's segments go to the copy that holds them (a promotion, no data moved)", func(t *testing.T) {
		// After a failover: b owns everything with c as replica; a is
		// back with nothing. a and c take their shares, c's from the
		// segments it already holds.
		prev := mapOf(t, []string{"a", "b", "c"}, []string{"0-7", "b", "c"})
		next := Plan(PlanInput{Members: members("a", "b", "c"), TotalSegments: 8, RF: 2, Previous: prev, NewIdentity: seqIdentity()})
		st := statsOf(prev, next)
		if st.owned["a"] != 3 || st.owned["b"] != 3 || st.owned["c"] != 2 || st.ownerMoves != 5 {
			t.Fatalf("owners %v (%d moved): %s", st.owned, st.ownerMoves, groups(next))
		}
		// Lower bound: a holds nothing, so each of its copies is built;
		// b and c already hold all 8 segments.
		if st.copiesBuilt != st.owned["a"]+st.replicated["a"] {
			t.Fatalf("%d copies built for a's %d: %s", st.copiesBuilt, st.owned["a"]+st.replicated["a"], groups(next))
		}
	})
}

func zoned(spec ...string) []NodeInfo {
	// spec: "id/host/zone"
	out := make([]NodeInfo, len(spec))
	for i, s := range spec {
		f := strings.Split(s, "/")
		out[i] = NodeInfo{ID: NodeID(f[0]), Host: f[1], Zone: f[2]}
	}
	return out
}

func TestPlanDiversity(t *testing.T) {
	cases := []struct {
		name    string
		members []NodeInfo
		rf      int
		warn    string // a substring of the warnings, "" = none
	}{
		{"no partition has two copies on one host (a host failure loses one copy, not the partition)",
			zoned("a/h1/", "b/h1/", "c/h2/", "d/h2/"), 2, ""},
		{"no partition has two copies in one zone (a zone outage loses one copy)",
			zoned("a/h1/z1", "b/h2/z1", "c/h3/z2", "d/h4/z2", "e/h5/z3", "f/h6/z3"), 3, ""},
		{"uneven zones: still one copy per zone, even when balance suffers",
			zoned("a/h1/z1", "b/h2/z1", "c/h3/z1", "d/h4/z2"), 2, ""},
		{"two zones for three copies: the plan says it cannot be met",
			zoned("a/h1/z1", "b/h2/z1", "c/h3/z2", "d/h4/z2"), 3, "in one zone"},
		{"every node on one host: the plan says copies share it",
			zoned("a/h1/", "b/h1/", "c/h1/"), 2, "in one host"},
		{"some nodes carry no zone: the plan says they are not spread by zone",
			zoned("a/h1/z1", "b/h2/z2", "c/h3/"), 2, "carry no --zone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := Plan(PlanInput{Members: c.members, TotalSegments: 256, RF: c.rf, NewIdentity: seqIdentity()})
			if err := m.Validate(); err != nil {
				t.Fatal(err)
			}
			warn := strings.Join(PlacementWarnings(m, c.rf), "; ")
			if c.warn == "" && warn != "" || !strings.Contains(warn, c.warn) {
				t.Fatalf("warnings %q, want %q: %s", warn, c.warn, groups(m))
			}
			if c.warn != "" {
				return
			}
			for _, p := range m.Partitions {
				hosts, zones := map[string]bool{}, map[string]bool{}
				for _, id := range append([]NodeID{p.ActiveOwner}, p.ReplicaNodeIDs...) {
					n, _ := m.Node(id)
					if hosts[n.Host] || (n.Zone != "" && zones[n.Zone]) {
						t.Fatalf("partition %d has two copies on host %s / zone %s: %s", p.ID, n.Host, n.Zone, groups(m))
					}
					hosts[n.Host], zones[n.Zone] = true, true
				}
			}
		})
	}
}

// TestPlanProperties runs many join and leave sequences over 1..10 nodes
// at RF 1..3 and checks, at every step, what each property prevents:
// an invalid map (Validate), a hot node (owners within one segment,
// replicas within one), a partition short of copies or with two on one
// node, a join that moves more than the joiner's share, a leave that moves
// anything but the leaver's segments, and a re-plan that moves anything.
func TestPlanProperties(t *testing.T) {
	for _, segs := range []int{256, 12} { // 12: fewer segments than some shares
		planProperties(t, segs)
	}
}

func planProperties(t *testing.T, segs int) {
	rng := rand.New(rand.NewSource(12))
	joins, leaves := 0, 0
	built, bound := 0, 0 // copies built vs the least any balanced plan builds
	for rf := 1; rf <= 3; rf++ {
		for start := 1; start <= 10; start++ {
			next := 0
			var ids []string
			for range start {
				ids = append(ids, fmt.Sprintf("n%02d", next))
				next++
			}
			var prev *PartitionMap
			for step := range 12 {
				var left string
				joined := false
				if prev != nil {
					switch {
					case len(ids) == 1 || (len(ids) < 10 && rng.Intn(2) == 0):
						ids = append(ids, fmt.Sprintf("n%02d", next))
						next++
						joined = true
					default:
						k := rng.Intn(len(ids))
						left = ids[k]
						ids = slices.Delete(ids, k, k+1)
					}
				}
				in := PlanInput{Members: members(ids...), TotalSegments: segs, RF: rf, Previous: prev, NewIdentity: seqIdentity()}
				m := Plan(in)
				name := fmt.Sprintf("%d segments, RF %d, start %d, step %d, members %v", segs, rf, start, step, ids)
				if err := m.Validate(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				st := statsOf(prev, m)
				n := len(ids)
				if lo, hi := spread(st.owned); hi-lo > 1 || lo < segs/n {
					t.Fatalf("%s: owners unbalanced %v", name, st.owned)
				}
				if lo, hi := spread(st.replicated); hi-lo > 1 {
					t.Fatalf("%s: replicas unbalanced %v", name, st.replicated)
				}
				for _, p := range m.Partitions {
					if len(p.ReplicaNodeIDs) != min(rf, n)-1 {
						t.Fatalf("%s: partition %d has %d replicas", name, p.ID, len(p.ReplicaNodeIDs))
					}
				}
				if again := Plan(PlanInput{Members: members(ids...), TotalSegments: segs, RF: rf, Previous: prev, NewIdentity: seqIdentity()}); fmt.Sprintf("%+v", again) != fmt.Sprintf("%+v", m) {
					t.Fatalf("%s: the same input planned twice differs", name)
				}
				if replan := Plan(PlanInput{Members: members(ids...), TotalSegments: segs, RF: rf, Previous: m, NewIdentity: seqIdentity()}); groups(replan) != groups(m) {
					t.Fatalf("%s: a re-plan with the same members moves:\n%s\n%s", name, groups(m), groups(replan))
				}
				switch {
				case joined:
					joins++
					if limit := (segs+n-1)/n + 1; st.ownerMoves > limit {
						t.Fatalf("%s: a join moved %d segments (limit %d)", name, st.ownerMoves, limit)
					}
					// Everything the joiner holds is new; nothing else has to be.
					joiner := NodeID(ids[len(ids)-1])
					least := st.owned[joiner] + st.replicated[joiner]
					built, bound = built+st.copiesBuilt, bound+least
					if st.copiesBuilt > least+least/4+1 {
						t.Fatalf("%s: a join built %d copies, the joiner holds %d", name, st.copiesBuilt, least)
					}
				case left != "":
					leaves++
					before := statsOf(nil, prev)
					if st.ownerMoves != before.owned[NodeID(left)] {
						t.Fatalf("%s: %s left owning %d, %d segments moved", name, left, before.owned[NodeID(left)], st.ownerMoves)
					}
					// The leaver's copies are re-created elsewhere, no more
					// (fewer when the members left cannot hold RF copies).
					least := before.owned[NodeID(left)] + before.replicated[NodeID(left)]
					if n < rf {
						least = 0
					}
					built, bound = built+st.copiesBuilt, bound+least
					if st.copiesBuilt > least+least/4+1 {
						t.Fatalf("%s: a leave built %d copies, the leaver held %d\n%s\n%s", name, st.copiesBuilt, least, groups(prev), groups(m))
					}
				}
				prev = m
			}
		}
	}
	t.Logf("%d segments: %d joins and %d leaves checked; %d copies built where at least %d had to be", segs, joins, leaves, built, bound)
}
