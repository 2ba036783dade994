package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/zaris-io/zaris/internal/kv"
)

// markOf returns the watch's mark for segment seg.
func markOf(t *testing.T, w *Watch, seg uint16) WatchPosition {
	t.Helper()
	for _, m := range w.Marks() {
		if m.Segment == seg {
			return m
		}
	}
	t.Fatalf("no mark for segment %d in %+v", seg, w.Marks())
	return WatchPosition{}
}

// A resumed key watch replays exactly the changes after its position, in
// revision order, then goes live (R-DS-6).
func TestWatchResumeReplaysThenGoesLive(t *testing.T) {
	s, _ := newTestStore(t)
	seg := s.SegmentFor("k").ID()
	first, _, err := s.Watch(WatchOptions{Key: "k", Marks: true})
	if err != nil {
		t.Fatal(err)
	}
	start := markOf(t, first, seg)
	s.Put("k", []byte("a"), nil)
	ev := nextEvent(t, first)
	first.Close()
	pos := WatchPosition{Segment: seg, Revision: ev.Revision, Key: ev.Key, Version: ev.Version}
	// Changes the first watch never delivered.
	s.Put("k", []byte("b"), nil)
	s.Delete("k")
	run(t, s, kv.CmdHSet, "k", "f", "v")
	w, snap, err := s.Watch(WatchOptions{Key: "k", IncludeValues: true, From: []WatchPosition{pos}})
	if err != nil || snap != nil || len(w.Resyncs()) != 0 {
		t.Fatal(err, snap, w.Resyncs())
	}
	defer w.Close()
	if m := markOf(t, w, seg); m != pos {
		t.Fatalf("mark %+v, want the resume position %+v", m, pos)
	}
	s.Put("k", []byte("live"), nil)
	want := []EventKind{EventPut, EventDelete, EventCommand, EventPut}
	last := pos.Revision
	for i, k := range want {
		ev := nextEvent(t, w)
		if ev.Kind != k || ev.Revision <= last {
			t.Fatalf("event %d = %v rev %d after %d, want %v", i, ev.Kind, ev.Revision, last, k)
		}
		last = ev.Revision
		if i == 0 && string(ev.Value) != "b" || i == 3 && string(ev.Value) != "live" {
			t.Fatalf("event %d value %q", i, ev.Value)
		}
	}
	if start.Revision >= pos.Revision {
		t.Fatalf("start mark %d not before the first event %d", start.Revision, pos.Revision)
	}
}

// A position the history no longer holds gets a resync with the live
// records, never a partial replay: below the trim floor, ahead of this copy,
// or naming another change at that revision (another history).
func TestWatchResumeResyncsWhenHistoryIsGone(t *testing.T) {
	s, _ := newTestStore(t, func(c *Config) { c.OpLogMaxOps = 4 })
	seg := s.SegmentFor("k").ID()
	s.Put("k", []byte("v0"), nil)
	r0 := s.Get("k")
	for i := 0; i < 10; i++ {
		s.Put("k", []byte("v"), nil)
	}
	cur := s.Get("k")
	cases := map[string]WatchPosition{
		"below floor":     {Segment: seg, Revision: r0.Revision, Key: "k", Version: r0.Version},
		"ahead":           {Segment: seg, Revision: cur.Revision + 5},
		"another history": {Segment: seg, Revision: cur.Revision, Key: "other", Version: 1},
	}
	for name, pos := range cases {
		w, _, err := s.Watch(WatchOptions{Key: "k", From: []WatchPosition{pos}})
		if err != nil {
			t.Fatal(name, err)
		}
		rs := w.Resyncs()
		if len(rs) != 1 || rs[0].Segment != seg || len(rs[0].Records) != 1 || rs[0].Records[0].Revision != cur.Revision {
			t.Fatalf("%s: resyncs %+v", name, rs)
		}
		if m := markOf(t, w, seg); m.Revision != cur.Revision || m.Key != "k" {
			t.Fatalf("%s: mark %+v", name, m)
		}
		s.Put("k", []byte("after"), nil)
		if ev := nextEvent(t, w); ev.Revision <= cur.Revision || string(ev.Key) != "k" {
			t.Fatalf("%s: event %+v", name, ev)
		}
		cur = s.Get("k")
		w.Close()
	}
	// The exact current position replays nothing and resyncs nothing.
	w, _, err := s.Watch(WatchOptions{Key: "k", From: []WatchPosition{{Segment: seg, Revision: cur.Revision, Key: "k", Version: cur.Version}}})
	if err != nil || len(w.Resyncs()) != 0 {
		t.Fatal(err, w.Resyncs())
	}
	select {
	case ev := <-w.Events():
		t.Fatalf("unexpected replay %+v", ev)
	default:
	}
	w.Close()
	// A position for a segment the key watch does not cover is refused.
	if _, _, err := s.Watch(WatchOptions{Key: "k", From: []WatchPosition{{Segment: seg + 1}}}); err == nil {
		t.Fatal("a foreign segment position was accepted")
	}
}

// A replay longer than the watch's buffer delivers the buffer's worth, in
// order, then ends with ErrWatchOverflow (the consumer resumes from what it
// got); what does not fit is not walked under the segment's lock.
func TestWatchResumeOverflowEndsTheReplay(t *testing.T) {
	s, _ := newTestStore(t)
	seg := s.SegmentFor("k").ID()
	s.Put("k", []byte("v0"), nil)
	r0 := s.Get("k")
	for i := 1; i <= 100; i++ {
		s.Put("k", fmt.Appendf(nil, "v%d", i), nil)
	}
	pos := WatchPosition{Segment: seg, Revision: r0.Revision, Key: "k", Version: r0.Version}
	w, _, err := s.Watch(WatchOptions{Key: "k", IncludeValues: true, Buffer: 10, From: []WatchPosition{pos}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i := 1; i <= 10; i++ {
		ev := nextEvent(t, w)
		if want := fmt.Sprintf("v%d", i); string(ev.Value) != want {
			t.Fatalf("replayed event %d = %q, want %q", i, ev.Value, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if ev, err := w.Next(ctx); !errors.Is(err, ErrWatchOverflow) {
		t.Fatalf("after the buffer's worth: %+v, %v; want ErrWatchOverflow", ev, err)
	}
	// A later write is not delivered to the ended watch.
	s.Put("k", []byte("late"), nil)
	if _, err := w.Next(ctx); !errors.Is(err, ErrWatchOverflow) {
		t.Fatalf("the ended watch: %v, want ErrWatchOverflow", err)
	}
}
