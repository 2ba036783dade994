package hybrid

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// DefaultPubSubChannel is the channel a PubSubBackplane uses when
// PubSubOptions set neither Channel nor Namespace.
const DefaultPubSubChannel = "zaris:hybrid:invalidations"

// ErrBackplaneClosed is returned by Publish on a closed backplane.
var ErrBackplaneClosed = errors.New("hybrid: backplane closed")

// PubSubOptions configure a PubSubBackplane. Zero fields take defaults.
type PubSubOptions struct {
	// Channel carries the invalidations; instances that must hear each
	// other use the same channel on the same store (or cluster). Default
	// DefaultPubSubChannel, or DefaultPubSubChannel+":"+Namespace when
	// Namespace is set.
	Channel string
	// Namespace only derives the default Channel: fleets of caches that
	// share a store but not their data (typically, different KeyPrefixes)
	// can keep each other's traffic off their channel. Caches ignore other
	// KeyPrefixes' messages anyway.
	Namespace string
	// MinBackoff and MaxBackoff bound the wait between attempts to
	// subscribe again after the subscription ended (exponential, with
	// jitter; the first attempt is immediate). Defaults 50 ms and 5 s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// SubscribeTimeout bounds one subscribe attempt. Default 5 s.
	SubscribeTimeout time.Duration
	// Logger receives subscription losses and undecodable messages.
	// Default slog.Default().
	Logger *slog.Logger
}

