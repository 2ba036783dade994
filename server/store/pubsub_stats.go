package store

import "sync/atomic"

// brokerCounters count what a Broker delivered, for its metrics.
type brokerCounters struct {
	delivered  atomic.Uint64 // messages handed to a subscription
	overflowed atomic.Uint64 // subscriptions ended for falling behind
}

// PubSubStats describe a Broker now (the zaris_pubsub_* metrics).
type PubSubStats struct {
	Channels      int    // channels with at least one subscriber
	Patterns      int    // pattern subscriptions (PUBSUB NUMPAT)
	Subscriptions int    // channel subscriptions, summed over channels
	Delivered     uint64 // messages delivered to subscribers, pattern deliveries included
	Overflowed    uint64 // subscriptions ended by ErrSubscriberOverflow
}

// Stats returns the broker's gauges and counters.
func (b *Broker) Stats() PubSubStats {
	b.mu.RLock()
	st := PubSubStats{Channels: len(b.channels)}
	for _, subs := range b.channels {
		st.Subscriptions += len(subs)
	}
	for _, subs := range b.patterns {
		st.Patterns += len(subs)
	}
	b.mu.RUnlock()
	st.Delivered, st.Overflowed = b.stats.delivered.Load(), b.stats.overflowed.Load()
	return st
}
