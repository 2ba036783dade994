package hybrid

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zaris-io/zaris/sdk"
)

// WatchBackplaneOptions configure a WatchBackplane. Zero fields take
// defaults.
type WatchBackplaneOptions struct {
	// KeyPrefix is the KeyPrefix of the caches (Options.KeyPrefix) whose
	// L2 keys the backplane watches. Default DefaultKeyPrefix. A cache
	// whose KeyPrefix does not start with it hears nothing from this
	// backplane (New logs a warning).
	KeyPrefix string
	// OwnerCheckInterval is how often the backplane looks at the client's
	// routing map for segments that changed owner (a failover, a
	// migration): each such change drops every subscriber's L1. Default
	// 100 ms.
	OwnerCheckInterval time.Duration
	// Buffer is how many changes may wait for the backplane before the
	// server ends its watch (the backplane then watches again and drops
	// every L1). Each owner node holds a buffer of this many events
	// (about 100 bytes each) per backplane. Default 4096.
	Buffer int
	// MinBackoff and MaxBackoff bound the wait between attempts to watch
	// again after the watch ended (exponential, with jitter; the first
	// attempt is immediate). Defaults 50 ms and 5 s.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// WatchTimeout bounds one attempt to open the watch. Default 5 s.
	WatchTimeout time.Duration
	// Logger receives watch losses and flushes. Default slog.Default().
	Logger *slog.Logger
}

