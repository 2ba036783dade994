package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/zaris-io/zaris/server/cluster/failover"
)

func view(id string, s MemberState) MemberView {
	return MemberView{Info: NodeInfo{ID: NodeID(id), Host: "127.0.0.1", ClientPort: 7000, PeerPort: 7100}, State: s}
}

func planned(ids ...string) *PartitionMap {
	ms := make([]NodeInfo, len(ids))
	for i, id := range ids {
		ms[i] = view(id, MemberAlive).Info
	}
	m := Plan(PlanInput{Members: ms, TotalSegments: 12, RF: 1, Store: "s", NewIdentity: seqIdentity()})
	m.Version, m.TopologyVersion = 5, 2
	return m
}

func owners(m *PartitionMap) string {
	var out []string
	for _, p := range m.Partitions {
		out = append(out, fmt.Sprintf("%s[%d-%d]", p.ActiveOwner, p.FirstSegment, p.LastSegment))
	}
	return fmt.Sprint(out)
}

func TestEvolveMap(t *testing.T) {
	base := planned("a", "b", "c") // a[0-3] b[4-7] c[8-11]
	cases := []struct {
		name    string
		members []MemberView
		want    string // owners, or "" for no change
		nodes   int
	}{
		{"everyone alive: no new map (no churn for nothing)",
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberAlive)}, "", 3},
		{"suspected or unreachable: runtime only, the map stays (a GC pause must not reshuffle)",
			[]MemberView{view("a", MemberAlive), view("b", MemberSuspected), view("c", MemberUnreachable)}, "", 3},
		{"a member the leader never heard of keeps its place",
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive)}, "", 3},
		{"a joiner becomes a spare: live owners keep every segment (no silent data loss)",
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberAlive), view("d", MemberAlive)},
			"[a[0-3] b[4-7] c[8-11]]", 4},
		{"a lost owner's partition merges into its live neighbour; the others do not move",
			[]MemberView{view("a", MemberAlive), view("b", MemberLost), view("c", MemberAlive)},
			"[a[0-7] c[8-11]]", 2},
		{"a lost first owner merges into the next partition",
			[]MemberView{view("a", MemberDecommissioned), view("b", MemberAlive), view("c", MemberAlive)},
			"[b[0-7] c[8-11]]", 2},
		{"a spare takes a lost owner's partition whole",
			[]MemberView{view("a", MemberAlive), view("b", MemberEvicted), view("c", MemberAlive), view("d", MemberAlive)},
			"[a[0-3] d[4-7] c[8-11]]", 3},
	}
	for _, c := range cases {
		got := EvolveMap(base, c.members, 1)
		if c.want == "" {
			if got != nil {
				t.Errorf("%s: unexpected new map %s", c.name, owners(got))
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: no new map", c.name)
			continue
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if owners(got) != c.want || len(got.Nodes) != c.nodes || got.Version != 6 || got.TopologyVersion != 3 {
			t.Errorf("%s: got %s with %d nodes, v%d/t%d", c.name, owners(got), len(got.Nodes), got.Version, got.TopologyVersion)
		}
		if err := AcceptMap(base, got, "s", ""); err != nil {
			t.Errorf("%s: the evolved map would be refused: %v", c.name, err)
		}
	}
	if EvolveMap(nil, nil, 1) != nil {
		t.Fatal("no map: nothing to evolve (the formation gate plans the first)")
	}
}

func groups(m *PartitionMap) string {
	var out []string
	for _, p := range m.Partitions {
		out = append(out, fmt.Sprintf("%s%v[%d-%d]", p.ActiveOwner, p.ReplicaNodeIDs, p.FirstSegment, p.LastSegment))
	}
	return fmt.Sprint(out)
}

func TestEvolveMapReplicas(t *testing.T) {
	// Two disjoint groups of two (the layout of maps planned before
	// copies were spread, and of any map EvolveMap must keep serving).
	ms := []NodeInfo{view("a", MemberAlive).Info, view("b", MemberAlive).Info, view("c", MemberAlive).Info, view("d", MemberAlive).Info}
	base := &PartitionMap{Version: 5, TopologyVersion: 2, TotalSegments: 12, Store: "s", Nodes: ms, Partitions: []Partition{
		{Identity: "p1", PrimaryNodeID: "a", ActiveOwner: "a", ReplicaNodeIDs: []NodeID{"c"}, FirstSegment: 0, LastSegment: 5},
		{Identity: "p2", PrimaryNodeID: "b", ActiveOwner: "b", ReplicaNodeIDs: []NodeID{"d"}, FirstSegment: 6, LastSegment: 11}}}
	renumber(base)
	if err := base.Validate(); err != nil {
		t.Fatal(err)
	}
	alive := func(ids ...string) []MemberView {
		var out []MemberView
		for _, id := range ids {
			out = append(out, view(id, MemberAlive))
		}
		return out
	}
	cases := []struct {
		name    string
		members []MemberView
		want    string // groups, or "" for no change
	}{
		{"full groups and no change: no new map", alive("a", "b", "c", "d"), ""},
		{"a joiner is a spare while every replica slot is full", alive("a", "b", "c", "d", "e"), "[a[c][0-5] b[d][6-11]]"},
		{"a lost replica's slot is refilled by a spare (the partition gets its copy back)",
			append(alive("a", "b", "d", "e"), view("c", MemberLost)), "[a[e][0-5] b[d][6-11]]"},
		{"a lost replica without a spare: the slot stays empty, the owner keeps serving",
			append(alive("a", "b", "d"), view("c", MemberLost)), "[a[][0-5] b[d][6-11]]"},
		{"a lost owner's partition goes to its live replica, which holds the data (not to an empty spare)",
			append(alive("b", "c", "d", "e"), view("a", MemberLost)), "[c[e][0-5] b[d][6-11]]"},
		{"a lost owner with an unreachable replica (inside its grace): the replica takes it, it holds the data (a spare would serve the range empty, issue #16)",
			append(alive("b", "d", "e"), view("a", MemberLost), view("c", MemberUnreachable)), "[c[e][0-5] b[d][6-11]]"},
		{"a lost owner whose replica is lost too: no copy is left, a spare takes the partition",
			append(alive("b", "d", "e"), view("a", MemberLost), view("c", MemberLost)), "[e[][0-5] b[d][6-11]]"},
	}
	for _, c := range cases {
		got := EvolveMap(base, c.members, 2)
		if c.want == "" {
			if got != nil {
				t.Errorf("%s: unexpected new map %s", c.name, groups(got))
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: no new map", c.name)
			continue
		}
		if err := AcceptMap(base, got, "s", ""); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		if groups(got) != c.want {
			t.Errorf("%s: got %s, want %s", c.name, groups(got), c.want)
		}
	}
	// A partition a failover moved to its replica c keeps a as its
	// preferred primary (a demoted copy that follows c): when c is lost
	// before a failover moves it back, a — the copy that holds the data —
	// takes it, not a spare nor a neighbour (issue #16: the range was
	// merged into a neighbour whose owner held none of it).
	failedOver := base.Clone()
	failedOver.Partitions[0].ActiveOwner = "c"
	failedOver.Partitions[0].ReplicaNodeIDs = []NodeID{"c"}
	for _, members := range [][]MemberView{append(alive("a", "b", "d", "e"), view("c", MemberLost)),
		append(alive("a", "b", "d"), view("c", MemberLost))} {
		got := EvolveMap(failedOver, members, 2)
		if got == nil || got.Partitions[0].ActiveOwner != "a" || got.Partitions[0].FirstSegment != 0 || got.Partitions[0].LastSegment != 5 {
			t.Fatalf("a lost failed-over owner: the primary must take the partition back: %v", got)
		}
	}

	// A partition whose runtime owner already moved to its replica (a
	// failover) keeps that owner as primary once the old one is lost.
	moved := base.Clone()
	moved.Partitions[0].ActiveOwner = "c"
	got := EvolveMap(moved, append(alive("b", "c", "d", "e"), view("a", MemberLost)), 2)
	if got == nil || groups(got) != "[c[e][0-5] b[d][6-11]]" || got.Partitions[0].PrimaryNodeID != "c" {
		t.Fatalf("promoted owner: %v", got)
	}
}

func TestOrphanHeir(t *testing.T) {
	byID := map[NodeID]MemberView{}
	for id, st := range map[string]MemberState{"a": MemberLost, "b": MemberAlive, "c": MemberSuspected, "d": MemberUnreachable,
		"e": MemberAlive, "f": MemberEvicted, "x": MemberAlive} {
		byID[NodeID(id)] = view(id, st)
	}
	inMap := func(id NodeID) bool { return id != "a" && id != "f" && id != "x" }
	cases := []struct {
		name string
		p    Partition
		want NodeID
	}{
		{"a live replica takes it (R-REP-1: it holds the data)",
			Partition{ActiveOwner: "a", PrimaryNodeID: "a", ReplicaNodeIDs: []NodeID{"b"}}, "b"},
		{"a failed-over partition: its preferred primary holds the data, though it is no replica (else the range went to a spare or a neighbour, empty)",
			Partition{ActiveOwner: "a", PrimaryNodeID: "b", ReplicaNodeIDs: []NodeID{"a"}}, "b"},
		{"a replica only suspected holds the data: it takes the partition, Unavailable until it answers (a spare would serve the range empty)",
			Partition{ActiveOwner: "a", PrimaryNodeID: "a", ReplicaNodeIDs: []NodeID{"c"}}, "c"},
		{"an unreachable replica inside its grace, likewise",
			Partition{ActiveOwner: "a", PrimaryNodeID: "a", ReplicaNodeIDs: []NodeID{"d"}}, "d"},
		{"a live copy before an away one",
			Partition{ActiveOwner: "a", PrimaryNodeID: "c", ReplicaNodeIDs: []NodeID{"c", "e"}}, "e"},
		{"an undemoted copy before a demoted one (a demoted copy counted for no quorum: it may lack acknowledged writes)",
			Partition{ActiveOwner: "a", PrimaryNodeID: "b", ReplicaNodeIDs: []NodeID{"a", "e"}, Demoted: []NodeID{"b"}}, "e"},
		{"a demoted live copy rather than nothing (it holds at least what it followed)",
			Partition{ActiveOwner: "a", PrimaryNodeID: "b", ReplicaNodeIDs: []NodeID{"a"}, Demoted: []NodeID{"b"}}, "b"},
		{"a copy a migration is still building is no heir: it holds part of the data at most",
			Partition{ActiveOwner: "a", PrimaryNodeID: "a", ReplicaNodeIDs: []NodeID{"b"}, Incoming: []NodeID{"b"}}, ""},
		{"departed copies are no heirs: nothing left, the partition is reassigned",
			Partition{ActiveOwner: "a", PrimaryNodeID: "f", ReplicaNodeIDs: []NodeID{"a"}}, ""},
		{"a copy no longer in the map is no heir (the map would not validate)",
			Partition{ActiveOwner: "a", PrimaryNodeID: "x", ReplicaNodeIDs: []NodeID{"a"}}, ""},
	}
	for _, c := range cases {
		if got := OrphanHeir(&c.p, byID, inMap); got != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRebalanceGivesJoinersPartitions(t *testing.T) {
	cur := planned("a", "b")
	joined := EvolveMap(cur, []MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberAlive)}, 1)
	next := Rebalance(joined, []MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberAlive)}, 0, 1, seqIdentity())
	if next == nil || next.Version != joined.Version+1 {
		t.Fatalf("rebalance: %+v", next)
	}
	// The joiner takes its third, from the tails of the others' ranges.
	if got := owners(next); got != "[a[0-3] c[4-5] b[6-9] c[10-11]]" {
		t.Fatalf("rebalance layout %s", got)
	}
	if next.Partitions[0].Identity == next.Partitions[1].Identity || next.Partitions[2].Identity == next.Partitions[3].Identity {
		t.Fatalf("two partitions share an identity: %+v", next.Partitions)
	}
	if err := AcceptMap(joined, next, "s", ""); err != nil {
		t.Fatal(err)
	}
	if Rebalance(next, []MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberAlive)}, 0, 1, seqIdentity()) != nil {
		t.Fatal("a balanced map must not be re-planned")
	}
}

