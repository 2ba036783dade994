package clustertest_test

import (
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// A node decommissioned on purpose announces its leave: the survivors mark it
// Decommissioned (map-affecting, R-CLU-2) and the leader drops it from the
// map at once, without waiting out a failure's grace window.
func TestDecommissionLeavesTheMap(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.Timings.MemberGrace = time.Hour // a plain failure would keep its place this long
	}})
	v0 := c.WaitConverged(15 * time.Second)
	gone, watcher := c.Running()[2], c.Running()[0]
	if gone == c.WaitLeader() {
		gone = c.Running()[1]
	}
	id := gone.Config().NodeID
	c.Decommission(gone)
	c.Eventually(15*time.Second, "the decommissioned node out of the map, marked decommissioned", func() bool {
		if _, in := c.Map().Node(cluster.NodeID(id)); in {
			return false
		}
		for _, n := range watcher.ClusterStatus().Nodes {
			if string(n.ID) == id {
				return n.State == "decommissioned"
			}
		}
		return false
	})
	if v := c.WaitConverged(10 * time.Second); v <= v0 {
		t.Fatalf("map version %d after the decommission, was %d", v, v0)
	}
}
