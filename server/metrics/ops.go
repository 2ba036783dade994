package metrics

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/internal/kv"
)

// opStats are the operation counters and latency histograms behind
// zaris_ops_total and zaris_op_duration_seconds, kept in shards that a
// scrape sums (issue #17, D65): with one prometheus counter and histogram
// per series every request of every connection did three or four atomic
// adds on the same cache lines, which both CPUs fought over (4 % of a
// SET -P 16's server CPU). A caller that has an identity (a RESP
// connection) names its shard, so that a connection's batch of requests
// touches one line the running CPU keeps; others pick one at random.
type opStats struct {
	shards    [opShards]opShard
	opsDesc   *prometheus.Desc
	latDesc   *prometheus.Desc
	statuses  int
	boundsNs  [numBuckets]int64
	boundsSec [numBuckets]float64
}

const (
	opShards = 8 // a power of two
	// maxStatuses bounds kv.Status for the fixed-size shard arrays; New
	// panics if the vocabulary outgrows it.
	maxStatuses = 32
	numBuckets  = 17 // len(LatencyBuckets), checked by newOpStats
)

type opShard struct {
	counts  [numOps][maxStatuses]atomic.Uint64
	buckets [numOps][numBuckets + 1]atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumNs   [numOps]atomic.Int64
	_       [64]byte // the next shard starts on another cache line
}

func newOpStats() *opStats {
	s := &opStats{
		opsDesc: prometheus.NewDesc(MetricOps,
			"Key-value operations served, by operation type and result status.", []string{"op", "status"}, nil),
		latDesc: prometheus.NewDesc(MetricOpDuration,
			"Time to serve one operation, by operation type.", []string{"op"}, nil),
	}
	for st := kv.Status(0); st.Valid(); st++ {
		s.statuses++
	}
	if s.statuses > maxStatuses {
		panic("metrics: more kv statuses than maxStatuses")
	}
	if len(LatencyBuckets) != numBuckets {
		panic("metrics: numBuckets is not len(LatencyBuckets)")
	}
	for i, b := range LatencyBuckets {
		s.boundsSec[i] = b
		s.boundsNs[i] = int64(math.Round(b * float64(time.Second)))
	}
	return s
}

// record counts one operation in shard (any number; reduced modulo the
// shard count). It does not allocate.
func (s *opStats) record(shard uint32, op Op, st kv.Status, d time.Duration) {
	s.recordN(shard, op, st, s.bucketOf(d), 1, max(int64(d), 0))
}

// bucketOf is the histogram bucket of d (numBuckets: +Inf).
func (s *opStats) bucketOf(d time.Duration) int {
	ns := max(int64(d), 0)
	b := 0
	for b < len(s.boundsNs) && ns > s.boundsNs[b] {
		b++
	}
	return b
}

// recordN counts n operations of bucket b whose durations sum to sumNs.
func (s *opStats) recordN(shard uint32, op Op, st kv.Status, b int, n uint64, sumNs int64) {
	sh := &s.shards[shard&(opShards-1)]
	if int(st) < s.statuses {
		sh.counts[op][st].Add(n)
	}
	sh.buckets[op][b].Add(n)
	sh.sumNs[op].Add(sumNs)
}

func (s *opStats) Describe(ch chan<- *prometheus.Desc) {
	ch <- s.opsDesc
	ch <- s.latDesc
}

// Collect sums the shards into the same series a CounterVec and a
// HistogramVec would expose: every (op, status) counter, zero or not, and
// one histogram per op.
func (s *opStats) Collect(ch chan<- prometheus.Metric) {
	for op := Op(0); op < numOps; op++ {
		for st := 0; st < s.statuses; st++ {
			var n uint64
			for i := range s.shards {
				n += s.shards[i].counts[op][st].Load()
			}
			ch <- prometheus.MustNewConstMetric(s.opsDesc, prometheus.CounterValue, float64(n), op.String(), kv.Status(st).String())
		}
		var per [numBuckets + 1]uint64
		var sumNs int64
		for i := range s.shards {
			for b := range per {
				per[b] += s.shards[i].buckets[op][b].Load()
			}
			sumNs += s.shards[i].sumNs[op].Load()
		}
		cumulative := make(map[float64]uint64, len(LatencyBuckets))
		var count uint64
		for b, bound := range s.boundsSec {
			count += per[b]
			cumulative[bound] = count
		}
		count += per[numBuckets]
		ch <- prometheus.MustNewConstHistogram(s.latDesc, count, time.Duration(sumNs).Seconds(), cumulative, op.String())
	}
}
