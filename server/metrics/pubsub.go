package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/zaris-io/zaris/server/store"
)

// Pub/sub metric names (the node's broker, read at each scrape).
const (
	MetricPubSubChannels      = "zaris_pubsub_channels"
	MetricPubSubPatterns      = "zaris_pubsub_patterns"
	MetricPubSubSubscriptions = "zaris_pubsub_channel_subscriptions"
	MetricPubSubDelivered     = "zaris_pubsub_messages_delivered_total"
	MetricPubSubOverflows     = "zaris_pubsub_subscriber_overflows_total"
)

// NewPubSubCollector exposes the broker stats returned by stats at each
// scrape.
func NewPubSubCollector(stats func() store.PubSubStats) prometheus.Collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return &pubSubCollector{
		stats:         stats,
		channels:      d(MetricPubSubChannels, "Channels with at least one subscriber on this node."),
		patterns:      d(MetricPubSubPatterns, "Pattern subscriptions on this node."),
		subscriptions: d(MetricPubSubSubscriptions, "Channel subscriptions on this node, summed over channels."),
		delivered:     d(MetricPubSubDelivered, "Messages delivered to this node's subscribers (pattern deliveries included)."),
		overflows:     d(MetricPubSubOverflows, "Subscriptions ended because their consumer fell behind."),
	}
}

type pubSubCollector struct {
	stats                                                   func() store.PubSubStats
	channels, patterns, subscriptions, delivered, overflows *prometheus.Desc
}

func (c *pubSubCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.channels, c.patterns, c.subscriptions, c.delivered, c.overflows} {
		ch <- d
	}
}

func (c *pubSubCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.stats()
	ch <- prometheus.MustNewConstMetric(c.channels, prometheus.GaugeValue, float64(s.Channels))
	ch <- prometheus.MustNewConstMetric(c.patterns, prometheus.GaugeValue, float64(s.Patterns))
	ch <- prometheus.MustNewConstMetric(c.subscriptions, prometheus.GaugeValue, float64(s.Subscriptions))
	ch <- prometheus.MustNewConstMetric(c.delivered, prometheus.CounterValue, float64(s.Delivered))
	ch <- prometheus.MustNewConstMetric(c.overflows, prometheus.CounterValue, float64(s.Overflowed))
}
