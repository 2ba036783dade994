package recovery

import "testing"

func TestShouldReverseSyncOwnedSegment(t *testing.T) {
	cases := []struct {
		name                          string
		certified, preferred, replica bool
		want                          bool
	}{
		{"restarted owner trusts nothing local: pulls from the live replica", false, true, true, true},
		{"re-homed owner that is not the map's preferred primary still pulls (else it stays empty forever)", false, false, true, true},
		{"certified owner is authoritative: a legitimate delete is never resurrected", true, true, true, false},
		{"no live replica: nothing to pull from (recovery would spin on a dead source)", false, true, false, false},
	}
	for _, c := range cases {
		if got := ShouldReverseSyncOwnedSegment(c.certified, c.preferred, c.replica); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestServeGate(t *testing.T) {
	cases := []struct {
		name          string
		synced        bool
		local, source uint64
		want          ServeDecision
	}{
		{"no sync pass yet: serving would answer NotFound for live keys", false, 0, 100, HoldUnsynced},
		{"synced but the source took writes since: acknowledged keys would read NotFound", true, 90, 100, HoldBehindSource},
		{"caught up to the source head", true, 100, 100, Serve},
		{"ahead of the recorded head (writes arrived on the live channel)", true, 120, 100, Serve},
		{"source head 0 means no information: never block on a missing fact", true, 0, 0, Serve},
	}
	for _, c := range cases {
		if got := ServeGate(c.synced, c.local, c.source); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestResyncApplyMode(t *testing.T) {
	cases := []struct {
		name                       string
		digest, passive, shortfall bool
		want                       ApplyMode
	}{
		{"digests match: nothing to move", true, false, false, Skip},
		{"digests match even after a shortfall: still nothing to move", true, true, true, Skip},
		{"passive replica of the one owner: merge, keeping live-channel writes a wipe would throw away", false, true, false, Reconcile},
		{"a former owner: its revisions mean other writes, merging would interleave two histories", false, false, false, Wipe},
		{"a reconcile already left us short: stop looping, adopt the snapshot whole", false, true, true, Wipe},
	}
	for _, c := range cases {
		if got := ResyncApplyMode(c.digest, c.passive, c.shortfall); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestShouldRefuse(t *testing.T) {
	cases := []struct {
		name                            string
		ownerPrimary, cert, synced, has bool
		want                            bool
	}{
		{"uncertified, unsynced and empty owner: its hole must not let a peer certify against it", true, false, false, false, true},
		{"uncertified owner that holds the data (promotion never certified): serve, else replicas stay at zero", true, false, false, true, false},
		{"uncertified owner whose segment is synced: serve", true, false, true, false, false},
		{"certified owner: serve", true, true, false, false, false},
		{"not the owner-primary: serve what it has (the receiver applies revision-bounded)", false, false, false, false, false},
	}
	for _, c := range cases {
		if got := ShouldRefuse(c.ownerPrimary, c.cert, c.synced, c.has); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestShouldCertify(t *testing.T) {
	cases := []struct {
		name          string
		active, cert  bool
		owned, synced int
		want          bool
	}{
		{"every owned segment synced: certify once", true, false, 128, 128, true},
		{"a re-homed non-primary owner certifies too (else it re-queues pulls forever)", true, false, 16, 16, true},
		{"one segment still syncing: not yet", true, false, 128, 127, false},
		{"already certified: exactly once", true, true, 128, 128, false},
		{"no owned segments: no vacuous certification of emptiness", true, false, 0, 0, false},
		{"not the runtime owner: nothing to certify", false, false, 128, 128, false},
	}
	for _, c := range cases {
		if got := ShouldCertify(c.active, c.cert, c.owned, c.synced); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}

func TestSegmentLevel(t *testing.T) {
	cases := []struct {
		name   string
		pulled bool
		live   []string
		level  map[string]bool
		want   bool
	}{
		{"pulled from the recovery source: level by construction", true, []string{"n3"}, nil, true},
		{"the one live replica shipped nothing it lacks", false, []string{"n3"}, map[string]bool{"n3": true}, true},
		{"only the migration target (not an established copy) answered: its empty copy proves nothing about the replica that kept the writes",
			false, []string{"n3"}, map[string]bool{"n5": true}, false},
		{"one of two replicas level, the other held its later revisions: certifying would lose them",
			false, []string{"n2", "n3"}, map[string]bool{"n2": true}, false},
		{"both replicas level", false, []string{"n2", "n3"}, map[string]bool{"n2": true, "n3": true}, true},
		{"no live copy to compare with: a vacuous yes would certify a hole a returning replica is then overwritten with",
			false, nil, map[string]bool{"n5": true}, false},
	}
	for _, c := range cases {
		if got := SegmentLevel(c.pulled, c.live, func(n string) bool { return c.level[n] }); got != c.want {
			t.Errorf("%s: %v", c.name, got)
		}
	}
}
