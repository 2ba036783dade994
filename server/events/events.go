// Package events keeps a node's recent cluster events — failovers,
// migrations, rebalances, membership and role changes — in a small bounded
// ring, for the web console's timeline (issue #18 item 5).
//
// The ring is fed from the cluster's own log lines: Tap wraps the slog
// handler the cluster logs through and copies every record whose message
// names an event (see kindOf) into the ring, whatever the configured log
// level, then passes the record on unchanged. The cluster's code is not
// touched and every event it already logs reaches the ring.
package events

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// DefaultCapacity is the ring size a node uses: a few hours of a busy
// cluster's events in a few hundred kilobytes at most.
const DefaultCapacity = 512

// Event is one entry of the timeline.
type Event struct {
	// Seq numbers the node's events from 1 in the order they happened.
	Seq  uint64    `json:"seq"`
	At   time.Time `json:"at"`
	Node string    `json:"node"` // the node that recorded it
	// Kind groups events: failover, health, migration, rebalance,
	// membership, leader, map.
	Kind    string            `json:"kind"`
	Level   string            `json:"level"` // INFO, WARN, ERROR
	Message string            `json:"message"`
	Attrs   map[string]string `json:"attrs,omitempty"`
}

// Ring is a bounded, concurrency-safe list of the latest events: when full,
// the oldest is dropped.
type Ring struct {
	node string
	now  func() time.Time

	mu   sync.Mutex
	buf  []Event // circular, len == capacity once full
	head int     // index of the oldest event once full
	seq  uint64
}

// NewRing returns an empty ring for node holding up to capacity events
// (DefaultCapacity when capacity ≤ 0).
func NewRing(node string, capacity int) *Ring {
	if capacity <= 0 {
		capacity = DefaultCapacity
	}
	return &Ring{node: node, now: time.Now, buf: make([]Event, 0, capacity)}
}

// Add records an event now.
func (r *Ring) Add(kind, level, msg string, attrs map[string]string) {
	r.add(Event{At: r.now(), Kind: kind, Level: level, Message: msg, Attrs: attrs})
}

func (r *Ring) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	e.Seq, e.Node = r.seq, r.node
	if len(r.buf) < cap(r.buf) {
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.head] = e
	r.head = (r.head + 1) % len(r.buf)
}

// Since returns the events with Seq > after, oldest first.
func (r *Ring) Since(after uint64) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, len(r.buf))
	for i := range r.buf {
		e := r.buf[(r.head+i)%len(r.buf)]
		if e.Seq > after {
			out = append(out, e)
		}
	}
	return out
}

// eventKinds maps the start of a cluster log message to the kind of event
// it reports. The messages are the cluster package's own (server/cluster).
var eventKinds = []struct{ prefix, kind string }{
	{"failover: promoting a replica", "failover"},
	{"restart recovery", "failover"},
	{"partition health", "health"},
	{"migration complete", "migration"},
	{"migration aborted", "migration"},
	{"rebalance planned", "rebalance"},
	{"rebalance resumed", "rebalance"},
	{"rebalance complete", "rebalance"},
	{"draining a member", "rebalance"},
	{"member state", "membership"},
	{"member evicted", "membership"},
	{"joined the cluster", "membership"},
	{"raft membership changed", "membership"},
	{"control-plane leader", "leader"},
	{"no longer the control-plane leader", "leader"},
	{"map committed", "map"},
}

// kindOf is the event kind a log message reports, "" for none.
func kindOf(msg string) string {
	for _, k := range eventKinds {
		if strings.HasPrefix(msg, k.prefix) {
			return k.kind
		}
	}
	return ""
}

// Tap returns a handler that records the event records passing through it
// into r and hands every record to next as before. Records at INFO and
// above are looked at even when next would drop them, so a node logging at
// WARN still has its timeline.
func (r *Ring) Tap(next slog.Handler) slog.Handler { return &tap{ring: r, next: next} }

type tap struct {
	ring *Ring
	next slog.Handler
}

func (t *tap) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || t.next.Enabled(ctx, l)
}

func (t *tap) Handle(ctx context.Context, rec slog.Record) error {
	if kind := kindOf(rec.Message); kind != "" {
		attrs := make(map[string]string, rec.NumAttrs())
		rec.Attrs(func(a slog.Attr) bool {
			attrs[a.Key] = a.Value.Resolve().String()
			return true
		})
		at := rec.Time
		if at.IsZero() {
			at = t.ring.now()
		}
		t.ring.add(Event{At: at, Kind: kind, Level: rec.Level.String(), Message: rec.Message, Attrs: attrs})
	}
	if !t.next.Enabled(ctx, rec.Level) {
		return nil
	}
	return t.next.Handle(ctx, rec)
}

func (t *tap) WithAttrs(as []slog.Attr) slog.Handler {
	return &tap{ring: t.ring, next: t.next.WithAttrs(as)}
}

func (t *tap) WithGroup(name string) slog.Handler {
	return &tap{ring: t.ring, next: t.next.WithGroup(name)}
}
