package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
	"github.com/zaris-io/zaris/internal/wire"
	"github.com/zaris-io/zaris/server/store"
)

// WatchEventKind is what happened to a watched key (R-DS-6).
type WatchEventKind uint8

const (
	WatchPut     WatchEventKind = iota + 1 // value written
	WatchDelete                            // deleted
	WatchExpired                           // reached its TTL
	WatchEvicted                           // evicted under memory pressure
	WatchExpire                            // TTL set or changed
	WatchPersist                           // TTL removed
	WatchCommand                           // a collection mutation (Command names it)
	// WatchResync: the history of a segment the watch resumed on a new
	// owner no longer reaches back to the last change delivered (below the
	// trim floor, or changes that never reached the new owner). Records are
	// the segment's matching live records now (key watch: 0 or 1); replace
	// what you hold of that segment (Segment) with them; the events that
	// follow continue from there.
	WatchResync WatchEventKind = 100
)

func (k WatchEventKind) String() string {
	if k == WatchResync {
		return "resync"
	}
	return store.EventKind(k).String()
}

// WatchEvent is one change of a watched key.
type WatchEvent struct {
	Kind     WatchEventKind
	Key      string
	Value    []byte // the new value of a put, when IncludeValues
	Version  uint64
	Revision uint64 // per-segment order of changes
	// ExpiresAt is the key's absolute expiry after the change (zero = none).
	ExpiresAt time.Time
	Command   CmdOp // for WatchCommand
	// Segment is the segment of the key: revisions order the changes of
	// one segment.
	Segment uint16
	// Epoch is the ownership epoch of the segment's partition when the
	// change was delivered (0 on a single node).
	Epoch uint64
	// Records is the fresh snapshot of a WatchResync.
	Records []WatchRecord
}

// WatchRecord is one live record of a watch's initial snapshot.
type WatchRecord struct {
	Key       string
	Value     []byte // when IncludeValues and the key holds a plain value
	Version   uint64
	Revision  uint64
	ExpiresAt time.Time
}

// WatchOptions tune a watch.
type WatchOptions struct {
	// Snapshot: deliver the matching live records first (WatchStream.Snapshot);
	// every change not reflected in them arrives as an event, none that is.
	Snapshot bool
	// IncludeValues: puts (and snapshot records) carry the value.
	IncludeValues bool
	// Buffer is how many events may wait for the consumer; a consumer that
	// falls further behind ends the watch with ErrWatchOverflow. Default 4096.
	Buffer int
}

// ErrWatchOverflow: the consumer fell behind and events were dropped; the
// watch ended. Watch again with Snapshot to resynchronise.
var ErrWatchOverflow = errors.New("zaris: watch consumer fell behind; watch again with a snapshot")

// ErrWatchMoved is no longer returned: a cluster watch resumes on the new
// owner of a segment from the last change it delivered (R-DS-6), or
// delivers a WatchResync when that history is gone.
//
// Deprecated: kept so that code testing for it still compiles.
var ErrWatchMoved = errors.New("zaris: the owner of watched keys changed; watch again with a snapshot")

// Watcher opens watches (R-DS-6).
type Watcher struct{ c *Client }

// Watch returns the client's watch surface.
func (c *Client) Watch() *Watcher { return &Watcher{c: c} }

// Key watches one key, on its owner.
func (w *Watcher) Key(ctx context.Context, key string, opts *WatchOptions) (*WatchStream, error) {
	if key == "" {
		return nil, fmt.Errorf("%w: empty key", ErrBadRequest)
	}
	return w.open(ctx, wire.WatchRequest{Key: key}, opts)
}

// Prefix watches every key starting with prefix ("" = every key). On a
// cluster it merges one stream per owner; events of one key keep their
// order, events of keys on different owners interleave.
func (w *Watcher) Prefix(ctx context.Context, prefix string, opts *WatchOptions) (*WatchStream, error) {
	return w.open(ctx, wire.WatchRequest{Prefix: prefix}, opts)
}

