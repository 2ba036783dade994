// Package metrics owns the Prometheus instrumentation of one node (R-OPS-2):
// a per-node registry — never the process-global one, so two nodes in one
// test process do not collide (STYLE 13) — holding operation counters by
// type and status, latency histograms by type, connection gauges, a
// collector that reads the store's Stats at scrape time, and one for the
// leader's live migrations (NewMigrationCollector, fed by the server).
//
// The hot path is Recorder.Op: the operation counters and latency
// histograms are sharded atomics summed at scrape time (ops.go), so
// recording an operation is three uncontended atomic adds, without
// allocation or locking.
//
// The package imports the store and the kv vocabulary only; it must not
// import the network front ends, which import it.
package metrics

import (
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/server/store"
)

// Op is the type of an operation, the "op" label of the operation metrics.
type Op uint8

const (
	OpGet Op = iota
	OpPut
	OpDelete
	OpExpire
	OpPersist
	OpTTL
	OpBatch
	OpOther // anything else; also where an out-of-range Op is counted

	numOps
)

var opNames = [numOps]string{"get", "put", "delete", "expire", "persist", "ttl", "batch", "other"}

func (o Op) String() string {
	if o < numOps {
		return opNames[o]
	}
	return opNames[OpOther]
}

// Protocol is the front end a connection or an authentication failure
// belongs to, the "protocol" label.
type Protocol uint8

const (
	ProtoNative Protocol = iota
	ProtoRESP
	ProtoHTTP

	numProtos
)

var protoNames = [numProtos]string{"native", "resp", "http"}

func (p Protocol) String() string {
	if p < numProtos {
		return protoNames[p]
	}
	return "unknown"
}

// LatencyBuckets are the bounds (seconds) of the operation latency
// histograms: 5 µs to 1 s, dense where an in-memory operation lands.
var LatencyBuckets = []float64{
	.000005, .00001, .000025, .00005, .0001, .00025, .0005,
	.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1,
}

// Options configure a Recorder.
type Options struct {
	// NodeID, Store and Version label the zaris_node_info series.
	NodeID  string
	Store   string
	Version string
	// Stats, when set, is called at every scrape to expose the store's
	// gauges and counters (items, memory used and cap, evictions, ...).
	Stats func() store.Stats
	// NoRuntimeMetrics leaves out the Go runtime and process collectors.
	NoRuntimeMetrics bool
}

// Recorder records one node's metrics into the node's own registry. Its
// methods are safe for concurrent use, and a nil *Recorder records nothing,
// so a front end built without metrics needs no special case.
type Recorder struct {
	reg *prometheus.Registry

	ops      *opStats // zaris_ops_total and zaris_op_duration_seconds (ops.go)
	conns    [numProtos]ConnGauge
	authFail [numProtos]prometheus.Counter
	panics   [numProtos]prometheus.Counter
}

// Metric names, for dashboards and tests.
const (
	MetricOps              = "zaris_ops_total"
	MetricOpDuration       = "zaris_op_duration_seconds"
	MetricConnections      = "zaris_connections"
	MetricConnectionsTotal = "zaris_connections_accepted_total"
	MetricAuthFailures     = "zaris_auth_failures_total"
	MetricPanics           = "zaris_panics_total"
	MetricNodeInfo         = "zaris_node_info"
	MetricItems            = "zaris_store_items"
	MetricReplicaItems     = "zaris_store_replica_items"
	MetricMemoryUsed       = "zaris_memory_used_bytes"
	MetricMemoryReplica    = "zaris_memory_replica_bytes"
	MetricFeedRetained     = "zaris_feed_retained_bytes"
	MetricMemoryMax        = "zaris_memory_max_bytes"
	MetricEvictions        = "zaris_store_evictions_total"
	MetricExpirations      = "zaris_store_expirations_total"
	MetricPuts             = "zaris_store_puts_total"
	MetricDeletes          = "zaris_store_deletes_total"
	MetricTTLChanges       = "zaris_store_ttl_changes_total"
)

// New builds a Recorder with a fresh registry.
func New(opts Options) *Recorder {
	r := &Recorder{reg: prometheus.NewRegistry()}

	r.ops = newOpStats()
	conns := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: MetricConnections,
		Help: "Open client connections, by protocol.",
	}, []string{"protocol"})
	accepted := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricConnectionsTotal,
		Help: "Client connections accepted, by protocol.",
	}, []string{"protocol"})
	authFail := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricAuthFailures,
		Help: "Requests or connections refused for a missing or wrong token, by protocol.",
	}, []string{"protocol"})
	panics := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: MetricPanics,
		Help: "Requests whose serving panicked (contained: the request's connection was closed, the node kept serving), by protocol.",
	}, []string{"protocol"})
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        MetricNodeInfo,
		Help:        "Always 1; labels identify the node, its store and its version.",
		ConstLabels: prometheus.Labels{"node_id": opts.NodeID, "store": opts.Store, "version": opts.Version},
	})
	info.Set(1)

	for p := Protocol(0); p < numProtos; p++ {
		r.conns[p] = ConnGauge{open: conns.WithLabelValues(p.String()), accepted: accepted.WithLabelValues(p.String())}
		r.authFail[p] = authFail.WithLabelValues(p.String())
		r.panics[p] = panics.WithLabelValues(p.String())
	}

	r.reg.MustRegister(r.ops, conns, accepted, authFail, panics, info)
	if opts.Stats != nil {
		r.reg.MustRegister(newStoreCollector(opts.Stats))
	}
	if !opts.NoRuntimeMetrics {
		r.reg.MustRegister(
			collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		)
	}
	return r
}

