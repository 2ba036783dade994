package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// PubSub publishes and subscribes (R-DS-7): fire-and-forget messages to the
// subscribers connected when they are published; nothing is stored.
type PubSub struct{ c *Client }

// PubSub returns the client's publish/subscribe surface.
func (c *Client) PubSub() *PubSub { return &PubSub{c: c} }

// Message is one received message; Pattern is set when it matched a
// pattern subscription.
type Message struct {
	Channel string
	Pattern string
	Payload []byte
}

// ErrSubscriberOverflow: the subscriber fell behind and messages were
// dropped; the subscription ended.
var ErrSubscriberOverflow = errors.New("zaris: subscriber fell behind; messages were dropped")

// Publish sends payload to channel and returns how many subscribers of the
// node it was published on got it (on one node: every subscriber). On a
// cluster the message is published on the channel's home node (the owner of
// the channel name's segment), which forwards it to every other node: each
// subscriber, wherever it is connected, gets it once.
func (p *PubSub) Publish(ctx context.Context, channel string, payload []byte) (int, error) {
	if err := p.c.check(ctx); err != nil {
		return 0, err
	}
	if t := p.c.tel; t != nil {
		ctx, ci := t.begin(ctx, "publish")
		n, err := p.c.be.publish(ctx, channel, payload)
		t.end(ci, "publish", StatusSuccess, err)
		return n, err
	}
	return p.c.be.publish(ctx, channel, payload)
}

// Subscribe subscribes to channels. When it returns, the subscription is in
// place: a message published afterwards is delivered.
func (p *PubSub) Subscribe(ctx context.Context, channels ...string) (*Subscription, error) {
	return p.subscribe(ctx, channels, nil)
}

// PSubscribe subscribes to glob patterns (*, ?, [...]).
func (p *PubSub) PSubscribe(ctx context.Context, patterns ...string) (*Subscription, error) {
	return p.subscribe(ctx, nil, patterns)
}

const defaultSubscriptionBuffer = 1024

func (p *PubSub) subscribe(ctx context.Context, channels, patterns []string) (*Subscription, error) {
	if err := p.c.check(ctx); err != nil {
		return nil, err
	}
	if len(channels)+len(patterns) == 0 {
		return nil, fmt.Errorf("%w: subscribe to at least one channel or pattern", ErrBadRequest)
	}
	return p.c.be.subscribe(ctx, wire.SubscribeRequest{Channels: channels, Patterns: patterns, Buffer: defaultSubscriptionBuffer})
}

// Subscription receives messages until closed.
type Subscription struct {
	messages chan Message
	stop     func()

	mu   sync.Mutex // guards err
	err  error
	once sync.Once
	done chan struct{} // closed by Close: the pump stops even if nobody reads
}

// Messages is closed when the subscription ends; Err says why.
func (s *Subscription) Messages() <-chan Message { return s.messages }

// Err is ErrSubscriberOverflow, a lost connection, or nil.
func (s *Subscription) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Subscription) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Close ends the subscription. Safe to call more than once.
func (s *Subscription) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.stop()
	})
	return nil
}

// --- embedded ---

func (b *embeddedBackend) publish(ctx context.Context, channel string, payload []byte) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	return b.st.PubSub().Publish(channel, cloneBytes(payload)), nil
}

func (b *embeddedBackend) subscribe(ctx context.Context, req wire.SubscribeRequest) (*Subscription, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sub := b.st.PubSub().NewSubscription(int(req.Buffer))
	sub.Subscribe(req.Channels...)
	sub.PSubscribe(req.Patterns...)
	s := &Subscription{messages: make(chan Message, 64), stop: sub.Close, done: make(chan struct{})}
	go func() {
		defer close(s.messages)
		for m := range sub.Messages() {
			select {
			case s.messages <- Message{Channel: m.Channel, Pattern: m.Pattern, Payload: cloneBytes(m.Payload)}:
			case <-s.done:
				return
			}
		}
		if errors.Is(sub.Err(), store.ErrSubscriberOverflow) {
			s.fail(ErrSubscriberOverflow)
		}
	}()
	return s, nil
}

// --- remote ---

func (b *remoteBackend) publish(ctx context.Context, channel string, payload []byte) (int, error) {
	resp, err := b.call(ctx, wire.OpPublish, func(dst []byte) []byte { return wire.AppendPublishRequest(dst, channel, payload) })
	if err != nil {
		return 0, err
	}
	if resp.flags.Has(wire.FlagError) {
		return 0, streamEnd(resp)
	}
	var r kv.Reply
	if err := wire.DecodeReply(resp.body, &r); err != nil {
		return 0, fmt.Errorf("zaris: undecodable publish reply: %w", err)
	}
	return int(r.Int), r.Err()
}

func (b *remoteBackend) subscribe(ctx context.Context, req wire.SubscribeRequest) (*Subscription, error) {
	c, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	id, frames, err := c.openStream(wire.OpSubscribe, 0, func(dst []byte) []byte { return wire.AppendSubscribeRequest(dst, req) }, int(req.Buffer)+16)
	if err != nil {
		return nil, err
	}
	// The first item confirms the subscription.
	select {
	case f, ok := <-frames:
		if !ok {
			return nil, b.streamLost(c)
		}
		if !f.flags.Has(wire.FlagStream) {
			if err := streamEnd(f); err != nil {
				return nil, err
			}
			return nil, errors.New("zaris: subscription refused")
		}
	case <-ctx.Done():
		c.endStream(id)
		return nil, ctx.Err()
	}
	s := &Subscription{messages: make(chan Message, 64), stop: func() { c.endStream(id) }, done: make(chan struct{})}
	go func() {
		defer close(s.messages)
		for f := range frames {
			if !f.flags.Has(wire.FlagStream) {
				s.fail(streamEnd(f))
				return
			}
			var m wire.MessageItem
			if err := wire.DecodeMessageItem(f.body, &m); err != nil {
				s.fail(fmt.Errorf("zaris: undecodable message: %w", err))
				continue
			}
			select {
			case s.messages <- Message{Channel: m.Channel, Pattern: m.Pattern, Payload: m.Payload}:
			case <-s.done:
				return
			}
		}
		if c.broken() {
			s.fail(b.streamLost(c))
		} else {
			s.fail(ErrSubscriberOverflow)
		}
	}()
	return s, nil
}
