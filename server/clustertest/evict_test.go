package clustertest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/testscale"
	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/clustertest"
)

func postHTTP(t *testing.T, nd *server.Node, path string) (int, string) {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Post("http://"+nd.HTTPAddr().String()+path, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestEvict: an operator evicts a member (R-CLU-2) through the leader's
// POST /v1/cluster/evict: a new map version leaves it out, every survivor
// shows it "evicted", and the keys stay reachable through the SDK.
func TestEvict(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.ReplicationFactor = 2
		cfg.ReplicationMode, cfg.WriteQuorum = server.ReplicationSync, server.WriteQuorumAll
	}})
	v0 := c.WaitConverged(15 * time.Second)
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const keys = 40
	for i := range keys {
		k := fmt.Sprintf("evict:%d", i)
		if _, err := cl.Put(ctx, k, []byte(k), nil); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}

	leader := c.WaitLeader()
	if leader == nil {
		t.Fatal("no leader")
	}
	leaderID := leader.Config().NodeID
	victim, follower := "n3", (*server.Node)(nil)
	if leaderID == victim {
		victim = "n2"
	}
	for _, nd := range c.Running() {
		if nd != leader && nd.Config().NodeID != victim {
			follower = nd
		}
	}
	if code, body := postHTTP(t, follower, "/v1/cluster/evict?node="+victim); code != http.StatusConflict {
		t.Fatalf("evict on a follower: %d %s, want 409", code, body)
	}
	if code, body := postHTTP(t, leader, "/v1/cluster/evict?node=nope"); code != http.StatusNotFound {
		t.Fatalf("evict of an unknown node: %d %s, want 404", code, body)
	}
	if code, body := postHTTP(t, leader, "/v1/cluster/evict?node="+leaderID); code != http.StatusBadRequest {
		t.Fatalf("evict of the leader itself: %d %s, want 400", code, body)
	}
	if code, body := postHTTP(t, leader, "/v1/cluster/evict?node="+victim); code != http.StatusOK {
		t.Fatalf("evict: %d %s", code, body)
	}

	survivors := []*server.Node{leader, follower}
	eventually(t, 20*time.Second, "a new map without the evicted node on the survivors", func() bool {
		for _, nd := range survivors {
			m := nd.Cluster().Map()
			if m == nil || m.Version <= v0 {
				return false
			}
			if _, in := m.Node(cluster.NodeID(victim)); in {
				return false
			}
		}
		return true
	})
	eventually(t, 20*time.Second, "the survivors show the node evicted, out of the map and raft", func() bool {
		for _, nd := range survivors {
			found := false
			for _, ns := range nd.ClusterStatus().Nodes {
				if string(ns.ID) == victim {
					// evicted, out of the map and out of raft
					found = ns.State == cluster.MemberEvicted.String() && !ns.InMap && ns.Raft == ""
				}
			}
			if !found {
				return false
			}
		}
		return true
	})
	for i := range keys {
		k := fmt.Sprintf("evict:%d", i)
		r, err := cl.Get(ctx, k)
		if err != nil {
			t.Fatalf("get %s after the eviction: %v", k, err)
		}
		if string(r.Value) != k {
			t.Fatalf("get %s after the eviction: %q", k, r.Value)
		}
	}
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testscale.Eventually(t, timeout, 50*time.Millisecond, what, cond)
}