func TestPlanVoters(t *testing.T) {
	srv := func(id string, voter bool) RaftServer {
		return RaftServer{ID: NodeID(id), Address: PeerTarget(view(id, MemberAlive).Info), Voter: voter}
	}
	// c took over b's host:port under a new id (issue #8).
	taker := view("c", MemberAlive)
	taker.Info.PeerPort = view("b", MemberAlive).Info.PeerPort
	cases := []struct {
		name    string
		servers []RaftServer
		members []MemberView
		want    string
	}{
		{"a new alive member becomes a voter",
			[]RaftServer{srv("a", true)}, []MemberView{view("a", MemberAlive), view("b", MemberAlive)}, "[{1 b b@127.0.0.1:7100}]"},
		{"beyond five voters, a non-voter (commits stay fast)",
			[]RaftServer{srv("a", true), srv("b", true), srv("c", true), srv("d", true), srv("e", true)},
			[]MemberView{view("a", MemberAlive), view("f", MemberAlive)}, "[{2 f f@127.0.0.1:7100}]"},
		{"a lost member is removed and a non-voter promoted in its seat",
			[]RaftServer{srv("a", true), srv("b", true), srv("c", false)},
			[]MemberView{view("a", MemberAlive), view("b", MemberLost), view("c", MemberAlive)}, "[{3 b } {1 c c@127.0.0.1:7100}]"},
		{"an unreachable voter keeps its seat (a GC pause must not cost a voter)",
			[]RaftServer{srv("a", true), srv("b", true)},
			[]MemberView{view("a", MemberAlive), view("b", MemberUnreachable)}, "[]"},
		{"the leader never removes itself",
			[]RaftServer{srv("a", true)}, []MemberView{view("a", MemberDecommissioned)}, "[]"},
		{"a voter seated at a plain host:port by an older run is re-added at its target, so dials to it name it",
			[]RaftServer{srv("a", true), {ID: "b", Address: "127.0.0.1:7100", Voter: true}},
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive)}, "[{1 b b@127.0.0.1:7100}]"},
		{"a node on a dead voter's host:port is a voter of its own; the dead voter keeps its seat and is never dialed as the new node",
			[]RaftServer{srv("a", true), srv("b", true)},
			[]MemberView{view("a", MemberAlive), view("b", MemberUnreachable), taker}, "[{1 c c@127.0.0.1:7100}]"},
	}
	for _, c := range cases {
		if got := fmt.Sprint(PlanVoters("a", c.servers, c.members, PeerTarget)); got != c.want {
			t.Errorf("%s: %s", c.name, got)
		}
	}
}

