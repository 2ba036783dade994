package store

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zaris-io/zaris/internal/kv"
)

// EventKind is what happened to a watched key (R-DS-6).
type EventKind uint8

const (
	EventPut     EventKind = iota + 1 // value written
	EventDelete                       // deleted by a client
	EventExpired                      // reached its TTL
	EventEvicted                      // evicted under memory pressure
	EventExpire                       // TTL set or changed
	EventPersist                      // TTL removed
	EventCommand                      // a collection mutation; Event.Command names it
)

var eventNames = [...]string{EventPut: "put", EventDelete: "delete", EventExpired: "expired",
	EventEvicted: "evicted", EventExpire: "expire", EventPersist: "persist", EventCommand: "command"}

func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

func eventKindOf(op OpKind) EventKind {
	switch op {
	case OpPut:
		return EventPut
	case OpDelete:
		return EventDelete
	case OpExpired:
		return EventExpired
	case OpEvicted:
		return EventEvicted
	case OpExpire:
		return EventExpire
	case OpPersist:
		return EventPersist
	}
	return EventCommand
}

// Event is one change of a watched key.
type Event struct {
	Kind      EventKind
	Key       string
	Segment   uint16
	Revision  uint64 // the segment revision of the change: per-segment order
	Version   uint64
	ExpiresAt int64     // Unix ns, 0 = none (after the change)
	Value     []byte    // the new value of a put, when the watch asked for values
	Command   kv.CmdOp  // for EventCommand
	KeyKind   ValueKind // the kind of value the key holds (after the change)
	// Origin is the client command that produced the change when it is
	// not the logged effect itself (SPOP logged as SREM, SINTERSTORE as an
	// SADD, an SREM that emptied its set logged as a delete); 0 otherwise
	// and on a replica's apply.
	Origin kv.CmdOp
	// Replaced marks the delete of a key that the same command replaces at
	// once with a new value (SINTERSTORE over an existing key).
	Replaced bool
}

// WatchOptions select what a watch sees. Exactly one of Key or Prefix
// ("" = every key) applies: Key when non-empty.
type WatchOptions struct {
	Key           string
	Prefix        string
	Snapshot      bool // deliver the matching live records first, with no gap before the events
	IncludeValues bool
	// Buffer is the number of undelivered events the watch may hold; when a
	// consumer falls further behind, the watch ends with ErrWatchOverflow
	// (it must resubscribe with a snapshot). Default 4096.
	Buffer int
}

// ErrWatchOverflow: the consumer fell behind by more than its buffer; events
// were lost, so the watch ended. Resubscribe with Snapshot to resync.
var ErrWatchOverflow = errors.New("store: watch consumer fell behind; resubscribe with a snapshot")

// ErrWatchClosed is returned by Next after Close.
var ErrWatchClosed = errors.New("store: watch closed")

// Watch is a live subscription to changes (R-DS-6).
type Watch struct {
	s      *Store
	opts   WatchOptions
	seg    int // the one segment of a key watch; -1 for prefix watches
	active []atomic.Bool
	ch     chan Event

	mu     sync.Mutex // guards closed, err and sends on ch
	closed bool
	err    error
	done   chan struct{}
}

func (w *Watch) matches(key string) bool {
	if w.opts.Key != "" {
		return key == w.opts.Key
	}
	return strings.HasPrefix(key, w.opts.Prefix)
}

// Watch starts a watch. With opts.Snapshot it returns the matching live
// records: every change not reflected in them is delivered as an event, and
// none that is (no gap, no duplicate, per segment).
func (s *Store) Watch(opts WatchOptions) (*Watch, []Record, error) {
	if opts.Key != "" && s.checkKey(opts.Key) != kv.StatusSuccess {
		return nil, nil, errors.New("store: watch: invalid key")
	}
	if opts.Buffer <= 0 {
		opts.Buffer = 4096
	}
	w := &Watch{s: s, opts: opts, seg: -1, active: make([]atomic.Bool, len(s.segments)),
		ch: make(chan Event, opts.Buffer), done: make(chan struct{})}
	if opts.Key != "" {
		w.seg = int(s.SegmentFor(opts.Key).id)
	}
	if !opts.Snapshot {
		for i := range w.active {
			w.active[i].Store(true)
		}
	}
	s.addWatch(w)
	if !opts.Snapshot {
		return w, nil, nil
	}
	// Events of a segment are dropped until that segment is snapshotted;
	// the snapshot and the switch happen under its lock, so every change is
	// either in the snapshot or delivered, never both, never neither.
	var snap []Record
	for i, g := range s.segments {
		if w.seg >= 0 && i != w.seg {
			continue
		}
		now := s.clock.NowNano()
		g.mu.RLock()
		if w.opts.Key != "" {
			if r := g.items[w.opts.Key]; r != nil && r.liveAt(now) {
				snap = append(snap, r.exported())
			}
		} else {
			for k, r := range g.items {
				if strings.HasPrefix(k, w.opts.Prefix) && r.liveAt(now) {
					snap = append(snap, r.exported())
				}
			}
		}
		w.active[i].Store(true)
		g.mu.RUnlock()
	}
	return w, snap, nil
}

