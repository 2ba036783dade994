package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

// mapOf builds a valid map over 8 segments from partitions given as
// (first, last, owner, replicas...).
func mapOf(t *testing.T, nodes []string, parts ...[]string) *PartitionMap {
	t.Helper()
	m := &PartitionMap{Version: 10, TopologyVersion: 3, TotalSegments: 8, Store: "s", Nodes: members(nodes...)}
	for i, spec := range parts {
		var first, last int
		fmt.Sscanf(spec[0], "%d-%d", &first, &last)
		p := Partition{ID: i, Identity: fmt.Sprint("id", i), FirstSegment: first, LastSegment: last,
			PrimaryNodeID: NodeID(spec[1]), ActiveOwner: NodeID(spec[1]), OwnershipGeneration: 2}
		for _, r := range spec[2:] {
			p.ReplicaNodeIDs = append(p.ReplicaNodeIDs, NodeID(r))
		}
		m.Partitions = append(m.Partitions, p)
	}
	renumber(m)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	return m
}

func wantGroups(spec ...string) []SegmentGroup {
	// spec: one "owner/replica,replica" per segment
	out := make([]SegmentGroup, len(spec))
	for i, s := range spec {
		var owner, reps string
		if n, _ := fmt.Sscanf(s, "%1s/%s", &owner, &reps); n >= 1 {
			out[i].Owner = NodeID(owner)
		}
		for _, r := range reps {
			if r != ',' {
				out[i].Replicas = append(out[i].Replicas, NodeID(string(r)))
			}
		}
	}
	return out
}

func describe(m *PartitionMap) string {
	s := ""
	for _, p := range m.Partitions {
		s += fmt.Sprintf("[%d-%d %s%v in%v mv%q]", p.FirstSegment, p.LastSegment, p.ActiveOwner, p.ReplicaNodeIDs, p.Incoming, p.MoveTo)
	}
	return s
}