func (o WatchBackplaneOptions) withDefaults() WatchBackplaneOptions {
	if o.KeyPrefix == "" {
		o.KeyPrefix = DefaultKeyPrefix
	}
	if o.OwnerCheckInterval <= 0 {
		o.OwnerCheckInterval = 100 * time.Millisecond
	}
	if o.Buffer <= 0 {
		o.Buffer = 4096
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
	if o.WatchTimeout <= 0 {
		o.WatchTimeout = 5 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// WatchBackplane is a Backplane driven by the store's own change tracking:
// server-side invalidation. It holds one watch (sdk.Watcher.Prefix, without
// values) on the caches' key prefix, so every change of an L2 key — made
// by another cache instance, a plain SDK client, a RESP client, the HTTP
// API, an expiry or an eviction — reaches every subscribed cache, which
// drops its L1 copy of that key. Nothing is published: Publish only checks
// that the backplane is open, since the write itself is the message.
//
// Each change arrives as an InvalidateStoreKey carrying the key as L2
// stores it and the change's segment revision and item version. A cache
// recognises the change its own last write made (same key, revision and
// version) and keeps its copy; any other change of the key evicts it. A
// tag marker's change (RemoveByTag on any instance) makes the cache read
// the marker from L2 and apply it, as an InvalidateTag would.
//
// On a cluster the watch spans every owner and resumes on a segment's new
// owner after a failover or a migration from the last change it delivered
// (R-DS-6). What may still have been lost becomes InvalidateAll — every
// L1 copy dropped, never one kept stale for ever (the rule of DECISIONS
// D49):
//   - a segment whose history no longer reaches that change (WatchResync);
//   - a map in which a segment changed owner (RoutingStats.OwnerChanges,
//     checked every OwnerCheckInterval): a change acknowledged by an owner
//     that died before shipping it cannot be told apart from a later
//     change with the same key, revision and version on the new owner;
//   - the watch ending (the backplane fell more than Buffer changes
//     behind, or a single server's connection was lost): it watches
//     again, backing off, and drops every L1 once the new watch is in
//     place.
//
// Until the watch is back, other writers' changes do not reach L1 (its
// copies still expire by LocalCacheExpiration). If the client itself is
// closed, the backplane stops: close it first. Handlers run on the
// receiving goroutine and must not block.
type WatchBackplane struct {
	c *sdk.Client
	o WatchBackplaneOptions

	handlers handlerSet

	watching  atomic.Bool
	changes   atomic.Uint64
	flushes   atomic.Uint64
	resyncs   atomic.Uint64
	moves     atomic.Uint64
	rewatches atomic.Uint64

	ownerChanges uint64 // RoutingStats.OwnerChanges at the last look; owned by run

	ctx       context.Context // cancelled by Close
	cancel    context.CancelFunc
	done      chan struct{} // closed when the receiving goroutine returns
	closeOnce sync.Once
	closed    atomic.Bool
}

// WatchBackplaneStats are a WatchBackplane's counters.
type WatchBackplaneStats struct {
	Changes   uint64 // key changes delivered to the subscribers
	Flushes   uint64 // InvalidateAll delivered (every cause below)
	Resyncs   uint64 // segments whose history was gone on a resumed watch
	Moves     uint64 // maps seen in which a segment changed owner
	Rewatches uint64 // watches opened again after one ended
	Watching  bool   // a watch is in place now
}

// NewWatchBackplane opens the watch on c and returns the backplane once it
// is in place: every change made from then on is delivered. It fails if
// the watch cannot be opened (the client is closed, the server
// unreachable). The client stays the caller's; close the backplane before
// it.
func NewWatchBackplane(ctx context.Context, c *sdk.Client, opts WatchBackplaneOptions) (*WatchBackplane, error) {
	if c == nil {
		return nil, errors.New("hybrid: watch backplane needs a client")
	}
	o := opts.withDefaults()
	b := &WatchBackplane{c: c, o: o, done: make(chan struct{})}
	// Read before the watch opens: a move from now on is a move after it.
	b.ownerChanges = c.Routing().OwnerChanges
	w, err := b.open(ctx)
	if err != nil {
		return nil, fmt.Errorf("hybrid: watch backplane on %q: %w", o.KeyPrefix, err)
	}
	b.ctx, b.cancel = context.WithCancel(context.Background())
	b.watching.Store(true)
	go b.run(w)
	return b, nil
}

func (b *WatchBackplane) open(ctx context.Context) (*sdk.WatchStream, error) {
	return b.c.Watch().Prefix(ctx, b.o.KeyPrefix, &sdk.WatchOptions{Buffer: b.o.Buffer})
}

// KeyPrefix is the prefix of the watched keys.
func (b *WatchBackplane) KeyPrefix() string { return b.o.KeyPrefix }

// watches reports whether a cache with keyPrefix hears its changes here
// (New warns when not).
func (b *WatchBackplane) watches(keyPrefix string) bool {
	return strings.HasPrefix(keyPrefix, b.o.KeyPrefix)
}

// Stats returns the backplane's counters.
func (b *WatchBackplane) Stats() WatchBackplaneStats {
	return WatchBackplaneStats{
		Changes: b.changes.Load(), Flushes: b.flushes.Load(), Resyncs: b.resyncs.Load(),
		Moves: b.moves.Load(), Rewatches: b.rewatches.Load(), Watching: b.watching.Load(),
	}
}

// Close ends the watch and stops the receiving goroutine, waiting for it
// (a handler running then finishes first). Publish fails afterwards. Safe
// to call more than once.
func (b *WatchBackplane) Close() error {
	b.closeOnce.Do(func() {
		b.closed.Store(true)
		b.cancel()
		<-b.done
	})
	return nil
}

// Subscribe registers handler; the returned function removes it and is
// safe to call more than once.
func (b *WatchBackplane) Subscribe(handler func(Invalidation)) func() {
	return b.handlers.add(handler)
}

// Publish sends nothing: the change a cache made in L2 reaches every
// instance through the watch. It fails only on a closed backplane or a
// done ctx.
func (b *WatchBackplane) Publish(ctx context.Context, _ Invalidation) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.closed.Load() {
		return ErrBackplaneClosed
	}
	return nil
}

func (b *WatchBackplane) deliver(inv Invalidation) { b.handlers.deliver(inv) }

func (b *WatchBackplane) flush() {
	b.flushes.Add(1)
	b.deliver(Invalidation{Kind: InvalidateAll})
}

// run receives until Close, watching again whenever the watch ends.
func (b *WatchBackplane) run(w *sdk.WatchStream) {
	defer close(b.done)
	defer b.watching.Store(false)
	tick := time.NewTicker(b.o.OwnerCheckInterval)
	defer tick.Stop()
	for {
		b.consume(w, tick.C)
		_ = w.Close()
		if b.ctx.Err() != nil {
			return
		}
		b.watching.Store(false)
		cause := w.Err()
		if cause == nil {
			cause = errors.New("watch ended")
		}
		if errors.Is(cause, sdk.ErrClosed) {
			b.o.Logger.Warn("hybrid: watch backplane stopped: its client is closed", "prefix", b.o.KeyPrefix)
			return
		}
		b.o.Logger.Warn("hybrid: watch backplane lost its watch; watching again", "prefix", b.o.KeyPrefix, "err", cause)
		if w = b.rewatch(); w == nil {
			return
		}
		b.rewatches.Add(1)
		b.watching.Store(true)
		// Changes made while no watch was open are unknown: drop every L1
		// copy. After the new watch is in place, so nothing falls between.
		b.flush()
	}
}

func (b *WatchBackplane) consume(w *sdk.WatchStream, tick <-chan time.Time) {
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-tick:
			b.checkOwners()
		case ev, ok := <-w.Events():
			if !ok {
				return
			}
			b.receive(ev)
		}
	}
}

