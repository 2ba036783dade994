package clustertest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

// TestNewNodeOnADeadOwnersAddress is issue #8's "a node restarting with a
// different id": an owner crashes and a new, empty node with another id
// comes up on exactly its ports (a pod rescheduled under a new identity).
// Every peer connection names its target, so the new node refuses what is
// meant for the dead one: the leader's possession query to the dead owner
// gets no answer in its name (before the check, the new node's empty
// answer was taken for the owner's — "the owner answers directly" — and
// the dead owner's partitions never failed over), and raft never counts
// the blank node as the dead voter. Then:
//   - the dead owner's partitions fail over to their replicas and every
//     acknowledged sync write reads back through the SDK;
//   - the new node is a member under its own id, in the map and in raft,
//     owning none of the dead node's partitions;
//   - the dead id is not alive in /v1/cluster and keeps its own raft seat
//     (the grace window is long: it is unreachable, not lost).
func TestNewNodeOnADeadOwnersAddress(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
		// The dead node stays unreachable for the whole test, never lost:
		// its partitions can move only by failover, the path the possession
		// query guards.
		cfg.Timings.MemberGrace = 5 * time.Minute
	}})
	ctx := context.Background()
	cl, err := sdk.Connect(ctx, c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })

	const n = 300
	acked := map[string]string{}
	for i := range n {
		k, v := "identity:"+strconv.Itoa(i), "v"+strconv.Itoa(i)
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		r, err := cl.Put(wctx, k, []byte(v), nil)
		cancel()
		if err != nil || !r.OK() {
			t.Fatalf("put %s: %s %v", k, r.Status, err)
		}
		acked[k] = v
	}

	// The victim owns the partition (with 3 nodes and RF 2 there is one,
	// owned by n1, the first leader: raft must elect a new leader too, and
	// the new node on n1's address must not vote as n1).
	before := c.Map()
	victim := c.Node(string(before.Partitions[0].ActiveOwner))
	deadID := cluster.NodeID(victim.Config().NodeID)
	owned := 0
	for k := range acked {
		if before.OwnerOfKey(k) == deadID {
			owned++
		}
	}
	if owned == 0 {
		t.Fatalf("no acknowledged key owned by %s", deadID)
	}

	const newID = "n9"
	fresh := c.RestartAs(victim, newID, nil)
	if fresh.Info().Ports != victim.Info().Ports {
		t.Fatalf("the new node is not on the dead node's ports: %+v vs %+v", fresh.Info().Ports, victim.Info().Ports)
	}

	// The dead owner's partitions fail over to their replicas. Before the
	// identity check this timed out: the leader's re-check asked the dead
	// owner's address, the new node answered, and the leader kept waiting.
	c.Eventually(30*time.Second, "the dead owner's partitions failed over to their replicas", func() bool {
		leader := c.WaitLeader()
		if leader == nil {
			return false
		}
		m := leader.Cluster().Map()
		for i, p := range m.Partitions {
			if p.ActiveOwner == deadID {
				return false
			}
			if was := before.Partitions[i]; was.ActiveOwner == deadID && !slices.Contains(was.Copies(), p.ActiveOwner) {
				t.Fatalf("partition %d went from %s to %s, not to one of its copies %v", p.ID, deadID, p.ActiveOwner, was.Copies())
			}
		}
		return true
	})

	// Every acknowledged write reads back through the SDK.
	for k, v := range acked {
		rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		r, err := cl.Get(rctx, k)
		cancel()
		if err != nil || !r.OK() || string(r.Value) != v {
			t.Fatalf("acknowledged sync write %s (owner was %s: %v) lost: %s %q %v", k, before.OwnerOfKey(k),
				before.OwnerOfKey(k) == deadID, r.Status, r.Value, err)
		}
	}

	// The new node is a member under its own id, in the map and in raft; it
	// owns nothing; the dead id is not alive and keeps a raft seat of its
	// own (the two servers' addresses differ by their ids).
	var st cluster.Status
	c.Eventually(30*time.Second, "the new node a member under its own id and the dead one not alive", func() bool {
		leader := c.WaitLeader()
		if leader == nil {
			return false
		}
		st = clusterStatus(t, leader)
		dead, nw := nodeStatus(st, deadID), nodeStatus(st, newID)
		return dead != nil && nw != nil && dead.State != cluster.MemberAlive.String() &&
			nw.State == cluster.MemberAlive.String() && nw.InMap && nw.Raft != ""
	})
	if dead := nodeStatus(st, deadID); dead.Raft != "voter" {
		t.Errorf("the dead voter lost its seat inside the grace window: %+v", *dead)
	}
	for _, p := range st.Partitions {
		if p.ActiveOwner == newID {
			t.Errorf("the new node owns partition %d it never earned", p.ID)
		}
	}
	if got := fresh.Cluster().MisdirectedPeers(); got == 0 {
		t.Error("the new node refused no connection meant for the dead node")
	}
}

// clusterStatus is GET /v1/cluster of nd.
func clusterStatus(t *testing.T, nd *server.Node) cluster.Status {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://%s/v1/cluster", nd.HTTPAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st cluster.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("/v1/cluster: %v", err)
	}
	return st
}

func nodeStatus(st cluster.Status, id cluster.NodeID) *cluster.NodeStatus {
	for i := range st.Nodes {
		if st.Nodes[i].ID == id {
			return &st.Nodes[i]
		}
	}
	return nil
}
