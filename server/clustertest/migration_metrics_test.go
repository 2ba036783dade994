package clustertest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server"
	"github.com/zaris-io/zaris/server/clustertest"
)

// scrape reads nd's /metrics and returns the value of every unlabelled
// sample (histogram series keep their suffix and labels in the name).
func scrape(t *testing.T, nd *server.Node) map[string]float64 {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + nd.HTTPAddr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/metrics: %d %v", resp.StatusCode, err)
	}
	out := map[string]float64{}
	for line := range strings.Lines(string(body)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// The leader's migration metrics (issue #12 item 4) after a node joins and
// is given its share by auto-rebalance: moves completed, keys and bytes
// moved and fence pauses observed; nothing in flight and no rebalance
// active once it is done. The same counters as GET /v1/cluster's rebalance.
func TestMigrationMetricsOnTheLeader(t *testing.T) {
	c := clustertest.Start(t, 2, clustertest.Options{NoRESP: true})
	leader := c.Leader()
	before := scrape(t, leader)
	for _, name := range []string{"zaris_migrations_in_flight", "zaris_migrations_completed_total",
		"zaris_migrations_aborted_total", "zaris_migration_keys_moved_total", "zaris_migration_bytes_moved_total",
		"zaris_migration_fence_pause_seconds_count", "zaris_migration_fence_pause_max_seconds",
		"zaris_rebalance_active", "zaris_rebalance_segments_total", "zaris_rebalance_segments_left"} {
		if v, ok := before[name]; !ok || v != 0 {
			t.Errorf("before any move: %s = %v (present %v), want 0", name, v, ok)
		}
	}
	cl, err := sdk.Connect(context.Background(), c.ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const keys = 2000
	for i := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := cl.Put(ctx, fmt.Sprint("k", i), []byte("0123456789"), nil)
		cancel()
		if err != nil || !r.OK() {
			t.Fatalf("put: %v %v", r.Status, err)
		}
	}

	c.AddNode()
	// Done: the current leader drives nothing and n3 owns its third of
	// the segments (a leadership flap on a loaded machine resets a
	// leader's published status for a moment: the map decides).
	c.Eventually(60*time.Second, "n3 owns its share and the rebalance is over", func() bool {
		ld := c.Leader()
		if ld == nil {
			return false
		}
		rs := ld.ClusterStatus().Rebalance
		if rs == nil || rs.Active || rs.Pending || len(rs.Migrations) > 0 {
			return false
		}
		segs := 0
		for _, p := range c.Map().Partitions {
			if p.Migrating() {
				return false
			}
			if p.ActiveOwner == "n3" {
				segs += p.LastSegment - p.FirstSegment + 1
			}
		}
		return segs >= 256/3-2
	})
	// Each node's counters are what it did as leader (a flap splits them):
	// every node's /metrics equals its own status, and the sums show the
	// moves.
	sum := map[string]float64{}
	for _, nd := range c.Running() {
		got := scrape(t, nd)
		rs := nd.Cluster().RebalanceStatus()
		for name, want := range map[string]float64{
			"zaris_migrations_completed_total":        float64(rs.Completed),
			"zaris_migrations_aborted_total":          float64(rs.Aborted),
			"zaris_migration_keys_moved_total":        float64(rs.KeysMoved),
			"zaris_migration_bytes_moved_total":       float64(rs.BytesMoved),
			"zaris_migration_fence_pause_max_seconds": rs.MaxFencePause.Seconds(),
			"zaris_migrations_in_flight":              0,
			"zaris_rebalance_active":                  0,
		} {
			if got[name] != want {
				t.Errorf("%s: %s = %v, its status says %v", nd.Config().NodeID, name, got[name], want)
			}
		}
		n := got["zaris_migration_fence_pause_seconds_count"]
		if got[`zaris_migration_fence_pause_seconds_bucket{le="+Inf"}`] != n || n > got["zaris_migrations_completed_total"] ||
			got["zaris_migration_fence_pause_max_seconds"] > got["zaris_migration_fence_pause_seconds_sum"] {
			t.Errorf("%s: fence pause histogram: count %v, +Inf bucket %v, sum %v, max %v, completed %v", nd.Config().NodeID, n,
				got[`zaris_migration_fence_pause_seconds_bucket{le="+Inf"}`], got["zaris_migration_fence_pause_seconds_sum"],
				got["zaris_migration_fence_pause_max_seconds"], got["zaris_migrations_completed_total"])
		}
		for name, v := range got {
			sum[name] += v
		}
	}
	// n3's third of 2000 keys moved with their bytes; every cut-over's
	// fence pause is in the histogram.
	if sum["zaris_migrations_completed_total"] < 1 || sum["zaris_migration_keys_moved_total"] < keys/4 ||
		sum["zaris_migration_bytes_moved_total"] < 10*keys/4 || sum["zaris_migration_fence_pause_seconds_count"] < 1 ||
		sum["zaris_migration_fence_pause_seconds_sum"] <= 0 {
		t.Errorf("after the join: %v", sum)
	}
	t.Logf("moves %v (aborted %v), keys %v, bytes %v, fence pauses: %v, sum %.4fs", sum["zaris_migrations_completed_total"],
		sum["zaris_migrations_aborted_total"], sum["zaris_migration_keys_moved_total"], sum["zaris_migration_bytes_moved_total"],
		sum["zaris_migration_fence_pause_seconds_count"], sum["zaris_migration_fence_pause_seconds_sum"])
}