func (w *Watcher) open(ctx context.Context, req wire.WatchRequest, opts *WatchOptions) (*WatchStream, error) {
	if err := w.c.check(ctx); err != nil {
		return nil, err
	}
	var o WatchOptions
	if opts != nil {
		o = *opts
	}
	if o.Buffer <= 0 {
		o.Buffer = 4096
	}
	req.Snapshot, req.IncludeValues, req.Buffer = o.Snapshot, o.IncludeValues, uint32(o.Buffer)
	return w.c.be.watch(ctx, req)
}

// WatchStream is a live watch.
type WatchStream struct {
	snapshot []WatchRecord
	// A resumable stream of one node (the cluster client's parts): where
	// each segment's events start, and the resumed segments whose history
	// was gone.
	marks   []wire.WatchPosition
	resyncs []watchResync
	events  chan WatchEvent
	stop    func()

	mu   sync.Mutex // guards err
	err  error
	once sync.Once
	done chan struct{} // closed by Close: the pump stops even if nobody reads
}

// Snapshot is the initial snapshot (nil without WatchOptions.Snapshot).
func (s *WatchStream) Snapshot() []WatchRecord { return s.snapshot }

// Events delivers the changes; it is closed when the watch ends, and Err
// then says why (nil after Close).
func (s *WatchStream) Events() <-chan WatchEvent { return s.events }

// Err is why the watch ended: ErrWatchOverflow, a lost connection (a
// single node; a cluster watch resumes on another owner instead), or nil.
func (s *WatchStream) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *WatchStream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
}

// Close ends the watch. Safe to call more than once.
func (s *WatchStream) Close() error {
	s.once.Do(func() {
		close(s.done)
		s.stop()
	})
	return nil
}

// watchResync is one resynchronised segment of a resumed part.
type watchResync struct {
	segment uint16
	records []WatchRecord
}

func expiry(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// --- embedded ---

func (b *embeddedBackend) watch(ctx context.Context, req wire.WatchRequest) (*WatchStream, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts := store.WatchOptions{Key: req.Key, Prefix: req.Prefix, Snapshot: req.Snapshot,
		IncludeValues: req.IncludeValues, Buffer: int(req.Buffer), Marks: req.Marks}
	if req.From != nil {
		opts.From = make([]store.WatchPosition, len(req.From))
		for i, p := range req.From {
			opts.From[i] = store.WatchPosition(p)
		}
	}
	w, snap, err := b.st.Watch(opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadRequest, err)
	}
	s := &WatchStream{events: make(chan WatchEvent, 64), stop: w.Close, done: make(chan struct{})}
	for _, m := range w.Marks() {
		s.marks = append(s.marks, wire.WatchPosition(m))
	}
	for _, rs := range w.Resyncs() {
		recs := make([]WatchRecord, 0, len(rs.Records))
		for _, r := range rs.Records {
			wr := WatchRecord{Key: r.Key(), Version: r.Version(), Revision: r.Revision, ExpiresAt: expiry(r.ExpiresAt())}
			if req.IncludeValues && r.Kind == store.KindString {
				wr.Value = cloneBytes(r.Value())
			}
			recs = append(recs, wr)
		}
		s.resyncs = append(s.resyncs, watchResync{segment: rs.Segment, records: recs})
	}
	if req.Snapshot {
		s.snapshot = make([]WatchRecord, 0, len(snap))
		for _, r := range snap {
			wr := WatchRecord{Key: r.Key(), Version: r.Version(), Revision: r.Revision, ExpiresAt: expiry(r.ExpiresAt())}
			if req.IncludeValues && r.Kind == store.KindString {
				wr.Value = cloneBytes(r.Value())
			}
			s.snapshot = append(s.snapshot, wr)
		}
	}
	go func() {
		defer close(s.events)
		for ev := range w.Events() {
			select {
			case s.events <- WatchEvent{Kind: WatchEventKind(ev.Kind), Key: ev.Key, Value: cloneBytes(ev.Value),
				Version: ev.Version, Revision: ev.Revision, ExpiresAt: expiry(ev.ExpiresAt), Command: ev.Command,
				Segment: ev.Segment, Epoch: ev.Epoch}:
			case <-s.done:
				return
			}
		}
		if err := w.Err(); errors.Is(err, store.ErrWatchOverflow) {
			s.fail(ErrWatchOverflow)
		}
	}()
	return s, nil
}

// --- remote ---