// Events is the channel of events. It is closed when the watch ends; Err
// then says why (nil after Close).
func (w *Watch) Events() <-chan Event { return w.ch }

// Err is the reason the watch ended: ErrWatchOverflow, or nil.
func (w *Watch) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Next waits for the next event.
func (w *Watch) Next(ctx context.Context) (Event, error) {
	select {
	case ev, ok := <-w.ch:
		if !ok {
			if err := w.Err(); err != nil {
				return Event{}, err
			}
			return Event{}, ErrWatchClosed
		}
		return ev, nil
	case <-ctx.Done():
		return Event{}, ctx.Err()
	}
}

// Close ends the watch. Safe to call more than once.
func (w *Watch) Close() {
	w.end(nil)
}

func (w *Watch) end(err error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed, w.err = true, err
	close(w.ch)
	close(w.done)
	w.mu.Unlock()
	w.s.removeWatch(w)
}

// deliver offers ev to the watch; called under the segment's write lock,
// so a segment's events arrive in revision order.
func (w *Watch) deliver(ev Event) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	select {
	case w.ch <- ev:
		w.mu.Unlock()
	default:
		// The consumer fell behind: end the watch now (the buffered events
		// stay readable), and leave the registry off the segment lock.
		w.closed, w.err = true, ErrWatchOverflow
		close(w.ch)
		close(w.done)
		w.mu.Unlock()
		go w.s.removeWatch(w)
	}
}

// watchRegistry is copy-on-write so that a write with nobody watching pays
// one atomic load.
type watchRegistry struct {
	mu   sync.Mutex // serialises updates of list
	list atomic.Pointer[[]*Watch]
}

func (s *Store) addWatch(w *Watch) {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	var next []*Watch
	if cur := s.watches.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, w)
	s.watches.list.Store(&next)
}

func (s *Store) removeWatch(w *Watch) {
	s.watches.mu.Lock()
	defer s.watches.mu.Unlock()
	cur := s.watches.list.Load()
	if cur == nil {
		return
	}
	next := make([]*Watch, 0, len(*cur))
	for _, x := range *cur {
		if x != w {
			next = append(next, x)
		}
	}
	s.watches.list.Store(&next)
}

// Watchers is the number of live watches.
func (s *Store) Watchers() int {
	if cur := s.watches.list.Load(); cur != nil {
		return len(*cur)
	}
	return 0
}

// notifyLocked tells the watches of the segment's change (caller holds the
// segment's write lock).
func (g *Segment) notifyLocked(kind OpKind, rec *Record, cmd *kv.Cmd) {
	list := g.store.watches.list.Load()
	if list == nil || len(*list) == 0 {
		return
	}
	for _, w := range *list {
		if (w.seg >= 0 && w.seg != int(g.id)) || !w.active[g.id].Load() || !w.matches(rec.Key) {
			continue
		}
		ev := Event{Kind: eventKindOf(kind), Key: rec.Key, Segment: g.id, Revision: rec.Revision,
			Version: rec.Version, ExpiresAt: rec.ExpiresAt, KeyKind: rec.Kind}
		if rec.Deleted {
			ev.ExpiresAt = 0
		}
		if cmd != nil {
			ev.Command = cmd.Op
		}
		if g.origin != ev.Command {
			ev.Origin = g.origin
		}
		ev.Replaced = g.replacing
		if w.opts.IncludeValues && kind == OpPut && rec.coll == nil {
			ev.Value = rec.Value
		}
		w.deliver(ev)
	}
}

// CloseWatches ends every watch (store shutdown).
func (s *Store) closeWatches() {
	if cur := s.watches.list.Load(); cur != nil {
		for _, w := range *cur {
			w.end(ErrWatchClosed)
		}
	}
}
