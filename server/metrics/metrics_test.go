package metrics

import (
	"io"
	"math"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

func TestOpCountsByTypeAndStatus(t *testing.T) {
	r := New(Options{NoRuntimeMetrics: true})
	r.Op(OpGet, kv.StatusSuccess, time.Microsecond)
	r.Op(OpGet, kv.StatusSuccess, time.Microsecond)
	r.Op(OpGet, kv.StatusNotFound, time.Microsecond)
	r.Op(OpPut, kv.StatusConflict, time.Millisecond)
	r.Op(Op(200), kv.StatusSuccess, 0)   // out-of-range op: counted as other
	r.Op(OpDelete, kv.Status(250), 0)    // unknown status: latency only, no panic
	r.Op(OpBatch, kv.StatusWrongType, 0) // the last known status is resolved too

	count := func(op, status string) float64 {
		t.Helper()
		return opCounter(t, r, op, status)
	}
	require.Equal(t, 2.0, count("get", "Success"))
	require.Equal(t, 1.0, count("get", "NotFound"))
	require.Equal(t, 1.0, count("put", "Conflict"))
	require.Equal(t, 1.0, count("other", "Success"))
	require.Equal(t, 1.0, count("batch", "WrongType"))
	require.Equal(t, 0.0, count("delete", "Success"))

	// Latency is observed per op type, whatever the status.
	body := scrape(t, r)
	require.Contains(t, body, `zaris_op_duration_seconds_count{op="get"} 3`)
	require.Contains(t, body, `zaris_op_duration_seconds_count{op="delete"} 1`)
}

// opCounter reads zaris_ops_total{op, status} from the registry, as a
// scrape would; a series that is not exposed fails the test.
func opCounter(t *testing.T, r *Recorder, op, status string) float64 {
	t.Helper()
	families, err := r.reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != MetricOps {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && labels["status"] == status {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no counter for op=%s status=%s", op, status)
	return 0
}

func scrape(t *testing.T, r *Recorder) string {
	t.Helper()
	srv := httptest.NewServer(r.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

func TestStoreCollectorReadsStatsAtScrape(t *testing.T) {
	stats := store.Stats{Items: 3, OwnedBytes: 1000, MaxMemoryBytes: 4096, Evicted: 7, Expired: 2}
	r := New(Options{NodeID: "n1", Store: "orders", Version: "v0", Stats: func() store.Stats { return stats }})
	body := scrape(t, r)
	for _, want := range []string{
		"zaris_store_items 3",
		"zaris_memory_used_bytes 1000",
		"zaris_memory_max_bytes 4096",
		"zaris_store_evictions_total 7",
		"zaris_store_expirations_total 2",
		`zaris_node_info{node_id="n1",store="orders",version="v0"} 1`,
		"go_goroutines",
	} {
		require.Contains(t, body, want)
	}
	stats.Items = 5 // computed on scrape, not cached
	require.Contains(t, scrape(t, r), "zaris_store_items 5")
}

func TestConnectionsAndAuthFailures(t *testing.T) {
	r := New(Options{NoRuntimeMetrics: true})
	g := r.Conns(ProtoNative)
	g.Inc()
	g.Inc()
	g.Dec()
	r.AuthFailure(ProtoHTTP)
	body := scrape(t, r)
	require.Contains(t, body, `zaris_connections{protocol="native"} 1`)
	require.Contains(t, body, `zaris_connections_accepted_total{protocol="native"} 2`)
	require.Contains(t, body, `zaris_auth_failures_total{protocol="http"} 1`)
}

// Two recorders in one process (two nodes in one test) must not collide:
// each has its own registry.
func TestTwoRecordersDoNotCollide(t *testing.T) {
	a := New(Options{NodeID: "a"})
	b := New(Options{NodeID: "b"})
	a.Op(OpPut, kv.StatusSuccess, 0)
	require.Contains(t, scrape(t, a), `zaris_ops_total{op="put",status="Success"} 1`)
	require.Contains(t, scrape(t, b), `zaris_ops_total{op="put",status="Success"} 0`)
	require.False(t, strings.Contains(scrape(t, b), `node_id="a"`))
}

func TestNilRecorderRecordsNothing(t *testing.T) {
	var r *Recorder
	r.Op(OpGet, kv.StatusSuccess, time.Second)
	r.AuthFailure(ProtoRESP)
	g := r.Conns(ProtoRESP)
	g.Inc()
	g.Dec()
}

func TestOpDoesNotAllocate(t *testing.T) {
	r := New(Options{NoRuntimeMetrics: true})
	allocs := testing.AllocsPerRun(1000, func() { r.Op(OpGet, kv.StatusSuccess, 3*time.Microsecond) })
	require.Zero(t, allocs)
}

func BenchmarkRecorderOp(b *testing.B) {
	r := New(Options{NoRuntimeMetrics: true})
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		r.Op(Op(i&3), kv.StatusSuccess, 2*time.Microsecond)
	}
}

func BenchmarkRecorderOpParallel(b *testing.B) {
	r := New(Options{NoRuntimeMetrics: true})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Op(OpGet, kv.StatusSuccess, 2*time.Microsecond)
		}
	})
}

// The migration collector exposes what its stats function returns at
// scrape time: the counters, the gauges and the fence pause histogram with
// its cumulative buckets.
func TestMigrationCollector(t *testing.T) {
	st := MigrationStats{InFlight: 2, Completed: 7, Aborted: 1, KeysMoved: 700, BytesMoved: 70000, Active: true,
		SegmentsTotal: 40, SegmentsLeft: 12, PauseBounds: []float64{.001, .01, .1}, PauseBuckets: []uint64{1, 5, 7},
		PauseCount: 7, PauseSum: .09, PauseMax: .05}
	want := `
# HELP zaris_migration_bytes_moved_total Accounted bytes the completed moves carried (the source's at the cut-over).
# TYPE zaris_migration_bytes_moved_total counter
zaris_migration_bytes_moved_total 70000
# HELP zaris_migration_fence_pause_max_seconds The longest write-fence pause this node saw as control-plane leader.
# TYPE zaris_migration_fence_pause_max_seconds gauge
zaris_migration_fence_pause_max_seconds 0.05
# HELP zaris_migration_fence_pause_seconds Write-fence pause of each cut-over: fence raised to flip committed.
# TYPE zaris_migration_fence_pause_seconds histogram
zaris_migration_fence_pause_seconds_bucket{le="0.001"} 1
zaris_migration_fence_pause_seconds_bucket{le="0.01"} 5
zaris_migration_fence_pause_seconds_bucket{le="0.1"} 7
zaris_migration_fence_pause_seconds_bucket{le="+Inf"} 7
zaris_migration_fence_pause_seconds_sum 0.09
zaris_migration_fence_pause_seconds_count 7
# HELP zaris_migration_keys_moved_total Live keys the completed moves carried (the source's count at the cut-over).
# TYPE zaris_migration_keys_moved_total counter
zaris_migration_keys_moved_total 700
# HELP zaris_migrations_aborted_total Partition moves this node aborted as control-plane leader (each restarts from a new snapshot).
# TYPE zaris_migrations_aborted_total counter
zaris_migrations_aborted_total 1
# HELP zaris_migrations_completed_total Partition moves this node completed (flipped) as control-plane leader.
# TYPE zaris_migrations_completed_total counter
zaris_migrations_completed_total 7
# HELP zaris_migrations_in_flight Partition moves in flight (on the control-plane leader).
# TYPE zaris_migrations_in_flight gauge
zaris_migrations_in_flight 2
# HELP zaris_rebalance_active 1 while the leader walks the map towards a rebalance plan.
# TYPE zaris_rebalance_active gauge
zaris_rebalance_active 1
# HELP zaris_rebalance_segments_left Segments of the rebalance in progress not in their planned group yet.
# TYPE zaris_rebalance_segments_left gauge
zaris_rebalance_segments_left 12
# HELP zaris_rebalance_segments_total Segments the rebalance in progress changes the group of.
# TYPE zaris_rebalance_segments_total gauge
zaris_rebalance_segments_total 40
`
	if err := testutil.CollectAndCompare(NewMigrationCollector(func() MigrationStats { return st }), strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestOpLatencyMatchesAPrometheusHistogram: the sharded latency histogram
// exposes what a client_golang histogram with the same buckets would for
// the same observations — durations on, just under and just over every
// bound, zero, negative and past the last bound, spread over the shards by
// concurrent recorders.
func TestOpLatencyMatchesAPrometheusHistogram(t *testing.T) {
	r := New(Options{NoRuntimeMetrics: true})
	ref := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "ref", Buckets: LatencyBuckets})
	var ds []time.Duration
	for _, b := range LatencyBuckets {
		d := time.Duration(math.Round(b * float64(time.Second)))
		ds = append(ds, d-1, d, d+1)
	}
	ds = append(ds, 0, -time.Second, 3*time.Second)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for _, d := range ds {
				r.Op(OpPut, kv.StatusSuccess, d)
			}
		})
		for _, d := range ds {
			ref.Observe(max(d, 0).Seconds())
		}
	}
	wg.Wait()
	var want dto.Metric
	require.NoError(t, ref.Write(&want))
	families, err := r.reg.Gather()
	require.NoError(t, err)
	var got *dto.Histogram
	for _, f := range families {
		if f.GetName() != MetricOpDuration {
			continue
		}
		for _, m := range f.GetMetric() {
			if m.GetLabel()[0].GetValue() == "put" {
				got = m.GetHistogram()
			}
		}
	}
	require.NotNil(t, got)
	require.Equal(t, want.GetHistogram().GetSampleCount(), got.GetSampleCount())
	require.InDelta(t, want.GetHistogram().GetSampleSum(), got.GetSampleSum(), 1e-9)
	require.Len(t, got.GetBucket(), len(LatencyBuckets))
	for i, b := range want.GetHistogram().GetBucket() {
		require.Equal(t, b.GetUpperBound(), got.GetBucket()[i].GetUpperBound())
		require.Equal(t, b.GetCumulativeCount(), got.GetBucket()[i].GetCumulativeCount(), "le=%v", b.GetUpperBound())
	}
}