// Op records one operation of type op that ended with status st after d.
// It does not allocate.
func (r *Recorder) Op(op Op, st kv.Status, d time.Duration) {
	r.OpShard(rand.Uint32(), op, st, d)
}

// OpShard is Op for a caller that records many operations in a row (a
// connection): the same shard each time keeps its counters' cache lines on
// the CPU running it.
func (r *Recorder) OpShard(shard uint32, op Op, st kv.Status, d time.Duration) {
	if r == nil {
		return
	}
	if op >= numOps {
		op = OpOther
	}
	r.ops.record(shard, op, st, d)
}

// OpBucket is the latency bucket OpShard counts d in, for a caller that
// gathers like operations and records them with OpShardN.
func (r *Recorder) OpBucket(d time.Duration) int {
	if r == nil {
		return 0
	}
	return r.ops.bucketOf(d)
}

// OpShardN is OpShard for n operations of bucket b (OpBucket) whose
// durations sum to sumNs: one add per counter for a run of them.
func (r *Recorder) OpShardN(shard uint32, op Op, st kv.Status, b int, n uint64, sumNs int64) {
	if r == nil || n == 0 {
		return
	}
	if op >= numOps {
		op = OpOther
	}
	r.ops.recordN(shard, op, st, b, n, sumNs)
}

// Conns returns the connection gauge of protocol p. Resolve it once per
// listener; Inc and Dec then cost one atomic operation each.
func (r *Recorder) Conns(p Protocol) *ConnGauge {
	if r == nil || p >= numProtos {
		return nil
	}
	return &r.conns[p]
}

// AuthFailure counts a request or connection refused for its token.
func (r *Recorder) AuthFailure(p Protocol) {
	if r == nil || p >= numProtos {
		return
	}
	r.authFail[p].Inc()
}

// Panic counts a request whose serving panicked and was contained.
func (r *Recorder) Panic(p Protocol) {
	if r == nil || p >= numProtos {
		return
	}
	r.panics[p].Inc()
}

// Registry is the node's registry, for tests and for registering the
// collectors of other components of the same node.
func (r *Recorder) Registry() *prometheus.Registry { return r.reg }

// Handler serves the registry in the Prometheus exposition format.
func (r *Recorder) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{Registry: r.reg})
}

// ConnGauge counts the open connections of one protocol. A nil *ConnGauge
// records nothing.
type ConnGauge struct {
	open     prometheus.Gauge
	accepted prometheus.Counter
}

// Inc records a connection opened.
func (g *ConnGauge) Inc() {
	if g == nil {
		return
	}
	g.open.Inc()
	g.accepted.Inc()
}

// Dec records a connection closed.
func (g *ConnGauge) Dec() {
	if g == nil {
		return
	}
	g.open.Dec()
}

// storeCollector exposes store.Stats, computed at scrape time so that the
// store's hot path keeps its own counters and nothing else.
type storeCollector struct {
	stats func() store.Stats

	items, replicaItems                       *prometheus.Desc
	used, replicaUsed, maxBytes               *prometheus.Desc
	feedRetained                              *prometheus.Desc
	evictions, expirations, puts, deletes, tc *prometheus.Desc
}

func newStoreCollector(stats func() store.Stats) *storeCollector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &storeCollector{
		stats:        stats,
		items:        d(MetricItems, "Live records in owned segments."),
		replicaItems: d(MetricReplicaItems, "Live records in replica segments."),
		used:         d(MetricMemoryUsed, "Accounted bytes of owned data (what the memory cap governs)."),
		replicaUsed:  d(MetricMemoryReplica, "Accounted bytes of replica data (outside the cap)."),
		maxBytes:     d(MetricMemoryMax, "The memory cap of owned data (memory-max-bytes)."),
		feedRetained: d(MetricFeedRetained, "Bytes the change feed retains beyond the op-log (feed-retention)."),
		evictions:    d(MetricEvictions, "Records evicted to stay under the memory cap."),
		expirations:  d(MetricExpirations, "Records removed because their TTL ran out."),
		puts:         d(MetricPuts, "Records written."),
		deletes:      d(MetricDeletes, "Records deleted by clients."),
		tc:           d(MetricTTLChanges, "Expire and persist operations applied."),
	}
}

func (c *storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.items, c.replicaItems, c.used, c.replicaUsed, c.maxBytes, c.feedRetained,
		c.evictions, c.expirations, c.puts, c.deletes, c.tc} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v))
	}
	gauge(c.items, float64(s.Items))
	gauge(c.replicaItems, float64(s.ReplicaItems))
	gauge(c.used, float64(s.OwnedBytes))
	gauge(c.replicaUsed, float64(s.ReplicaBytes))
	gauge(c.maxBytes, float64(s.MaxMemoryBytes))
	gauge(c.feedRetained, float64(s.FeedBytes))
	counter(c.evictions, s.Evicted)
	counter(c.expirations, s.Expired)
	counter(c.puts, s.Puts)
	counter(c.deletes, s.Deletes)
	counter(c.tc, s.TTLChanges)
}
