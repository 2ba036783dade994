package follow

import (
	"maps"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/sdk"
	"github.com/zaris-io/zaris/server/cluster"
)

// Stats is the applier's live state on this node: what /v1/cluster and the
// metrics show. The lag compares the applied cursor with samples of the
// primary's head: lagRevisions is the newest sample minus the applied
// cursor (summed over segments); lagSeconds is 0 while the newest sample
// is covered and fresh, else the age of the newest sample the applied
// cursor covers (an upper bound: the oldest unapplied change was made
// after it) — so it keeps growing while the primary cannot be reached.
type Stats struct {
	mu        sync.Mutex
	running   bool
	connected bool
	every     time.Duration // the sampling interval (freshness)
	cursor    sdk.Cursor
	samples   []headSample // oldest first, bounded
	since     time.Time    // when this run began (the lag's floor when nothing is covered)
	lastErr   string

	appliedTotal, resyncs, fullCopies, skips, commits, batches, reopens uint64
}

type headSample struct {
	at   time.Time
	head sdk.Cursor
}

const maxSamples = 512

// NewStats returns empty stats.
func NewStats() *Stats { return &Stats{every: 500 * time.Millisecond} }

func (s *Stats) begin(cur sdk.Cursor, every time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running, s.connected, s.cursor, s.samples, s.since, s.lastErr = true, false, maps.Clone(cur), nil, time.Now(), ""
	s.every = every
}

func (s *Stats) end() {
	s.mu.Lock()
	s.running, s.connected = false, false
	s.mu.Unlock()
}

func (s *Stats) online() {
	s.mu.Lock()
	s.connected, s.lastErr = true, ""
	s.mu.Unlock()
}

func (s *Stats) disconnected(err error) {
	s.mu.Lock()
	s.connected = false
	if err != nil {
		s.lastErr = err.Error()
	}
	s.mu.Unlock()
}

func (s *Stats) fullCopy(cur sdk.Cursor) {
	s.mu.Lock()
	s.fullCopies++
	s.cursor = maps.Clone(cur)
	s.mu.Unlock()
}

func (s *Stats) reopened() {
	s.mu.Lock()
	s.reopens++
	s.mu.Unlock()
}

func (s *Stats) resync() {
	s.mu.Lock()
	s.resyncs++
	s.mu.Unlock()
}

func (s *Stats) skipped() {
	s.mu.Lock()
	s.skips++
	s.mu.Unlock()
}

func (s *Stats) committed() {
	s.mu.Lock()
	s.commits++
	s.mu.Unlock()
}

// applied records a batch of n changes acknowledged, leaving its
// segments at pos.
func (s *Stats) applied(pos map[uint16]sdk.CursorPosition, n int) {
	s.mu.Lock()
	if s.cursor == nil {
		s.cursor = sdk.Cursor{}
	}
	for seg, p := range pos {
		s.cursor[seg] = p
	}
	s.appliedTotal += uint64(n)
	s.batches++
	s.mu.Unlock()
}

func (s *Stats) sampled(at time.Time, head sdk.Cursor) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, headSample{at: at, head: head})
	// Keep what the lag can still need: the newest covered sample and
	// everything after it.
	if i := s.newestCoveredLocked(); i > 0 {
		s.samples = s.samples[i:]
	}
	if len(s.samples) > maxSamples {
		s.samples = s.samples[len(s.samples)-maxSamples:]
	}
}

// covers reports whether cursor c is at or past head h in every segment.
func covers(c, h sdk.Cursor) bool {
	for seg, p := range h {
		if c[seg].Revision < p.Revision {
			return false
		}
	}
	return true
}

func (s *Stats) newestCoveredLocked() int {
	for i := len(s.samples) - 1; i >= 0; i-- {
		if covers(s.cursor, s.samples[i].head) {
			return i
		}
	}
	return -1
}

// Lag is the lag now: revisions and seconds.
func (s *Stats) Lag(now time.Time) (revisions uint64, seconds float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lagLocked(now)
}

func (s *Stats) lagLocked(now time.Time) (uint64, float64) {
	if !s.running {
		return 0, 0
	}
	var revs uint64
	if n := len(s.samples); n > 0 {
		for seg, p := range s.samples[n-1].head {
			if a := s.cursor[seg].Revision; a < p.Revision {
				revs += p.Revision - a
			}
		}
	}
	i := s.newestCoveredLocked()
	switch {
	case i < 0:
		// Nothing sampled, or nothing covered yet: as old as this run.
		return revs, now.Sub(s.since).Seconds()
	case i == len(s.samples)-1 && now.Sub(s.samples[i].at) <= 3*s.every:
		return revs, 0
	}
	return revs, now.Sub(s.samples[i].at).Seconds()
}