func TestNextMigrationStep(t *testing.T) {
	ab := []string{"a", "b", "c", "d"}
	cases := []struct {
		name     string
		cur      *PartitionMap
		want     []SegmentGroup
		max      int
		kind     StepKind
		wantMap  string
		topology bool // the step changes the layout (TopologyVersion grows)
	}{
		{"already there: nothing moves (no churn on a balanced cluster)",
			mapOf(t, ab, []string{"0-3", "a"}, []string{"4-7", "b"}),
			wantGroups("a", "a", "a", "a", "b", "b", "b", "b"), 1, StepDone, "", false},
		{"a partition whose segments want two owners is split first, without moving data (same owner, same copies)",
			mapOf(t, ab, []string{"0-3", "a"}, []string{"4-7", "b"}),
			wantGroups("a", "a", "c", "c", "b", "b", "b", "b"), 1, StepCommit,
			`[0-1 a[] in[] mv""][2-3 a[] in[] mv""][4-7 b[] in[] mv""]`, true},
		{"an owner change starts as an incoming copy on the target: the source keeps serving (the target claims nothing)",
			mapOf(t, ab, []string{"0-1", "a"}, []string{"2-3", "a"}, []string{"4-7", "b"}),
			wantGroups("a", "a", "c", "c", "b", "b", "b", "b"), 1, StepCommit,
			`[0-1 a[] in[] mv""][2-3 a[] in[c] mv"c"][4-7 b[] in[] mv""]`, false},
		{"moves are throttled: one in flight at a time means the next waits",
			mapOf(t, ab, []string{"0-1", "a"}, []string{"2-3", "a"}, []string{"4-5", "b"}, []string{"6-7", "b"}),
			wantGroups("a", "a", "c", "c", "b", "b", "d", "d"), 1, StepCommit,
			`[0-1 a[] in[] mv""][2-3 a[] in[c] mv"c"][4-5 b[] in[] mv""][6-7 b[] in[] mv""]`, false},
		{"a replica that becomes the owner needs no copy: the move is a fenced flip",
			mapOf(t, ab, []string{"0-3", "a", "b"}, []string{"4-7", "c", "d"}),
			wantGroups("b/a", "b/a", "b/a", "b/a", "c/d", "c/d", "c/d", "c/d"), 1, StepCommit,
			`[0-3 a[b] in[] mv"b"][4-7 c[d] in[] mv""]`, false},
		{"a re-placed replica is built before the old one leaves (never fewer copies during a move)",
			mapOf(t, ab, []string{"0-3", "a", "b"}, []string{"4-7", "c", "d"}),
			wantGroups("a/c", "a/c", "a/c", "a/c", "c/d", "c/d", "c/d", "c/d"), 1, StepCommit,
			`[0-3 a[b] in[c] mv""][4-7 c[d] in[] mv""]`, false},
		{"a copy the group no longer wants simply leaves: nothing to build",
			mapOf(t, ab, []string{"0-3", "a", "b"}, []string{"4-7", "c", "d"}),
			wantGroups("a", "a", "a", "a", "c/d", "c/d", "c/d", "c/d"), 1, StepCommit,
			`[0-3 a[] in[] mv""][4-7 c[d] in[] mv""]`, false},
		{"a target naming a node that left is ignored (no move towards a node that is gone)",
			mapOf(t, []string{"a", "b"}, []string{"0-3", "a"}, []string{"4-7", "b"}),
			wantGroups("a", "a", "a", "a", "z", "z", "z", "z"), 1, StepDone, "", false},
	}
	for _, c := range cases {
		step := NextMigrationStep(c.cur, c.want, c.max, seqIdentity())
		if step.Kind != c.kind {
			t.Fatalf("%s: kind %d (%s), want %d", c.name, step.Kind, step.Why, c.kind)
		}
		if c.kind != StepCommit {
			continue
		}
		if got := describe(step.Map); got != c.wantMap {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.wantMap)
		}
		if step.Map.Version != c.cur.Version+1 {
			t.Errorf("%s: version %d after %d", c.name, step.Map.Version, c.cur.Version)
		}
		if got := step.Map.TopologyVersion != c.cur.TopologyVersion; got != c.topology {
			t.Errorf("%s: topology changed = %v, want %v", c.name, got, c.topology)
		}
		if err := step.Map.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

func TestNextMigrationStepWaits(t *testing.T) {
	cur := mapOf(t, []string{"a", "b", "c"}, []string{"0-3", "a"}, []string{"4-7", "b"})
	want := wantGroups("a", "a", "c", "c", "b", "b", "b", "b")
	cur.Partitions[0].Health = failover.Degraded
	if step := NextMigrationStep(cur, want, 1, seqIdentity()); step.Kind != StepWait {
		t.Fatalf("a degraded partition is failover's first: split it later, got %d", step.Kind)
	}
	cur = mapOf(t, []string{"a", "b", "c"}, []string{"0-1", "a"}, []string{"2-3", "a"}, []string{"4-7", "b"})
	cur.Partitions[1].Incoming, cur.Partitions[1].MoveTo = []NodeID{"c"}, "c"
	if step := NextMigrationStep(cur, want, 1, seqIdentity()); step.Kind != StepWait {
		t.Fatalf("a move in flight: wait for it, got %d", step.Kind)
	}
}

func TestFinishAndAbortMove(t *testing.T) {
	cur := mapOf(t, []string{"a", "b", "c"}, []string{"0-3", "a", "b"}, []string{"4-7", "c"})
	cur.Partitions[0].Incoming, cur.Partitions[0].MoveTo = []NodeID{"c"}, "c"
	cur.Partitions[0].Demoted = []NodeID{"b"}

	next := FinishMove(cur, 0, []NodeID{"a"})
	if next == nil {
		t.Fatal("finish refused")
	}
	p := next.Partitions[0]
	if p.ActiveOwner != "c" || p.PrimaryNodeID != "c" || fmt.Sprint(p.ReplicaNodeIDs) != "[a]" || p.Migrating() || p.Demoted != nil {
		t.Fatalf("the flip makes the target the owner, the former owner the wanted replica, the dropped copy gone: %+v", p)
	}
	if next.Version != cur.Version+1 || next.TopologyVersion != cur.TopologyVersion {
		t.Fatalf("a flip is an ownership change, not a layout change: %d/%d", next.Version, next.TopologyVersion)
	}
	folded, err := FoldMapCommit(cur, next, 7, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	if folded.Partitions[0].OwnershipGeneration != cur.Partitions[0].OwnershipGeneration+1 {
		t.Fatal("the new owner must serve under a new generation: the old owner's late sessions are fenced by it")
	}
	if FinishMove(cur, 1, nil) != nil {
		t.Fatal("a partition not in flight cannot be finished")
	}
	if got := FinishMove(cur, 0, []NodeID{"z"}); got == nil || fmt.Sprint(got.Partitions[0].ReplicaNodeIDs) != "[a]" {
		t.Fatal("a wanted replica that holds no copy is not named a replica (it would be counted for quorums empty); " +
			"the former owner stays in its place until the group is whole")
	}

	ab := AbortMove(cur, 0)
	if ab == nil || ab.Partitions[0].Migrating() || ab.Partitions[0].ActiveOwner != "a" {
		t.Fatal("an abort keeps the source and drops the incoming copies")
	}
}

func TestRebalanceTrigger(t *testing.T) {
	m := mapOf(t, []string{"a", "b", "c"}, []string{"0-3", "a"}, []string{"4-7", "b"})
	alive := func(ids ...string) []MemberView {
		var out []MemberView
		for _, id := range ids {
			out = append(out, MemberView{Info: NodeInfo{ID: NodeID(id)}, State: MemberAlive})
		}
		return out
	}
	t0 := time.Unix(1000, 0)
	stable := 10 * time.Second
	down := alive("a", "b", "c")
	down[1].State = MemberUnreachable
	// RF 2 after c was lost and left the map: a's partition has no
	// replica any more, b could hold one.
	short := mapOf(t, []string{"a", "b"}, []string{"0-3", "a"}, []string{"4-7", "b", "a"})
	gone := append(alive("a", "b"), MemberView{Info: NodeInfo{ID: "c"}, State: MemberLost})
	for _, tc := range []struct {
		name       string
		m          *PartitionMap // nil = m
		rf         int
		members    []MemberView
		draining   []NodeID
		auto       bool
		lastChange time.Time
		want       bool
	}{
		{"a joiner holding nothing, membership stable: give it its share", nil, 1, alive("a", "b", "c"), nil, true, t0.Add(-stable), true},
		{"auto-rebalance off: the joiner stays a spare", nil, 1, alive("a", "b", "c"), nil, false, t0.Add(-stable), false},
		{"membership just changed (a node may be dying unnoticed): wait, never move data towards a flapping view", nil, 1,
			alive("a", "b", "c"), nil, true, t0.Add(-stable / 2), false},
		{"a member in trouble: failover's business first", nil, 1, down, nil, true, t0.Add(-stable), false},
		{"every member holds something: nothing to do", nil, 1, alive("a", "b"), nil, true, t0.Add(-stable), false},
		{"a draining node still holds partitions: move them whatever the auto setting", nil, 1, alive("a", "b", "c"), []NodeID{"a"}, false,
			t0, true},
		{"a lost node's copy: no spare refills it, the plan re-places it (RF 2 must not stay one copy)", short, 2,
			gone, nil, true, t0.Add(-stable), true},
		{"a lost node's copy, auto-rebalance off: the operator decides", short, 2, gone, nil, false, t0.Add(-stable), false},
		{"as many copies as members: nothing to re-place", short, 2, alive("a"), nil, true, t0.Add(-stable), false},
		{"RF 1 counts one copy: nothing missing", short, 1, gone, nil, true, t0.Add(-stable), false},
	} {
		cur := m
		if tc.m != nil {
			cur = tc.m
		}
		got := rebalanceTrigger(cur, tc.members, tc.draining, tc.auto, tc.lastChange, t0, stable, max(tc.rf, 1)) != ""
		if got != tc.want {
			t.Errorf("%s: triggered %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestALargeMoveIsCutIntoSmallOnes(t *testing.T) {
	// One partition of 20 segments moving whole would fence its writes for
	// as long as the digests of all 20 take: it moves as pieces of at most
	// MaxMoveSegments, while a range that stays is not cut.
	m := &PartitionMap{Version: 3, TopologyVersion: 1, TotalSegments: 24, Store: "s", Nodes: members("a", "b"),
		Partitions: []Partition{
			{Identity: "x", FirstSegment: 0, LastSegment: 19, PrimaryNodeID: "a", ActiveOwner: "a", OwnershipGeneration: 1},
			{Identity: "y", FirstSegment: 20, LastSegment: 23, PrimaryNodeID: "a", ActiveOwner: "a", OwnershipGeneration: 1},
		}}
	renumber(m)
	want := make([]SegmentGroup, 24)
	for s := range want {
		want[s] = SegmentGroup{Owner: "b"}
		if s >= 20 {
			want[s] = SegmentGroup{Owner: "a"}
		}
	}
	step := NextMigrationStep(m, want, 4, seqIdentity())
	if step.Kind != StepCommit {
		t.Fatalf("kind %d %s", step.Kind, step.Why)
	}
	var sizes []int
	for _, p := range step.Map.Partitions {
		sizes = append(sizes, p.LastSegment-p.FirstSegment+1)
	}
	var wantSizes []int
	for left := 20; left > 0; left -= MaxMoveSegments {
		wantSizes = append(wantSizes, min(left, MaxMoveSegments))
	}
	wantSizes = append(wantSizes, 4) // the range that stays is not cut
	if fmt.Sprint(sizes) != fmt.Sprint(wantSizes) {
		t.Fatalf("pieces %v, want %v", sizes, wantSizes)
	}
}

// The race behind a lost partition in TestLiveMigrationFaults/source/fenced
// (issue #12): the source of a move that adds a copy dies once fenced; the
// leader's failover sweep decides, on the map it read, to promote the old
// replica, while the migration driver commits the flip that replaces that
// replica by the incoming copy. Folded after the flip, the promotion must be
// refused: the old replica has left the group and drops its copy, so it
// would serve the partition empty. A promotion of the copy the flip
// established goes through.
func TestAPromotionDecidedBeforeAFlipIsRefused(t *testing.T) {
	cur := mapOf(t, []string{"a", "b", "c"}, []string{"0-3", "a", "b"}, []string{"4-7", "c"})
	cur.Partitions[0].Incoming = []NodeID{"c"}
	promoteB := OwnershipChange{Partition: 0, Owner: "b", Generation: cur.Partitions[0].OwnershipGeneration + 1,
		Epoch: cur.Partitions[0].Epoch + 1, Term: 7}
	if _, err := FoldOwnership(cur, promoteB, 7); err != nil {
		t.Fatalf("before the flip, b is the replica to promote: %v", err)
	}
	flipped, err := FoldMapCommit(cur, FinishMove(cur, 0, []NodeID{"c"}), 7, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FoldOwnership(flipped, promoteB, 7); !errors.Is(err, ErrRejectedChange) {
		t.Fatalf("after the flip b holds no copy; promoting it would serve the partition empty: %v", err)
	}
	promoteC := promoteB
	promoteC.Owner = "c"
	if _, err := FoldOwnership(flipped, promoteC, 7); err != nil {
		t.Fatalf("the copy the flip established may be promoted: %v", err)
	}
}

func TestProofStillHolds(t *testing.T) {
	proved := Partition{Identity: "p", ActiveOwner: "a", OwnershipGeneration: 3, Incoming: []NodeID{"c"}, MoveTo: "c"}
	cases := []struct {
		name   string
		change func(p *Partition)
		holds  bool
	}{
		{"nothing changed: flip", func(*Partition) {}, true},
		{"a failover promoted a replica meanwhile: its new lease may hold writes the proof never saw", func(p *Partition) {
			p.ActiveOwner, p.OwnershipGeneration = "b", 4
		}, false},
		{"the owner restarted under a new lease: its content is not the one proved", func(p *Partition) { p.OwnershipGeneration = 4 }, false},
		{"the move was aborted and restarted towards another node", func(p *Partition) { p.MoveTo, p.Incoming = "d", []NodeID{"d"} }, false},
		{"a split gave the range a new identity", func(p *Partition) { p.Identity = "q" }, false},
		{"only health changed (an epoch, not a lease): the proof holds", func(p *Partition) { p.Epoch++ }, true},
	}
	for _, c := range cases {
		cur := proved
		cur.Incoming = slices.Clone(proved.Incoming)
		c.change(&cur)
		if got := ProofStillHolds(&proved, &cur); got != c.holds {
			t.Errorf("%s: got %v", c.name, got)
		}
	}
}

// TestFlipReplicasMakeBeforeBreak: the replicas a flip leaves, and the
// failure each row prevents.
func TestFlipReplicasMakeBeforeBreak(t *testing.T) {
	ids := func(s ...string) []NodeID {
		out := make([]NodeID, 0, len(s))
		for _, x := range s {
			out = append(out, NodeID(x))
		}
		return out
	}
	for _, c := range []struct {
		name                             string
		owner                            string
		wanted, holders, demoted, expect []NodeID
	}{
		{"the wanted group exists: the unwanted copy leaves", "c", ids("a"), ids("a", "b", "c"), nil, ids("a")},
		{"RF 1: the former owner leaves (nothing to keep)", "c", nil, ids("a", "c"), nil, nil},
		{"a wanted replica holds nothing (layout changed mid-move): the former owner stays, else one copy is left",
			"c", ids("z"), ids("a", "c"), nil, ids("a")},
		{"the wanted replica was demoted (behind or empty): a level leaving copy stays beside it, else its loss loses the partition",
			"c", ids("b"), ids("a", "b", "c"), ids("b"), ids("b", "a")},
		{"a demoted leaving copy is no substitute: it holds less than the owner acknowledged",
			"c", ids("z"), ids("a", "c"), ids("a"), nil},
		{"RF 3 with one wanted replica missing: one leaving level copy stays, not all",
			"d", ids("b", "e"), ids("a", "b", "c", "d"), nil, ids("b", "a")},
		{"the new owner named among the wanted is not its own replica", "c", ids("c", "a"), ids("a", "c"), nil, ids("a")},
	} {
		got := FlipReplicas(NodeID(c.owner), c.wanted, c.holders, c.demoted)
		if fmt.Sprint(got) != fmt.Sprint(c.expect) {
			t.Errorf("%s: got %v, want %v", c.name, got, c.expect)
		}
	}
}

func TestRebalanceHold(t *testing.T) {
	const stable = 2 * time.Second
	suspected := []MemberView{{Info: NodeInfo{ID: "c"}, State: MemberSuspected}}
	for _, tc := range []struct {
		name             string
		pending, planned bool
		troubled         []MemberView
		sinceChange      time.Duration
		held             string // a substring; "" means not held
	}{
		{"nothing to do: no hold to report, whatever the members", false, false, suspected, 0, ""},
		{"a plan in progress, every member alive: it steps", true, true, nil, 0, ""},
		{"a suspected member while planning: a plan made while a node may be dying places data on it", true, false,
			suspected, stable, "c is suspected"},
		{"a suspected member, a plan in progress: a rumour does not stall a drain on a starved machine for good", true,
			true, suspected, stable, ""},
		{"an unreachable member, a plan in progress: failover's business first, no new move", true, true,
			[]MemberView{{Info: NodeInfo{ID: "c"}, State: MemberUnreachable}}, stable, "c is unreachable"},
		{"a trigger, membership just changed: a node may be dying unnoticed, plan once the view is stable", true, false,
			nil, stable / 4, "planning waits"},
		{"a trigger, membership stable, every member alive: it plans", true, false, nil, stable, ""},
	} {
		got := rebalanceHold(tc.pending, tc.planned, tc.troubled, tc.sinceChange, stable)
		if (tc.held == "") != (got == "") || !strings.Contains(got, tc.held) {
			t.Errorf("%s: held %q, want %q", tc.name, got, tc.held)
		}
	}
}
