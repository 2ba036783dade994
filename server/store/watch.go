package store

import (
	"context"
	"errors"
	"fmt"
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
	Epoch     uint64 // the ownership epoch of the segment's partition at the change (SetEpoch)
	Revision  uint64 // the segment revision of the change: per-segment order
	Version   uint64
	ExpiresAt int64     // Unix ns, 0 = none (after the change)
	Value     []byte    // the new value of a put, when the watch asked for values
	Command   kv.CmdOp  // for EventCommand
	KeyKind   ValueKind // the kind of value the key holds (after the change)
	// Origin is the client command that produced the change when it is
	// not the logged effect itself (SPOP logged as SREM, SINTERSTORE as an
	// SADD, an SREM that emptied its set logged as a delete; CmdFlush for
	// the deletes of a Flush); 0 otherwise and on a replica's apply.
	Origin kv.CmdOp
	// Replaced marks the delete of a key that the same command replaces at
	// once with a new value (SINTERSTORE over an existing key).
	Replaced bool
	// SetExpiry marks a put that gave its key a new expiry (SET … EX,
	// SETEX; not KEEPTTL): Redis notifies "expire" after "set".
	SetExpiry bool
	// Name is Redis's keyspace-event name of the change when the command
	// that made it says more than its op and effect do ("zpopmax",
	// "zincr", "xgroup-create"); "" otherwise and on a replica's apply.
	Name string
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
	// From resumes a watch (R-DS-6): only the listed segments are watched,
	// each from after the position it names. Snapshot is ignored. A
	// position this segment's history still holds replays the op-log's
	// changes after it, then goes live, under the segment lock (no gap, no
	// duplicate); one it does not hold (below the trim floor, ahead of
	// this copy, or a different change at that revision: another history)
	// yields a WatchResync with the segment's matching live records.
	From []WatchPosition
	// Marks asks for the watch's start position in every watched segment
	// (Watch.Marks), for a watch that may be resumed later; without it
	// and without Snapshot, a watch starts without taking any lock.
	Marks bool
}

// WatchPosition is a point in one segment's history: the revision of the
// last change a watcher saw, and that change's key and version, which let
// another copy of the segment verify it holds the same history ("" Key:
// not known, the revision alone is compared).
type WatchPosition struct {
	Segment  uint16
	Revision uint64
	Key      string
	Version  uint64
	// Epoch is the ownership epoch of the segment's partition when the
	// position was handed out (informational: the history check is the
	// key and version at Revision).
	Epoch uint64
}

// WatchResync says a resumed segment's history no longer reaches back to
// the position asked for: Records are the segment's matching live records
// now, and the events after them follow.
type WatchResync struct {
	Segment uint16
	Records []Record
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

	marks   []WatchPosition // per activated segment: where its events start
	resyncs []WatchResync
}

// Marks are the positions the watch started from, one per watched
// segment: every change of the segment after it is delivered, none before.
func (w *Watch) Marks() []WatchPosition { return w.marks }

// Resyncs are the resumed segments whose history was gone (From).
func (w *Watch) Resyncs() []WatchResync { return w.resyncs }

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
	s.addWatch(w)
	if opts.From != nil {
		if err := w.resume(opts.From); err != nil {
			w.Close()
			return nil, nil, err
		}
		return w, nil, nil
	}
	if !opts.Snapshot && !opts.Marks {
		for i := range w.active {
			w.active[i].Store(true)
		}
		return w, nil, nil
	}
	// Events of a segment are dropped until that segment is activated;
	// the snapshot, the mark and the switch happen under its lock, so every
	// change is either in the snapshot (at or below the mark) or delivered,
	// never both, never neither.
	var snap []Record
	for i, g := range s.segments {
		if w.seg >= 0 && i != w.seg {
			continue
		}
		now := s.clock.NowNano()
		g.mu.RLock()
		if opts.Snapshot {
			snap = w.collectLocked(g, now, snap)
		}
		w.marks = append(w.marks, g.markLocked())
		w.active[i].Store(true)
		g.mu.RUnlock()
	}
	return w, snap, nil
}

// collectLocked appends g's live records the watch matches.
func (w *Watch) collectLocked(g *Segment, now int64, dst []Record) []Record {
	if w.opts.Key != "" {
		if r := g.items.get(w.opts.Key); r != nil && r.liveAt(now) {
			dst = append(dst, r.exported())
		}
		return dst
	}
	for r := range g.items.all() {
		if strings.HasPrefix(r.Key(), w.opts.Prefix) && r.liveAt(now) {
			dst = append(dst, r.exported())
		}
	}
	return dst
}

