package hybrid

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strconv"
	"sync"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/zaris-io/zaris/internal/mpsafe"

	"github.com/zaris-io/zaris/sdk"
)

// JournalOptions configure a JournalBackplane. Zero fields take defaults.
type JournalOptions struct {
	// Prefix namespaces the journal's keys. Default "hcbp:". Instances
	// that must hear each other use the same prefix on the same store.
	Prefix string
	// PollInterval is how often the journal is read: the bound on how long
	// another instance's L1 may serve an invalidated copy. Default 500 ms.
	PollInterval time.Duration
	// Retention is the TTL of one journal entry. A reader further behind
	// than this finds holes and clears its L1. Default 1 min; at least
	// 4 × PollInterval.
	Retention time.Duration
	// MissingGrace is how long a reader waits for a sequence number that
	// was taken but whose entry is not there yet (its publisher is between
	// its two writes, or died there) before treating it as lost. Default
	// 2 s or 4 × PollInterval, whichever is larger; below Retention.
	MissingGrace time.Duration
	// MaxBatch bounds the entries read per round trip. Default 256.
	MaxBatch int
	// Logger receives poll failures. Default slog.Default().
	Logger *slog.Logger
}

func (o JournalOptions) withDefaults() JournalOptions {
	if o.Prefix == "" {
		o.Prefix = "hcbp:"
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	if o.Retention <= 0 {
		o.Retention = max(time.Minute, 4*o.PollInterval)
	}
	if o.MissingGrace <= 0 {
		o.MissingGrace = max(2*time.Second, 4*o.PollInterval)
	}
	if o.MaxBatch <= 0 {
		o.MaxBatch = 256
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

func (o JournalOptions) validate() error {
	switch {
	case o.Retention < 4*o.PollInterval:
		return fmt.Errorf("%w: journal retention %v below 4 × poll interval %v", ErrInvalidOptions, o.Retention, o.PollInterval)
	case o.MissingGrace >= o.Retention:
		return fmt.Errorf("%w: journal missing grace %v must be below retention %v", ErrInvalidOptions, o.MissingGrace, o.Retention)
	}
	return nil
}

// JournalBackplane is a Backplane over plain KV, so it works against any
// Zaris store today — typically the L2 client. Publishing advances a
// sequence key by compare-and-set, then writes the message under that
// sequence number with a TTL; every instance polls the sequence key and
// reads the entries it has not seen. The sequence key also carries a random
// journal id: if the key is lost (evicted, deleted) a new journal starts
// and readers, seeing the id change, clear their L1.
//
// Guarantees: messages are delivered in sequence order, at most once; a
// reader that cannot read a message (expired because it fell behind, or
// never written) delivers InvalidateAll instead — every L1 copy is dropped,
// never a stale one kept. Where the store offers publish/subscribe,
// PubSubBackplane is the better transport: no polling, no keys written.
type JournalBackplane struct {
	c      *sdk.Client
	o      JournalOptions
	seqKey string

	handlers handlerSet

	// Reader state, owned by the poll goroutine (and by PollNow callers,
	// serialized by pollMu).
	pollMu       sync.Mutex
	journal      uint64 // journal id being read; 0 = none seen yet
	next         uint64 // next sequence number to deliver
	missingSince time.Time

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// NewJournalBackplane starts a journal reader on c at the journal's current
// end (earlier messages are not replayed) and returns the backplane.
func NewJournalBackplane(ctx context.Context, c *sdk.Client, opts JournalOptions) (*JournalBackplane, error) {
	if c == nil {
		return nil, errors.New("hybrid: journal backplane needs a client")
	}
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	b := &JournalBackplane{
		c: c, o: o, seqKey: o.Prefix + "seq",
		next: 1,
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	r, err := c.Get(ctx, b.seqKey)
	if err != nil {
		return nil, fmt.Errorf("hybrid: journal head: %w", err)
	}
	if id, seq, ok := decodeHead(r); ok {
		b.journal, b.next = id, seq+1
	}
	go b.loop()
	return b, nil
}

// Close stops the reader. Safe to call more than once.
func (b *JournalBackplane) Close() error {
	b.closeOnce.Do(func() {
		close(b.stop)
		<-b.done
	})
	return nil
}

// Subscribe registers handler; the returned function removes it.
func (b *JournalBackplane) Subscribe(handler func(Invalidation)) func() {
	return b.handlers.add(handler)
}

const journalPublishAttempts = 64

// Publish appends inv to the journal.
func (b *JournalBackplane) Publish(ctx context.Context, inv Invalidation) error {
	data, err := msgpack.Marshal(&inv)
	if err != nil {
		return err
	}
	for attempt := range journalPublishAttempts {
		r, err := b.c.Get(ctx, b.seqKey)
		if err != nil {
			return err
		}
		var id, seq uint64
		opts := &sdk.PutOptions{}
		if cur, s, ok := decodeHead(r); ok {
			id, seq = cur, s+1
			opts.IfMatchVersion = r.Version
		} else if r.Status == sdk.StatusNotFound {
			id, seq = newJournalID(), 1
			opts.IfAbsent = true
		} else {
			return headError(r)
		}
		w, err := b.c.Put(ctx, b.seqKey, encodeHead(id, seq), opts)
		if err != nil && !errors.Is(err, sdk.ErrConflict) { // Conflict: retried below
			return err
		}
		switch w.Status {
		case sdk.StatusSuccess:
			e, err := b.c.Put(ctx, b.entryKey(id, seq), data, &sdk.PutOptions{TTL: b.o.Retention})
			if err != nil {
				return err
			}
			return e.Err()
		case sdk.StatusConflict:
			if err := backoff(ctx, attempt); err != nil {
				return err
			}
		default:
			return fmt.Errorf("hybrid: journal head: %w", w.Err())
		}
	}
	return fmt.Errorf("hybrid: journal publish: %w after %d attempts", sdk.ErrConflict, journalPublishAttempts)
}

// backoff waits a little, randomly, after a lost compare-and-set race, so
// that many publishers contending for the head spread out.
func backoff(ctx context.Context, attempt int) error {
	if attempt < 2 {
		return nil
	}
	limit := int64(time.Millisecond) << min(attempt, 6)
	n, err := rand.Int(rand.Reader, big.NewInt(limit))
	if err != nil {
		return err
	}
	t := time.NewTimer(time.Duration(n.Int64()))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (b *JournalBackplane) loop() {
	defer close(b.done)
	t := time.NewTicker(b.o.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-b.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 4*b.o.PollInterval)
			if err := b.PollNow(ctx); err != nil {
				b.o.Logger.Warn("hybrid: journal poll failed", "err", err)
			}
			cancel()
		}
	}
}

// PollNow reads the journal once and delivers what is new. The reader
// calls it every PollInterval; calling it directly only shortens the wait.
func (b *JournalBackplane) PollNow(ctx context.Context) error {
	b.pollMu.Lock()
	defer b.pollMu.Unlock()
	r, err := b.c.Get(ctx, b.seqKey)
	if err != nil {
		return err
	}
	id, head, ok := decodeHead(r)
	if !ok {
		if r.Status != sdk.StatusNotFound {
			return headError(r)
		}
		if b.journal != 0 { // the journal vanished: whatever it held is lost
			b.gap()
			b.journal, b.next = 0, 1
		}
		return nil
	}
	switch {
	case b.journal == 0: // first journal seen: every entry is news
		b.journal = id
	case id != b.journal:
		b.gap()
		b.journal, b.next, b.missingSince = id, head+1, time.Time{}
		return nil
	}
	for b.next <= head {
		n := min(head-b.next+1, uint64(b.o.MaxBatch))
		keys := make([]string, n)
		for i := range keys {
			keys[i] = b.entryKey(id, b.next+uint64(i))
		}
		res, err := b.c.GetMany(ctx, keys)
		if err != nil {
			return err
		}
		for _, e := range res {
			if e.OK() {
				var inv Invalidation
				if err := mpsafe.Unmarshal(e.Value, &inv); err == nil {
					b.deliver(inv)
				}
				b.next++
				b.missingSince = time.Time{}
				continue
			}
			if e.Status != sdk.StatusNotFound {
				return e.Err()
			}
			// A hole: a publisher between its two writes, or a lost entry.
			if b.missingSince.IsZero() {
				b.missingSince = time.Now()
				return nil
			}
			if time.Since(b.missingSince) < b.o.MissingGrace {
				return nil
			}
			// Every sequence number up to head was taken after its
			// publisher had changed L2, so clearing L1 now covers them all.
			b.gap()
			b.next, b.missingSince = head+1, time.Time{}
			return nil
		}
	}
	return nil
}

func (b *JournalBackplane) gap() {
	b.deliver(Invalidation{Kind: InvalidateAll})
}

func (b *JournalBackplane) deliver(inv Invalidation) { b.handlers.deliver(inv) }

func (b *JournalBackplane) entryKey(id, seq uint64) string {
	return b.o.Prefix + "e:" + strconv.FormatUint(id, 36) + ":" + strconv.FormatUint(seq, 10)
}

var errMalformedHead = errors.New("hybrid: malformed journal head")

func headError(r sdk.Result) error {
	if r.OK() {
		return errMalformedHead
	}
	return fmt.Errorf("hybrid: journal head: %w", r.Err())
}

func encodeHead(id, seq uint64) []byte {
	b := binary.BigEndian.AppendUint64(nil, id)
	return binary.BigEndian.AppendUint64(b, seq)
}

func decodeHead(r sdk.Result) (id, seq uint64, ok bool) {
	if !r.OK() || len(r.Value) != 16 {
		return 0, 0, false
	}
	return binary.BigEndian.Uint64(r.Value), binary.BigEndian.Uint64(r.Value[8:]), true
}

func newJournalID() uint64 {
	var b [8]byte
	for {
		_, _ = rand.Read(b[:])
		if id := binary.BigEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}
