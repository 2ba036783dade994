package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/zaris-io/zaris/server/metrics"
)

func TestDecideState(t *testing.T) {
	healthy := func(mod func(d *clusterDoc)) *clusterDoc {
		d := &clusterDoc{
			Self: "n1", Store: "default", MapVersion: 4, Leader: "n1", Term: 2, TrafficGate: "open",
			Nodes: []nodeDoc{
				{ID: "n1", State: "alive", InMap: true, Raft: "voter", Leader: true, Partitions: []int{0}},
				{ID: "n2", State: "alive", InMap: true, Raft: "voter", Partitions: []int{1}},
				{ID: "n3", State: "alive", InMap: true, Raft: "voter"}, // a spare
			},
			Partitions: []partitionDoc{{ID: 0, ActiveOwner: "n1", Health: "healthy"}, {ID: 1, ActiveOwner: "n2", Health: "healthy"}},
		}
		if mod != nil {
			mod(d)
		}
		return d
	}
	tests := []struct {
		name      string
		view      *clusterDoc
		unreached []string
		want      clusterState
		why       string // a substring of one reason
	}{
		{"no node answers: Stopped, not Partial", nil, nil, stateStopped, "no node answers"},
		{"all members alive, all partitions healthy, a spare included", healthy(nil), nil, stateRunning, ""},
		{"a node that left for good (not in the map) does not degrade the cluster",
			healthy(func(d *clusterDoc) {
				d.Nodes = append(d.Nodes, nodeDoc{ID: "n4", State: "decommissioned"}, nodeDoc{ID: "n5", State: "evicted"})
			}), nil, stateRunning, ""},
		{"a degraded partition (fewer copies than planned)",
			healthy(func(d *clusterDoc) { d.Partitions[1].Health = "degraded" }), nil, statePartial, "partition 1 degraded"},
		{"a recovering partition (promoted owner still syncing)",
			healthy(func(d *clusterDoc) { d.Partitions[0].Health = "recovering" }), nil, statePartial, "partition 0 recovering"},
		{"an unavailable partition still leaves the others serving",
			healthy(func(d *clusterDoc) { d.Partitions[1].Health = "unavailable" }), nil, statePartial, "partition 1 unavailable"},
		{"a suspected map member",
			healthy(func(d *clusterDoc) { d.Nodes[1].State = "suspected" }), nil, statePartial, "member n2 suspected"},
		{"an unreachable spare counts: it is a member down",
			healthy(func(d *clusterDoc) { d.Nodes[2].State = "unreachable" }), nil, statePartial, "member n3 unreachable"},
		{"a member gossip calls alive whose HTTP API does not answer the CLI",
			healthy(nil), []string{"n2"}, statePartial, "member n2 does not answer"},
		{"no control-plane leader (quorum lost)",
			healthy(func(d *clusterDoc) { d.Leader = "" }), nil, statePartial, "no control-plane leader"},
		{"no map yet (formation gate)",
			healthy(func(d *clusterDoc) { d.MapVersion, d.Partitions = 0, nil }), nil, statePartial, "no partition map"},
		{"traffic gate held on the deciding node",
			healthy(func(d *clusterDoc) { d.TrafficGate = "hold" }), nil, statePartial, "traffic gate hold"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, why := decideState(tt.view, tt.unreached)
			if got != tt.want {
				t.Fatalf("state %s, want %s (why %q)", got, tt.want, why)
			}
			if tt.why == "" && len(why) > 0 {
				t.Fatalf("reasons %q for %s", why, got)
			}
			if tt.why != "" && !slices.ContainsFunc(why, func(s string) bool { return strings.Contains(s, tt.why) }) {
				t.Fatalf("reasons %q lack %q", why, tt.why)
			}
		})
	}
	if stateRunning.exitCode() != 0 || statePartial.exitCode() != 1 || stateStopped.exitCode() != 2 {
		t.Fatal("exit codes must be 0 Running, 1 Partial, 2 Stopped")
	}
}

func TestParseProm(t *testing.T) {
	text := `# HELP zaris_ops_total Operations.
# TYPE zaris_ops_total counter
zaris_ops_total{op="get",status="Success"} 10
zaris_ops_total{op="put",status="Success"} 5.5e1
zaris_node_info{node_id="n1",store="we{i}rd \"s\" ",version="v 1"} 1
zaris_memory_used_bytes 1024 1700000000000

zaris_replication_lag_revisions{partition="0",replica="n2"} 3
zaris_replication_lag_revisions{partition="1",replica="n3"} 7
`
	s, err := parseProm(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.sum(metricOps); got != 65 {
		t.Errorf("ops sum %v, want 65", got)
	}
	if got := s.sum("zaris_node_info"); got != 1 {
		t.Errorf("a label value with braces, quotes and spaces: %v, want 1", got)
	}
	if got := s.sum(metricMemoryUsed); got != 1024 {
		t.Errorf("a sample with a timestamp: %v, want 1024", got)
	}
	if got := s.max(metricLag); got != 7 {
		t.Errorf("max lag %v, want 7", got)
	}
	for _, bad := range []string{"x{a=\"1\" 2", "x", "x 1 2 3", "x{} nan-ish"} {
		if _, err := parseProm(strings.NewReader(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// The names top reads are the ones the server exports.
func TestMetricNames(t *testing.T) {
	for got, want := range map[string]string{
		metricOps: metrics.MetricOps, metricItems: metrics.MetricItems,
		metricMemoryUsed: metrics.MetricMemoryUsed, metricMemoryMax: metrics.MetricMemoryMax,
	} {
		if got != want {
			t.Errorf("%s, the server exports %s", got, want)
		}
	}
}

// Each row names the failure the rule prevents.
func TestNodesExit(t *testing.T) {
	alive := nodeRow{ID: "n1", State: "alive"}
	cases := []struct {
		name string
		rows []nodeRow
		want int
	}{
		{"every node alive and answering", []nodeRow{alive, {ID: "n2", State: "alive"}}, exitOK},
		{"a script would miss a dead node behind exit 0: membership says unreachable", []nodeRow{alive, {ID: "n2", State: "unreachable"}}, exitError},
		{"a lost member is a dead node too", []nodeRow{alive, {ID: "n2", State: "lost"}}, exitError},
		{"its HTTP API does not answer although the membership has not noticed yet", []nodeRow{alive, {ID: "n2", State: "alive", noAnswer: true}}, exitError},
		{"a drained node is gone by design: not an alarm", []nodeRow{alive, {ID: "n2", State: "decommissioned", noAnswer: true}}, exitOK},
		{"an evicted node is gone by design: not an alarm", []nodeRow{alive, {ID: "n2", State: "evicted", noAnswer: true}}, exitOK},
		{"a suspected node still answers: a rumour, not a dead node", []nodeRow{alive, {ID: "n2", State: "suspected"}}, exitOK},
	}
	for _, c := range cases {
		if got := nodesExit(c.rows); got != c.want {
			t.Errorf("%s: exit %d, want %d", c.name, got, c.want)
		}
	}
}