// resume activates the segments of from, each after replaying what
// followed its position, or with a resync when the history is gone.
func (w *Watch) resume(from []WatchPosition) error {
	s := w.s
	seen := make(map[uint16]bool, len(from))
	for _, f := range from {
		if int(f.Segment) >= len(s.segments) || seen[f.Segment] || (w.seg >= 0 && int(f.Segment) != w.seg) {
			return fmt.Errorf("store: watch: resume position for segment %d does not fit the watch", f.Segment)
		}
		seen[f.Segment] = true
	}
	for _, f := range from {
		g := s.segments[f.Segment]
		now := s.clock.NowNano()
		g.mu.RLock()
		if g.holdsLocked(f) {
			// A replay that overflows the buffer ends the watch: the rest
			// of the history is not walked (a consumer far behind resumes
			// again from what it got; walking it all under the segment's
			// lock, for nothing, delayed the segment's writes).
			g.eachAfterLocked(f.Revision, func(e *logEntry) bool {
				if w.matches(e.rec.Key()) {
					return w.deliver(eventOfLog(g.id, g.epoch.Load(), e, w.opts.IncludeValues))
				}
				return true
			})
			f.Epoch = g.epoch.Load()
			w.marks = append(w.marks, f)
		} else {
			w.resyncs = append(w.resyncs, WatchResync{Segment: g.id, Records: w.collectLocked(g, now, nil)})
			w.marks = append(w.marks, g.markLocked())
		}
		w.active[f.Segment].Store(true)
		g.mu.RUnlock()
	}
	return nil
}

// holdsLocked reports whether the segment's history contains position p
// and every change after it (the feed log and op-log reach back to it, and
// the change logged at its revision is the one p names: revisions of
// another history — a failover that lost the change p names — never
// pass for it, whatever the epochs say).
func (g *Segment) holdsLocked(p WatchPosition) bool {
	floor := g.historyFloorLocked()
	if p.Revision > g.revision || p.Revision < floor {
		return false
	}
	if p.Key == "" || p.Revision == floor {
		return true
	}
	e, ok := g.historyEntryLocked(p.Revision)
	return ok && e.rec.Key() == p.Key && e.rec.Version() == p.Version
}

// markLocked is the segment's current position: its revision and the
// change logged at it when the log holds it.
func (g *Segment) markLocked() WatchPosition {
	m := WatchPosition{Segment: g.id, Revision: g.revision, Epoch: g.epoch.Load()}
	if g.log.n > 0 {
		if e := g.log.at(g.log.n - 1); e.rev == g.revision {
			m.Key, m.Version = e.rec.Key(), e.rec.Version()
		}
	}
	return m
}

// eventOfLog is the watch event of a logged operation.
func eventOfLog(seg uint16, epoch uint64, e *logEntry, values bool) Event {
	r := e.rec
	ev := Event{Kind: eventKindOf(e.kind), Key: r.Key(), Segment: seg, Epoch: epoch, Revision: r.Revision,
		Version: r.Version(), ExpiresAt: r.ExpiresAt(), KeyKind: r.Kind}
	if r.Deleted() {
		ev.ExpiresAt = 0
	}
	if e.cmd != nil {
		ev.Command = e.cmd.Op
	}
	if values && e.kind == OpPut && r.Kind == KindString {
		ev.Value = r.Value()
	}
	return ev
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
// so a segment's events arrive in revision order. False once the watch
// has ended (this event, or an earlier one, overflowed it).
func (w *Watch) deliver(ev Event) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	select {
	case w.ch <- ev:
		w.mu.Unlock()
		return true
	default:
		// The consumer fell behind: end the watch now (the buffered events
		// stay readable), and leave the registry off the segment lock.
		w.closed, w.err = true, ErrWatchOverflow
		close(w.ch)
		close(w.done)
		w.mu.Unlock()
		go w.s.removeWatch(w)
		return false
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
	if hook := g.store.commitHook.Load(); hook != nil {
		(*hook)(g.id)
	}
	list := g.store.watches.list.Load()
	if list == nil || len(*list) == 0 {
		return
	}
	for _, w := range *list {
		if (w.seg >= 0 && w.seg != int(g.id)) || !w.active[g.id].Load() || !w.matches(rec.Key()) {
			continue
		}
		ev := Event{Kind: eventKindOf(kind), Key: rec.Key(), Segment: g.id, Epoch: g.epoch.Load(), Revision: rec.Revision,
			Version: rec.Version(), ExpiresAt: rec.ExpiresAt(), KeyKind: rec.Kind}
		if rec.Deleted() {
			ev.ExpiresAt = 0
		}
		if cmd != nil {
			ev.Command = cmd.Op
		}
		if g.origin != ev.Command {
			ev.Origin = g.origin
		}
		ev.Replaced, ev.SetExpiry, ev.Name = g.replacing, g.expiring, g.eventName
		if w.opts.IncludeValues && kind == OpPut && rec.coll() == nil {
			ev.Value = rec.Value()
		}
		w.deliver(ev)
	}
}

// SetCommitHook installs fn, called with the segment of every committed
// mutation, under that segment's write lock and before the write returns:
// fn must neither block nor touch the store. nil removes it. The
// replication manager marks the segment to ship with it — a watch cost
// every write a channel send and a goroutine hop to do the same (issue 17).
func (s *Store) SetCommitHook(fn func(seg uint16)) {
	if fn == nil {
		s.commitHook.Store(nil)
		return
	}
	s.commitHook.Store(&fn)
}

// CloseWatches ends every watch (store shutdown).
func (s *Store) closeWatches() {
	if cur := s.watches.list.Load(); cur != nil {
		for _, w := range *cur {
			w.end(ErrWatchClosed)
		}
	}
}