func (o PubSubOptions) withDefaults() PubSubOptions {
	if o.Channel == "" {
		o.Channel = DefaultPubSubChannel
		if o.Namespace != "" {
			o.Channel += ":" + o.Namespace
		}
	}
	if o.MinBackoff <= 0 {
		o.MinBackoff = 50 * time.Millisecond
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.MaxBackoff < o.MinBackoff {
		o.MaxBackoff = o.MinBackoff
	}
	if o.SubscribeTimeout <= 0 {
		o.SubscribeTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// PubSubBackplane is a Backplane over the publish/subscribe of a Zaris
// store — typically the L2 client, embedded or remote: an invalidation
// reaches the other instances in one network hop, with no polling and no
// keys written. WatchBackplane, driven by the store's own changes, also
// sees writers that are not caches (see the package documentation for
// the choice).
//
// Publish encodes the Invalidation (a compact binary frame, see
// encodeInvalidation), hands it to the backplane's subscribers
// synchronously — so caches sharing one backplane hear each other at once,
// as with LocalBackplane; the publishing cache ignores its own message by
// Source — and publishes it on the channel. A receiving
// goroutine decodes what the channel carries and calls the subscribers;
// the frames this backplane published itself come back on its own
// subscription and are dropped there (they were delivered locally).
//
// Pub/sub is fire-and-forget: a message published while an instance was
// not subscribed is lost to it. So when the subscription ends for any
// reason other than Close — the consumer fell behind and the server dropped
// it (sdk.ErrSubscriberOverflow), the connection was lost, the server
// restarted — the backplane subscribes again, backing off between
// attempts, and once the new subscription is in place delivers
// InvalidateAll to its subscribers: every L1 copy is dropped rather than
// one kept that an unheard message would have evicted. A message that does
// not decode (corrupt, or from a newer format) is treated the same way.
// Until the subscription is back, other instances' changes do not reach
// this instance's L1 (its copies still expire by LocalCacheExpiration). If
// the client itself is closed, the backplane stops: close it first.
//
// Handlers run on the receiving goroutine (or on the publisher's, for
// local delivery) and must not block: a receiver stalled for more than the
// subscription's buffer (about a thousand messages) is cut off by the
// server, which costs every subscriber an L1 clear.
type PubSubBackplane struct {
	c      *sdk.Client
	o      PubSubOptions
	origin uint64 // this backplane's id in every frame it publishes

	handlers handlerSet

	subscribed   atomic.Bool
	published    atomic.Uint64
	received     atomic.Uint64
	own          atomic.Uint64
	malformed    atomic.Uint64
	resubscribes atomic.Uint64

	lastMalformedLog time.Time // owned by the receiving goroutine

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	done      chan struct{} // closed when the receiving goroutine returns
	closeOnce sync.Once
	closed    atomic.Bool
}

// PubSubStats are a PubSubBackplane's counters.
type PubSubStats struct {
	Published    uint64 // frames published on the channel
	Received     uint64 // other backplanes' frames delivered to the subscribers
	Own          uint64 // this backplane's own frames, echoed back and dropped
	Malformed    uint64 // frames that did not decode (each answered with InvalidateAll)
	Resubscribes uint64 // subscriptions re-established after one ended
	Subscribed   bool   // a subscription is in place now
}

// NewPubSubBackplane subscribes to the channel on c and returns the
// backplane once the subscription is in place: invalidations published
// from then on are delivered. It fails if the first subscription cannot be
// made (the client is closed, the server unreachable or without pub/sub).
// The client stays the caller's; close the backplane before it.
func NewPubSubBackplane(ctx context.Context, c *sdk.Client, opts PubSubOptions) (*PubSubBackplane, error) {
	if c == nil {
		return nil, errors.New("hybrid: pub/sub backplane needs a client")
	}
	o := opts.withDefaults()
	sub, err := c.PubSub().Subscribe(ctx, o.Channel)
	if err != nil {
		return nil, fmt.Errorf("hybrid: pub/sub backplane subscribe %q: %w", o.Channel, err)
	}
	b := &PubSubBackplane{
		c: c, o: o, origin: newOrigin(),
		done: make(chan struct{}),
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.subscribed.Store(true)
	go b.run(sub)
	return b, nil
}

// Channel is the channel the backplane publishes and listens on.
func (b *PubSubBackplane) Channel() string { return b.o.Channel }

// Stats returns the backplane's counters.
func (b *PubSubBackplane) Stats() PubSubStats {
	return PubSubStats{
		Published: b.published.Load(), Received: b.received.Load(), Own: b.own.Load(),
		Malformed: b.malformed.Load(), Resubscribes: b.resubscribes.Load(),
		Subscribed: b.subscribed.Load(),
	}
}

// Close ends the subscription and stops the receiving goroutine, waiting
// for it (a handler running then finishes first). Publish fails
// afterwards. Safe to call more than once.
func (b *PubSubBackplane) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		b.cancel()
		<-b.done
	})
	return nil
}

// Subscribe registers handler; the returned function removes it and is
// safe to call more than once.
func (b *PubSubBackplane) Subscribe(handler func(Invalidation)) func() {
	return b.handlers.add(handler)
}

// Publish delivers inv to this process's subscribers, then publishes it on
// the channel. An error means the other instances may not have heard it.
func (b *PubSubBackplane) Publish(ctx context.Context, inv Invalidation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.closed.Load() {
		return ErrBackplaneClosed
	}
	frame := encodeInvalidation(nil, b.origin, &inv)
	b.deliver(inv)
	if _, err := b.c.PubSub().Publish(ctx, b.o.Channel, frame); err != nil {
		return err
	}
	b.published.Add(1)
	return nil
}

func (b *PubSubBackplane) deliver(inv Invalidation) { b.handlers.deliver(inv) }

// run receives until Close, subscribing again whenever the subscription
// ends.
func (b *PubSubBackplane) run(sub *sdk.Subscription) {
	defer close(b.done)
	defer b.subscribed.Store(false)
	for {
		b.consume(sub)
		_ = sub.Close()
		if b.ctx.Err() != nil {
			return
		}
		b.subscribed.Store(false)
		cause := sub.Err()
		if cause == nil {
			cause = errors.New("subscription ended")
		}
		if errors.Is(cause, sdk.ErrClosed) {
			b.o.Logger.Warn("hybrid: pub/sub backplane stopped: its client is closed", "channel", b.o.Channel)
			return
		}
		b.o.Logger.Warn("hybrid: pub/sub backplane lost its subscription; subscribing again",
			"channel", b.o.Channel, "err", cause)
		if sub = b.resubscribe(); sub == nil {
			return
		}
		b.resubscribes.Add(1)
		b.subscribed.Store(true)
		// Whatever was published while unsubscribed is lost: drop every L1
		// copy. Sent after the new subscription is in place, so nothing
		// falls between the clear and the messages that follow it.
		b.deliver(Invalidation{Kind: InvalidateAll})
	}
}

func (b *PubSubBackplane) consume(sub *sdk.Subscription) {
	for {
		select {
		case <-b.ctx.Done():
			return
		case m, ok := <-sub.Messages():
			if !ok {
				return
			}
			b.receive(m.Payload)
		}
	}
}

func (b *PubSubBackplane) receive(payload []byte) {
	origin, inv, err := decodeInvalidation(payload)
	switch {
	case err != nil:
		b.malformed.Add(1)
		if now := time.Now(); now.Sub(b.lastMalformedLog) >= 10*time.Second {
			b.lastMalformedLog = now
			b.o.Logger.Warn("hybrid: pub/sub backplane dropped an undecodable message; clearing L1",
				"channel", b.o.Channel, "err", err, "len", len(payload))
		}
		// It may have been an invalidation we cannot read.
		b.deliver(Invalidation{Kind: InvalidateAll})
	case origin == b.origin:
		b.own.Add(1) // delivered locally by Publish
	default:
		b.received.Add(1)
		b.deliver(inv)
	}
}

// resubscribe tries until it subscribes (nil once Close is called, or if
// the client was closed: nothing can be received on it again).
func (b *PubSubBackplane) resubscribe() *sdk.Subscription {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(b.retryDelay(attempt))
			select {
			case <-b.ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		ctx, cancel := context.WithTimeout(b.ctx, b.o.SubscribeTimeout)
		sub, err := b.c.PubSub().Subscribe(ctx, b.o.Channel)
		cancel()
		switch {
		case err == nil:
			return sub
		case b.ctx.Err() != nil:
			return nil
		case errors.Is(err, sdk.ErrClosed):
			b.o.Logger.Warn("hybrid: pub/sub backplane stopped: its client is closed", "channel", b.o.Channel)
			return nil
		}
		if attempt == 0 || attempt%10 == 0 {
			b.o.Logger.Warn("hybrid: pub/sub backplane cannot subscribe yet",
				"channel", b.o.Channel, "attempt", attempt+1, "err", err)
		}
	}
}

// retryDelay is MinBackoff·2^(attempt-1), capped at MaxBackoff, with the
// upper half randomized so that a fleet cut off at once spreads out.
func (b *PubSubBackplane) retryDelay(attempt int) time.Duration {
	return jittered(b.o.MinBackoff, b.o.MaxBackoff, attempt)
}

func newOrigin() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return binary.BigEndian.Uint64(b[:])
}

