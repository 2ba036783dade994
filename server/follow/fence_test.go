package follow

import (
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/cluster"
)

func TestClientNameCarriesKeyAndClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		key   string
		claim uint64
		ok    bool
	}{
		{ClientName("ab12", 42), "ab12", 42, true},
		{ClientName("ab12", 0), "ab12", 0, true},
		{ClientNamePrefix + "ab12", "ab12", 0, true}, // an applier of a version before claims
		{ClientNamePrefix + "a/b", "a/b", 0, true},   // a key with a slash, no claim
		{ClientNamePrefix + "a/b/7", "a/b", 7, true},
		{"zaris-follower", "", 0, false},
		{"app", "", 0, false},
		{"", "", 0, false},
	} {
		key, claim, ok := ParseClientName(tc.name)
		if key != tc.key || claim != tc.claim || ok != tc.ok {
			t.Errorf("ParseClientName(%q) = %q, %d, %v; want %q, %d, %v", tc.name, key, claim, ok, tc.key, tc.claim, tc.ok)
		}
	}
}

// TestAdmit: the fence's rule (D135); each row names the failure it
// prevents.
func TestAdmit(t *testing.T) {
	following := func(claim uint64) *cluster.FollowState {
		return &cluster.FollowState{Source: "zaris://primary:7000/s", Key: "k", Generation: 3, Claim: claim}
	}
	for _, tc := range []struct {
		why    string
		st     *cluster.FollowState
		name   string
		fenced uint64
		want   Verdict
	}{
		{"a cluster that does not follow is written by its clients", &cluster.FollowState{}, "app", 0, Pass},
		{"a promoted cluster is written by its clients", &cluster.FollowState{PromotedFrom: "zaris://x/s"}, "", 0, Pass},
		{"a client write on a follower would diverge it from the primary", following(9), "app", 9, RefuseWrite},
		{"a client naming itself an applier without the key", following(9), ClientName("guess", 9), 9, RefuseWrite},
		{"the applier of a replaced follow (another key)", following(9), ClientName("old", 9), 9, RefuseWrite},
		{"the running applier writes", following(9), ClientName("k", 9), 9, Pass},
		{"the first write of a new claim waits for the older claim's writes in flight", following(12), ClientName("k", 12), 9, Advance},
		{"the first applier's first write on this node", following(9), ClientName("k", 9), 0, Advance},
		{"a deposed applier's write once the node folded the new claim, before the new applier wrote here", following(12), ClientName("k", 9), 9, RefuseWrite},
		{"a deposed applier's write after the new applier wrote here", following(12), ClientName("k", 9), 12, RefuseWrite},
		{"the new applier on a node that has not folded its claim: admitting it would let the deposed one write after it", following(9), ClientName("k", 12), 9, RefuseBehind},
		{"the new applier's claim not folded, nothing written here yet", following(9), ClientName("k", 12), 0, RefuseBehind},
		{"a claim older than the one the node fences by (the fold is behind the fence: cannot happen, refused anyway)", following(9), ClientName("k", 9), 12, RefuseWrite},
		{"an applier of a version before claims, before any claim", following(0), ClientNamePrefix + "k", 0, Pass},
		{"an applier of a version before claims, once a claim is folded", following(9), ClientNamePrefix + "k", 0, RefuseWrite},
	} {
		if got := Admit(tc.st, tc.name, tc.fenced); got != tc.want {
			t.Errorf("%s: Admit(claim %d, %q, fenced %d) = %d, want %d", tc.why, tc.st.Claim, tc.name, tc.fenced, got, tc.want)
		}
	}
}

// TestFenceWaitsForTheDeposedAppliersWritesInFlight: a write of the new
// claim does not run while one of the older claim is between its admission
// and its apply, and the older claim is refused once the new one wrote.
func TestFenceWaitsForTheDeposedAppliersWritesInFlight(t *testing.T) {
	var f Fence
	st := &cluster.FollowState{Source: "zaris://primary:7000/s", Key: "k", Generation: 3, Claim: 9}
	oldName, newName := ClientName("k", 9), ClientName("k", 12)

	held, status, _ := f.Enter(st, oldName)
	if !held || status != kv.StatusSuccess {
		t.Fatalf("the running applier's write: held %v, %v", held, status)
	}
	// Its node has not folded claim 12: the new applier is sent back.
	if h, s, msg := f.Enter(st, newName); h || s != kv.StatusUnavailable || msg == "" {
		t.Fatalf("a claim the node has not folded: held %v, %v %q; want Unavailable", h, s, msg)
	}

	next := *st
	next.Claim = 12 // the node folds the new claim while the old write is in flight
	entered := make(chan kv.Status, 1)
	go func() {
		h, s, _ := f.Enter(&next, newName)
		if h {
			defer f.Exit()
		}
		entered <- s
	}()
	select {
	case s := <-entered:
		t.Fatalf("the new claim's write ran (%v) while the deposed applier's write was in flight", s)
	case <-time.After(100 * time.Millisecond):
		// Still waiting, as it must: it can only proceed after Exit.
	}
	f.Exit()
	select {
	case s := <-entered:
		if s != kv.StatusSuccess {
			t.Fatalf("the new claim's write after the old one ended: %v", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the new claim's write still waits after the deposed applier's write ended")
	}

	// From now on the deposed applier is refused, even by a node whose
	// folded state it would still match.
	if h, s, msg := f.Enter(st, oldName); h || s != kv.StatusReadOnly || msg == "" {
		t.Fatalf("the deposed applier after the new claim wrote: held %v, %v %q; want ReadOnly", h, s, msg)
	}
	if h, s, msg := f.Enter(&next, "app"); h || s != kv.StatusReadOnly || msg != "" {
		t.Fatalf("a client write: held %v, %v %q; want ReadOnly with the caller's message", h, s, msg)
	}
	if h, s, _ := f.Enter(&cluster.FollowState{}, "app"); h || s != kv.StatusSuccess {
		t.Fatalf("a cluster that does not follow: held %v, %v", h, s)
	}
	h, s, _ := f.Enter(&next, newName)
	if !h || s != kv.StatusSuccess {
		t.Fatalf("the new applier's next write: held %v, %v", h, s)
	}
	f.Exit()
}