func (b *remoteBackend) watch(ctx context.Context, req wire.WatchRequest) (*WatchStream, error) {
	c, err := b.conn(ctx)
	if err != nil {
		return nil, err
	}
	id, frames, err := c.openStream(wire.OpWatch, 0, func(dst []byte) []byte { return wire.AppendWatchRequest(dst, req) }, int(req.Buffer)+16)
	if err != nil {
		return nil, err
	}
	s := &WatchStream{events: make(chan WatchEvent, 64), stop: func() { c.endStream(id) }, done: make(chan struct{})}
	// Read the snapshot up to its end marker before returning, so the caller
	// has it before any event.
	for {
		var f response
		var ok bool
		select {
		case f, ok = <-frames:
		case <-ctx.Done():
			c.endStream(id)
			return nil, ctx.Err()
		}
		if !ok {
			return nil, b.streamLost(c)
		}
		if err := streamEnd(f); err != nil || !f.flags.Has(wire.FlagStream) {
			if err == nil {
				err = errors.New("zaris: watch ended before its snapshot")
			}
			return nil, err
		}
		var it wire.WatchItem
		if err := wire.DecodeWatchItem(f.body, &it); err != nil {
			c.endStream(id)
			return nil, fmt.Errorf("zaris: undecodable watch item: %w", err)
		}
		rec := WatchRecord{Key: it.Key, Value: it.Value, Version: it.Version, Revision: it.Revision, ExpiresAt: expiry(it.ExpiresAt)}
		switch it.Kind {
		case wire.WatchItemSnapshotDone:
		case wire.WatchItemMark:
			s.marks = append(s.marks, wire.WatchPosition{Segment: it.Segment, Revision: it.Revision, Key: it.Key, Version: it.Version, Epoch: it.Epoch})
			continue
		case wire.WatchItemResync:
			s.resyncs = append(s.resyncs, watchResync{segment: it.Segment, records: []WatchRecord{}})
			continue
		case wire.WatchItemResyncRecord:
			if n := len(s.resyncs); n > 0 && s.resyncs[n-1].segment == it.Segment {
				s.resyncs[n-1].records = append(s.resyncs[n-1].records, rec)
			}
			continue
		default:
			s.snapshot = append(s.snapshot, rec)
			continue
		}
		break
	}
	go func() {
		defer close(s.events)
		for f := range frames {
			if !f.flags.Has(wire.FlagStream) {
				s.fail(streamEnd(f))
				return
			}
			var it wire.WatchItem
			if err := wire.DecodeWatchItem(f.body, &it); err != nil {
				s.fail(fmt.Errorf("zaris: undecodable watch item: %w", err))
				c.endStream(id)
				continue
			}
			select {
			case s.events <- WatchEvent{Kind: WatchEventKind(it.Kind), Key: it.Key, Value: it.Value, Version: it.Version,
				Revision: it.Revision, ExpiresAt: expiry(it.ExpiresAt), Command: kv.CmdOp(it.Command), Segment: it.Segment, Epoch: it.Epoch}:
			case <-s.done:
				return
			}
		}
		// Closed without a last frame: the consumer fell behind, or the
		// connection was lost.
		if c.broken() {
			s.fail(b.streamLost(c))
		} else {
			s.fail(ErrWatchOverflow)
		}
	}()
	return s, nil
}

func (b *remoteBackend) streamLost(c *rconn) error {
	c.mu.Lock()
	err := c.err
	c.mu.Unlock()
	if err == nil {
		err = errors.New("stream ended")
	}
	return c.lostErr(err)
}

// streamEnd interprets a stream's last frame: nil after a normal end, the
// server's reason otherwise.
func streamEnd(f response) error {
	if !f.flags.Has(wire.FlagError) {
		return nil
	}
	var e wire.ErrorResponse
	if err := wire.DecodeErrorResponse(f.body, &e); err != nil {
		return fmt.Errorf("zaris: undecodable stream end: %w", err)
	}
	if e.Status == kv.StatusUnavailable && e.Message == store.ErrWatchOverflow.Error() {
		return ErrWatchOverflow
	}
	if e.Status == kv.StatusUnavailable && e.Message == store.ErrSubscriberOverflow.Error() {
		return ErrSubscriberOverflow
	}
	return &e
}