// Status is the applier's live view for /v1/cluster (nil when no applier
// runs here).
func (s *Stats) Status(node cluster.NodeID) *cluster.FollowApplierStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return nil
	}
	revs, secs := s.lagLocked(time.Now())
	return &cluster.FollowApplierStatus{Node: node, Connected: s.connected, LagRevisions: revs, LagSeconds: secs,
		AppliedChanges: s.appliedTotal, Resyncs: s.resyncs, FullCopies: s.fullCopies, Skipped: s.skips, LastError: s.lastErr}
}

// Counters are the totals of this node's runs.
type Counters struct {
	Applied, Resyncs, FullCopies, Skipped, Commits, Batches uint64
	// FeedReopens: the feed overflowed (the applier fell behind) and was
	// reopened from the changes read.
	FeedReopens        uint64
	Running, Connected bool
}

// Counters returns the totals.
func (s *Stats) Counters() Counters {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Counters{Applied: s.appliedTotal, Resyncs: s.resyncs, FullCopies: s.fullCopies, Skipped: s.skips,
		Commits: s.commits, Batches: s.batches, FeedReopens: s.reopens, Running: s.running, Connected: s.connected}
}

// Collector exposes the stats as Prometheus metrics; following reports
// whether the cluster follows another (on every node).
func (s *Stats) Collector(following func() bool) prometheus.Collector {
	return &collector{s: s, following: following}
}

var (
	descFollowing = prometheus.NewDesc("zaris_follower_following",
		"1 while this cluster follows another cluster's change feed (client writes refused), else 0.", nil, nil)
	descApplier = prometheus.NewDesc("zaris_follower_applier_running",
		"1 on the node that runs the follower's applier (the control-plane leader), else 0.", nil, nil)
	descConnected = prometheus.NewDesc("zaris_follower_connected",
		"1 while the applier reads the primary's change feed, else 0.", nil, nil)
	descLagSeconds = prometheus.NewDesc("zaris_follower_lag_seconds",
		"How old the oldest change of the primary not yet applied here may be (0 when caught up; grows while the primary is unreachable).", nil, nil)
	descLagRevisions = prometheus.NewDesc("zaris_follower_lag_revisions",
		"Changes of the primary not yet applied here (its sampled head minus the applied cursor, over every segment).", nil, nil)
	descApplied = prometheus.NewDesc("zaris_follower_applied_changes_total",
		"Changes of the primary's feed this node applied as the follower's applier.", nil, nil)
	descResyncs = prometheus.NewDesc("zaris_follower_resyncs_total",
		"Segments resynchronised from a snapshot because the primary's history no longer reached the follow cursor.", nil, nil)
	descFullCopies = prometheus.NewDesc("zaris_follower_full_copies_total",
		"Full copies of the primary (a follow with no cursor yet).", nil, nil)
	descSkipped = prometheus.NewDesc("zaris_follower_skipped_changes_total",
		"Changes skipped because the applied cursor already covered them (replayed twice).", nil, nil)
	descCommits = prometheus.NewDesc("zaris_follower_cursor_commits_total",
		"Follow cursors committed to the control plane.", nil, nil)
	descBatches = prometheus.NewDesc("zaris_follower_batches_total",
		"Batches of changes applied (applied changes / batches = the mean batch).", nil, nil)
	descReopens = prometheus.NewDesc("zaris_follower_feed_reopens_total",
		"Times the primary's change feed overflowed (the applier fell behind) and was reopened from the changes read.", nil, nil)
)

type collector struct {
	s         *Stats
	following func() bool
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descFollowing, descApplier, descConnected, descLagSeconds, descLagRevisions,
		descApplied, descResyncs, descFullCopies, descSkipped, descCommits, descBatches, descReopens} {
		ch <- d
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	k := c.s.Counters()
	revs, secs := c.s.Lag(time.Now())
	ch <- prometheus.MustNewConstMetric(descFollowing, prometheus.GaugeValue, b2f(c.following()))
	ch <- prometheus.MustNewConstMetric(descApplier, prometheus.GaugeValue, b2f(k.Running))
	ch <- prometheus.MustNewConstMetric(descConnected, prometheus.GaugeValue, b2f(k.Connected))
	ch <- prometheus.MustNewConstMetric(descLagSeconds, prometheus.GaugeValue, secs)
	ch <- prometheus.MustNewConstMetric(descLagRevisions, prometheus.GaugeValue, float64(revs))
	ch <- prometheus.MustNewConstMetric(descApplied, prometheus.CounterValue, float64(k.Applied))
	ch <- prometheus.MustNewConstMetric(descResyncs, prometheus.CounterValue, float64(k.Resyncs))
	ch <- prometheus.MustNewConstMetric(descFullCopies, prometheus.CounterValue, float64(k.FullCopies))
	ch <- prometheus.MustNewConstMetric(descSkipped, prometheus.CounterValue, float64(k.Skipped))
	ch <- prometheus.MustNewConstMetric(descCommits, prometheus.CounterValue, float64(k.Commits))
	ch <- prometheus.MustNewConstMetric(descBatches, prometheus.CounterValue, float64(k.Batches))
	ch <- prometheus.MustNewConstMetric(descReopens, prometheus.CounterValue, float64(k.FeedReopens))
}
