package clustertest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/placement"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// keyWhereabouts explains where key lives on cluster c: its partition in
// the map each running node applied, and each node's local copy of its
// segment (owned or not, revision, the key's value if held).
func keyWhereabouts(c *clustertest.Cluster, key string) string {
	var b strings.Builder
	for _, nd := range c.Running() {
		id := nd.Config().NodeID
		cl := nd.Cluster()
		if cl == nil {
			fmt.Fprintf(&b, "\n  %s: no cluster", id)
			continue
		}
		m := cl.Map()
		if m == nil {
			fmt.Fprintf(&b, "\n  %s: no map", id)
			continue
		}
		seg := int(placement.SegmentOf(key, m.TotalSegments))
		p := m.Partitions[m.SegmentToPartition[seg]]
		g := nd.Store().SegmentFor(key)
		held := "absent"
		for _, r := range g.Snapshot().Records {
			if r.Key() == key {
				held = fmt.Sprintf("%q rev %d", r.Value(), r.Revision)
			}
		}
		fmt.Fprintf(&b, "\n  %s (leader %v): map v%d segment %d partition %d owner %s primary %s replicas %v health %v gen %d epoch %d demoted %v source %q incoming %v moveto %q; local segment owned %v revision %d len %d, key %s",
			id, cl.IsLeader(), m.Version, seg, p.ID, p.ActiveOwner, p.PrimaryNodeID, p.ReplicaNodeIDs, p.HealthState(), p.OwnershipGeneration,
			p.Epoch, p.Demoted, p.Source, p.Incoming, p.MoveTo, g.Owned(), g.Revision(), g.Len(), held)
	}
	return b.String()
}

// TestFollowerKeepsMirroredKeysAcrossRestarts: a follower (3 nodes, RF 2,
// sync) restarts, one at a time, the node running its applier and the
// owner of mirrored keys — back before its dead verdict (restart
// recovery), then after its partitions failed over — writes arriving on
// the primary meanwhile: a node restart loses none of the follower's data
// (issue #14 item 5). A failure names where the first wrong key lives on
// every node (keyWhereabouts, in mirrored).
func TestFollowerKeepsMirroredKeysAcrossRestarts(t *testing.T) {
	// A member grace far above a round: the failover and restart recovery
	// keep the victim's place in the map (a map change and the rebalance
	// that follows it are live migration's business, tested elsewhere).
	p := newFollowPairWith(t, 1, 3, nil, func(cfg *server.Config) {
		syncRF2(cfg)
		cfg.Timings.MemberGrace = 2 * time.Minute
	})
	p.follow()
	want := map[string]string{}
	for i := range 200 {
		k := fmt.Sprintf("feed:%03d", i)
		p.put(k, "f"+k, 0)
		want[k] = "f" + k
	}
	p.mirrored("feed", want)
	for round := range 4 {
		var victim *server.Node
		if round%2 == 0 {
			victim = p.follower.WaitLeader()
		} else {
			victim = p.follower.Owner("feed:026")
		}
		failover := round >= 2
		t.Logf("round %d: restarting %s (failover first: %v)", round, victim.Config().NodeID, failover)
		id := victim.Config().NodeID
		p.follower.Restart(victim, func() {
			for i := range 50 {
				k := fmt.Sprintf("down%d:%03d", round, i)
				p.put(k, "d"+k, 0)
				want[k] = "d" + k
			}
			if failover {
				p.follower.Eventually(30*time.Second, "the victim's partitions failed over", func() bool {
					m := p.follower.Map()
					for _, q := range m.Partitions {
						if string(q.ActiveOwner) == id {
							return false
						}
					}
					return true
				})
			}
		})
		p.mirrored(fmt.Sprintf("round %d: after %s restarted", round, victim.Config().NodeID), want)
	}
}
