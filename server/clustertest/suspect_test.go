package clustertest_test

import (
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestStoppedMemberIsSuspectedFirst: a member that stops answering probes
// is Suspected (the probe-silence producer, R-CLU-2) before memberlist
// declares it dead (Unreachable, then Lost). The suspicion multiplier is
// raised so memberlist's own dead timeout (in a cluster this small, the
// multiplier × the probe interval: 4 s) outlasts the probe silence
// (4 × 3 members × 200 ms = 2.4 s).
func TestStoppedMemberIsSuspectedFirst(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.Timings.GossipSuspicionMult = 20
	}})
	c.WaitConverged(15 * time.Second)
	victim := c.Node("n3")
	observer := c.Node("n1")
	stateOf := func() string {
		for _, ns := range observer.ClusterStatus().Nodes {
			if ns.ID == "n3" {
				return ns.State
			}
		}
		return ""
	}
	// Healthy: no suspicion for a while after formation.
	for range 40 {
		if s := stateOf(); s != cluster.MemberAlive.String() {
			t.Fatalf("n3 on a healthy cluster: %q", s)
		}
		time.Sleep(25 * time.Millisecond)
	}
	c.Stop(victim)
	var seen []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := stateOf()
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
		if s == cluster.MemberUnreachable.String() || s == cluster.MemberLost.String() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("n3 never unreachable: %v", seen)
		}
		time.Sleep(10 * time.Millisecond)
	}
	want := []string{cluster.MemberAlive.String(), cluster.MemberSuspected.String()}
	if len(seen) < 3 || seen[0] != want[0] || seen[1] != want[1] {
		t.Fatalf("states of the stopped member: %v, want alive, suspected, then unreachable or lost", seen)
	}
}
