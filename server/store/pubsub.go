package store

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/zaris-io/zaris/internal/glob"
)

// Broker is the node's publish/subscribe hub (R-DS-7): channels and glob
// patterns, fire-and-forget, at-most-once delivery to the subscribers
// connected at publish time. It is not data: nothing is stored or
// replicated. (Keyspace notifications are published on it by the RESP
// front end from a store Watch.)
//
// On a cluster, Publish also hands the message to the broker's forwarder
// (SetForwarder: the node's cluster bus), which delivers it on every other
// node through PublishLocal, so a subscriber anywhere receives it once.
type Broker struct {
	stats brokerCounters // pubsub_stats.go

	mu       sync.RWMutex // guards channels, patterns
	channels map[string]map[*Subscription]struct{}
	patterns map[string]map[*Subscription]struct{}
	sharded  bool // Redis 7 shard channels: messages are "smessage", never forwarded

	forward atomic.Pointer[func(channel string, payload []byte)]
}

// Message is one published message. Pattern is set when it was delivered
// through a pattern subscription.
type Message struct {
	Channel string
	Pattern string
	Payload []byte
	Sharded bool // published with SPUBLISH on a shard channel
}

// ErrSubscriberOverflow ends a subscription whose consumer fell behind by
// more than its buffer (like Redis's client-output-buffer-limit for pubsub).
var ErrSubscriberOverflow = errors.New("store: subscriber fell behind; messages were dropped")

// Subscription receives the messages of its channels and patterns.
type Subscription struct {
	b  *Broker
	ch chan Message

	mu       sync.Mutex // guards channels, patterns, closed, err and sends on ch
	channels map[string]struct{}
	patterns map[string]struct{}
	closed   bool
	err      error
}

func newBroker() *Broker {
	return &Broker{channels: map[string]map[*Subscription]struct{}{}, patterns: map[string]map[*Subscription]struct{}{}}
}

// PubSub returns the store's broker.
func (s *Store) PubSub() *Broker { return s.pubsub }

// ShardPubSub returns the store's broker of shard channels (SSUBSCRIBE,
// SPUBLISH): a namespace of its own, served by the owner of the channel's
// slot and never forwarded to other nodes.
func (s *Store) ShardPubSub() *Broker { return s.shardPubSub }

// SetForwarder makes Publish hand every message to f too (nil: local
// only). f must not block: it queues. A shard broker never forwards.
func (b *Broker) SetForwarder(f func(channel string, payload []byte)) {
	if f == nil {
		b.forward.Store(nil)
		return
	}
	b.forward.Store(&f)
}

// NewSubscription creates a subscription with a message buffer (default 1024).
func (b *Broker) NewSubscription(buffer int) *Subscription {
	if buffer <= 0 {
		buffer = 1024
	}
	return &Subscription{b: b, ch: make(chan Message, buffer), channels: map[string]struct{}{}, patterns: map[string]struct{}{}}
}

// Messages is closed when the subscription ends; Err says why.
func (s *Subscription) Messages() <-chan Message { return s.ch }

// Err is ErrSubscriberOverflow when the subscription ended by falling behind.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Subscribe adds channels; it returns the subscription's total count of
// channels and patterns after each one, as Redis replies.
func (s *Subscription) Subscribe(channels ...string) []int {
	return s.change(channels, false, true)
}

// PSubscribe adds glob patterns.
func (s *Subscription) PSubscribe(patterns ...string) []int {
	return s.change(patterns, true, true)
}

// Unsubscribe removes channels (all of them when none is given).
func (s *Subscription) Unsubscribe(channels ...string) []int {
	return s.change(channels, false, false)
}

// PUnsubscribe removes patterns (all of them when none is given).
func (s *Subscription) PUnsubscribe(patterns ...string) []int {
	return s.change(patterns, true, false)
}

// Count is the number of channels and patterns subscribed.
func (s *Subscription) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.channels) + len(s.patterns)
}

// Channels returns the subscribed channels (or patterns).
func (s *Subscription) Channels(patterns bool) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	set := s.channels
	if patterns {
		set = s.patterns
	}
	out := make([]string, 0, len(set))
	for c := range set {
		out = append(out, c)
	}
	return out
}

