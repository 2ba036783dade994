package clustertest

import (
	"testing"
	"time"
)

// A member that stops answering is first Suspected — from the silence of its
// digest heartbeat, a runtime-only state that moves nothing — before the
// failure detector declares it unreachable (R-CLU-2).
func TestSilentMemberIsSuspectedFirst(t *testing.T) {
	c := Start(t, 3, Options{})
	c.WaitConverged(10 * time.Second)
	victim := c.Running()[2]
	id := victim.Config().NodeID
	watcher := c.Running()[0]
	c.Stop(victim)
	seen := map[string]bool{}
	c.Eventually(15*time.Second, "the stopped member suspected, then unreachable or lost", func() bool {
		for _, n := range watcher.ClusterStatus().Nodes {
			if string(n.ID) == id {
				seen[n.State] = true
			}
		}
		return seen["suspected"] && (seen["unreachable"] || seen["lost"])
	})
}