// Frame layout (version 2; version 1, first byte 0xB1, is the same
// without SentAt and is still read):
//
//	byte     0xB2 (magic + version)
//	uint64   origin: the publishing backplane (big-endian)
//	byte     kind
//	varint   At
//	uvarint  length, bytes — ×4: Source, Namespace, Key, Tag
//	varint   SentAt
//
// Nothing may follow. A reader that meets another first byte treats the
// frame as undecodable (InvalidateAll), so a future format is safe to roll
// out: old readers drop their L1 rather than miss an invalidation.
const (
	invMagicV1    = 0xB1
	invMagic      = 0xB2
	invHeaderSize = 1 + 8 + 1
)

var errBadInvalidation = errors.New("hybrid: malformed backplane message")

func encodeInvalidation(dst []byte, origin uint64, inv *Invalidation) []byte {
	dst = append(dst, invMagic)
	dst = binary.BigEndian.AppendUint64(dst, origin)
	dst = append(dst, byte(inv.Kind))
	dst = binary.AppendVarint(dst, inv.At)
	for _, s := range [...]string{inv.Source, inv.Namespace, inv.Key, inv.Tag} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	return binary.AppendVarint(dst, inv.SentAt)
}

func decodeInvalidation(b []byte) (origin uint64, inv Invalidation, err error) {
	if len(b) < invHeaderSize || (b[0] != invMagic && b[0] != invMagicV1) {
		return 0, inv, errBadInvalidation
	}
	origin = binary.BigEndian.Uint64(b[1:])
	inv.Kind = InvalidationKind(b[9])
	if inv.Kind < InvalidateKey || inv.Kind > InvalidateStoreKey {
		return 0, Invalidation{}, errBadInvalidation
	}
	rest := b[invHeaderSize:]
	at, n := binary.Varint(rest)
	if n <= 0 {
		return 0, Invalidation{}, errBadInvalidation
	}
	inv.At, rest = at, rest[n:]
	for _, s := range [...]*string{&inv.Source, &inv.Namespace, &inv.Key, &inv.Tag} {
		l, n := binary.Uvarint(rest)
		if n <= 0 || l > uint64(len(rest)-n) {
			return 0, Invalidation{}, errBadInvalidation
		}
		*s = string(rest[n : n+int(l)])
		rest = rest[n+int(l):]
	}
	if b[0] == invMagic {
		sent, n := binary.Varint(rest)
		if n <= 0 {
			return 0, Invalidation{}, errBadInvalidation
		}
		inv.SentAt, rest = sent, rest[n:]
	}
	if len(rest) != 0 {
		return 0, Invalidation{}, errBadInvalidation
	}
	return origin, inv, nil
}
