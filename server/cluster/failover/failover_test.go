package failover

import (
	"testing"
	"time"
)

func TestConfirmOwnerDown(t *testing.T) {
	t0 := time.Unix(1000, 0)
	esc := DefaultSuspectEscalation
	cases := []struct {
		name                     string
		leader, reachable, clean bool
		since                    time.Time
		after                    time.Duration
		want                     ConfirmDecision
	}{
		{"a follower never promotes: two nodes would elect two owners", false, false, true, t0, time.Minute, Ignore},
		{"a 'left' signal racing ahead of the peer table while the owner still answers: leave it", true, true, true, t0, time.Minute, Ignore},
		{"clean departure confirmed by the re-check: promote", true, false, true, time.Time{}, 0, Confirm},
		{"silent owner, first seen now: only suspect", true, false, false, t0, 0, Suspect},
		{"silent inside the escalation window: a GC pause must not cost a promotion", true, false, false, t0, 9 * time.Second, Suspect},
		{"silent for the whole window: confirm", true, false, false, t0, 10 * time.Second, Confirm},
	}
	for _, c := range cases {
		if got := ConfirmOwnerDown(c.leader, c.reachable, c.clean, c.since, t0.Add(c.after), esc); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestNextEpochAndFence(t *testing.T) {
	cases := []struct {
		name          string
		base, highest uint64
		want          uint64
		ok            bool
	}{
		{"first promotion", 7, 7, 8, true},
		{"a leader planning from a stale base would regress ownership: refused", 5, 7, 0, false},
		{"equal to an observed epoch: two owners at one epoch, refused", 6, 7, 0, false},
		{"wraparound is refused", ^uint64(0), 0, 0, false},
	}
	for _, c := range cases {
		got, ok := NextEpoch(c.base, c.highest)
		if got != c.want || ok != c.ok {
			t.Errorf("%s: %d %v", c.name, got, ok)
		}
	}
	if AcceptWrite(true, 7, 8) {
		t.Error("an old owner back from a partition at epoch 7 accepted a write at epoch 8 (split brain)")
	}
	if !AcceptWrite(true, 8, 8) || AcceptWrite(false, 8, 8) {
		t.Error("fence wrong for the current owner / a replica")
	}
}

func TestChooseCandidateAndPromotionState(t *testing.T) {
	cands := []Candidate{
		{ID: "n3", Alive: true, SyncedSegments: 100, HeldKeys: 900},
		{ID: "n2", Alive: true, SyncedSegments: 128, HeldKeys: 800},
		{ID: "n4", Alive: false, SyncedSegments: 128, HeldKeys: 1000},
	}
	best, ok := ChooseCandidate(cands)
	if !ok || best.ID != "n2" {
		t.Fatalf("picked %+v: the most synced live replica serves soonest; a dead one never", best)
	}
	if _, ok := ChooseCandidate([]Candidate{{ID: "x", Alive: false}}); ok {
		t.Fatal("no live replica must mean Unavailable, not a fake owner")
	}
	// Availability first, then completeness: among equally synced
	// replicas the one that applied the most of the lease wins.
	tie := []Candidate{
		{ID: "n2", Alive: true, SyncedSegments: 128, HeldKeys: 200, MissingRevisions: 3},
		{ID: "n3", Alive: true, SyncedSegments: 128, HeldKeys: 200},
	}
	if best, _ := ChooseCandidate(tie); best.ID != "n3" {
		t.Fatalf("picked %s: equally synced, the copy missing acknowledged overwrites must not win", best.ID)
	}
	cases := []struct {
		name            string
		cand, bestOther int64
		missing         uint64
		want            Health
	}{
		{"a more complete live sibling exists: sync first, or acknowledged keys read NotFound", 800, 900, 0, Recovering},
		{"the candidate is the most complete: serve now", 900, 800, 0, Degraded},
		{"a lone survivor serves: blocking the only copy left helps nobody", 500, 0, 0, Degraded},
		{"equal holders: serve", 900, 900, 0, Degraded},
		{"same keys, but the sibling applied later overwrites (a majority write acknowledged on it only): " +
			"sync first, or those writes read stale and the new owner's snapshot erases them", 200, 200, 3, Recovering},
	}
	for _, c := range cases {
		if got := PromotionState(c.cand, c.bestOther, c.missing); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestMissingRevisions(t *testing.T) {
	got := MissingRevisions(map[string][]SegmentRevision{
		"ahead":   {{0, 50, true}, {1, 70, true}},
		"behind":  {{0, 48, true}, {1, 70, true}},
		"foreign": {{0, 90, false}, {1, 70, true}}, // segment 0 from another history
		"empty":   {},
	})
	want := map[string]uint64{
		"ahead":   0,
		"behind":  2,   // two overwrites of segment 0 it never applied
		"foreign": 50,  // a revision of another history proves nothing of the lease
		"empty":   120, // a copy that holds nothing misses everything
	}
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: missing %d, want %d", id, got[id], w)
		}
	}
}

func TestNextHealth(t *testing.T) {
	t0 := time.Unix(0, 0)
	d := DefaultHealthDebounce
	cases := []struct {
		name     string
		cur      Health
		ev       HealthEvent
		promoted Health
		since    time.Time
		after    time.Duration
		want     Health
	}{
		{"losing a replica degrades at once (cheap, reversible)", Healthy, EventReplicaLost, 0, time.Time{}, 0, Degraded},
		{"promotion lands in the proven state", Degraded, EventOwnerPromoted, Recovering, time.Time{}, 0, Recovering},
		{"a recovering owner that caught up starts serving", Recovering, EventCaughtUp, 0, time.Time{}, 0, Degraded},
		{"synced but inside the debounce: a flapping node must not storm transitions", Degraded, EventAllSynced, 0, t0, time.Second, Degraded},
		{"synced for the debounce: healthy again", Degraded, EventAllSynced, 0, t0, d, Healthy},
		{"never healthy straight from recovering", Recovering, EventAllSynced, 0, t0, time.Hour, Recovering},
		{"no survivor: unavailable, loudly", Degraded, EventNoSurvivor, 0, time.Time{}, 0, Unavailable},
		{"the held owner answers again: serve its copy, not an outage that outlasts the overload (RF 1 beside a CPU hog)", Unavailable, EventOwnerBack, 0, time.Time{}, 0, Degraded},
		{"an owner answering changes nothing on a serving partition", Degraded, EventOwnerBack, 0, time.Time{}, 0, Degraded},
		{"nor on a recovering one: it still syncs from the better copy first", Recovering, EventOwnerBack, 0, time.Time{}, 0, Recovering},
	}
	for _, c := range cases {
		if got := NextHealth(c.cur, c.ev, c.promoted, c.since, t0.Add(c.after), d); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
	if !Degraded.Serving() || Recovering.Serving() || Unavailable.Serving() {
		t.Fatal("serving states")
	}
}

func TestAbsentOwner(t *testing.T) {
	cases := []struct {
		name     string
		owner    OwnerPresence
		liveCopy bool
		want     AbsentOwnerAction
	}{
		{"an alive owner keeps its partition, copies or not", OwnerAlive, false, KeepOwner},
		{"an alive owner with live copies keeps it too: nobody promotes over a live owner", OwnerAlive, true, KeepOwner},
		{"RF 1, owner starved by a CPU hog past the dead verdict: held Unavailable, not reassigned empty while its data comes back", OwnerAway, false, HoldUnavailable},
		{"RF 1, owner stopped (SIGSTOP, GC pause) inside member grace: held, so the data it still has is served again when it resumes", OwnerAway, false, HoldUnavailable},
		{"owner away with a live replica: the replica has the data, promote it", OwnerAway, true, PromoteCopy},
		{"owner gone for good with a live replica: the replica takes over, not an empty spare", OwnerGone, true, PromoteCopy},
		{"RF 1, owner gone for good (grace out, evicted): reassign, the partition restarts empty", OwnerGone, false, Reassign},
		{"an owner in an unknown state is never guessed dead: held", OwnerPresence(0), false, HoldUnavailable},
		{"RF 2, owner away and its only live replica restarted empty (not sent the data yet: CopyHoldsData false): held, not promoted to serve its hole",
			OwnerAway, false, HoldUnavailable},
		{"RF 2, owner gone for good and its only replica incomplete: the copy is all there is (the failover promotes it with what it has)",
			OwnerGone, false, Reassign},
	}
	for _, c := range cases {
		if got := AbsentOwner(c.owner, c.liveCopy); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestAwaitCopy(t *testing.T) {
	cases := []struct {
		name    string
		copy    OwnerPresence
		demoted bool
		want    bool
	}{
		{"the source answers: the recovering owner keeps syncing from it", OwnerAlive, false, true},
		{"the source is suspected on a loaded machine while a restarted owner syncs from it: serving now answers NotFound for the keys not pulled yet and the owner's next session replaces the source's copy by its hole (a WAN follower lost feed:026 across its applier node's restart)",
			OwnerAway, false, true},
		{"the only replica of a restarted owner was declared dead inside the member grace (SIGSTOP, GC pause): the owner stays held rather than serve empty over the writes the replica comes back with",
			OwnerAway, false, true},
		{"a copy in an unknown state is never guessed gone: wait", OwnerPresence(0), false, true},
		{"the copy is gone for good (grace out, evicted, decommissioned): its writes are lost either way; serve what the owner holds", OwnerGone, false, false},
		{"the former owner a failover confirmed dead: the promoted copy proved it holds the data, waiting for the dead one would undo the failover", OwnerAway, true, false},
		{"the former owner is back and rebuilt as a copy: an owner restarting before the demotion clears must not serve empty over it", OwnerAlive, true, true},
		{"the former owner gone for good", OwnerGone, true, false},
	}
	for _, c := range cases {
		if got := AwaitCopy(c.copy, c.demoted); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCopyHoldsData(t *testing.T) {
	cases := []struct {
		name             string
		synced, segments int
		want             bool
	}{
		{"a replica that follows the owner's lease in every segment stands in for it", 43, 43, true},
		{"a replica that restarted empty and was sent none of the owner's data: promoting it serves an empty partition while the owner is only away", 0, 43, false},
		{"a replica halfway through the owner's snapshots: the rest would read NotFound", 20, 43, false},
		{"a partition without segments proves nothing", 0, 0, false},
	}
	for _, c := range cases {
		if got := CopyHoldsData(c.synced, c.segments); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