func TestSplitPeerTarget(t *testing.T) {
	cases := []struct{ in, id, addr string }{
		{"n1@127.0.0.1:7811", "n1", "127.0.0.1:7811"},
		{"n1@[::1]:7811", "n1", "[::1]:7811"},
		{"node-a.b_c@zaris-0.zaris.svc:7811", "node-a.b_c", "zaris-0.zaris.svc:7811"},
		{"127.0.0.1:7811", "", "127.0.0.1:7811"}, // an older run's raft address: names no node
		{"[fe80::1%eth0]:7811", "", "[fe80::1%eth0]:7811"},
	}
	for _, c := range cases {
		if id, addr := SplitPeerTarget(c.in); string(id) != c.id || addr != c.addr {
			t.Errorf("%s: %q %q", c.in, id, addr)
		}
	}
	if got := PeerTarget(NodeInfo{ID: "n1", Host: "::1", PeerPort: 7811}); got != "n1@[::1]:7811" {
		t.Errorf("IPv6 target: %s", got)
	}
}

func TestDetectDrift(t *testing.T) {
	d := func(node string, version uint64, leader string) Digest {
		return Digest{Node: NodeID(node), MapVersion: version, Leader: NodeID(leader), Term: 2, NodeCount: 3, Generations: []uint64{1, 1, 1}}
	}
	cases := []struct {
		name       string
		self       Digest
		peers      []Digest
		streak     int
		wantStreak int
		wantRepair bool
	}{
		{"agrees with the majority", d("a", 4, "a"), []Digest{d("b", 4, "a"), d("c", 4, "a")}, 1, 0, false},
		{"behind for one cycle: the normal lag of a commit, no repair yet", d("a", 3, "a"), []Digest{d("b", 4, "a"), d("c", 4, "a")}, 0, 1, false},
		{"behind two cycles in a row: refetch the map", d("a", 3, "a"), []Digest{d("b", 4, "a"), d("c", 4, "a")}, 1, 0, true},
		{"wrong leader two cycles in a row: repair", d("a", 4, "x"), []Digest{d("b", 4, "a"), d("c", 4, "a")}, 1, 0, true},
		{"no strict majority: nothing to converge to", d("a", 3, "a"), []Digest{d("b", 4, "a")}, 1, 0, false},
		{"alone: no drift", d("a", 3, "a"), nil, 1, 0, false},
	}
	for _, c := range cases {
		s, r := DetectDrift(c.self, c.peers, c.streak)
		if s != c.wantStreak || r != c.wantRepair {
			t.Errorf("%s: streak %d repair %v", c.name, s, r)
		}
	}
	m := planned("a", "b")
	m.Partitions[1].Epoch = 7
	if g := DigestOf("a", m, "a", 3); g.Epoch != 7 || g.MapVersion != 5 || g.NodeCount != 2 || len(g.Generations) != 2 {
		t.Fatalf("digest %+v", g)
	}
	if back, ok := decodeDigest(encodeDigest(d("a", 4, "a"))); !ok || !sameView(back, d("b", 4, "a")) {
		t.Fatal("digest round trip")
	}
}

