package clustertest_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/cluster"
	"github.com/zaris-io/zaris/server/cluster/failover"
	"github.com/zaris-io/zaris/server/clustertest"
)

// At RF 1 an owner that stops answering but is inside its member grace
// keeps its partition: the partition is Unavailable (status and gauge), no
// map change moves it, and a rebalance is refused rather than restarting it
// empty on another node (failover.AbsentOwner: HoldUnavailable).
func TestAwayOwnerKeepsItsPartitionUnavailable(t *testing.T) {
	c := clustertest.Start(t, 3, clustertest.Options{NoRESP: true, Mutate: func(cfg *server.Config) {
		cfg.Timings.MemberGrace = time.Hour // away, never lost, during the test
	}})
	leader := c.WaitLeader()
	var away *server.Node
	for _, nd := range c.Running() {
		if nd != leader {
			away = nd
			break
		}
	}
	awayID := cluster.NodeID(away.Config().NodeID)
	v0 := c.WaitConverged(10 * time.Second)
	c.Stop(away)
	c.Eventually(20*time.Second, "the away owner's partition unavailable", func() bool {
		m := c.Map()
		for _, p := range m.Partitions {
			if p.ActiveOwner == awayID {
				return p.HealthState() == failover.Unavailable
			}
		}
		return false
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.WaitLeader().Rebalance(ctx); !errors.Is(err, cluster.ErrOwnerAway) {
		t.Fatalf("a rebalance with an away RF 1 owner: %v, want ErrOwnerAway", err)
	}
	m := c.Map()
	if _, in := m.Node(awayID); !in || len(m.Partitions) != 3 {
		t.Fatalf("the away owner left the map: %+v", m)
	}
	owned := false
	for _, p := range m.Partitions {
		owned = owned || p.ActiveOwner == awayID
	}
	if !owned {
		t.Fatalf("the away owner's partition moved (map v%d, was v%d): %+v", m.Version, v0, m.Partitions)
	}
	if got := metric(t, c.WaitLeader(), "zaris_partitions_unavailable"); got != "1" {
		t.Fatalf("zaris_partitions_unavailable = %q, want 1", got)
	}
}

// metric is the value of an unlabelled metric on nd's /metrics ("" when
// absent).
func metric(t *testing.T, nd *server.Node, name string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + nd.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			return v
		}
	}
	return ""
}