// Lock order: Broker.mu before Subscription.mu.
func (s *Subscription) change(names []string, pattern, add bool) []int {
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	mine, index := s.channels, b.channels
	if pattern {
		mine, index = s.patterns, b.patterns
	}
	if !add && len(names) == 0 {
		for n := range mine {
			names = append(names, n)
		}
	}
	counts := make([]int, 0, len(names))
	for _, n := range names {
		if add && !s.closed {
			mine[n] = struct{}{}
			if index[n] == nil {
				index[n] = map[*Subscription]struct{}{}
			}
			index[n][s] = struct{}{}
		} else if !add {
			delete(mine, n)
			if subs := index[n]; subs != nil {
				delete(subs, s)
				if len(subs) == 0 {
					delete(index, n)
				}
			}
		}
		counts = append(counts, len(s.channels)+len(s.patterns))
	}
	return counts
}

// Close ends the subscription. Safe to call more than once.
func (s *Subscription) Close() {
	s.Unsubscribe()
	s.PUnsubscribe()
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
	s.mu.Unlock()
}

func (s *Subscription) deliver(m Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	select {
	case s.ch <- m:
		s.b.stats.delivered.Add(1)
		return true
	default:
		s.b.stats.overflowed.Add(1)
		s.closed, s.err = true, ErrSubscriberOverflow
		close(s.ch)
		go func() { s.Unsubscribe(); s.PUnsubscribe() }()
		return false
	}
}

// Publish delivers payload to every subscriber of channel and of every
// matching pattern on this node, forwards it to the other nodes (see
// SetForwarder), and returns how many subscribers of this node received it
// (Redis Cluster's PUBLISH reply).
func (b *Broker) Publish(channel string, payload []byte) int {
	n := b.PublishLocal(channel, payload)
	if f := b.forward.Load(); f != nil && !b.sharded {
		(*f)(channel, payload)
	}
	return n
}

// PublishLocal delivers payload to this node's subscribers only (a message
// forwarded by another node) and returns how many received it.
func (b *Broker) PublishLocal(channel string, payload []byte) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for s := range b.channels[channel] {
		if s.deliver(Message{Channel: channel, Payload: payload, Sharded: b.sharded}) {
			n++
		}
	}
	for p, subs := range b.patterns {
		if !glob.Match(p, channel) {
			continue
		}
		for s := range subs {
			if s.deliver(Message{Channel: channel, Pattern: p, Payload: payload}) {
				n++
			}
		}
	}
	return n
}

// NumSub is the number of subscribers of channel (PUBSUB NUMSUB).
func (b *Broker) NumSub(channel string) int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return len(b.channels[channel])
}

// NumPat is the number of pattern subscriptions (PUBSUB NUMPAT).
func (b *Broker) NumPat() int {
	b.mu.RLock()
	defer b.mu.RUnlock()
	n := 0
	for _, subs := range b.patterns {
		n += len(subs)
	}
	return n
}

// ActivePatterns lists the patterns with subscribers (the cluster's
// PUBSUB NUMPAT counts their union).
func (b *Broker) ActivePatterns() []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]string, 0, len(b.patterns))
	for p := range b.patterns {
		out = append(out, p)
	}
	return out
}

// Subscriptions returns every subscription with at least one channel (a
// shard broker's owner change unsubscribes those whose slot moved).
func (b *Broker) Subscriptions() []*Subscription {
	b.mu.RLock()
	defer b.mu.RUnlock()
	seen := map[*Subscription]bool{}
	var out []*Subscription
	for _, subs := range b.channels {
		for s := range subs {
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// ActiveChannels lists channels with subscribers matching pattern ("" = all).
func (b *Broker) ActiveChannels(pattern string) []string {
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []string
	for c := range b.channels {
		if pattern == "" || glob.Match(pattern, c) {
			out = append(out, c)
		}
	}
	return out
}

func (b *Broker) closeAll() {
	b.mu.RLock()
	var all []*Subscription
	seen := map[*Subscription]bool{}
	for _, idx := range []map[string]map[*Subscription]struct{}{b.channels, b.patterns} {
		for _, subs := range idx {
			for s := range subs {
				if !seen[s] {
					seen[s] = true
					all = append(all, s)
				}
			}
		}
	}
	b.mu.RUnlock()
	for _, s := range all {
		s.Close()
	}
}