func TestTracker(t *testing.T) {
	t0 := time.Unix(100, 0)
	tr := NewTracker(NodeInfo{ID: "self"}, 30*time.Second, t0)
	b := NodeInfo{ID: "b", Host: "h"}
	if !tr.Signal(b, SignalAlive, t0) || tr.Present() != 2 || !tr.LastChange().Equal(t0) {
		t.Fatal("a new alive member is tracked and changes the present set")
	}
	if tr.Signal(NodeInfo{ID: "self"}, SignalDead, t0) {
		t.Fatal("the local node is always alive")
	}
	tr.Signal(b, SignalDead, t0.Add(time.Second))
	if m, _ := tr.Get("b"); m.State != MemberUnreachable {
		t.Fatalf("dead → unreachable, got %v", m.State)
	}
	if moved := tr.Tick(t0.Add(20 * time.Second)); len(moved) != 0 {
		t.Fatal("still inside the grace window")
	}
	if moved := tr.Tick(t0.Add(31 * time.Second)); !slices.Equal(moved, []NodeID{"b"}) {
		t.Fatalf("lost after the grace window: %v", moved)
	}
	tr.Expect([]NodeInfo{{ID: "ghost"}}, t0.Add(40*time.Second))
	if m, _ := tr.Get("ghost"); m.State != MemberUnreachable {
		t.Fatal("a map member never heard of starts unreachable, so it can be lost")
	}
	if tr.Signal(NodeInfo{ID: "never"}, SignalDead, t0) {
		t.Fatal("a death of a member never seen alive is ignored")
	}
}

