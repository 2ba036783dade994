package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

func members(ids ...string) []NodeInfo {
	out := make([]NodeInfo, len(ids))
	for i, id := range ids {
		out[i] = NodeInfo{ID: NodeID(id), Host: "127.0.0.1", ClientPort: 7000 + i}
	}
	return out
}

func seqIdentity() func() string {
	n := 0
	return func() string { n++; return fmt.Sprint("p", n) }
}

func TestAcceptMap(t *testing.T) {
	cur := Plan(PlanInput{Members: members("a"), TotalSegments: 8, Store: "s", Cluster: "c1", NewIdentity: seqIdentity()})
	cur.Version = 5
	newer := cur.Clone()
	newer.Version = 6
	same := cur.Clone()
	older := cur.Clone()
	older.Version = 4
	foreign := newer.Clone()
	foreign.Store = "other"
	otherCluster := newer.Clone()
	otherCluster.ClusterID = "c2"
	broken := newer.Clone()
	broken.SegmentToPartition = broken.SegmentToPartition[:3]
	cases := []struct {
		name string
		in   *PartitionMap
		want error
	}{
		{"strictly newer: applied", newer, nil},
		{"same version: two nodes could settle on different maps of one version", same, ErrStaleMap},
		{"older version: a delayed broadcast would roll routing back", older, ErrStaleMap},
		{"another store's map: never silently serve another store", foreign, ErrForeignMap},
		{"another cluster's map: a misconfigured node must not join", otherCluster, ErrForeignMap},
		{"a half-populated segment table: keys would route nowhere", broken, ErrInvalidMap},
	}
	for _, c := range cases {
		err := AcceptMap(cur, c.in, "s", "c1")
		if (c.want == nil) != (err == nil) || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	if err := AcceptMap(nil, cur, "s", "c1"); err != nil {
		t.Fatalf("first map: %v", err)
	}
}

func TestFormationGate(t *testing.T) {
	g := FormationGate{MinMembers: 3, StableFor: 3 * time.Second, ForceAfter: 30 * time.Second}
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name                      string
		members                   int
		sinceChange, sinceWaiting time.Duration
		want                      FormationDecision
	}{
		{"members still joining one by one: planning now means re-planning a second later", 3, time.Second, 2 * time.Second, FormationWait},
		{"too few members, even if stable", 2, 10 * time.Second, 10 * time.Second, FormationWait},
		{"stable long enough with the registry present", 3, 3 * time.Second, 10 * time.Second, FormationStable},
		{"never stable: forced after 30 s rather than blocking forever", 2, time.Second, 30 * time.Second, FormationForced},
	}
	for _, c := range cases {
		now := t0.Add(c.sinceWaiting)
		if got := g.Decide(c.members, now.Add(-c.sinceChange), t0, now); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestTrafficGate(t *testing.T) {
	m := Plan(PlanInput{Members: members("a"), TotalSegments: 8, NewIdentity: seqIdentity()})
	m.Version = 7
	half := m.Clone()
	half.SegmentToPartition = half.SegmentToPartition[:4]
	cases := []struct {
		name string
		in   TrafficInputs
		want TrafficDecision
	}{
		{"no map yet: nothing to route with", TrafficInputs{Guard: time.Minute}, TrafficHold},
		{"runtime ownership behind the map: would serve a partition it does not hold yet", TrafficInputs{Map: m, RuntimeVersion: 6, RuntimeComplete: true, Guard: time.Minute}, TrafficHold},
		{"runtime incomplete: some partition has no owner entry", TrafficInputs{Map: m, RuntimeVersion: 7, Guard: time.Minute}, TrafficHold},
		{"segment table half populated: keys would route nowhere", TrafficInputs{Map: half, RuntimeVersion: 7, RuntimeComplete: true, Guard: time.Minute}, TrafficHold},
		{"aligned: open", TrafficInputs{Map: m, RuntimeVersion: 7, RuntimeComplete: true, Guard: time.Minute}, TrafficOpen},
		{"never converging: open after the guard with a warning instead of staying shut", TrafficInputs{Map: m, RuntimeVersion: 6, RuntimeComplete: true, WaitingFor: time.Minute, Guard: time.Minute}, TrafficOpenUnconverged},
	}
	for _, c := range cases {
		if got := TrafficGate(c.in); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestNextMemberState(t *testing.T) {
	t0 := time.Unix(0, 0)
	grace := DefaultGraceWindow
	cases := []struct {
		name  string
		cur   MemberState
		sig   MemberSignal
		after time.Duration
		want  MemberState
	}{
		{"missed heartbeats only suspect: a GC pause must not move anything", MemberAlive, SignalSuspect, 0, MemberSuspected},
		{"declared dead: unreachable, runtime only (failover, not a new map)", MemberSuspected, SignalDead, 0, MemberUnreachable},
		{"back within the grace window: alive again, no reshuffle", MemberUnreachable, SignalAlive, 10 * time.Second, MemberAlive},
		{"still gone inside the grace window: stays unreachable", MemberUnreachable, SignalTick, 29 * time.Second, MemberUnreachable},
		{"gone past the grace window: lost, eligible for a new map", MemberUnreachable, SignalTick, 30 * time.Second, MemberLost},
		{"graceful leave: decommissioned at once", MemberAlive, SignalLeft, 0, MemberDecommissioned},
		{"an evicted node cannot heartbeat its way back in", MemberEvicted, SignalAlive, 0, MemberEvicted},
		{"a tick never revives or kills an alive member", MemberAlive, SignalTick, time.Hour, MemberAlive},
	}
	for _, c := range cases {
		got := NextMemberState(c.cur, c.sig, t0, t0.Add(c.after), grace)
		if got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
		if got.MapAffecting() != (got == MemberLost || got == MemberEvicted || got == MemberDecommissioned) {
			t.Errorf("%s: MapAffecting wrong for %v", c.name, got)
		}
	}
}

// Which member states are the "node left" signal failover acts on without
// the suspect escalation (R-REP-3).
func TestDeclaredDown(t *testing.T) {
	cases := []struct {
		name  string
		state MemberState
		want  bool
	}{
		{"alive: never failed over", MemberAlive, false},
		{"suspected (probes unanswered, memberlist still says alive): a GC pause or a blip must wait the escalation window", MemberSuspected, false},
		{"memberlist's dead verdict after its suspicion round: waiting 10 s more only prolongs the outage", MemberUnreachable, true},
		{"lost past the grace window", MemberLost, true},
		{"evicted by an operator", MemberEvicted, true},
		{"decommissioned: it announced its leave", MemberDecommissioned, true},
	}
	for _, c := range cases {
		if got := c.state.DeclaredDown(); got != c.want {
			t.Errorf("%s: DeclaredDown = %v", c.name, got)
		}
	}
}

// How long a member may stay silent to our direct probes before it is
// Suspected (R-CLU-2).
func TestProbeSilenceLimit(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name            string
		members         int
		interval, probe time.Duration
		health          int
		want            time.Duration
	}{
		{"four round-robin rounds: a member probed once per round is never blamed for one lost ack", 5, 250 * ms, 200 * ms, 0, 5 * time.Second},
		{"a lone pair still gets two probe cycles: one slow ack must not suspect", 1, 500 * ms, 250 * ms, 0, 2 * time.Second},
		{"no members known yet counts as one", 0, 500 * ms, 250 * ms, 0, 2 * time.Second},
		{"our own node starved (health 3): memberlist probes 4× slower, so the limit is 4× longer — healthy members are not blamed for our CPU hog", 5, 250 * ms, 200 * ms, 3, 20 * time.Second},
		{"a negative score is never below the healthy limit", 5, 250 * ms, 200 * ms, -1, 5 * time.Second},
	}
	for _, c := range cases {
		if got := ProbeSilenceLimit(c.members, c.interval, c.probe, c.health); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
