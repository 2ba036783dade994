package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// Migration metric names (R-MIG-1, issue #12): the control-plane leader's
// live migrations. A follower exposes zero gauges and the counters of
// whatever it did while it led.
const (
	MetricMigrationsInFlight   = "zaris_migrations_in_flight"
	MetricMigrationsCompleted  = "zaris_migrations_completed_total"
	MetricMigrationsAborted    = "zaris_migrations_aborted_total"
	MetricMigrationKeysMoved   = "zaris_migration_keys_moved_total"
	MetricMigrationBytesMoved  = "zaris_migration_bytes_moved_total"
	MetricMigrationFencePause  = "zaris_migration_fence_pause_seconds"
	MetricMigrationFenceMax    = "zaris_migration_fence_pause_max_seconds"
	MetricRebalanceActive      = "zaris_rebalance_active"
	MetricRebalanceSegmentsAll = "zaris_rebalance_segments_total"
	MetricRebalanceSegments    = "zaris_rebalance_segments_left"
)

// MigrationStats is what the migration collector exposes, read at scrape
// time (the server fills it from the cluster's RebalanceStatus and
// FencePauses; this package does not import the cluster).
type MigrationStats struct {
	InFlight      int
	Completed     uint64
	Aborted       uint64
	KeysMoved     int64
	BytesMoved    int64
	Active        bool
	SegmentsTotal int
	SegmentsLeft  int
	// FencePause: the cut-overs' write pauses as a histogram — the upper
	// bounds (seconds) and the cumulative count at each, the count and the
	// sum (seconds) — and the longest.
	PauseBounds  []float64
	PauseBuckets []uint64
	PauseCount   uint64
	PauseSum     float64
	PauseMax     float64
}

// NewMigrationCollector exposes the stats returned by stats at each scrape.
func NewMigrationCollector(stats func() MigrationStats) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &migrationCollector{
		stats:     stats,
		inFlight:  d(MetricMigrationsInFlight, "Partition moves in flight (on the control-plane leader)."),
		completed: d(MetricMigrationsCompleted, "Partition moves this node completed (flipped) as control-plane leader."),
		aborted:   d(MetricMigrationsAborted, "Partition moves this node aborted as control-plane leader (each restarts from a new snapshot)."),
		keys:      d(MetricMigrationKeysMoved, "Live keys the completed moves carried (the source's count at the cut-over)."),
		bytes:     d(MetricMigrationBytesMoved, "Accounted bytes the completed moves carried (the source's at the cut-over)."),
		pause:     d(MetricMigrationFencePause, "Write-fence pause of each cut-over: fence raised to flip committed."),
		pauseMax:  d(MetricMigrationFenceMax, "The longest write-fence pause this node saw as control-plane leader."),
		active:    d(MetricRebalanceActive, "1 while the leader walks the map towards a rebalance plan."),
		segsAll:   d(MetricRebalanceSegmentsAll, "Segments the rebalance in progress changes the group of."),
		segsLeft:  d(MetricRebalanceSegments, "Segments of the rebalance in progress not in their planned group yet."),
	}
}

type migrationCollector struct {
	stats func() MigrationStats

	inFlight, completed, aborted, keys, bytes, pause, pauseMax, active, segsAll, segsLeft *prometheus.Desc
}

func (c *migrationCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.inFlight, c.completed, c.aborted, c.keys, c.bytes, c.pause, c.pauseMax,
		c.active, c.segsAll, c.segsLeft} {
		ch <- d
	}
}

func (c *migrationCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
	}
	active := 0.0
	if s.Active {
		active = 1
	}
	gauge(c.inFlight, float64(s.InFlight))
	counter(c.completed, float64(s.Completed))
	counter(c.aborted, float64(s.Aborted))
	counter(c.keys, float64(s.KeysMoved))
	counter(c.bytes, float64(s.BytesMoved))
	buckets := make(map[float64]uint64, len(s.PauseBounds))
	for i, b := range s.PauseBounds {
		if i < len(s.PauseBuckets) {
			buckets[b] = s.PauseBuckets[i]
		}
	}
	ch <- prometheus.MustNewConstHistogram(c.pause, s.PauseCount, s.PauseSum, buckets)
	gauge(c.pauseMax, s.PauseMax)
	gauge(c.active, active)
	gauge(c.segsAll, float64(s.SegmentsTotal))
	gauge(c.segsLeft, float64(s.SegmentsLeft))
}