func TestFold(t *testing.T) {
	m := planned("a", "b")
	first, err := FoldMapCommit(nil, m, 3, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range first.Partitions {
		if p.OwnershipGeneration != 1 || p.LeaderTerm != 3 {
			t.Fatalf("a new partition's lease: %+v", p)
		}
	}
	// The same owners in a newer map keep their lease; a moved owner gets a
	// new generation at the new term.
	next := first.Clone()
	next.Version++
	next.Partitions[1].ActiveOwner, next.Partitions[1].PrimaryNodeID = "a", "a"
	next.Partitions[0].ActiveOwner, next.Partitions[0].PrimaryNodeID = "b", "b"
	folded, err := FoldMapCommit(first, next, 4, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	if p := folded.Partitions[0]; p.OwnershipGeneration != 2 || p.LeaderTerm != 4 {
		t.Fatalf("moved owner's lease: %+v", p)
	}
	same := folded.Clone()
	same.Version++
	kept, _ := FoldMapCommit(folded, same, 9, "s", "")
	if p := kept.Partitions[0]; p.OwnershipGeneration != 2 || p.LeaderTerm != 4 {
		t.Fatalf("an unchanged owner must keep its lease: %+v", p)
	}
	if _, err := FoldMapCommit(folded, folded.Clone(), 9, "s", ""); !errors.Is(err, ErrStaleMap) {
		t.Fatalf("stale: %v", err)
	}

	kept.Partitions[1].ReplicaNodeIDs = []NodeID{"b"} // the copy a promotion picks
	data, _ := EncodeOwnershipChange(OwnershipChange{Partition: 1, Owner: "b", Generation: 3, Epoch: 1, Term: 5})
	moved, err := FoldEntry(kept, data, 5, "s", "")
	if err != nil {
		t.Fatal(err)
	}
	if p := moved.Partitions[1]; p.ActiveOwner != "b" || p.Epoch != 1 || p.LeaderTerm != 5 || moved.Version != kept.Version+1 ||
		moved.TopologyVersion != kept.TopologyVersion {
		t.Fatalf("ownership change fold: %+v v%d", p, moved.Version)
	}
	rejects := []struct {
		name string
		oc   OwnershipChange
		term uint64
	}{
		{"written at another term than decided: a deposed leader's decision", OwnershipChange{Partition: 1, Owner: "a", Generation: 9, Epoch: 2, Term: 4}, 5},
		{"generation not above the current: a replayed or reordered move", OwnershipChange{Partition: 1, Owner: "a", Generation: 3, Epoch: 2, Term: 5}, 5},
		{"epoch regresses: an old owner would be un-fenced", OwnershipChange{Partition: 1, Owner: "a", Generation: 9, Epoch: 0, Term: 5}, 5},
		{"unknown owner", OwnershipChange{Partition: 1, Owner: "zz", Generation: 9, Epoch: 2, Term: 5}, 5},
		{"no such partition", OwnershipChange{Partition: 7, Owner: "a", Generation: 9, Epoch: 2, Term: 5}, 5},
		{"decided for another partition: a split or merge renumbered the partitions since the failover sweep's map (the change would land on a neighbour sharing owner, generation and epoch)",
			OwnershipChange{Partition: 1, Identity: "not-this-one", Owner: moved.Partitions[1].ActiveOwner,
				Generation: moved.Partitions[1].OwnershipGeneration, Epoch: moved.Partitions[1].Epoch + 1, Term: 5}, 5},
		{"the new owner holds no copy: a promotion decided before a move's flip took the candidate out of the group (it would serve the partition empty)",
			OwnershipChange{Partition: 0, Owner: "a", Generation: 9, Epoch: 2, Term: 5}, 5},
	}
	for _, r := range rejects {
		if _, err := FoldOwnership(moved, r.oc, r.term); !errors.Is(err, ErrRejectedChange) {
			t.Errorf("%s: %v", r.name, err)
		}
	}
	if _, err := FoldEntry(moved, []byte{9, 1}, 5, "s", ""); !errors.Is(err, ErrBadEntry) {
		t.Fatal("unknown entry type must be refused")
	}

	// Health changes keep the owner and its generation (its lease and its
	// replicas' history) and need a new epoch (R-REP-7: every edge an epoch
	// bump); the owner is never listed as demoted.
	p1 := moved.Partitions[1]
	health := OwnershipChange{Partition: 1, Identity: p1.Identity, Owner: p1.ActiveOwner, Generation: p1.OwnershipGeneration,
		Epoch: p1.Epoch + 1, Term: 5, Health: failover.Degraded, Demoted: []NodeID{"a", p1.ActiveOwner, "a"}}
	degraded, err := FoldOwnership(moved, health, 5)
	if err != nil {
		t.Fatal(err)
	}
	if q := degraded.Partitions[1]; q.HealthState() != failover.Degraded || q.OwnershipGeneration != p1.OwnershipGeneration ||
		!slices.Equal(q.Demoted, []NodeID{"a"}) || q.Epoch != p1.Epoch+1 || degraded.Version != moved.Version+1 {
		t.Fatalf("health change: %+v", q)
	}
	if moved.Partitions[1].HealthState() != failover.Healthy || moved.Partitions[1].Demoted != nil {
		t.Fatal("a fold must not change the map it folds from")
	}
	replayed := health
	replayed.Epoch = p1.Epoch + 1
	if _, err := FoldOwnership(degraded, replayed, 5); !errors.Is(err, ErrRejectedChange) {
		t.Fatalf("a health change at the current epoch (a replay) must be refused: %v", err)
	}
	// Only a Recovering partition keeps a sync source.
	rec := health
	rec.Epoch, rec.Health, rec.Source = p1.Epoch+2, failover.Recovering, "a"
	recovering, err := FoldOwnership(degraded, rec, 5)
	if err != nil || recovering.Partitions[1].Source != "a" {
		t.Fatalf("recovering: %v %+v", err, recovering.Partitions[1])
	}
	rec.Epoch, rec.Health = p1.Epoch+3, failover.Degraded
	caught, err := FoldOwnership(recovering, rec, 5)
	if err != nil || caught.Partitions[1].Source != "" {
		t.Fatalf("caught up: %v %+v", err, caught.Partitions[1])
	}
	if owned := recovering.OwnedSegments(p1.ActiveOwner); owned[recovering.Partitions[1].FirstSegment] {
		t.Fatal("a recovering owner must not serve before it synced")
	}
	if owned := caught.OwnedSegments(p1.ActiveOwner); !owned[caught.Partitions[1].FirstSegment] {
		t.Fatal("a degraded owner serves")
	}
}

func TestCopies(t *testing.T) {
	cases := []struct {
		name string
		p    Partition
		want []NodeID
	}{
		{"the replicas of the planned owner", Partition{PrimaryNodeID: "a", ActiveOwner: "a", ReplicaNodeIDs: []NodeID{"b", "c"}}, []NodeID{"b", "c"}},
		{"after a failover the planned primary is a copy of the promoted replica (it catches up when it returns)",
			Partition{PrimaryNodeID: "a", ActiveOwner: "b", ReplicaNodeIDs: []NodeID{"b", "c"}}, []NodeID{"a", "c"}},
		{"RF 1: no copy", Partition{PrimaryNodeID: "a", ActiveOwner: "a"}, nil},
	}
	for _, c := range cases {
		if got := c.p.Copies(); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCheckPeer(t *testing.T) {
	self := Meta{Info: NodeInfo{ID: "a"}, Store: "s", Cluster: "c", Proto: MetaProto}
	enc := func(m Meta) []byte { b, _ := EncodeMeta(m, 512); return b }
	ok := Meta{Info: NodeInfo{ID: "b"}, Store: "s", Cluster: "c", Proto: MetaProto}
	if _, err := CheckPeer(self, "b", enc(ok)); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name string
		peer string
		raw  []byte
	}{
		{"another store: a node must never silently serve another store", "b", enc(Meta{Info: NodeInfo{ID: "b"}, Store: "x", Cluster: "c", Proto: MetaProto})},
		{"another cluster: two clusters on one network must not merge", "b", enc(Meta{Info: NodeInfo{ID: "b"}, Store: "s", Cluster: "x", Proto: MetaProto})},
		{"a name that is not its id", "zz", enc(ok)},
		{"garbage metadata", "b", []byte{0xc1}},
		{"no metadata", "b", nil},
	}
	for _, b := range bad {
		if _, err := CheckPeer(self, b.peer, b.raw); !errors.Is(err, ErrForeignNode) {
			t.Errorf("%s: %v", b.name, err)
		}
	}
}

func TestBoltStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "raft.db")
	s, err := openBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs []*raft.Log
	for i := uint64(1); i <= 10; i++ {
		logs = append(logs, &raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: []byte{byte(i)}})
	}
	if err := s.StoreLogs(logs); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	first, _ := s.FirstIndex()
	last, _ := s.LastIndex()
	if first != 4 || last != 10 {
		t.Fatalf("range %d..%d", first, last)
	}
	var l raft.Log
	if err := s.GetLog(2, &l); !errors.Is(err, raft.ErrLogNotFound) {
		t.Fatalf("deleted log: %v", err)
	}
	if err := s.SetUint64([]byte("term"), 7); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetUint64([]byte("missing")); err == nil || err.Error() != "not found" {
		t.Fatalf("raft expects the message %q for a missing key: %v", "not found", err)
	}
	_ = s.Close()
	// Reopened: everything is still there.
	s, err = openBoltStore(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.GetLog(5, &l); err != nil || l.Data[0] != 5 {
		t.Fatalf("log 5 after reopen: %v %+v", err, l)
	}
	if v, err := s.GetUint64([]byte("term")); err != nil || v != 7 {
		t.Fatalf("term after reopen: %d %v", v, err)
	}
}

func TestPeerMuxRoutesByFirstByte(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := NewPeerMux(ln, "a", nil, discardLogger())
	m := planned("a")
	mux.Handle(PeerMapFetch, func(c net.Conn) { serveMapFetch(c, func() *PartitionMap { return m }) })
	mux.Serve()
	defer mux.Close()
	ctx, cancel := contextTimeout(2 * time.Second)
	defer cancel()
	got, err := mux.fetchMap(ctx, ln.Addr().String())
	if err != nil || got.Version != m.Version || len(got.Partitions) != 1 {
		t.Fatalf("fetch: %v %+v", err, got)
	}
	// An unknown protocol byte is closed without an answer.
	c, err := mux.Dial(ctx, ln.Addr().String(), 0x7f)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil {
		t.Fatal("unknown protocol must be closed")
	}
	c.Close()
	mux.Close()
	mux.Close() // safe twice
}

// TestPeerMuxChecksTheNamedNode: a node that took over another node's
// peer address (issue #8) refuses connections naming that node — raft's,
// the possession query's, a map fetch's — and counts them; connections
// naming it, and legacy ones naming no node, are served.
func TestPeerMuxChecksTheNamedNode(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := NewPeerMux(ln, "n4", nil, discardLogger())
	m := planned("n4")
	mux.Handle(PeerMapFetch, func(c net.Conn) { serveMapFetch(c, func() *PartitionMap { return m }) })
	mux.Handle(PeerPossession, func(c net.Conn) {
		servePossession(c, func(PossessionQuery) PossessionReport { return PossessionReport{HeldKeys: 0} })
	})
	mux.Serve()
	defer mux.Close()
	ctx, cancel := contextTimeout(5 * time.Second)
	defer cancel()
	addr := ln.Addr().String()
	self := NodeInfo{ID: "n4", Host: "127.0.0.1", PeerPort: ln.Addr().(*net.TCPAddr).Port}
	dead := self
	dead.ID = "n2"

	// Its own id and the legacy form are served.
	for _, target := range []string{PeerTarget(self), addr} {
		if got, err := mux.fetchMap(ctx, target); err != nil || got == nil || got.Version != m.Version {
			t.Fatalf("fetch via %s: %v %+v", target, err, got)
		}
	}
	if _, err := mux.queryPossession(ctx, PeerTarget(self), &m.Partitions[0]); err != nil {
		t.Fatalf("possession naming self: %v", err)
	}

	// Another id is refused on every protocol, with both ids in the error.
	var wrong *WrongPeerError
	if _, err := mux.queryPossession(ctx, PeerTarget(dead), &m.Partitions[0]); !errors.As(err, &wrong) ||
		wrong.Want != "n2" || wrong.Got != "n4" || !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("possession naming the dead node: %v", err)
	}
	if _, err := mux.fetchMap(ctx, PeerTarget(dead)); !errors.Is(err, ErrWrongPeer) {
		t.Fatalf("fetch naming the dead node: %v", err)
	}
	layer := &raftLayer{m: mux}
	if c, err := layer.Dial(raft.ServerAddress(PeerTarget(dead)), 2*time.Second); !errors.Is(err, ErrWrongPeer) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("raft dial naming the dead voter: %v", err)
	}
	if got := mux.Misdirected(); got != 3 {
		t.Fatalf("misdirected = %d, want 3", got)
	}

	// Raft naming this node reaches raft's stream layer.
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := layer.Accept(); err == nil {
			accepted <- c
		}
	}()
	c, err := layer.Dial(raft.ServerAddress(PeerTarget(self)), 2*time.Second)
	if err != nil {
		t.Fatalf("raft dial naming self: %v", err)
	}
	defer c.Close()
	select {
	case a := <-accepted:
		a.Close()
	case <-ctx.Done():
		t.Fatal("raft connection naming self not handed to raft")
	}

	// A dialer that speaks the protocol by hand sees the refusal byte and
	// the answering node's id, then the close.
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = nc.Write(appendPeerID([]byte{PeerRaft | peerNamed}, "n2"))
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 16)
	n, _ := io.ReadFull(nc, buf[:4])
	if n != 4 || string(buf[:4]) != "\x01\x02n4" {
		t.Fatalf("refusal: %q", buf[:n])
	}
	if n, err := nc.Read(buf); n != 0 || err == nil {
		t.Fatal("a refused connection must be closed")
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func contextTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// HeldPartitions is failover.AbsentOwner applied to a rebalance: each row
// names the loss it prevents.
func TestHeldPartitionsRefuseARebalanceThatWouldEmptyAPartition(t *testing.T) {
	rf1 := planned("a", "b", "c")
	rf2 := planned("a", "b", "c")
	for i := range rf2.Partitions {
		p := &rf2.Partitions[i]
		p.ReplicaNodeIDs = []NodeID{rf2.Partitions[(i+1)%len(rf2.Partitions)].ActiveOwner} // the next owner
	}
	cases := []struct {
		name    string
		m       *PartitionMap
		members []MemberView
		held    bool
	}{
		{"every owner alive: nothing held", rf1, []MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberAlive)}, false},
		{"RF 1, an owner suspected for a moment (a busy host): its partition would restart empty elsewhere", rf1,
			[]MemberView{view("a", MemberAlive), view("b", MemberSuspected), view("c", MemberAlive)}, true},
		{"RF 1, an owner unreachable inside member grace (SIGSTOP, GC pause): held", rf1,
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberUnreachable)}, true},
		{"RF 1, an owner the tracker does not know: never guessed gone", rf1,
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive)}, true},
		{"RF 1, an owner lost (grace out): it may move, empty", rf1,
			[]MemberView{view("a", MemberAlive), view("b", MemberAlive), view("c", MemberLost)}, false},
		{"RF 1, an owner evicted by an operator: it may move", rf1,
			[]MemberView{view("a", MemberAlive), view("b", MemberEvicted), view("c", MemberAlive)}, false},
		{"RF 2, an owner away with a live replica: the replica holds the data", rf2,
			[]MemberView{view("a", MemberAlive), view("b", MemberUnreachable), view("c", MemberAlive)}, false},
	}
	for _, c := range cases {
		err := HeldPartitions(c.m, c.members)
		if held := errors.Is(err, ErrOwnerAway); held != c.held {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