func (b *WatchBackplane) receive(ev sdk.WatchEvent) {
	if ev.Kind == sdk.WatchResync {
		b.resyncs.Add(1)
		b.o.Logger.Warn("hybrid: watch backplane resumed a segment whose history is gone; clearing L1", "segment", ev.Segment)
		b.flush()
		return
	}
	b.changes.Add(1)
	b.deliver(Invalidation{Kind: InvalidateStoreKey, Namespace: b.o.KeyPrefix, Key: ev.Key, Revision: ev.Revision, Version: ev.Version})
}

// checkOwners drops every L1 when the client installed a map that moved a
// segment since the last look.
func (b *WatchBackplane) checkOwners() {
	n := b.c.Routing().OwnerChanges
	if n == b.ownerChanges {
		return
	}
	b.ownerChanges = n
	b.moves.Add(1)
	b.o.Logger.Info("hybrid: watch backplane saw segments change owner; clearing L1", "prefix", b.o.KeyPrefix)
	b.flush()
}

// rewatch tries until the watch is open again (nil once Close is called,
// or if the client was closed).
func (b *WatchBackplane) rewatch() *sdk.WatchStream {
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			t := time.NewTimer(jittered(b.o.MinBackoff, b.o.MaxBackoff, attempt))
			select {
			case <-b.ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
		}
		ctx, cancel := context.WithTimeout(b.ctx, b.o.WatchTimeout)
		w, err := b.open(ctx)
		cancel()
		switch {
		case err == nil:
			return w
		case b.ctx.Err() != nil:
			return nil
		case errors.Is(err, sdk.ErrClosed):
			b.o.Logger.Warn("hybrid: watch backplane stopped: its client is closed", "prefix", b.o.KeyPrefix)
			return nil
		}
		if attempt == 0 || attempt%10 == 0 {
			b.o.Logger.Warn("hybrid: watch backplane cannot watch yet", "prefix", b.o.KeyPrefix, "attempt", attempt+1, "err", err)
		}
	}
}

// jittered is lo·2^(attempt-1), capped at hi, with the upper half
// randomized so that a fleet cut off at once spreads out.
func jittered(lo, hi time.Duration, attempt int) time.Duration {
	d := lo
	for i := 1; i < attempt && d < hi; i++ {
		d *= 2
	}
	d = min(d, hi)
	return d/2 + mrand.N(d/2+1)
}

// storeChangeSource is a backplane that reports every change of L2 keys,
// the cache's own writes included (WatchBackplane): the cache remembers
// its own writes so that their changes do not evict its copies.
type storeChangeSource interface {
	watches(keyPrefix string) bool
}
