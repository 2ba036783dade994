package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
)

// testNode is one Cluster on loopback with an in-memory raft store.
type testNode struct {
	c     *Cluster
	mu    sync.Mutex
	maps  []uint64 // versions passed to OnMap, in order
	open  chan TrafficDecision
	store string
}

func startTestNode(t *testing.T, id string, mutate func(*Config)) *testNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tn := &testNode{open: make(chan TrafficDecision, 1)}
	cfg := Config{
		Self:  NodeInfo{ID: NodeID(id), Host: "127.0.0.1", ClientPort: 1, PeerPort: ln.Addr().(*net.TCPAddr).Port},
		Store: "s", ClusterID: "c", GossipBind: "127.0.0.1", TotalSegments: 64, ReplicationFactor: 1,
		PeerListener: ln, Timings: TestTimings().Scaled(testscale.Factor()),
		OnMap: func(m *PartitionMap) {
			tn.mu.Lock()
			tn.maps = append(tn.maps, m.Version)
			tn.mu.Unlock()
		},
		OnTraffic: func(d TrafficDecision) { tn.open <- d },
	}
	if mutate != nil {
		mutate(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	tn.c = c
	t.Cleanup(c.Stop)
	return tn
}

func (n *testNode) gossipAddr() string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(n.c.GossipPort()))
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, timeout, 10*time.Millisecond, what, cond)
}

func startTestCluster(t *testing.T, n int) []*testNode {
	t.Helper()
	first := startTestNode(t, "n1", func(c *Config) { c.ExpectNodes = n })
	nodes := []*testNode{first}
	for i := 2; i <= n; i++ {
		nodes = append(nodes, startTestNode(t, fmt.Sprint("n", i), func(c *Config) {
			c.ExpectNodes = n
			c.Join = []string{first.gossipAddr()}
		}))
	}
	eventually(t, 20*time.Second, "every node applied the same map", func() bool {
		m := nodes[0].c.Map()
		if m == nil || len(m.Nodes) != n {
			return false
		}
		for _, x := range nodes[1:] {
			if xm := x.c.Map(); xm == nil || xm.Version != m.Version {
				return false
			}
		}
		return true
	})
	return nodes
}

func TestClusterFormsAndConverges(t *testing.T) {
	nodes := startTestCluster(t, 3)
	m := nodes[0].c.Map()
	if len(m.Partitions) != 3 {
		t.Fatalf("3 members must plan 3 partitions: %+v", m.Partitions)
	}
	for _, n := range nodes {
		select {
		case d := <-n.open:
			if d != TrafficOpen {
				t.Fatalf("%s: traffic gate %v", n.c.cfg.Self.ID, d)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: traffic gate never opened", n.c.cfg.Self.ID)
		}
		st := n.c.Status()
		if st.MapVersion != m.Version || st.Leader == "" || st.TrafficGate != "open" || len(st.Nodes) != 3 {
			t.Fatalf("status %+v", st)
		}
	}
	// Every node ended up a raft voter.
	eventually(t, 10*time.Second, "three voters", func() bool {
		voters := 0
		for _, ns := range nodes[0].c.Status().Nodes {
			if ns.Raft == "voter" {
				voters++
			}
		}
		return voters == 3
	})
}

// leaderOf waits until one of nodes leads and every other follows it, and
// returns it (never nil: the test fails at the deadline).
func leaderOf(t *testing.T, nodes []*testNode) *testNode {
	t.Helper()
	var leader *testNode
	eventually(t, 10*time.Second, "a leader every node follows", func() bool {
		leader = nil
		for _, n := range nodes {
			if n.c.IsLeader() {
				leader = n
			}
		}
		if leader == nil {
			return false
		}
		for _, n := range nodes {
			if n.c.Leader() != leader.c.cfg.Self.ID {
				return false
			}
		}
		return true
	})
	return leader
}

func TestClusterRefusesStaleAndForeignMaps(t *testing.T) {
	nodes := startTestCluster(t, 1)
	n := nodes[0]
	ctx := context.Background()
	cur := n.c.Map()
	stale := cur.Clone()
	if err := n.c.CommitMap(ctx, stale); !errors.Is(err, ErrStaleMap) {
		t.Fatalf("a map of the current version must be refused: %v", err)
	}
	foreign := cur.Clone()
	foreign.Version++
	foreign.Store = "other"
	if err := n.c.CommitMap(ctx, foreign); !errors.Is(err, ErrForeignMap) {
		t.Fatalf("another store's map must be refused: %v", err)
	}
	if got := n.c.Map().Version; got != cur.Version {
		t.Fatalf("a refused map changed the version to %d", got)
	}
	// An ownership change at a generation not above the current one is refused.
	oc := OwnershipChange{Partition: 0, Owner: "n1", Generation: cur.Partitions[0].OwnershipGeneration}
	if err := n.c.CommitOwnership(ctx, oc); !errors.Is(err, ErrRejectedChange) {
		t.Fatalf("a stale generation must be refused: %v", err)
	}
	oc.Generation++
	if err := n.c.CommitOwnership(ctx, oc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the ownership change applied", func() bool { return n.c.Map().Version == cur.Version+1 })
	if p := n.c.Map().Partitions[0]; p.LeaderTerm != n.c.Term() || p.OwnershipGeneration != oc.Generation {
		t.Fatalf("ownership lease not stamped with the raft term: %+v (term %d)", p, n.c.Term())
	}
}

func TestClusterRefusesForeignNodes(t *testing.T) {
	nodes := startTestCluster(t, 1)
	for _, tc := range []struct{ name, store, cluster string }{
		{"other store", "other", "c"},
		{"other cluster", "s", "other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := startTestNode(t, "x-"+tc.store+tc.cluster, func(c *Config) {
				c.Store, c.ClusterID = tc.store, tc.cluster
				c.Join = []string{nodes[0].gossipAddr()}
			})
			eventually(t, 5*time.Second, "the refusal", func() bool { return len(nodes[0].c.Refused()) > 0 || len(x.c.Refused()) > 0 })
			for _, ns := range nodes[0].c.Status().Nodes {
				if string(ns.ID) == "x-"+tc.store+tc.cluster {
					t.Fatalf("a foreign node became a member: %+v", ns)
				}
			}
			if x.c.Map() != nil {
				t.Fatal("a foreign node received the cluster's map")
			}
		})
	}
}

func TestDriftIsRepairedFromTheLeader(t *testing.T) {
	nodes := startTestCluster(t, 3)
	leader := leaderOf(t, nodes)
	if leader == nil {
		t.Fatal("no leader")
	}
	old := leader.c.Map()
	oc := OwnershipChange{Partition: 0, Owner: old.Partitions[0].ActiveOwner, Generation: old.Partitions[0].OwnershipGeneration + 1,
		Epoch: old.Partitions[0].Epoch}
	if err := leader.c.CommitOwnership(context.Background(), oc); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "everyone on the new version", func() bool {
		for _, n := range nodes {
			if m := n.c.Map(); m == nil || m.Version != old.Version+1 {
				return false
			}
		}
		return true
	})
	// Roll one follower's applied map back behind the others' (as if it
	// had missed the commit): its digest differs from the majority, and
	// two cycles later it refetches the map from the leader.
	var lagging *testNode
	for _, n := range nodes {
		if n != leader {
			lagging = n
			break
		}
	}
	lagging.c.mu.Lock()
	lagging.c.applied = old
	lagging.c.mu.Unlock()
	eventually(t, 10*time.Second, "the drift repaired", func() bool {
		return lagging.c.Map().Version == old.Version+1 && lagging.c.Status().DriftRepairs > 0
	})
}
